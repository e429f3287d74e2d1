// SPDX-License-Identifier: GPL-3.0-or-later
// StreamingExecutor (executor.h): construction, the step (streaming each layer in, forward and
// backward on every system) and its statistics. The gradient path is in executor_reduce.cpp, the
// MoE units in executor_moe.cpp; the state they share in executor_impl.h.
#include "engine/streaming/executor.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <new>
#include <string>

#include "engine/model/random.h"
#include "engine/streaming/executor_impl.h"
#include "engine/streaming/swarmx.h"
#include "engine/streaming/weight_streamer.h"
#include "engine/streaming/workers.h"

namespace ws::streaming {

namespace {

// Total length of the intersection of [a0,a1) with a sorted, disjoint list of intervals.
double overlap(double a0, double a1, const std::vector<std::pair<double, double>>& busy) {
    double total = 0.0;
    for (const auto& [b0, b1] : busy) total += std::max(0.0, std::min(a1, b1) - std::max(a0, b0));
    return total;
}
// What the exception being handled says.
std::string currentExceptionText() {
    try {
        throw;
    } catch (const std::bad_alloc&) {
        return "out of memory";
    } catch (const std::exception& e) {
        return e.what();
    } catch (...) {
        return "unknown error";
    }
}

}  // namespace

size_t largestLayerSize(const model::ParameterTable& table) {
    size_t largest = 0;
    for (const auto& layer : table.layers()) largest = std::max(largest, layer.size);
    return largest;
}

int64_t activationBytesPerSequence(const model::GptShape& s, int T) {
    // Every activation Gpt keeps for the backward pass, for one sequence.
    return int64_t(model::activationLayout(s, 1, T).size() * sizeof(float));
}

void StreamingExecutor::Impl::accountOverlap() {
    std::lock_guard lock(statsMutex);
    for (int s = mine.first; s < mine.first + mine.count; ++s) {
        std::vector<std::pair<double, double>> busy;
        for (const auto& sp : stepSpans) {
            if (sp.system != s) continue;
            if (sp.kind == SpanKind::Forward || sp.kind == SpanKind::Backward) {
                busy.push_back({sp.start, sp.end});
                stats.computeSec += sp.end - sp.start;
            } else if (sp.kind == SpanKind::StreamOut) {
                stats.streamOutSec += sp.end - sp.start;
            }
        }
        for (const auto& sp : stepSpans) {
            if (sp.system != s || sp.kind != SpanKind::StreamIn) continue;
            stats.streamInSec += sp.end - sp.start;
            stats.streamInHiddenSec += overlap(sp.start, sp.end, busy);
        }
    }
    stepSpans.clear();
}

StreamingExecutor::StreamingExecutor(const model::GptShape& shape, int globalBatch, int seqLen,
                                     const StreamingOptions& options, MemoryX& memoryx,
                                     optim::Optimizer& optimizer, SpanSink sink)
    : m_table(shape), m_options(options) {
    init(shape, globalBatch, seqLen, &memoryx, &optimizer, std::move(sink));
}

StreamingExecutor::StreamingExecutor(const model::GptShape& shape, int globalBatch, int seqLen,
                                     const StreamingOptions& options, SpanSink sink)
    : m_table(shape), m_options(options) {
    assert(options.comm && options.comm->rank() >= options.memoryxShards);
    init(shape, globalBatch, seqLen, nullptr, nullptr, std::move(sink));
}

void StreamingExecutor::init(const model::GptShape& shape, int globalBatch, int seqLen,
                             MemoryX* memoryx, optim::Optimizer* optimizer, SpanSink sink) {
    const StreamingOptions& options = m_options;
    assert(options.systems >= 1 && globalBatch % options.systems == 0);
    assert(!options.comm || options.comm->size() <= options.systems);
    const bool sharded = options.comm && options.comm->size() > 1 && options.memoryxShards > 1;
    m_plan = ShardPlan(m_table, sharded ? options.memoryxShards : 1);
    m_impl =
        std::make_unique<Impl>(m_table, m_options, memoryx, optimizer, std::move(sink), m_plan);
    Impl& d = *m_impl;
    d.T = seqLen;
    d.perSystem = globalBatch / options.systems;
    d.micro = options.microBatch > 0 ? options.microBatch : d.perSystem;
    assert(d.perSystem % d.micro == 0);
    d.micros = d.perSystem / d.micro;
    m_micros = d.micros;
    size_t slotFloats = 0;
    for (int l = 0; l < int(m_table.layers().size()); ++l) {
        size_t floats = 0;
        for (const auto& piece : d.piecesFor(l, true)) floats += piece.second;
        slotFloats = std::max(slotFloats, floats);
    }
    // Which parameters train: every parameter's groups (options.groups), else the optimizer's
    // (one process), else all of them.
    std::vector<optim::ParamGroup> groups = options.groups;
    if (groups.empty() && optimizer && !sharded) groups = optimizer->groups();
    if (groups.empty()) groups.push_back({0, m_table.totalSize(), true, 1.0, false});
    d.fullLayout = optimizer && optimizer->layout() == optim::GradientLayout::Full;
    // A shard's gradients start with the first trainable parameter at or after its first layer.
    for (const auto& piece : optim::trainablePieces(groups, 0, d.base)) d.stateBase += piece.size;
    for (const auto& layer : m_table.layers()) {
        d.layerPieces.push_back(
            optim::trainablePieces(groups, layer.offset, layer.offset + layer.size));
        size_t n = 0;
        for (const auto& piece : d.layerPieces.back()) n += piece.size;
        d.layerTrainable.push_back(n);
    }
    // Tensors whose weight gradients the systems never compute (model::Gpt::setFrozen).
    std::vector<bool> frozen(m_table.tensors().size(), true);
    for (size_t t = 0; t < frozen.size(); ++t) {
        const auto& tensor = m_table.tensors()[t];
        for (const auto& piece :
             optim::trainablePieces(groups, tensor.offset, tensor.offset + tensor.size))
            if (piece.size > 0) frozen[t] = false;
    }
    for (int s = 0; s < d.mine.count; ++s) {
        d.gpts.push_back(std::make_unique<model::Gpt<float>>(shape, d.micro, seqLen));
        d.gpts.back()->setFrozen(frozen);
        // Not value-initialised: the pages of frozen tensors are never touched.
        d.grads.emplace_back(new float[m_table.totalSize()]);
    }
    d.losses.assign(size_t(d.mine.count), 0.0);
    d.lbLosses.assign(size_t(d.mine.count), 0.0);
    if (shape.hasMoe()) {
        std::vector<std::vector<int64_t>> perBlock(size_t(shape.layers));
        for (int b = 0; b < shape.layers; ++b)
            if (shape.isMoeBlock(b)) perBlock[size_t(b)].assign(size_t(shape.numExperts), 0);
        d.expertTokens.assign(size_t(d.mine.count), perBlock);
    }
    for (const auto& layer : m_table.layers()) d.layerRanges.push_back({layer.offset, layer.size});
    d.streamer = std::make_unique<WeightStreamer>(
        memoryx ? memoryx->weights() : nullptr, d.mine.count,
        std::max(1, options.weightBufferLayers), slotFloats, d.epoch,
        [&d](const Span& span) { d.report(span); }, shape.bf16, d.comm, d.mine.first, d.base);
}

comm::SystemRange StreamingExecutor::localSystems() const {
    return m_impl->mine;
}

StreamingExecutor::~StreamingExecutor() = default;

StreamingStats StreamingExecutor::stats() const {
    std::lock_guard lock(m_impl->statsMutex);
    StreamingStats s = m_impl->stats;
    s.maxResidentLayers = m_impl->streamer->maxResident();
    s.bytesPerWeight = m_impl->streamer->bytesPerValue();
    s.waferBufferBytes = m_impl->streamer->bufferBytes();
    s.peakWaferBufferBytes = m_impl->streamer->peakResidentBytes();
    s.bytesStreamedIn = m_impl->streamer->bytesStreamed();
    // Across processes every system receives the same bytes: rank 0 reports all of them.
    if (m_impl->comm && m_impl->root())
        s.bytesStreamedIn = s.bytesStreamedIn / m_impl->mine.count * m_options.systems;
    return s;
}

void StreamingExecutor::setPositionIds(const int32_t* positionIds) {
    m_impl->positionIds = positionIds;
}

// The step's visit order: per micro-batch, forward 0..L+1 then backward L+1..0.
std::vector<WeightVisit> StreamingExecutor::Impl::stepVisits() const {
    const int head = headIndex();
    std::vector<WeightVisit> visits;
    for (int m = 0; m < micros; ++m) {
        for (int l = 0; l <= head; ++l) visits.push_back(visitFor(l, true, m));
        for (int l = head; l >= 0; --l) visits.push_back(visitFor(l, false, m));
    }
    return visits;
}

void StreamingExecutor::Impl::resetStepTotals() {
    linkBytesThisStep = 0;
    std::fill(losses.begin(), losses.end(), 0.0);
    std::fill(lbLosses.begin(), lbLosses.end(), 0.0);
    for (auto& perBlock : expertTokens)
        for (auto& counts : perBlock) std::fill(counts.begin(), counts.end(), 0);
}

// The training mask (model::Gpt::headForward): the step's gradient and loss are means over the
// global batch's G trained targets. Each micro-batch's loss is its trained sum / (G / (N·micros)),
// so the reduce's 1 / (N·micros) (and the loss's mean over micro-batches) leaves sum / G. Every
// process holds the whole global batch's targets, so each counts G itself. Nothing masked: G /
// (N·micros) is exactly the micro-batch's B·T, the unmasked mean's bits.
int64_t StreamingExecutor::Impl::setLossDenominators(const int32_t* targets) {
    const int64_t G = model::countTrainedTargets(
        targets, size_t(options.systems) * size_t(perSystem) * size_t(T));
    // G = 0: every micro-batch counts its own 0 trained targets (loss 0, zero gradient).
    const double D = double(G) / double(options.systems * micros);
    for (auto& gpt : gpts) gpt->setLossDenominator(D);
    return G;
}

void StreamingExecutor::Impl::drainVisits(int from, size_t count) {
    for (int j = from; j < int(count); ++j) {
        streamer->acquire(j);
        streamer->release(j);
    }
}

// Layer l of micro-batch m forward on every local system, with visit v's weights on the wafer.
void StreamingExecutor::Impl::forwardLayer(const StepInput& in, int m, int l, int v) {
    const int head = headIndex();
    const bool moe = table.shape().hasMoe();
    workers.run([&](int ls) {
        const int s = mine.first + ls;  // the system's number in the job
        auto& gpt = *gpts[size_t(ls)];
        const auto w = weightsOnWafer(v, ls);
        const size_t rows = size_t(s * perSystem + m * micro) * size_t(T);
        const double t0 = now();
        if (l == 0) {
            const bool first = s == 0 && m == 0;
            gpt.beginStep(true,
                          first ? in.dropoutSeed
                                : model::rng::deriveKey(in.dropoutSeed, uint64_t(s * micros + m)));
            gpt.setPositionIds(positionIds ? positionIds + rows : nullptr);
            gpt.embedForward(w, in.inputs + rows);
        } else if (l == head) {
            const auto wte = table.shape().tiedEmbedding ? w.advanced(layer(head).size)
                                                         : model::LayerWeights<float>{};
            const float loss = gpt.headForward(w, wte, in.targets + rows);
            // MoE: the cross-entropy and the load-balancing loss apart.
            losses[size_t(ls)] += moe ? gpt.lastCrossEntropy() : loss;
            if (moe) lbLosses[size_t(ls)] += gpt.loadBalancingLoss();
        } else {
            gpt.blockForward(l - 1, w);
            if (table.shape().isMoeBlock(l - 1)) countExperts(ls, l - 1, gpt);
        }
        report(Span{in.step, m, s, l, SpanKind::Forward, 0, t0, now()});
    });
}

// Every local system's trainable gradients to zero, before a micro-batch's backward pass.
void StreamingExecutor::Impl::zeroGradients() {
    for (auto& g : grads)
        for (const auto& pieces : layerPieces)
            for (const auto& piece : pieces) std::fill_n(g.get() + piece.offset, piece.size, 0.0f);
}

// Layer l of micro-batch m backward on every local system, into each system's gradients.
void StreamingExecutor::Impl::backwardLayer(const StepInput& in, int m, int l, int v) {
    const int head = headIndex();
    workers.run([&](int ls) {
        const int s = mine.first + ls;
        auto& gpt = *gpts[size_t(ls)];
        float* g = grads[size_t(ls)].get();
        const auto w = weightsOnWafer(v, ls);
        const double t0 = now();
        if (l == head) {
            const bool tied = table.shape().tiedEmbedding;
            gpt.headBackward(w, tied ? w.advanced(layer(head).size) : model::LayerWeights<float>{},
                             g + layer(head).offset, tied ? g + wteOffset() : nullptr);
        } else if (l == 0) {
            gpt.embedBackward(g + layer(0).offset);
        } else {
            gpt.blockBackward(l - 1, w, g + layer(l).offset);
        }
        report(Span{in.step, m, s, l, SpanKind::Backward, 0, t0, now()});
    });
}

// Every visit of the step: each layer streams in, computes forward then backward on every local
// system, and each layer's gradient goes to MemoryX's queue (reduce, and update without clipping).
bool StreamingExecutor::Impl::streamLayers(const StepInput& in, const StepHooks& hooks,
                                           size_t visitCount) {
    const int head = headIndex();
    // Updates start with the last micro-batch's first reduced layer (without clipping) or after
    // the backward pass (with clipping); before that a cancel leaves MemoryX untouched.
    auto cancelNow = [&](int m, bool backward) {
        if (hooks.pausePoint) hooks.pausePoint();
        const bool updatesStarted = !in.clip && backward && m == micros - 1;
        // Across processes the other ranks are inside the step too: stop between steps only.
        return hooks.cancel && !comm && !updatesStarted &&
               hooks.cancel->load(std::memory_order_relaxed);
    };
    auto abandon = [&](int visit) {
        // Release the remaining visits so the loader finishes, then drop the step.
        drainVisits(visit, visitCount);
        memoryxQueue.waitIdle();
        streamer->finish();
        accountOverlap();
        return false;
    };

    int v = 0;
    bool holding = false;  // visit v is acquired and not yet released
    try {
        for (int m = 0; m < micros; ++m) {
            memoryxQueue.waitIdle();  // the previous micro-batch's reduces read the grad buffers
            for (int l = 0; l <= head; ++l, ++v) {
                if (cancelNow(m, false)) return abandon(v);
                streamer->acquire(v);
                holding = true;
                forwardLayer(in, m, l, v);
                streamer->release(v);
                holding = false;
            }
            zeroGradients();
            for (int l = head; l >= 0; --l, ++v) {
                if (cancelNow(m, true)) return abandon(v);
                streamer->acquire(v);
                holding = true;
                backwardLayer(in, m, l, v);
                streamer->release(v);
                holding = false;
                if (layerTrainable[size_t(l)] == 0) continue;  // frozen: no gradient leaves
                const bool last = m == micros - 1;
                memoryxQueue.post([this, in, m, l, last] {
                    reduceLayer(in.step, m, l, last, !in.clip, in.lr, in.updateCount);
                });
            }
        }
        memoryxQueue.waitIdle();
    } catch (...) {
        // Across processes the other ranks wait inside this step's broadcasts and gathers: the
        // step cannot be drained, only the job ended.
        if (comm) comm->abort(1, "a training step failed: " + currentExceptionText());
        // A failure inside the step (an allocation, usually): leave the weight loader and
        // MemoryX's queue idle, as a cancel would, before the error unwinds the step whose
        // visits they reference. MemoryX may hold a partial update; the run ends failed.
        if (holding) streamer->release(v++);
        drainVisits(v, visitCount);
        try {
            memoryxQueue.waitIdle();
        } catch (...) {  // the queue's own error, if any, adds nothing to the first
        }
        streamer->finish();
        accountOverlap();
        throw;
    }
    streamer->finish();
    return true;
}

void StreamingExecutor::Impl::forwardSpansToRoot() {
    constexpr int kSpanTag = 2;
    const auto channel = comm::Channel::Gradients;
    if (!root()) {
        std::vector<Span> mineOut;
        {
            std::lock_guard lock(statsMutex);
            mineOut.swap(spansForRoot);
        }
        // The count and this rank's clock, then the spans: rank 0 shifts them onto its clock.
        const double header[2] = {double(mineOut.size()), now()};
        comm->sendExact(channel, 0, kSpanTag, header, sizeof header);
        comm->sendExact(channel, 0, kSpanTag, mineOut.data(), mineOut.size() * sizeof(Span));
        return;
    }
    for (int r = 1; r < comm->size(); ++r) {
        double header[2] = {0, 0};
        comm->receiveExact(channel, r, kSpanTag, header, sizeof header);
        std::vector<Span> theirs(static_cast<size_t>(header[0]));
        comm->receiveExact(channel, r, kSpanTag, theirs.data(), theirs.size() * sizeof(Span));
        // Their clock read header[1] as they sent; ours reads now() as it arrives (the transit,
        // microseconds to milliseconds, is the error).
        const double shift = now() - header[1];
        for (Span& span : theirs) {
            span.start += shift;
            span.end += shift;
            if (sink) sink(span);
        }
    }
}

// The losses, summed in system order on rank 0 (one process: its own, in order). Across
// processes each rank's message also carries the bytes it sent up the reduce tree this step,
// which rank 0 keeps as the measured load of every link (StreamingStats::reduceLinkBytes).
std::vector<double> StreamingExecutor::Impl::gatherLosses() {
    if (!comm) return losses;
    std::vector<double> mineOut = losses;
    mineOut.push_back(double(linkBytesThisStep));
    std::vector<size_t> bytes;
    for (size_t n : systemsPerRank) bytes.push_back((n + 1) * sizeof(double));
    std::vector<double> received(size_t(options.systems) + systemsPerRank.size(), 0.0);
    comm->gather(comm::Channel::Gradients, mineOut.data(), mineOut.size() * sizeof(double),
                 received.data(), bytes, 0);
    if (!root()) return losses;
    std::vector<double> all;
    std::vector<int64_t> links;
    size_t at = 0;
    for (size_t n : systemsPerRank) {
        all.insert(all.end(), received.begin() + std::ptrdiff_t(at),
                   received.begin() + std::ptrdiff_t(at + n));
        links.push_back(int64_t(received[at + n]));
        at += n + 1;
    }
    std::lock_guard lock(statsMutex);
    stats.reduceLinkBytes = std::move(links);
    return all;
}

// Across processes every rank's spans reach rank 0's sink once the step is done, so the
// session, the timeline and the Wafer tab see every system of the job.
StepResult StreamingExecutor::step(int64_t step, const int32_t* inputs, const int32_t* targets,
                                   double lr, double maxGradientNorm, int64_t updateCount,
                                   uint64_t dropoutSeed, const StepHooks& hooks) {
    StepResult result =
        runStep(step, inputs, targets, lr, maxGradientNorm, updateCount, dropoutSeed, hooks);
    if (m_impl->comm && !result.cancelled) m_impl->forwardSpansToRoot();
    return result;
}

StepResult StreamingExecutor::runStep(int64_t step, const int32_t* inputs, const int32_t* targets,
                                      double lr, double maxGradientNorm, int64_t updateCount,
                                      uint64_t dropoutSeed, const StepHooks& hooks) {
    Impl& d = *m_impl;
    const Impl::StepInput in{
        step, inputs, targets, lr, updateCount, dropoutSeed, maxGradientNorm > 0.0};
    const std::vector<WeightVisit> visits = d.stepVisits();
    d.streamer->begin(step, visits);
    d.resetStepTotals();
    const int64_t lossTokens = d.setLossDenominators(targets);
    if (!d.streamLayers(in, hooks, visits.size())) {
        StepResult r;
        r.cancelled = true;
        return r;
    }
    const std::vector<double> losses = d.gatherLosses();
    StepResult result;
    auto expertTokens = d.stepExpertTokens();  // (a collective across processes)
    if (d.sharded()) {
        result = shardedStepEnd(lr, maxGradientNorm, updateCount, step, losses);
        if (d.root()) {
            result.expertTokens = std::move(expertTokens);
            result.lossTokens = lossTokens;
        }
        return result;
    }
    result.expertTokens = std::move(expertTokens);
    result.lossTokens = lossTokens;
    if (!d.root()) {
        d.accountOverlap();
        return result;
    }
    unshardedStepEnd(result, lr, maxGradientNorm, updateCount, step, losses);
    return result;
}

// The end of a step with one MemoryX (rank 0): the gradient norms, with clipping the updates
// (phase two: the norm is known only now), and the loss.
void StreamingExecutor::unshardedStepEnd(StepResult& result, double lr, double maxGradientNorm,
                                         int64_t updateCount, int64_t step,
                                         const std::vector<double>& losses) {
    Impl& d = *m_impl;
    const int head = d.headIndex();
    result.gradNorm = d.optimizer->gradientNorm(d.memoryx->gradients());
    result.layerGradNorms = d.optimizer->rangeGradientNorms(d.memoryx->gradients(), d.layerRanges);
    if (maxGradientNorm > 0.0) {
        const double scale = optim::clipFactor(result.gradNorm, maxGradientNorm);
        d.memoryxQueue.post([&d, step, head, lr, scale, updateCount] {
            for (int l = head; l >= 0; --l) d.updateLayer(step, l, lr, scale, updateCount);
        });
        d.memoryxQueue.waitIdle();
    }
    double lossSum = 0.0;
    for (double x : losses) lossSum += x;
    result.loss = lossSum / double(m_options.systems * d.micros);
    d.moeStats(result);
    d.accountOverlap();
}

// The end of a step with MemoryX sharded: the gradient norms summed across shards in the
// unsharded order, the clip scale from rank 0, each shard's clipped updates, the loss on rank 0.
StepResult StreamingExecutor::shardedStepEnd(double lr, double maxGradientNorm, int64_t updateCount,
                                             int64_t step, const std::vector<double>& losses) {
    Impl& d = *m_impl;
    comm::Comm& comm = *d.comm;
    const int N = m_options.systems;
    const int head = d.headIndex();
    const int me = comm.rank();
    const bool holder = d.memoryx != nullptr;
    const float* grads = holder ? d.memoryx->gradients() : nullptr;
    const auto channel = comm::Channel::Gradients;
    StepResult result;
    // The global norm: optim::Optimizer::gradientNorm's sums, across shards.
    const auto& groups = m_options.groups;
    // The shards keep gradients in the Trainable layout: the norm walks that layout's shards.
    const bool anyFrozen =
        std::any_of(groups.begin(), groups.end(),
                    [](const optim::ParamGroup& g) { return g.frozen || g.frozenPrefix > 0; });
    assert(!(anyFrozen && d.fullLayout) && "sharded MemoryX keeps the Trainable layout");
    const ShardPlan trainable = m_plan.overTrainable(groups);
    if (!anyFrozen) {
        result.gradNorm =
            shardedGlobalNorm(comm, channel, trainable, grads, 0, m_table.totalSize());
    } else {
        double sumSquares = 0.0;
        size_t at = 0;  // the group's offset in the Trainable layout
        for (const auto& g : groups) {
            if (g.frozen) continue;
            const double n = shardedGlobalNorm(comm, channel, trainable, grads, at + g.frozenPrefix,
                                               at + g.size);
            sumSquares += n * n;
            at += g.size;
        }
        result.gradNorm = std::sqrt(sumSquares);
    }
    // Each layer's norm, computed by its owner over its local offsets, collected on rank 0.
    const size_t L = m_table.layers().size();
    std::vector<double> mineNorms(L, 0.0), allNorms(size_t(comm.size()) * L, 0.0);
    if (holder) {
        std::vector<optim::BufferRange> ranges;
        for (int l = m_plan.firstLayer(me); l <= m_plan.lastLayer(me); ++l)
            ranges.push_back({d.layer(l).offset - d.base, d.layer(l).size});
        const auto norms = d.optimizer->rangeGradientNorms(grads, ranges);
        for (size_t i = 0; i < norms.size(); ++i)
            mineNorms[size_t(m_plan.firstLayer(me)) + i] = norms[i];
    }
    comm.gather(channel, mineNorms.data(), L * sizeof(double), allNorms.data(),
                std::vector<size_t>(size_t(comm.size()), L * sizeof(double)), 0);
    if (maxGradientNorm > 0.0) {
        double scale = optim::clipFactor(result.gradNorm, maxGradientNorm);
        comm.broadcast(channel, &scale, sizeof scale, 0);
        if (holder) {
            d.memoryxQueue.post([&d, this, step, head, lr, scale, updateCount, me] {
                for (int l = head; l >= 0; --l)
                    if (m_plan.ownerOfLayer(l) == me)
                        d.updateLayer(step, l, lr, scale, updateCount);
            });
            d.memoryxQueue.waitIdle();
        }
    }
    d.accountOverlap();
    if (me != 0) return StepResult{};
    for (size_t l = 0; l < L; ++l)
        result.layerGradNorms.push_back(allNorms[size_t(m_plan.ownerOfLayer(int(l))) * L + l]);
    double lossSum = 0.0;
    for (double x : losses) lossSum += x;
    result.loss = lossSum / double(N * d.micros);
    d.moeStats(result);
    return result;
}

}  // namespace ws::streaming
