// SPDX-License-Identifier: GPL-3.0-or-later
// Training across processes gives the weights of one process, bit for bit. ctest runs this
// binary under `mpirun -np 1`, `-np 2` and `-np 3`: every rank computes the one-process
// reference itself (the threaded executor over all systems), then all ranks train the same steps
// together with the systems split over them (rank 0 holding MemoryX), and rank 0 compares the
// losses, gradient norms and final weights bit for bit. fp32 and bf16, with and without
// clipping, one or several micro-batches, with dropout (its per-system seeds follow the system's
// number in the job, not its rank), and with more than four systems, where a rank sums the
// groups of four it computes whole before sending them, in every shape of the reduce tree. Then the
// same with MemoryX sharded over 2 and 3 of the ranks (memoryx.shards), frozen groups included. And
// the same with the training mask (issue 34) in the targets.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "engine/comm/comm.h"
#include "engine/model/gpt.h"
#include "engine/model/parameters.h"
#include "engine/streaming/executor.h"
#include "engine/streaming/memoryx.h"
#include "engine/streaming/shards.h"
#include "streaming/streaming_test_util.h"

namespace ws::streaming {
namespace {

comm::Comm* g_comm = nullptr;

constexpr int kB = 24, kT = 8, kSteps = 3;  // B divides into 3, 4, 6 and 8 systems

struct Trajectory {
    std::vector<float> weights;  // rank 0 only
    std::vector<double> losses, norms;
    std::vector<int64_t> lossTokens;    // StepResult::lossTokens, rank 0 only
    int64_t bytesIn = 0, bytesOut = 0;  // StreamingStats: every system's, on rank 0
};

// Step `step`'s batch; masked: with issue 34's training mask (targets < 0 not trained on): a
// prompt of 0-3 positions per sequence, a boundary in odd ones, and sequences 2 and 3 masked
// whole (so a micro-batch of 2 sequences, or 1, trains on nothing).
void stepBatch(int step, int vocab, bool masked, std::vector<int32_t>& in,
               std::vector<int32_t>& out) {
    testing::batch(step, kB, kT, vocab, in, out);
    if (!masked) return;
    for (int b = 0; b < kB; ++b) {
        const int prompt = (b + step) % 4;
        for (int t = 0; t < kT; ++t) {
            const bool trained = b != 2 && b != 3 && t >= prompt && !(b % 2 == 1 && t == 5);
            if (!trained) out[size_t(b) * kT + t] = -1 - (b + t) % 2;
        }
    }
}

Trajectory train(const model::GptShape& shape, double maxNorm, int systems, int microBatch,
                 comm::Comm* comm, bool masked = false, int reduceFanIn = 4) {
    model::ParameterTable table(shape);
    StreamingOptions options;
    options.systems = systems;
    options.microBatch = microBatch;
    options.comm = comm;
    options.reduceFanIn = reduceFanIn;
    Trajectory t;
    std::vector<int32_t> in, out;
    const bool dropout = shape.dropout > 0.0;
    if (comm && comm->rank() != 0) {
        StreamingExecutor exec(shape, kB, kT, options);
        for (int step = 0; step < kSteps; ++step) {
            stepBatch(step, shape.vocab, masked, in, out);
            exec.step(step, in.data(), out.data(), 0.0, maxNorm, step + 1,
                      dropout ? uint64_t(1000 + step) : 0);
        }
        return t;
    }
    const auto oc = testing::adamw(maxNorm);
    auto mx = MemoryX::create(config::MemoryXConfig{}, table.totalSize(),
                              optim::Optimizer::stateCopies(oc), largestLayerSize(table));
    EXPECT_TRUE(mx.ok());
    model::initParameters(table, config::ModelConfig{}, 42, (*mx)->weights());
    optim::Optimizer opt(oc, testing::groupsOf(table), table.totalSize(), (*mx)->optimizerState());
    StreamingExecutor exec(shape, kB, kT, options, **mx, opt);
    for (int step = 0; step < kSteps; ++step) {
        stepBatch(step, shape.vocab, masked, in, out);
        const auto r = exec.step(step, in.data(), out.data(), 1e-2, maxNorm, step + 1,
                                 dropout ? uint64_t(1000 + step) : 0);
        t.losses.push_back(r.loss);
        t.norms.push_back(r.gradNorm);
        t.lossTokens.push_back(r.lossTokens);
    }
    t.weights.assign((*mx)->weights(), (*mx)->weights() + table.totalSize());
    t.bytesIn = exec.stats().bytesStreamedIn;
    t.bytesOut = exec.stats().bytesStreamedOut;
    return t;
}

// (bf16, max gradient norm, systems, micro-batch, dropout)
class ClusterEqualsOneProcess
    : public ::testing::TestWithParam<std::tuple<bool, double, int, int, bool>> {};

TEST_P(ClusterEqualsOneProcess, BitForBit) {
    const auto [bf16, maxNorm, systems, microBatch, dropout] = GetParam();
    model::GptShape shape = testing::streamingShape(true);
    shape.bf16 = bf16;
    if (dropout) shape.dropout = 0.1;
    const Trajectory one = train(shape, maxNorm, systems, microBatch, nullptr);
    const Trajectory many = train(shape, maxNorm, systems, microBatch, g_comm);
    if (g_comm->rank() != 0) return;
    EXPECT_EQ(many.losses, one.losses);
    EXPECT_EQ(many.norms, one.norms);
    EXPECT_EQ(many.bytesIn, one.bytesIn);  // rank 0 reports the whole job's streaming
    EXPECT_EQ(many.bytesOut, one.bytesOut);
    ASSERT_EQ(many.weights.size(), one.weights.size());
    size_t differing = 0;
    for (size_t i = 0; i < one.weights.size(); ++i) differing += many.weights[i] != one.weights[i];
    EXPECT_EQ(differing, 0u) << "of " << one.weights.size() << " weights, across " << g_comm->size()
                             << " processes";
    // The run trained: the reference moved away from its initial weights.
    EXPECT_NE(one.losses.front(), one.losses.back());
}

INSTANTIATE_TEST_SUITE_P(
    Modes, ClusterEqualsOneProcess,
    ::testing::Values(
        std::make_tuple(false, 0.0, 3, 0, false), std::make_tuple(false, 0.5, 4, 1, false),
        std::make_tuple(true, 0.0, 4, 0, false), std::make_tuple(true, 0.5, 3, 2, false),
        std::make_tuple(false, 0.0, 3, 2, true), std::make_tuple(true, 0.0, 4, 3, true),
        // More than four systems: groups of four that one rank computes whole
        // are summed there (2 ranks: both groups of 8, one of 6), the others
        // on rank 0 (3 ranks split every group of 8).
        std::make_tuple(false, 0.0, 8, 0, false), std::make_tuple(true, 0.5, 6, 2, false),
        std::make_tuple(false, 0.5, 8, 1, true)));

// The reduce tree of ranks (memoryx.reduce_fan_in, engine/streaming/rank_tree.h): a gather, a
// chain, a binomial tree, fan-in 3 and SwarmX's 4 all give the one-process bits, with 6 and 8
// systems (blocks that are and are not SwarmX's groups of four), bf16 and clipping.
TEST(ClusterReduceTree, EveryTreeShapeGivesTheOneProcessBits) {
    for (int systems : {6, 8}) {
        model::GptShape shape = testing::streamingShape(true);
        shape.bf16 = systems == 8;
        const double maxNorm = systems == 6 ? 0.5 : 0.0;
        const Trajectory one = train(shape, maxNorm, systems, 0, nullptr);
        for (int fanIn : {0, 1, 2, 3, 4}) {
            const Trajectory many = train(shape, maxNorm, systems, 0, g_comm, false, fanIn);
            if (g_comm->rank() != 0) continue;
            EXPECT_EQ(many.losses, one.losses) << systems << " systems, fan-in " << fanIn;
            EXPECT_EQ(many.norms, one.norms) << systems << " systems, fan-in " << fanIn;
            EXPECT_TRUE(many.weights == one.weights)
                << systems << " systems, fan-in " << fanIn << ", " << g_comm->size() << " ranks";
        }
    }
}

// MemoryX sharded over the first `shards` ranks (memoryx.shards): each shard initialises its own
// tensors from the seed, updates its layers and serves their broadcast. Rank 0 gathers the shards
// at the end (they are contiguous in rank order) for the comparison.
// freeze: 0 nothing, 1 the first block (the norm skips it, as fine-tuning does), 2 LoRA (the
// shape has adapters: every base tensor frozen).
std::vector<optim::ParamGroup> frozenGroups(const model::ParameterTable& table, int freeze) {
    auto groups = testing::groupsOf(table);
    for (size_t i = 0; i < groups.size(); ++i) {
        auto& g = groups[i];
        if (freeze == 1)
            g.frozen = g.offset >= table.layers()[1].offset && g.offset < table.layers()[2].offset;
        if (freeze == 2) g.frozen = model::isFrozenTensor(table, table.tensors()[i], {});
    }
    return groups;
}

Trajectory trainSharded(const model::GptShape& shape, double maxNorm, int systems, int microBatch,
                        int shards, int freeze, bool masked = false) {
    comm::Comm& comm = *g_comm;
    const int rank = comm.rank();
    model::ParameterTable table(shape);
    const auto groups = frozenGroups(table, freeze);
    StreamingOptions options;
    options.systems = systems;
    options.microBatch = microBatch;
    options.comm = &comm;
    options.memoryxShards = shards;
    options.groups = groups;
    const ShardPlan plan(table, shards);
    Trajectory t;
    std::vector<int32_t> in, out;
    const bool dropout = shape.dropout > 0.0;
    const auto oc = testing::adamw(maxNorm);
    std::unique_ptr<MemoryX> mx;
    std::optional<optim::Optimizer> opt;
    std::optional<StreamingExecutor> exec;
    if (rank < shards) {
        // A shard keeps gradients and state for its trainable parameters only.
        auto created = MemoryX::create(config::MemoryXConfig{}, plan.count(rank),
                                       optim::Optimizer::stateCopies(oc), largestLayerSize(table),
                                       plan.trainableOnRank(groups, rank));
        EXPECT_TRUE(created.ok());
        mx = std::move(created).value();
        if (freeze > 0) {
            EXPECT_EQ(mx->trainableCount(), plan.trainableOnRank(groups, rank));
            EXPECT_EQ(mx->bytes(),
                      (plan.count(rank) + 3 * plan.trainableOnRank(groups, rank)) * sizeof(float));
        }
        model::initParameterTensors(table, config::ModelConfig{}, 42, [&](size_t i) -> float* {
            const auto& slice = table.tensors()[i];
            if (plan.ownerOfLayer(slice.layerIndex) != rank) return nullptr;
            return mx->weights() + (slice.offset - plan.begin(rank));
        });
        if (freeze == 2)
            for (const auto& tensor : table.tensors())
                if (tensor.name.find("lora_B") != std::string::npos &&
                    plan.ownerOfLayer(tensor.layerIndex) == rank)
                    std::fill_n(mx->weights() + (tensor.offset - plan.begin(rank)), tensor.size,
                                0.01f);
        opt.emplace(oc, plan.localGroups(groups, rank), plan.count(rank), mx->optimizerState(),
                    optim::GradientLayout::Trainable);
        exec.emplace(shape, kB, kT, options, *mx, *opt);
    } else {
        exec.emplace(shape, kB, kT, options);
    }
    for (int step = 0; step < kSteps; ++step) {
        stepBatch(step, shape.vocab, masked, in, out);
        const auto r = exec->step(step, in.data(), out.data(), 1e-2, maxNorm, step + 1,
                                  dropout ? uint64_t(1000 + step) : 0);
        t.losses.push_back(r.loss);
        t.norms.push_back(r.gradNorm);
        t.lossTokens.push_back(r.lossTokens);
    }
    std::vector<size_t> bytes;
    for (int r = 0; r < comm.size(); ++r) bytes.push_back(plan.countOnRank(r) * sizeof(float));
    if (rank == 0) t.weights.resize(table.totalSize());
    comm.gather(comm::Channel::Gradients, mx ? mx->weights() : nullptr, bytes[size_t(rank)],
                t.weights.data(), bytes, 0);
    t.bytesIn = exec->stats().bytesStreamedIn;
    t.bytesOut = exec->stats().bytesStreamedOut;
    return t;
}

// (bf16, max gradient norm, systems, micro-batch, dropout, frozen: 1 a block, 2 LoRA)
class ShardedEqualsOneProcess
    : public ::testing::TestWithParam<std::tuple<bool, double, int, int, bool, int>> {};

TEST_P(ShardedEqualsOneProcess, BitForBitForEveryShardCount) {
    const auto [bf16, maxNorm, systems, microBatch, dropout, freeze] = GetParam();
    model::GptShape shape = testing::streamingShape(true);
    shape.bf16 = bf16;
    if (dropout) shape.dropout = 0.1;
    if (freeze == 2)
        shape.applyLora(config::LoraConfig{
            .rank = 2, .alpha = 4.0, .dropout = 0.0, .targets = {"c_attn", "mlp.c_proj"}});
    // The one-process reference, with the same frozen groups.
    model::ParameterTable table(shape);
    const auto groups = frozenGroups(table, freeze);
    const auto oc = testing::adamw(maxNorm);
    Trajectory one;
    {
        auto mx = MemoryX::create(config::MemoryXConfig{}, table.totalSize(),
                                  optim::Optimizer::stateCopies(oc), largestLayerSize(table));
        ASSERT_TRUE(mx.ok());
        model::initParameters(table, config::ModelConfig{}, 42, (*mx)->weights());
        if (freeze == 2)  // B nonzero, so every adapter gradient flows
            for (const auto& t : table.tensors())
                if (t.name.find("lora_B") != std::string::npos)
                    std::fill_n((*mx)->weights() + t.offset, t.size, 0.01f);
        optim::Optimizer opt(oc, groups, table.totalSize(), (*mx)->optimizerState());
        StreamingOptions options;
        options.systems = systems;
        options.microBatch = microBatch;
        StreamingExecutor exec(shape, kB, kT, options, **mx, opt);
        std::vector<int32_t> in, out;
        for (int step = 0; step < kSteps; ++step) {
            testing::batch(step, kB, kT, shape.vocab, in, out);
            const auto r = exec.step(step, in.data(), out.data(), 1e-2, maxNorm, step + 1,
                                     shape.dropout > 0.0 ? uint64_t(1000 + step) : 0);
            one.losses.push_back(r.loss);
            one.norms.push_back(r.gradNorm);
        }
        one.weights.assign((*mx)->weights(), (*mx)->weights() + table.totalSize());
    }
    for (int shards = 2; shards <= g_comm->size(); ++shards) {
        const Trajectory many = trainSharded(shape, maxNorm, systems, microBatch, shards, freeze);
        if (g_comm->rank() != 0) continue;
        EXPECT_EQ(many.losses, one.losses) << shards << " shards";
        EXPECT_EQ(many.norms, one.norms) << shards << " shards";
        size_t differing = 0;
        for (size_t i = 0; i < one.weights.size(); ++i)
            differing += many.weights[i] != one.weights[i];
        EXPECT_EQ(differing, 0u) << "of " << one.weights.size() << " weights, " << shards
                                 << " shards over " << g_comm->size() << " processes";
    }
}

INSTANTIATE_TEST_SUITE_P(Modes, ShardedEqualsOneProcess,
                         ::testing::Values(std::make_tuple(false, 0.0, 3, 0, false, 0),
                                           std::make_tuple(false, 0.5, 3, 1, true, 0),
                                           std::make_tuple(true, 0.5, 4, 2, true, 0),
                                           std::make_tuple(false, 0.5, 3, 0, false, 1),
                                           std::make_tuple(true, 0.0, 6, 2, false, 0),
                                           std::make_tuple(false, 0.5, 3, 1, false, 2),
                                           std::make_tuple(true, 0.0, 6, 0, false, 2)));

// Issue 34's training mask across processes: every rank sees the whole global batch's targets
// and counts its trained targets itself, so the masked step (a micro-batch with nothing to train
// on included) is one process's bit for bit, with MemoryX whole on rank 0 or sharded, and rank 0
// reports the loss over the trained targets and their count.
TEST(ClusterMask, MaskedTargetsTrainAsInOneProcessBitForBit) {
    // (bf16, max gradient norm, systems, micro-batch)
    const std::tuple<bool, double, int, int> modes[] = {
        {false, 0.0, 4, 2}, {true, 0.5, 3, 2}, {false, 0.5, 8, 1}};
    for (const auto& [bf16, maxNorm, systems, microBatch] : modes) {
        model::GptShape shape = testing::streamingShape(true);
        shape.bf16 = bf16;
        const Trajectory one = train(shape, maxNorm, systems, microBatch, nullptr, true);
        const Trajectory plain = train(shape, maxNorm, systems, microBatch, nullptr, false);
        const Trajectory many = train(shape, maxNorm, systems, microBatch, g_comm, true);
        std::vector<Trajectory> sharded;
        for (int shards = 2; shards <= g_comm->size(); ++shards)
            sharded.push_back(trainSharded(shape, maxNorm, systems, microBatch, shards, 0, true));
        if (g_comm->rank() != 0) continue;
        std::vector<int64_t> expectedTokens;
        std::vector<int32_t> in, out;
        for (int step = 0; step < kSteps; ++step) {
            stepBatch(step, shape.vocab, true, in, out);
            expectedTokens.push_back(model::countTrainedTargets(out.data(), out.size()));
            EXPECT_LT(expectedTokens.back(), int64_t(kB) * kT - 2 * kT);
        }
        EXPECT_EQ(one.lossTokens, expectedTokens);
        EXPECT_NE(one.losses, plain.losses) << "the mask changed nothing";
        EXPECT_EQ(plain.lossTokens, std::vector<int64_t>(size_t(kSteps), int64_t(kB) * kT));
        EXPECT_EQ(many.losses, one.losses) << g_comm->size() << " processes";
        EXPECT_EQ(many.norms, one.norms);
        EXPECT_EQ(many.lossTokens, expectedTokens);
        EXPECT_TRUE(many.weights == one.weights) << "weights differ";
        for (size_t i = 0; i < sharded.size(); ++i) {
            EXPECT_EQ(sharded[i].losses, one.losses) << i + 2 << " shards";
            EXPECT_EQ(sharded[i].norms, one.norms) << i + 2 << " shards";
            EXPECT_EQ(sharded[i].lossTokens, expectedTokens) << i + 2 << " shards";
            EXPECT_TRUE(sharded[i].weights == one.weights) << i + 2 << " shards";
        }
    }
}

// The plan: contiguous whole layers, every shard at least one, balanced by bytes, and the same on
// every rank (a pure function of the table).
TEST(ShardPlan, ContiguousWholeLayersBalancedByBytes) {
    const model::GptShape shape = testing::streamingShape(true);
    model::ParameterTable table(shape);
    const int L = int(table.layers().size());
    for (int shards = 1; shards <= L; ++shards) {
        const ShardPlan plan(table, shards);
        EXPECT_EQ(plan.begin(0), 0u);
        EXPECT_EQ(plan.end(shards - 1), table.totalSize());
        size_t largestLayer = largestLayerSize(table);
        for (int k = 0; k < shards; ++k) {
            EXPECT_LE(plan.firstLayer(k), plan.lastLayer(k));
            EXPECT_EQ(plan.begin(k), table.layers()[size_t(plan.firstLayer(k))].offset);
            if (k > 0) {
                EXPECT_EQ(plan.begin(k), plan.end(k - 1));
            }
            // No shard is more than a layer away from its fair share.
            EXPECT_LE(double(plan.count(k)), double(table.totalSize()) / shards + largestLayer)
                << shards << " shards";
        }
        for (int l = 0; l < L; ++l) {
            const int owner = plan.ownerOfLayer(l);
            EXPECT_GE(l, plan.firstLayer(owner));
            EXPECT_LE(l, plan.lastLayer(owner));
        }
    }
}

TEST(ClusterExecutor, EachRankComputesItsContiguousBlockOfSystems) {
    const model::GptShape shape = testing::streamingShape(true);
    StreamingOptions options;
    options.systems = 4;
    options.comm = g_comm;
    const auto expected = comm::systemsOfRank(4, g_comm->size(), g_comm->rank());
    if (g_comm->rank() != 0) {
        StreamingExecutor exec(shape, kB, kT, options);
        EXPECT_EQ(exec.localSystems().first, expected.first);
        EXPECT_EQ(exec.localSystems().count, expected.count);
        return;
    }
    model::ParameterTable table(shape);
    const auto oc = testing::adamw(0.0);
    auto mx = MemoryX::create(config::MemoryXConfig{}, table.totalSize(),
                              optim::Optimizer::stateCopies(oc), largestLayerSize(table));
    ASSERT_TRUE(mx.ok());
    optim::Optimizer opt(oc, testing::groupsOf(table), table.totalSize(), (*mx)->optimizerState());
    StreamingExecutor exec(shape, kB, kT, options, **mx, opt);
    EXPECT_EQ(exec.localSystems().first, 0);
    EXPECT_EQ(exec.localSystems().count, expected.count);
}

// Spans carry the rank that did the work: each rank's own systems' stream-in, compute and
// stream-out, and rank 0's MemoryX / SwarmX work (reduce, update); rank 0 receives them all.
TEST(ClusterExecutor, SpansCarryTheRankThatDidTheWork) {
    const model::GptShape shape = testing::streamingShape(true);
    StreamingOptions options;
    options.systems = 3;
    options.comm = g_comm;
    const int rank = g_comm->rank();
    std::mutex mutex;
    std::vector<Span> spans;
    SpanSink sink = [&](const Span& span) {
        std::lock_guard lock(mutex);
        spans.push_back(span);
    };
    std::vector<int32_t> in, out;
    testing::batch(0, kB, kT, shape.vocab, in, out);
    model::ParameterTable table(shape);
    const auto oc = testing::adamw(0.0);
    if (rank != 0) {
        StreamingExecutor exec(shape, kB, kT, options, sink);
        exec.step(0, in.data(), out.data(), 0.0, 0.0, 1, 0);
    } else {
        auto mx = MemoryX::create(config::MemoryXConfig{}, table.totalSize(),
                                  optim::Optimizer::stateCopies(oc), largestLayerSize(table));
        ASSERT_TRUE(mx.ok());
        model::initParameters(table, config::ModelConfig{}, 42, (*mx)->weights());
        optim::Optimizer opt(oc, testing::groupsOf(table), table.totalSize(),
                             (*mx)->optimizerState());
        StreamingExecutor exec(shape, kB, kT, options, **mx, opt, sink);
        exec.step(0, in.data(), out.data(), 1e-2, 0.0, 1, 0);
    }
    // Each rank's sink sees its own work; rank 0's also every other rank's, sent after the step.
    std::set<SpanKind> kinds;
    std::set<int> ranksSeen, systemsSeen;
    double firstStart = 1e300, lastEnd = -1e300;
    for (const Span& span : spans) {
        ranksSeen.insert(span.rank);
        if (span.system >= 0) systemsSeen.insert(span.system);
        if (span.rank == rank) kinds.insert(span.kind);
        if (span.rank == 0) {
            firstStart = std::min(firstStart, span.start);
            lastEnd = std::max(lastEnd, span.end);
        }
        const auto theirs = comm::systemsOfRank(3, g_comm->size(), span.rank);
        if (span.system >= 0) {
            EXPECT_GE(span.system, theirs.first) << "rank " << span.rank;
            EXPECT_LT(span.system, theirs.first + theirs.count) << "rank " << span.rank;
        }
    }
    EXPECT_TRUE(kinds.count(SpanKind::Forward) && kinds.count(SpanKind::StreamIn) &&
                kinds.count(SpanKind::StreamOut));
    EXPECT_EQ(kinds.count(SpanKind::Update) > 0, rank == 0);  // MemoryX lives on rank 0
    if (rank != 0) {
        EXPECT_EQ(ranksSeen, std::set<int>{rank});
        return;
    }
    EXPECT_EQ(int(ranksSeen.size()), g_comm->size());
    EXPECT_EQ(systemsSeen, (std::set<int>{0, 1, 2}));
    // The others' spans are on rank 0's clock: they lie within its own step, give or take the
    // time a message takes (the step's work overlaps on every rank).
    for (const Span& span : spans) {
        if (span.rank == 0) continue;
        EXPECT_GE(span.start, firstStart - 1.0) << "rank " << span.rank;
        EXPECT_LE(span.end, lastEnd + 1.0) << "rank " << span.rank;
    }
}

}  // namespace
}  // namespace ws::streaming

