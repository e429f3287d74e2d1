// SPDX-License-Identifier: GPL-3.0-or-later
// Session (session.h): the run's lifecycle (start, state, log, failure) and the preparation
// phases, each of which builds one of the run's parts (session_state.h) and puts it in place.
// The run's data is prepared in session_data.cpp, the training loop and its outputs are in
// session_loop.cpp.
#include "engine/session/session.h"

#include <fmt/format.h>

#include <ctime>
#include <new>

#include "engine/config/validate.h"
#include "engine/core/paths.h"
#include "engine/core/units.h"
#include "engine/model/model_facts.h"
#include "engine/session/cluster_worker.h"
#include "engine/tensor/simd.h"
#include "engine/tensor/threads.h"
#include "engine/wafer/run_fit.h"

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
    const Status recorded = m_impl->record.setStatus(state);
    const bool ended = state == RunState::Finished || state == RunState::Stopped ||
                       state == RunState::Diverged || state == RunState::Failed;
    // Rows the run store could not write are lost: say so before the run's end is announced, so
    // a run that looks complete in the store is not taken for one.
    if (ended) {
        if (auto lost = m_impl->record.lostRecords(recorded))
            m_events.push(LogLine{LogLine::Level::Error, std::move(*lost)});
    }
    m_events.push(StateChange{state, std::move(detail)});
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
    m_impl->record.event(level, message);
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
    m_impl->record.flush();
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
    if (Status st = prepareSparsity(p); !st.ok()) return st;
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
    if (!m_impl->weights->sharded()) releaseWorkers();
    finishTraining(p, progress);
    return writeOutputs(p, progress);
}

// MemoryX: master weights and optimizer state, from the initializers or a checkpoint.
Status Session::prepareMemoryX(Prepared& p) {
    const config::Config& cfg = m_config.config;
    p.shape = model::GptShape::fromConfig(cfg.model);
    p.shape.applyLora(cfg.lora);
    m_impl->weights = std::make_unique<RunWeights>(cfg, p.shape);
    RunWeights& weights = *m_impl->weights;
    weights.setAddedTokens(m_impl->addedTokens);
    m_summary.parameterCount = static_cast<int64_t>(weights.table().totalSize());
    // A resume is verified before MemoryX exists, so a refusal creates no store file.
    if (!m_options.resumeFrom.empty()) {
        auto plan = planResume(m_options.resumeFrom, cfg, m_options.allowConfigChange);
        if (!plan.ok()) return plan.error();
        p.resume.emplace(std::move(plan).value());
    }
    if (Status st = weights.planShards(cluster() ? m_options.comm->size() : 1); !st.ok()) return st;
    m_activity = weights.allocationActivity();
    if (Status st = weights.allocate(m_options.comm); !st.ok()) return st;
    return weights.loadStarting(p.resumePlan(), [this](LogLine::Level level, std::string message) {
        log(level, std::move(message));
    });
}

// Static sparsity, then the sparsity section's masks.
Status Session::prepareSparsity(Prepared& p) {
    p.sparsity.emplace(
        m_config.config, *m_impl->weights,
        [this](LogLine::Level level, std::string message) { log(level, std::move(message)); });
    if (Status st = p.sparsity->pruneStatic(); !st.ok()) return st;
    return p.sparsity->prepareMasks(p.resumePlan());
}

// The update: the optimizer over MemoryX's state and the learning-rate schedule.
void Session::buildOptimizer(Prepared& p) {
    const RunWeights& weights = *m_impl->weights;
    if (const std::string frozen = RunOptimizer::describeFrozen(m_config.config, weights.groups(),
                                                                weights.table().totalSize());
        !frozen.empty()) {
        log(LogLine::Level::Info, frozen);
    }
    p.optimizer.emplace(m_config.config, *m_impl->weights);
}

// The wafer: does a step fit, with which micro-batch; then the emulator and the streamed
// executor. wafer::fitOnWafer is also the Config tab's live check, so the GUI shows this very
// message.
Status Session::prepareWafer(Prepared& p) {
    const config::Config& cfg = m_config.config;
    auto fit = wafer::fitOnWafer(cfg, p.shape, m_impl->weights->table());
    if (!fit.ok()) return fit.error();
    p.fit = *fit;
    if (cluster()) {
        if (std::string problem =
                clusterPlacementProblem(m_options.comm->size(), cfg.runconfig.numCsx);
            !problem.empty()) {
            return Error{problem};
        }
    }
    return startExecutor(p);
}

