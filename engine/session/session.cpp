#include "engine/session/session.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <limits>
#include <new>

#include "engine/config/validate.h"
#include "engine/core/paths.h"
#include "engine/core/units.h"
#include "engine/fileio/atomic_file.h"
#include "engine/model/model_facts.h"
#include "engine/modelio/checkpoints.h"
#include "engine/modelio/weights_io.h"
#include "engine/session/cluster_worker.h"
#include "engine/session/emulation.h"
#include "engine/session/param_groups.h"
#include "engine/session/run_control.h"
#include "engine/store/placement_records.h"
#include "engine/tensor/simd.h"
#include "engine/tensor/threads.h"
#include "engine/wafer/run_fit.h"
#include "engine/wafer/spec.h"

#include "engine/session/session_state.h"

namespace ws::session {

namespace {

std::string defaultRunName(const config::Config& c) {
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M", &local);
    return fmt::format("{} {}", c.model.name, stamp);
}

// The largest divisor of the evaluation batch that is no larger than a training micro-batch.
int evalMicroBatch(int evalBatch, int trainMicroBatch) {
    for (int m = std::min(evalBatch, trainMicroBatch); m > 1; --m)
        if (evalBatch % m == 0) return m;
    return 1;
}

// What a run tells the user when memory runs out: where, and what to lower.
std::string outOfMemoryMessage(const std::string& activity) {
    return fmt::format(
        "out of memory while {}: this computer could not allocate it. The run stopped here; its "
        "metrics and checkpoints so far are kept. Lower train_input.batch_size (or "
        "micro_batch_size), max_sequence_length or eval_input.batch_size, or use a smaller model",
        activity.empty() ? std::string("preparing the run") : activity);
}

}  // namespace

Result<std::unique_ptr<Session>> Session::create(config::LoadedConfig config,
                                                 SessionOptions options) {
    const auto problems = config::validate(config.config);
    if (!problems.empty()) {
        std::string message = "the config has problems:";
        for (const auto& p : problems) message += "\n  - " + p;
        return Error{message};
    }
    return std::unique_ptr<Session>(new Session(std::move(config), std::move(options)));
}

Session::Session(config::LoadedConfig config, SessionOptions options)
    : m_impl(std::make_unique<Impl>()),
      m_config(std::move(config)),
      m_options(std::move(options)) {}

Session::~Session() {
    m_stopRequested = true;
    if (m_thread.joinable()) m_thread.join();
}

void Session::start() {
    m_thread = std::thread([this] { run(); });
}

void Session::wait() {
    if (m_thread.joinable()) m_thread.join();
}

void Session::setState(RunState state, std::string detail) {
    m_state = state;
    m_summary.state = state;
    if (!detail.empty()) m_summary.detail = detail;
    // Paused is recorded too: a studio following the run from another process shows it.
    Status recorded = Status::success();
    if (m_impl->recorder && m_impl->runId >= 0 && state != RunState::Preparing) {
        recorded = m_impl->recorder->setStatus(m_impl->runId, runStateName(state));
    }
    const bool ended = state == RunState::Finished || state == RunState::Stopped ||
                       state == RunState::Diverged || state == RunState::Failed;
    if (ended) reportLostRecords(recorded);
    m_events.push(StateChange{state, std::move(detail)});
}

// Rows the run store could not write (its disk filled up, its folder went away) are lost: say so
// before the run's end is announced, once, so a run that looks complete in the store is not
// taken for one. The model folder is another matter: its checkpoints are written and checked on
// their own.
void Session::reportLostRecords(const Status& statusWrite) {
    Impl& s = *m_impl;
    if (!s.store || s.lostRecordsReported) return;
    s.store->flush();
    Status lost = s.store->asyncWriteStatus();
    if (lost.ok()) lost = statusWrite;
    // A deleted store file takes the writes with it, and SQLite, writing on through its open
    // descriptor, never notices.
    if (std::error_code ec; lost.ok() && !fs::exists(s.store->path(), ec)) {
        s.lostRecordsReported = true;
        m_events.push(LogLine{LogLine::Level::Error,
                              fmt::format("run store {} was deleted while the run was running; "
                                          "its record of this run went with it",
                                          s.store->path().string())});
        return;
    }
    if (lost.ok()) return;
    s.lostRecordsReported = true;
    m_events.push(LogLine{
        LogLine::Level::Error,
        fmt::format("{}; the run's record in the run store is incomplete (free some disk space "
                    "where {} is, or give another store with --db; the weights and checkpoints "
                    "in the model folder are not affected)",
                    lost.error().message, s.store->path().string())});
}

// Across processes: tells the other ranks that training is over (once; whether the run
// finished, stopped or failed before or between steps).
void Session::releaseWorkers() {
    if (!cluster() || m_workersReleased) return;
    m_workersReleased = true;
    std::vector<int32_t> none;
    sendStepOrder(*m_options.comm, StepOrder{}, none, none);
}

void Session::log(LogLine::Level level, std::string message) {
    if (m_impl->recorder && m_impl->runId >= 0) {
        const char* name = level == LogLine::Level::Error     ? "error"
                           : level == LogLine::Level::Warning ? "warning"
                                                              : "info";
        m_impl->recorder->logEvent(m_impl->runId, name, message);
    }
    m_events.push(LogLine{level, std::move(message)});
}

void Session::run() {
    m_summary.finalEvalLoss = kNaN;
    m_summary.initialEvalLoss = kNaN;
    m_summary.finalEvalBitsPerByte = kNaN;
    setState(RunState::Preparing);
    // Nothing may abort the process that hosts the engine (the studio above all): an allocation
    // that fails anywhere in the run, or any other exception, ends the run as failed. Metrics
    // already queued and checkpoints already written stay; unwinding releases the rest.
    Status status = Status::success();
    try {
        status = prepareAndTrain();
    } catch (const std::bad_alloc&) {
        status = Error{outOfMemoryMessage(m_activity)};
    } catch (const std::exception& e) {
        status =
            Error{fmt::format("internal error while {}: {}",
                              m_activity.empty() ? "preparing the run" : m_activity, e.what())};
    }
    releaseWorkers();
    if (!status.ok()) {
        log(LogLine::Level::Error, status.error().message);
        setState(RunState::Failed, status.error().message);
    }
    if (m_impl->recorder) {
        m_impl->recorder->flush();
    }
}

// The run, phase by phase. Each phase returns its first error and leaves what it built in `p`.
Status Session::prepareAndTrain() {
    tensor::setComputeThreads(m_config.config.runconfig.numThreads);
    log(LogLine::Level::Info,
        fmt::format("compute: {} thread(s); element kernels on {} (Highway, chosen for this CPU)",
                    tensor::computeThreads(), tensor::simdTargetName()));
    for (const auto& w : m_config.warnings) log(LogLine::Level::Warning, w);
    Prepared p;
    if (Status st = prepareData(p); !st.ok()) return st;
    if (Status st = prepareMemoryX(p); !st.ok()) return st;
    if (Status st = applySparsity(p); !st.ok()) return st;
    if (Status st = prepareMasks(p); !st.ok()) return st;
    buildOptimizer(p);
    if (Status st = prepareWafer(p); !st.ok()) return st;
    prepareEvaluation(p);
    if (Status st = openRunRecord(p); !st.ok()) return st;
    if (Status st = claimModelFolder(p); !st.ok()) return st;
    if (Status st = startRunFolder(p); !st.ok()) return st;
    Progress progress;
    runTrainingLoop(p, progress);
    // With MemoryX sharded the other ranks still serve the final evaluation, weights and
    // checkpoint; run() releases them after.
    if (!m_impl->shards) releaseWorkers();
    finishTraining(p, progress);
    return writeOutputs(p, progress);
}

// MemoryX: master weights and optimizer state, from the initializers or a checkpoint.
Status Session::prepareMemoryX(Prepared& p) {
    const config::Config& cfg = m_config.config;
    Impl& s = *m_impl;
    p.shape = model::GptShape::fromConfig(cfg.model);
    p.shape.applyLora(cfg.lora);
    s.table = std::make_unique<model::ParameterTable>(p.shape);
    m_summary.parameterCount = static_cast<int64_t>(s.table->totalSize());
    // A resume is verified before MemoryX exists, so a refusal creates no store file.
    if (!m_options.resumeFrom.empty()) {
        auto plan = planResume(m_options.resumeFrom, cfg, m_options.allowConfigChange);
        if (!plan.ok()) return plan.error();
        p.resume.emplace(std::move(plan).value());
    }
    // memoryx.shards > 1: this rank keeps shard 0 (the first layers); the others keep theirs.
    const int shards = cfg.memoryx.shards;
    if (shards > 1) {
        if (std::string problem = streaming::shardsProblem(
                shards, cluster() ? m_options.comm->size() : 1, int(s.table->layers().size()));
            !problem.empty()) {
            return Error{problem};
        }
    }
    s.plan = streaming::ShardPlan(*s.table, shards);
    s.groups = parameterGroups(*s.table, cfg.optimizer);
    m_activity =
        fmt::format("allocating MemoryX ({} parameters with their optimizer state{})",
                    s.plan.count(0), shards > 1 ? ", shard 0 of " + std::to_string(shards) : "");
    auto memoryx = createShardMemoryX(cfg, *s.table, s.plan, 0);
    if (!memoryx.ok()) return memoryx.error();
    s.memoryx = std::move(memoryx).value();
    p.weights = shards > 1 ? nullptr : s.memoryx->weights();
    if (shards > 1) s.shards.emplace(m_options.comm, s.plan, *s.table, *s.memoryx, s.groups);
    p.stateCopies = optim::Optimizer::stateCopies(cfg.optimizer);
    return s.shards ? loadStartingShards(p) : loadStartingWeights(p);
}

namespace {

// runconfig.checkpoint_path into `params` (laid out by `table`). With LoRA the file holds the
// base model without adapters: its tensors are read by name into the adapted layout and the
// adapters are initialised (A seeded, B = 0, so training starts from the base exactly). A file
// that holds this table's adapters too (a LoRA run's weights, imported PEFT adapters) continues
// them: it is read whole.
Status loadStartingFile(const config::Config& cfg, const model::ParameterTable& table,
                        float* params) {
    if (!table.shape().hasLora())
        return modelio::loadWeights(cfg.runconfig.checkpointPath, table, params);
    if (auto file = fileio::SafetensorsFile::open(cfg.runconfig.checkpointPath);
        file.ok() && modelio::matchWeights(*file, table).ok()) {
        return modelio::readWeights(*file, table, params);
    }
    model::GptShape baseShape = table.shape();
    baseShape.applyLora(std::nullopt);
    const model::ParameterTable base(baseShape);
    std::vector<float> baseParams(base.totalSize());
    if (Status st = modelio::loadWeights(cfg.runconfig.checkpointPath, base, baseParams.data());
        !st.ok()) {
        return st;
    }
    model::initParameters(table, cfg.model, static_cast<uint64_t>(cfg.runconfig.seed), params);
    for (const model::TensorSlice& t : base.tensors()) {
        const model::TensorSlice* into = table.find(t.name);
        if (!into) continue;  // cannot happen: the adapted table holds every base tensor
        std::copy(baseParams.begin() + std::ptrdiff_t(t.offset),
                  baseParams.begin() + std::ptrdiff_t(t.offset + t.size), params + into->offset);
    }
    return Status::success();
}

}  // namespace

// The weights (and optimizer state) training starts from: the checkpoint resumed from,
// runconfig.checkpoint_path, or the initializers.
Status Session::loadStartingWeights(Prepared& p) {
    const config::Config& cfg = m_config.config;
    Impl& s = *m_impl;
    if (p.resume) {
        return modelio::loadCheckpointTensors(
            p.resume->checkpoint, *s.table,
            [&](int buffer, size_t t, const void* data, size_t bytes) {
                std::memcpy(shardTensor(*s.memoryx, s.plan, 0, *s.table, buffer, t, s.groups), data,
                            bytes);
            },
            p.stateCopies, frozenTensors(s.groups));
    }
    if (!cfg.runconfig.checkpointPath.empty()) {
        if (Status st = loadStartingFile(cfg, *s.table, p.weights); !st.ok()) {
            return st;
        }
        log(LogLine::Level::Info, "initialised from " + cfg.runconfig.checkpointPath);
        return Status::success();
    }
    model::initParameters(*s.table, cfg.model, static_cast<uint64_t>(cfg.runconfig.seed),
                          p.weights);
    return Status::success();
}

// loadStartingWeights with MemoryX sharded: rank 0 initialises its own tensors (the other shards
// theirs, from the same seeded streams), or hands each tensor of a checkpoint to its shard.
Status Session::loadStartingShards(Prepared& p) {
    const config::Config& cfg = m_config.config;
    Impl& s = *m_impl;
    ShardAccess& access = *s.shards;
    if (p.resume) {
        return modelio::loadCheckpointTensors(
            p.resume->checkpoint, *s.table,
            [&](int buffer, size_t t, const void* data, size_t bytes) {
                access.write(buffer, t, data, bytes);
            },
            p.stateCopies, frozenTensors(s.groups));
    }
    if (!cfg.runconfig.checkpointPath.empty()) {
        // The weights file is read whole (weights only: a quarter of an AdamW MemoryX), then
        // each tensor goes to its shard.
        std::vector<float> whole(s.table->totalSize());
        if (Status st = loadStartingFile(cfg, *s.table, whole.data()); !st.ok()) {
            return st;
        }
        for (size_t t = 0; t < s.table->tensors().size(); ++t) {
            const auto& slice = s.table->tensors()[t];
            access.write(0, t, whole.data() + slice.offset, slice.size * sizeof(float));
        }
        log(LogLine::Level::Info, "initialised from " + cfg.runconfig.checkpointPath);
        return Status::success();
    }
    model::initParameterTensors(
        *s.table, cfg.model, static_cast<uint64_t>(cfg.runconfig.seed), [&](size_t t) {
            return s.plan.ownerOfLayer(s.table->tensors()[t].layerIndex) == 0
                       ? shardTensor(*s.memoryx, s.plan, 0, *s.table, 0, t, s.groups)
                       : nullptr;
        });
    return Status::success();
}

modelio::TensorReader Session::tensorReader() {
    Impl& s = *m_impl;
    if (s.shards) return [&access = *s.shards](int b, size_t t) { return access.read(b, t); };
    return [&s](int b, size_t t) -> const float* {
        return shardTensor(*s.memoryx, s.plan, 0, *s.table, b, t, s.groups);
    };
}

// Static sparsity: prune once, here, and keep the pruned weights at zero after every step.
Status Session::applySparsity(Prepared& p) {
    const config::Config& cfg = m_config.config;
    if (cfg.model.sparsity.level <= 0) return Status::success();
    auto pruned = wafer::StaticSparsity::prune(*m_impl->table, p.weights, cfg.model.sparsity.level,
                                               cfg.model.sparsity.targets);
    if (!pruned.ok()) return pruned.error();
    p.sparsity.emplace(std::move(pruned).value());
    p.prunedWeights = p.sparsity->prunedCount();
    log(LogLine::Level::Info,
        fmt::format("sparsity: {} weights pruned to zero by magnitude ({:.0f}% of {})",
                    p.sparsity->prunedCount(), 100.0 * cfg.model.sparsity.level,
                    cfg.model.sparsity.targets.empty()
                        ? std::string("every block matrix")
                        : fmt::format("{}", fmt::join(cfg.model.sparsity.targets, ", "))));
    return Status::success();
}

// The update: parameter groups (frozen ones included), the optimizer over MemoryX's state and the
// learning-rate schedule.
void Session::buildOptimizer(Prepared& p) {
    const config::Config& cfg = m_config.config;
    Impl& s = *m_impl;
    std::vector<optim::ParamGroup> groups = s.groups;
    p.groups = groups;
    if (cfg.lora) {
        size_t trained = 0;
        for (const auto& g : groups) trained += g.frozen ? 0 : g.size;
        log(LogLine::Level::Info,
            fmt::format("lora: rank {}, alpha {:g} on {}: {} adapter parameters train, {} base "
                        "parameters are frozen",
                        cfg.lora->rank, cfg.lora->alpha, fmt::join(cfg.lora->targets, ", "),
                        trained, s.table->totalSize() - trained));
    } else if (cfg.optimizer.freezeEmbeddings || cfg.optimizer.freezeBlocks > 0) {
        size_t frozen = 0;
        for (const auto& g : groups) frozen += g.frozen ? g.size : 0;
        log(LogLine::Level::Info,
            fmt::format(
                "frozen: {}{}{} ({} of {} parameters are never updated)",
                cfg.optimizer.freezeEmbeddings ? "the embeddings" : "",
                cfg.optimizer.freezeEmbeddings && cfg.optimizer.freezeBlocks > 0 ? " and " : "",
                cfg.optimizer.freezeBlocks > 0
                    ? fmt::format("the first {} block(s)", cfg.optimizer.freezeBlocks)
                    : std::string(),
                frozen, s.table->totalSize()));
    }
    // Sharded: the optimizer updates shard 0's layers, at their offsets in its MemoryX.
    if (s.shards) groups = s.plan.localGroups(groups, 0);
    // Gradients and state of the parameters that train only (MemoryX's layout).
    p.optimizer.emplace(cfg.optimizer, std::move(groups), s.plan.count(0),
                        s.memoryx->optimizerState(), optim::GradientLayout::Trainable);
    p.maxSteps = cfg.runconfig.maxSteps;
    p.schedule.emplace(cfg.optimizer.learningRate, p.maxSteps);
}

// The wafer: does a step fit, with which micro-batch; then the streamed executor.
// wafer::fitOnWafer is also the Config tab's live check, so the GUI shows this very message.
Status Session::prepareWafer(Prepared& p) {
    const config::Config& cfg = m_config.config;
    Impl& s = *m_impl;
    auto fit = wafer::fitOnWafer(cfg, p.shape, *s.table);
    if (!fit.ok()) return fit.error();
    p.fit = *fit;
    streaming::StreamingOptions streamingOptions;
    if (cluster()) {
        const int P = m_options.comm->size();
        if (std::string problem = clusterPlacementProblem(P, cfg.runconfig.numCsx);
            !problem.empty()) {
            return Error{problem};
        }
        streamingOptions.comm = m_options.comm;
        const size_t bytesPerParameter = sizeof(float) * size_t(2 + p.stateCopies);
        log(LogLine::Level::Info,
            fmt::format("cluster: {} systems over {} processes, {}; {}", cfg.runconfig.numCsx, P,
                        s.shards
                            ? fmt::format("MemoryX in {} shards ({})", s.plan.shards(),
                                          s.plan.describe(*s.table, bytesPerParameter, s.groups))
                            : std::string("MemoryX on rank 0"),
                        describePlacement(*m_options.comm, cfg.runconfig.numCsx)));
        if (s.shards) streamingOptions.memoryxShards = s.plan.shards();
    }
    streamingOptions.groups = p.groups;  // which gradients leave the systems
    streamingOptions.systems = cfg.runconfig.numCsx;
    streamingOptions.microBatch = p.fit.microBatch;
    streamingOptions.weightBufferLayers = cfg.wafer.weightBufferLayers;
    startEmulator(p);
    m_activity = fmt::format(
        "allocating the training activations ({} system(s) x micro-batch {} x {} tokens, {} per "
        "system)",
        streamingOptions.systems, p.fit.microBatch, p.T,
        formatBytes(double(p.fit.activationBytes)));
    p.executor.emplace(
        p.shape, p.B, p.T, streamingOptions, *s.memoryx, *p.optimizer,
        [this, &clock = p.emulatedClock, &steps = p.emulatedSteps](const streaming::Span& span) {
            if (!clock) return m_events.push(span);
            streaming::Span timed = span;
            if (steps) {
                steps->attach(timed);
            } else {
                clock->attach(timed);
            }
            m_events.push(timed);
        });
    log(LogLine::Level::Info,
        fmt::format("streaming: {} system(s) x {} micro-batch(es) of {} sequences; MemoryX in {} "
                    "({}); activations {} per system",
                    streamingOptions.systems, p.executor->microBatches(), p.fit.microBatch,
                    s.memoryx->fileBacked() ? s.memoryx->path().string() : std::string("RAM"),
                    formatBytes(double(s.memoryx->bytes())),
                    formatBytes(double(p.fit.activationBytes))));
    return Status::success();
}

// The emulator: one step's schedule on the emulated machine gives every span its time. A run
// the emulator cannot predict trains without it.
void Session::startEmulator(Prepared& p) {
    const config::Config& cfg = m_config.config;
    if (!cfg.wafer.emulate) return;
    auto prediction = predictRunStep(cfg, p.shape, p.fit.microBatch, currentBlockSparsity(p));
    if (!prediction.ok()) {
        log(LogLine::Level::Warning,
            "emulator off for this run (training is unaffected): " + prediction.error().message);
        return;
    }
    p.emulatedClock.emplace(std::move(prediction).value());
    if (packsSequences(cfg.trainInput)) {
        std::vector<wafer::BlockSparsity> blocks;
        if (p.sparsity) blocks = p.sparsity->blocks();
        p.emulatedSteps.emplace(
            p.emulatedClock->prediction(), p.T,
            [&cfg, shape = p.shape, micro = p.fit.microBatch, blocks](int attentionLength) {
                return predictRunStep(cfg, shape, micro, blocks, true, {}, attentionLength);
            });
    }
    const auto& e = *p.emulatedClock->prediction();
    log(LogLine::Level::Info,
        fmt::format("emulated {}: {} system(s), {} per step, {:.3g} tokens/s, MFU {:.1f}%; weight "
                    "streaming {}",
                    e.waferName, e.numSystems, formatSeconds(e.stepS), e.tokensPerS, 100.0 * e.mfu,
                    e.weightStreamingHidden ? "hidden behind compute"
                                            : "not hidden (the step waits for weights)"));
}

// An MoE step's schedule depends on its routing, known only once it has run: the step was
// published (EmulatedStep) and its spans timed with the routing of the step before (uniform for
// the first); now it is published again, planned with its own routing, so the heatmap, the time
// split and the tokens per expert agree, and the next step starts from its end on the emulated
// clock with the same routing until its own is known.
void Session::emulateRouting(Prepared& p, int64_t step,
                             const std::vector<std::vector<int64_t>>& expertTokens) {
    if (!p.emulatedClock || expertTokens.empty()) return;
    const config::Config& cfg = m_config.config;
    const int passes = cfg.runconfig.numCsx * std::max(1, p.executor->microBatches());
    auto perPass = perPassExpertTokens(expertTokens, passes);
    if (perPass != p.emulatedRouting || !p.routedPrediction) {
        auto prediction = predictRunStep(
            cfg, p.shape, p.fit.microBatch,
            p.sparsity ? p.sparsity->blocks() : std::vector<wafer::BlockSparsity>{}, true, perPass);
        if (!prediction.ok()) {
            // Cannot happen for a run whose uniform routing planned (the same ops, other rows);
            // if it does, the step keeps its first plan.
            log(LogLine::Level::Warning,
                "emulator: step " + std::to_string(step + 1) +
                    " could not be re-planned with its routing: " + prediction.error().message);
            return;
        }
        p.emulatedRouting = std::move(perPass);
        p.routedPrediction = std::move(prediction).value();
    }
    const double start = p.emulatedClock->stepStart(step);
    m_events.push(EmulatedStep{step, start, p.routedPrediction});
    p.emulatedClock.emplace(p.routedPrediction, step + 1, start + p.routedPrediction->stepS);
}

// Evaluation runs forward on the host in micro-batches no larger than a training micro-batch,
// whose memory the fit has accepted: ModelZoo's eval batches (120 x 2048 tokens for
// Cerebras-GPT) need tens of GB of activations at once, and eval has no backward to
// accumulate, so splitting it only changes the order of a sum.
void Session::prepareEvaluation(Prepared& p) {
    const int evalB = m_config.config.evalInput.batchSize;
    p.evalMicro = evalMicroBatch(evalB, p.fit.microBatch);
    m_activity = fmt::format(
        "allocating the evaluation activations ({} sequences of {} tokens, {})", p.evalMicro, p.T,
        formatBytes(double(p.evalMicro) * double(p.fit.bytesPerSequence)));
    p.evalGpt.emplace(p.shape, p.evalMicro, p.T);
    if (p.evalMicro < evalB) {
        log(LogLine::Level::Info,
            fmt::format("evaluation: eval_input.batch_size {} in {} micro-batches of {} sequences "
                        "(no more than a training micro-batch's memory)",
                        evalB, evalB / p.evalMicro, p.evalMicro));
    }
    p.evalInputs.resize(size_t(evalB) * p.T);
    p.evalTargets.resize(size_t(evalB) * p.T);
    p.tokenBytes = tokenizer::tokenByteCounts(*m_impl->tokenizer);
}

// The run's record: the run store, where a resumed run goes in it, and a new run's row.
Status Session::openRunRecord(Prepared& p) {
    const config::Config& cfg = m_config.config;
    Impl& s = *m_impl;
    m_activity = "opening the run store and the run folder";
    p.db = m_options.dbPath.empty() ? userDataDir() / "runs.sqlite" : m_options.dbPath;
    if (m_options.recorder) {
        s.recorder = m_options.recorder;
    } else if (m_options.recordInStore) {
        auto opened = store::RunStore::open(p.db);
        if (!opened.ok()) return opened.error();
        s.store = std::move(opened).value();
        s.recorder = s.store.get();
    }
    if (p.resume) {
        auto placed = placeResumedRun(s.store.get(), *p.resume, cfg);
        if (!placed.ok()) return placed.error();
        p.placement = std::move(placed).value();
    }
    const bool continuing = p.placement && p.placement->continueRun;
    if (!s.recorder || continuing) return Status::success();
    store::NewRun newRun;
    newRun.name = m_options.runName.empty() ? defaultRunName(cfg) : m_options.runName;
    newRun.configYaml = config::saveConfigYaml(cfg);
    newRun.configHash = config::hashConfig(cfg);
    newRun.kind = m_options.kind;
    newRun.parentRun = m_options.parentRun;
    if (p.placement) newRun.parentRun = p.placement->parentRun;
    newRun.sweepId = m_options.sweepId;
    auto id = s.recorder->createRun(newRun);
    if (!id.ok()) return id.error();
    s.runId = *id;
    m_summary.runId = s.runId;
    return Status::success();
}

// The run's output folder: chosen, created and locked. A continued run takes up its record only
// once the folder is ours.
Status Session::claimModelFolder(Prepared& p) {
    const config::Config& cfg = m_config.config;
    Impl& s = *m_impl;
    if (p.placement && !p.placement->modelDir.empty()) {
        s.modelDir = p.placement->modelDir;
    } else if (!cfg.runconfig.modelDir.empty()) {
        s.modelDir = cfg.runconfig.modelDir;
    } else {
        // Beside the run store that numbers the run, so two stores never share a folder.
        s.modelDir = store::RunStore::runsFolderFor(p.db) /
                     (s.runId >= 0 ? fmt::format("run-{}", s.runId) : std::string("scratch"));
    }
    std::error_code ec;
    fs::create_directories(s.modelDir, ec);
    if (ec) {
        return Error{fmt::format("cannot create runconfig.model_dir {}: {}", s.modelDir.string(),
                                 ec.message())};
    }
    // The folder becomes ours: requests other processes left for an earlier session of it are
    // stale. They go before the lock is taken, since askers write only to a held folder
    // (sendRunControl): a request sent once the lock is ours is for this session and stays, even
    // if it comes before the rest of the claim (a resumed run shows "running" already). A folder
    // held by another process is not ours to touch; acquiring it fails below.
    if (!FolderLock::isHeld(s.modelDir)) clearControlRequest(s.modelDir);
    auto folderLock = FolderLock::acquire(s.modelDir);
    if (!folderLock.ok()) return folderLock.error();
    p.folderLock.emplace(std::move(folderLock).value());
    p.startStep = p.resume ? p.resume->checkpoint.state.globalStep : 0;
    if (p.placement && p.placement->continueRun) {
        s.runId = *p.placement->continueRun;
        m_summary.runId = s.runId;
        if (Status st = s.store->truncateAfter(s.runId, p.startStep); !st.ok()) return st;
        if (Status st =
                reconcileCheckpointRecords(*s.store, s.runId, s.modelDir, p.resume->checkpoint);
            !st.ok())
            return st;
    }
    m_summary.modelDir = s.modelDir;
    m_place = {s.runId, s.modelDir};
    m_placeKnown.store(true, std::memory_order_release);
    if (s.recorder) (void)s.recorder->setModelDir(s.runId, s.modelDir.string());
    // Which rank on which host computes which systems (runs show, the Wafer tab). A continued run
    // replaces what the interrupted one recorded: it may run with another number of processes.
    if (s.store && (cluster() || (p.placement && p.placement->continueRun))) {
        std::vector<store::RankPlacement> ranks;
        for (int r = 0; cluster() && r < m_options.comm->size(); ++r) {
            const auto mine = comm::systemsOfRank(cfg.runconfig.numCsx, m_options.comm->size(), r);
            ranks.push_back({r, m_options.comm->hostOf(r), mine.first, mine.count});
        }
        if (Status st = store::savePlacement(*s.store, s.runId, ranks); !st.ok()) return st;
        std::vector<store::MemoryXShard> shards;
        // Weights for every parameter; gradients and state for those that train.
        const size_t bytesPerParameter = sizeof(float) * size_t(2 + p.stateCopies);
        for (int k = 0; s.shards && k < s.plan.shards(); ++k) {
            const size_t trained = s.plan.trainableOnRank(s.groups, k);
            shards.push_back({k, s.plan.layerNames(*s.table, k),
                              int64_t((s.plan.count(k) - trained) * sizeof(float) +
                                      trained * bytesPerParameter)});
        }
        if (Status st = store::saveMemoryXShards(*s.store, s.runId, shards); !st.ok()) return st;
    }
    if (p.resume) {
        if (Status st = checkNoNewerCheckpoint(s.modelDir, p.startStep); !st.ok()) return st;
        for (LogLine& line : describeResume(*p.resume, *p.placement, s.runId)) {
            log(line.level, std::move(line.message));
        }
    }
    return Status::success();
}

// The checkpoint keeper, the files a model folder holds beside its weights (config.yaml, the
// tokenizer), and the model as the run log describes it.
Status Session::startRunFolder(Prepared& p) {
    const config::Config& cfg = m_config.config;
    Impl& s = *m_impl;
    p.checkpoints.emplace(
        cfg, s.modelDir, *s.table, tensorReader(), p.stateCopies, *p.schedule, s.recorder, s.runId,
        p.resume ? p.startStep : -1,
        [this](LogLine::Level level, std::string message) { log(level, std::move(message)); });
    if (p.masks) {
        std::vector<bool> masked(s.table->tensors().size(), false);
        for (const auto& m : p.masks->matrices()) masked[m.tensor] = true;
        p.checkpoints->setMasks([&p, masked, &table = *s.table](size_t t) -> const uint8_t* {
            return masked[t] ? p.pruned + table.tensors()[t].offset : nullptr;
        });
    }
    // Atomic, like every file of the folder: a kill mid-write must not leave half a config.
    if (Status st =
            fileio::writeFileAtomically(s.modelDir / "config.yaml", config::saveConfigYaml(cfg));
        !st.ok())
        return st;
    if (Status st = s.tokenizer->save(s.modelDir); !st.ok()) return st;
    const model::GptShape& shape = p.shape;
    log(LogLine::Level::Info,
        fmt::format("model: {} parameters, {} layers x {} wide; batch {} x {} tokens; {} steps; "
                    "lr {}",
                    s.table->totalSize(), shape.layers, shape.channels, p.B, p.T, p.maxSteps,
                    p.schedule->describe()));
    if (const std::string precision = model::precisionDescription(cfg); !precision.empty()) {
        log(LogLine::Level::Info, "precision: " + precision);
    }
    if (shape.mup) {
        log(LogLine::Level::Info,
            fmt::format("muP: width multiplier m = {:.4g} (base {}), MLP m_ffn = {:.4g}; hidden "
                        "init std / sqrt(m), hidden LR x {:.4g} (MLP out x {:.4g}); embeddings "
                        "x {:.4g}, logits x {:.4g}, attention scores x {:.4g}",
                        shape.widthMult, cfg.model.mupBaseHiddenSize, shape.ffnWidthMult,
                        1.0 / shape.widthMult, 1.0 / shape.ffnWidthMult, shape.embeddingsScale,
                        shape.outputLogitsScale, shape.attentionScale<double>()));
    }
    return Status::success();
}

}  // namespace ws::session