// `--mismatched-identity`: each rank claims a different program; every rank must fail to join
// with the same message naming rank 1, its host and both identities.
int checkIdentityMismatch(int argc, char** argv) {
    const int rank = ws::comm::rankFromEnvironment();
    auto job = ws::comm::fromEnvironment(&argc, &argv, "test build " + std::to_string(rank));
    if (job.ok()) {
        std::cerr << "rank " << rank << ": joined a job whose ranks run different programs\n";
        return 1;
    }
    const std::string& message = job.error().message;
    for (const char* part : {"rank 1 on ", "runs 'test build 1'", "rank 0 on ", "'test build 0'"}) {
        if (message.find(part) == std::string::npos) {
            std::cerr << "rank " << rank << ": no '" << part << "' in: " << message << "\n";
            return 1;
        }
    }
    if (rank == 0) std::cerr << "refused as expected: " << message << "\n";
    return 0;
}

int main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "--mismatched-identity")
        return checkIdentityMismatch(argc, argv);
    int code = 0;
    {
        auto job = ws::comm::fromEnvironment(&argc, &argv, "test build");
        if (!job.ok()) {
            std::cerr << job.error().message << "\n";
            return 1;
        }
        ws::streaming::g_comm = job->get();
        ::testing::InitGoogleTest(&argc, argv);
        if (ws::streaming::g_comm->rank() != 0) {
            // One report, rank 0's; the other ranks' failures still fail the job's exit code.
            auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
            delete listeners.Release(listeners.default_result_printer());
        }
        std::cerr << "cluster_test: rank " << ws::streaming::g_comm->rank() << " of "
                  << ws::streaming::g_comm->size() << "\n";
        code = RUN_ALL_TESTS();
    }
    return code;
}