Status Session::startExecutor(Prepared& p) {
    const config::Config& cfg = m_config.config;
    RunWeights& weights = *m_impl->weights;
    streaming::StreamingOptions streamingOptions;
    if (cluster()) {
        streamingOptions.comm = m_options.comm;
        const streaming::ShardPlan& plan = weights.shardPlan();
        log(LogLine::Level::Info,
            fmt::format(
                "cluster: {} systems over {} processes, {}; {}", cfg.runconfig.numCsx,
                m_options.comm->size(),
                weights.sharded()
                    ? fmt::format("MemoryX in {} shards ({})", plan.shards(),
                                  plan.describe(weights.table(), weights.bytesPerTrainedParameter(),
                                                weights.groups()))
                    : std::string("MemoryX on rank 0"),
                describePlacement(*m_options.comm, cfg.runconfig.numCsx)));
        if (weights.sharded()) streamingOptions.memoryxShards = plan.shards();
        streamingOptions.reduceFanIn = cfg.memoryx.reduceFanIn;
    }
    streamingOptions.groups = weights.groups();  // which gradients leave the systems
    streamingOptions.systems = cfg.runconfig.numCsx;
    streamingOptions.microBatch = p.fit.microBatch;
    streamingOptions.weightBufferLayers = cfg.wafer.weightBufferLayers;
    p.emulator.emplace(
        cfg, p.shape, p.fit.microBatch, p.T, p.sparsity->blocks(), p.sparsity->staticBlocks(),
        m_events,
        [this](LogLine::Level level, std::string message) { log(level, std::move(message)); });
    m_activity = fmt::format(
        "allocating the training activations ({} system(s) x micro-batch {} x {} tokens, {} per "
        "system)",
        streamingOptions.systems, p.fit.microBatch, p.T,
        formatBytes(double(p.fit.activationBytes)));
    p.executor.emplace(
        p.shape, p.B, p.T, streamingOptions, weights.memoryx(), p.optimizer->optimizer(),
        [&emulator = *p.emulator](const streaming::Span& span) { emulator.publish(span); });
    const streaming::MemoryX& memoryx = weights.memoryx();
    log(LogLine::Level::Info,
        fmt::format("streaming: {} system(s) x {} micro-batch(es) of {} sequences; MemoryX in {} "
                    "({}); activations {} per system",
                    streamingOptions.systems, p.executor->microBatches(), p.fit.microBatch,
                    memoryx.fileBacked() ? memoryx.path().string() : std::string("RAM"),
                    formatBytes(double(memoryx.bytes())),
                    formatBytes(double(p.fit.activationBytes))));
    return Status::success();
}

// Evaluation's activations, no larger than a training micro-batch's (evaluator.h).
void Session::prepareEvaluation(Prepared& p) {
    const config::Config& cfg = m_config.config;
    const int evalB = cfg.evalInput.batchSize;
    const int micro = Evaluator::microBatch(evalB, p.fit.microBatch);
    m_activity =
        fmt::format("allocating the evaluation activations ({} sequences of {} tokens, {})", micro,
                    p.T, formatBytes(double(micro) * double(p.fit.bytesPerSequence)));
    const data::DocumentIndex* documents =
        cfg.evalInput.useVsl && m_impl->evalDocuments ? &*m_impl->evalDocuments : nullptr;
    if (p.evalSource) {
        p.evaluator.emplace(cfg, p.shape, p.T, p.fit.microBatch, *p.evalSource,
                            tokenizer::tokenByteCounts(*m_impl->tokenizer));
    } else {
        p.evaluator.emplace(cfg, p.shape, p.T, p.fit.microBatch, *p.evalData, documents,
                            tokenizer::tokenByteCounts(*m_impl->tokenizer));
    }
    if (micro < evalB) {
        log(LogLine::Level::Info,
            fmt::format("evaluation: eval_input.batch_size {} in {} micro-batches of {} sequences "
                        "(no more than a training micro-batch's memory)",
                        evalB, evalB / micro, micro));
    }
}

// The run's record: the run store, where a resumed run goes in it, and a new run's row.
Status Session::openRunRecord(Prepared& p) {
    const config::Config& cfg = m_config.config;
    m_activity = "opening the run store and the run folder";
    p.db = m_options.dbPath.empty() ? userDataDir() / "runs.sqlite" : m_options.dbPath;
    auto opened = RunRecord::open(p.db, m_options.recorder, m_options.recordInStore);
    if (!opened.ok()) return opened.error();
    RunRecord& record = m_impl->record = std::move(opened).value();
    if (p.resume) {
        auto placed = placeResumedRun(record.store(), *p.resume, cfg);
        if (!placed.ok()) return placed.error();
        p.placement = std::move(placed).value();
    }
    const bool continuing = p.placement && p.placement->continueRun;
    if (!record.recorder() || continuing) return Status::success();
    store::NewRun newRun;
    newRun.name = m_options.runName.empty() ? defaultRunName(cfg) : m_options.runName;
    newRun.configYaml = config::saveConfigYaml(cfg);
    newRun.configHash = config::hashConfig(cfg);
    newRun.kind = m_options.kind;
    newRun.parentRun = m_options.parentRun;
    if (p.placement) newRun.parentRun = p.placement->parentRun;
    newRun.sweepId = m_options.sweepId;
    if (Status st = record.createRun(newRun); !st.ok()) return st;
    m_summary.runId = record.runId();
    return Status::success();
}

// The run's output folder: chosen, created and locked. A continued run takes up its record only
// once the folder is ours.
Status Session::claimModelFolder(Prepared& p) {
    RunRecord& record = m_impl->record;
    auto folder =
        RunFolder::claim(RunFolder::choose(p.placement, m_config.config, p.db, record.runId()));
    if (!folder.ok()) return folder.error();
    p.folder.emplace(std::move(folder).value());
    const fs::path& modelDir = p.folder->path();
    p.startStep = p.resume ? p.resume->checkpoint.state.globalStep : 0;
    if (p.placement && p.placement->continueRun) {
        m_summary.runId = *p.placement->continueRun;
        if (Status st = record.continueRun(*p.placement->continueRun, p.startStep, modelDir,
                                           p.resume->checkpoint);
            !st.ok())
            return st;
    }
    m_summary.modelDir = modelDir;
    m_place = {record.runId(), modelDir};
    m_placeKnown.store(true, std::memory_order_release);
    record.setModelDir(modelDir);
    if (Status st = recordPlacement(p); !st.ok()) return st;
    if (p.resume) {
        if (Status st = checkNoNewerCheckpoint(modelDir, p.startStep); !st.ok()) return st;
        for (LogLine& line : describeResume(*p.resume, *p.placement, record.runId())) {
            log(line.level, std::move(line.message));
        }
    }
    return Status::success();
}

// Which rank on which host computes which systems (runs show, the Wafer tab), and MemoryX's
// shards. A continued run replaces what the interrupted one recorded: it may run with another
// number of processes.
Status Session::recordPlacement(const Prepared& p) {
    if (!m_impl->record.store() || !(cluster() || (p.placement && p.placement->continueRun)))
        return Status::success();
    const int systems = m_config.config.runconfig.numCsx;
    std::vector<store::RankPlacement> ranks;
    for (int r = 0; cluster() && r < m_options.comm->size(); ++r) {
        const auto mine = comm::systemsOfRank(systems, m_options.comm->size(), r);
        ranks.push_back({r, m_options.comm->hostOf(r), mine.first, mine.count});
    }
    return m_impl->record.savePlacement(ranks, m_impl->weights->shardRecords());
}

// The checkpoint keeper, the files a model folder holds beside its weights (config.yaml, the
// tokenizer), and the model as the run log describes it.
Status Session::startRunFolder(Prepared& p) {
    const config::Config& cfg = m_config.config;
    RunWeights& weights = *m_impl->weights;
    p.checkpoints.emplace(
        cfg, p.folder->path(), weights.table(), weights.reader(), weights.stateCopies(),
        p.optimizer->schedule(), m_impl->record.recorder(), m_impl->record.runId(),
        p.resume ? p.startStep : -1,
        [this](LogLine::Level level, std::string message) { log(level, std::move(message)); });
    if (p.sparsity->masked()) p.checkpoints->setMasks(p.sparsity->maskReader());
    if (Status st = p.folder->writeModelFiles(cfg, *m_impl->tokenizer); !st.ok()) return st;
    const model::GptShape& shape = p.shape;
    log(LogLine::Level::Info,
        fmt::format("model: {} parameters, {} layers x {} wide; batch {} x {} tokens; {} steps; "
                    "lr {}",
                    weights.table().totalSize(), shape.layers, shape.channels, p.B, p.T,
                    p.maxSteps(), p.optimizer->schedule().describe()));
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
