#include "engine/session/session.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <limits>
#include <new>

#include "engine/config/validate.h"
#include "engine/core/paths.h"
#include "engine/data/dataset.h"
#include "engine/model/gpt.h"
#include "engine/model/random.h"
#include "engine/optim/optimizer.h"
#include "engine/optim/schedule.h"
#include "engine/session/checkpoint_keeper.h"
#include "engine/session/emulation.h"
#include "engine/session/folder_lock.h"
#include "engine/session/model_files.h"
#include "engine/session/param_groups.h"
#include "engine/session/resume.h"
#include "engine/store/run_store.h"
#include "engine/streaming/executor.h"
#include "engine/streaming/fit.h"
#include "engine/tensor/threads.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/wafer/emulated_time.h"
#include "engine/wafer/run_fit.h"
#include "engine/wafer/sparsity.h"
#include "engine/wafer/spec.h"

namespace ws::session {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double secondsSince(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

double wallClockNow() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string defaultRunName(const config::Config& c) {
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M", &local);
    return fmt::format("{} {}", c.model.name, stamp);
}

// 0.000169 -> "169 µs": emulated step times span microseconds (a teaching model on a WSE-2) to
// seconds (Cerebras-GPT 13B).
std::string shortDuration(double seconds) {
    if (seconds < 1e-3) return fmt::format("{:.3g} µs", seconds * 1e6);
    if (seconds < 1.0) return fmt::format("{:.3g} ms", seconds * 1e3);
    return fmt::format("{:.3g} s", seconds);
}

std::string jsonNumber(double v) {
    return std::isfinite(v) ? fmt::format("{}", v) : "null";
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

// Everything the run builds once prepared; lives on the worker thread.
struct Session::Impl {
    std::unique_ptr<store::RunStore> store;
    int64_t runId = -1;
    std::unique_ptr<tokenizer::Tokenizer> tokenizer;
    std::optional<data::TokenCache> trainCache;
    std::optional<data::Dataset> dataset;
    std::optional<data::TokenCache> evalCache;  // eval_input.data_dir given: its own corpus
    std::optional<data::Dataset> evalDataset;
    std::unique_ptr<model::ParameterTable> table;
    std::unique_ptr<streaming::MemoryX> memoryx;  // master weights and optimizer state
    fs::path modelDir;

    void metric(int64_t step, const char* key, double value, double wall) {
        if (store) store->logMetric(runId, step, key, value, wall);
    }
};

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
    if (m_impl->store && m_impl->runId >= 0 && state != RunState::Preparing &&
        state != RunState::Paused) {
        (void)m_impl->store->setStatus(m_impl->runId, runStateName(state));
    }
    m_events.push(StateChange{state, std::move(detail)});
}

void Session::log(LogLine::Level level, std::string message) {
    if (m_impl->store && m_impl->runId >= 0) {
        const char* name = level == LogLine::Level::Error     ? "error"
                           : level == LogLine::Level::Warning ? "warning"
                                                              : "info";
        m_impl->store->logEvent(m_impl->runId, name, message);
    }
    m_events.push(LogLine{level, std::move(message)});
}

void Session::run() {
    m_summary.finalEvalLoss = kNaN;
    m_summary.initialEvalLoss = kNaN;
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
    if (!status.ok()) {
        log(LogLine::Level::Error, status.error().message);
        setState(RunState::Failed, status.error().message);
    }
    if (m_impl->store) {
        m_impl->store->flush();
    }
}

Status Session::prepareAndTrain() {
    const config::Config& cfg = m_config.config;
    Impl& s = *m_impl;
    const fs::path cacheDir = m_options.cacheDir.empty() ? userCacheDir() : m_options.cacheDir;
    tensor::setComputeThreads(cfg.runconfig.numThreads);
    for (const auto& w : m_config.warnings) log(LogLine::Level::Warning, w);
    m_activity = "reading and tokenizing the corpus";

    // --- Data: corpus -> tokenizer -> token cache -> train/validation windows.
    auto progress = [this](double fraction, std::string_view what) {
        m_events.push(PrepareProgress{fraction, std::string(what)});
    };
    auto corpus = data::readCorpus(cfg.trainInput.dataDir, {cfg.trainInput.allowBinary});
    if (!corpus.ok()) return Error{"train_input.data_dir: " + corpus.error().message};
    auto tok = tokenizer::makeTokenizer(cfg.trainInput.tokenizer, *corpus, cacheDir);
    if (!tok.ok()) return Error{"train_input.tokenizer: " + tok.error().message};
    s.tokenizer = std::move(tok).value();
    if (Status v = config::checkVocab(cfg, s.tokenizer->vocabSize()); !v.ok()) return v;
    auto cache = data::TokenCache::build(*corpus, *s.tokenizer, cacheDir, progress);
    if (!cache.ok()) return cache.error();
    s.trainCache.emplace(std::move(cache).value());
    log(LogLine::Level::Info,
        fmt::format("corpus: {} bytes -> {} tokens ({} tokenizer, vocab {}){}", corpus->size(),
                    s.trainCache->size(), s.tokenizer->kind(), s.tokenizer->vocabSize(),
                    s.trainCache->reused() ? ", token cache reused" : ""));
    const int B = cfg.trainInput.batchSize;
    const int T = cfg.trainInput.maxSequenceLength;
    const bool separateEval = !cfg.evalInput.dataDir.empty();
    auto dataset = data::Dataset::create(*s.trainCache,
                                         separateEval ? 0.0 : cfg.trainInput.validationFraction, T);
    if (!dataset.ok()) return dataset.error();
    s.dataset.emplace(std::move(dataset).value());
    m_summary.unigramEntropyNats = s.dataset->unigramEntropyNats();
    log(LogLine::Level::Info,
        fmt::format("data: {} training tokens, {} held out; unigram entropy {:.3f} nats/token "
                    "(the loss of a model that ignores context)",
                    s.dataset->trainTokens(), s.dataset->validationTokens(),
                    m_summary.unigramEntropyNats));
    const data::Dataset* evalData = &*s.dataset;
    if (separateEval) {
        auto evalCorpus = data::readCorpus(
            cfg.evalInput.dataDir, {cfg.evalInput.allowBinary,
                                    "set eval_input.allow_binary: true to evaluate on it anyway"});
        if (!evalCorpus.ok()) return Error{"eval_input.data_dir: " + evalCorpus.error().message};
        auto evalCache = data::TokenCache::build(*evalCorpus, *s.tokenizer, cacheDir, progress);
        if (!evalCache.ok()) return evalCache.error();
        s.evalCache.emplace(std::move(evalCache).value());
        auto evalDataset = data::Dataset::create(*s.evalCache, 1.0, T);
        if (!evalDataset.ok()) return Error{"eval_input.data_dir: " + evalDataset.error().message};
        s.evalDataset.emplace(std::move(evalDataset).value());
        evalData = &*s.evalDataset;
    }

    // --- MemoryX: master weights and optimizer state, from the initializers or a checkpoint.
    const model::GptShape shape = model::GptShape::fromConfig(cfg.model);
    s.table = std::make_unique<model::ParameterTable>(shape);
    m_summary.parameterCount = static_cast<int64_t>(s.table->totalSize());
    // A resume is verified before MemoryX exists, so a refusal creates no store file.
    std::optional<ResumePlan> resume;
    if (!m_options.resumeFrom.empty()) {
        auto plan = planResume(m_options.resumeFrom, cfg, m_options.allowConfigChange);
        if (!plan.ok()) return plan.error();
        resume.emplace(std::move(plan).value());
    }
    m_activity = fmt::format("allocating MemoryX ({} parameters with their optimizer state)",
                             s.table->totalSize());
    auto memoryx = streaming::MemoryX::create(cfg.memoryx, s.table->totalSize(),
                                              optim::Optimizer::stateCopies(cfg.optimizer),
                                              streaming::largestLayerSize(*s.table));
    if (!memoryx.ok()) return memoryx.error();
    s.memoryx = std::move(memoryx).value();
    float* weights = s.memoryx->weights();
    const int stateCopies = optim::Optimizer::stateCopies(cfg.optimizer);
    if (resume) {
        if (Status st = loadCheckpointTensors(resume->checkpoint, *s.table, weights,
                                              s.memoryx->optimizerState(), stateCopies);
            !st.ok()) {
            return st;
        }
    } else if (!cfg.runconfig.checkpointPath.empty()) {
        if (Status st = loadWeights(cfg.runconfig.checkpointPath, *s.table, weights); !st.ok()) {
            return st;
        }
        log(LogLine::Level::Info, "initialised from " + cfg.runconfig.checkpointPath);
    } else {
        model::initParameters(*s.table, cfg.model, static_cast<uint64_t>(cfg.runconfig.seed),
                              weights);
    }
    // Static sparsity: prune once, here, and keep the pruned weights at zero after every step.
    std::optional<wafer::StaticSparsity> sparsity;
    if (cfg.model.sparsity.level > 0) {
        auto pruned = wafer::StaticSparsity::prune(*s.table, weights, cfg.model.sparsity.level,
                                                   cfg.model.sparsity.targets);
        if (!pruned.ok()) return pruned.error();
        sparsity.emplace(std::move(pruned).value());
        log(LogLine::Level::Info,
            fmt::format("sparsity: {} weights pruned to zero by magnitude ({:.0f}% of {})",
                        sparsity->prunedCount(), 100.0 * cfg.model.sparsity.level,
                        cfg.model.sparsity.targets.empty()
                            ? std::string("every block matrix")
                            : fmt::format("{}", fmt::join(cfg.model.sparsity.targets, ", "))));
    }
    std::vector<optim::ParamGroup> groups = parameterGroups(*s.table, cfg.optimizer);
    if (cfg.optimizer.freezeEmbeddings || cfg.optimizer.freezeBlocks > 0) {
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
    optim::Optimizer optimizer(cfg.optimizer, groups, s.table->totalSize(),
                               s.memoryx->optimizerState());

    // --- The wafer: does a step fit, with which micro-batch; then the streamed executor.
    // wafer::fitOnWafer is also the Config tab's live check, so the GUI shows this very message.
    auto fit = wafer::fitOnWafer(cfg, shape, *s.table);
    if (!fit.ok()) return fit.error();
    streaming::StreamingOptions streamingOptions;
    streamingOptions.systems = cfg.runconfig.numCsx;
    streamingOptions.microBatch = fit->microBatch;
    streamingOptions.weightBufferLayers = cfg.wafer.weightBufferLayers;
    // The emulator: one step's schedule on the emulated machine gives every span its time.
    std::optional<wafer::SpanClock> emulatedClock;
    if (cfg.wafer.emulate) {
        auto prediction =
            predictRunStep(cfg, shape, fit->microBatch,
                           sparsity ? sparsity->blocks() : std::vector<wafer::BlockSparsity>{});
        if (prediction.ok()) {
            emulatedClock.emplace(std::move(prediction).value());
            const auto& p = *emulatedClock->prediction();
            log(LogLine::Level::Info,
                fmt::format("emulated {}: {} system(s), {} per step, {:.3g} tokens/s, MFU "
                            "{:.1f}%; weight streaming {}",
                            p.waferName, p.numSystems, shortDuration(p.stepS), p.tokensPerS,
                            100.0 * p.mfu,
                            p.weightStreamingHidden ? "hidden behind compute"
                                                    : "not hidden (the step waits for weights)"));
        } else {
            log(LogLine::Level::Warning, "emulator off for this run (training is unaffected): " +
                                             prediction.error().message);
        }
    }
    m_activity = fmt::format(
        "allocating the training activations ({} system(s) x micro-batch {} x {} tokens, {:.1f} "
        "MiB per system)",
        streamingOptions.systems, fit->microBatch, T, double(fit->activationBytes) / (1 << 20));
    streaming::StreamingExecutor executor(shape, B, T, streamingOptions, *s.memoryx, optimizer,
                                          [this, &emulatedClock](const streaming::Span& span) {
                                              if (!emulatedClock) return m_events.push(span);
                                              streaming::Span timed = span;
                                              emulatedClock->attach(timed);
                                              m_events.push(timed);
                                          });
    log(LogLine::Level::Info,
        fmt::format("streaming: {} system(s) x {} micro-batch(es) of {} sequences; MemoryX in {} "
                    "({:.1f} MiB); activations {:.1f} MiB per system",
                    streamingOptions.systems, executor.microBatches(), fit->microBatch,
                    s.memoryx->fileBacked() ? s.memoryx->path().string() : std::string("RAM"),
                    double(s.memoryx->bytes()) / (1 << 20),
                    double(fit->activationBytes) / (1 << 20)));
    // Evaluation runs forward on the host in micro-batches no larger than a training micro-batch,
    // whose memory the fit above has accepted: ModelZoo's eval batches (120 x 2048 tokens for
    // Cerebras-GPT) need tens of GB of activations at once, and eval has no backward to
    // accumulate, so splitting it only changes the order of a sum.
    const int evalB = cfg.evalInput.batchSize;
    const int evalMicro = evalMicroBatch(evalB, fit->microBatch);
    m_activity =
        fmt::format("allocating the evaluation activations ({} sequences of {} tokens, {:.1f} MiB)",
                    evalMicro, T, double(evalMicro) * double(fit->bytesPerSequence) / (1 << 20));
    model::Gpt<float> evalGpt(shape, evalMicro, T);
    if (evalMicro < evalB) {
        log(LogLine::Level::Info,
            fmt::format("evaluation: eval_input.batch_size {} in {} micro-batches of {} sequences "
                        "(no more than a training micro-batch's memory)",
                        evalB, evalB / evalMicro, evalMicro));
    }

    m_activity = "opening the run store and the run folder";
    const int64_t maxSteps = cfg.runconfig.maxSteps;
    const optim::LearningRateSchedule schedule(cfg.optimizer.learningRate, maxSteps);

    // --- The run's record and output folder.
    const fs::path db = m_options.dbPath.empty() ? userDataDir() / "runs.sqlite" : m_options.dbPath;
    if (m_options.recordInStore) {
        auto opened = store::RunStore::open(db);
        if (!opened.ok()) return opened.error();
        s.store = std::move(opened).value();
    }
    std::optional<ResumePlacement> placement;
    if (resume) {
        auto placed = placeResumedRun(s.store.get(), *resume, cfg);
        if (!placed.ok()) return placed.error();
        placement = std::move(placed).value();
    }
    const bool continuing = placement && placement->continueRun;
    if (s.store && !continuing) {
        store::NewRun newRun;
        newRun.name = m_options.runName.empty() ? defaultRunName(cfg) : m_options.runName;
        newRun.configYaml = config::saveConfigYaml(cfg);
        newRun.configHash = config::hashConfig(cfg);
        newRun.kind = m_options.kind;
        newRun.parentRun = m_options.parentRun;
        if (placement) newRun.parentRun = placement->parentRun;
        newRun.sweepId = m_options.sweepId;
        auto id = s.store->createRun(newRun);
        if (!id.ok()) return id.error();
        s.runId = *id;
        m_summary.runId = s.runId;
    }
    if (placement && !placement->modelDir.empty()) {
        s.modelDir = placement->modelDir;
    } else if (!cfg.runconfig.modelDir.empty()) {
        s.modelDir = cfg.runconfig.modelDir;
    } else {
        // Beside the run store that numbers the run, so two stores never share a folder.
        s.modelDir = store::RunStore::runsFolderFor(db) /
                     (s.runId >= 0 ? fmt::format("run-{}", s.runId) : std::string("scratch"));
    }
    std::error_code ec;
    fs::create_directories(s.modelDir, ec);
    if (ec) {
        return Error{fmt::format("cannot create runconfig.model_dir {}: {}", s.modelDir.string(),
                                 ec.message())};
    }
    // Held until training ends; a continued run is only touched once its folder is ours.
    auto folderLock = FolderLock::acquire(s.modelDir);
    if (!folderLock.ok()) return folderLock.error();
    const int64_t startStep = resume ? resume->checkpoint.state.globalStep : 0;
    if (continuing) {
        s.runId = *placement->continueRun;
        m_summary.runId = s.runId;
        if (Status st = s.store->truncateAfter(s.runId, startStep); !st.ok()) return st;
    }
    m_summary.modelDir = s.modelDir;
    if (s.store) (void)s.store->setModelDir(s.runId, s.modelDir.string());
    if (resume) {
        if (Status st = checkNoNewerCheckpoint(s.modelDir, startStep); !st.ok()) return st;
        for (LogLine& line : describeResume(*resume, *placement, s.runId)) {
            log(line.level, std::move(line.message));
        }
    }
    CheckpointKeeper checkpoints(
        cfg, s.modelDir, *s.table, *s.memoryx, stateCopies, schedule, s.store.get(), s.runId,
        resume ? startStep : -1,
        [this](LogLine::Level level, std::string message) { log(level, std::move(message)); });
    {
        std::ofstream(s.modelDir / "config.yaml") << config::saveConfigYaml(cfg);
        if (Status st = s.tokenizer->save(s.modelDir); !st.ok()) return st;
    }
    log(LogLine::Level::Info,
        fmt::format("model: {} parameters, {} layers x {} wide; batch {} x {} tokens; {} steps; "
                    "lr {}",
                    s.table->totalSize(), shape.layers, shape.channels, B, T, maxSteps,
                    schedule.describe()));
    if (shape.mup) {
        log(LogLine::Level::Info,
            fmt::format("muP: width multiplier m = {:.4g} (base {}), MLP m_ffn = {:.4g}; hidden "
                        "init std / sqrt(m), hidden LR x {:.4g} (MLP out x {:.4g}); embeddings "
                        "x {:.4g}, logits x {:.4g}, attention scores x {:.4g}",
                        shape.widthMult, cfg.model.mupBaseHiddenSize, shape.ffnWidthMult,
                        1.0 / shape.widthMult, 1.0 / shape.ffnWidthMult, shape.embeddingsScale,
                        shape.outputLogitsScale, shape.attentionScale<double>()));
    }

    // --- Training loop.
    setState(RunState::Running);
    std::vector<int32_t> inputs(size_t(B) * T), targets(size_t(B) * T);
    std::vector<int32_t> evalInputs(size_t(evalB) * T), evalTargets(size_t(evalB) * T);
    const auto trainStart = Clock::now();
    const double wallStart = wallClockNow();
    auto windowStart = trainStart;
    int64_t windowTokens = 0;
    double windowLossSum = 0.0;
    int windowSteps = 0;
    double lastWindowLoss = kNaN;
    const int64_t tokensPerStep = int64_t(B) * T;
    const uint64_t seed = static_cast<uint64_t>(cfg.runconfig.seed);
    const bool dropout = shape.dropout > 0.0 || shape.attnDropout > 0.0;

    // Evaluation reads MemoryX's weights directly (forward only, not streamed).
    auto evaluate = [&](int64_t afterStep) -> double {
        const int64_t available = evalData->validationBatches(evalB, T);
        const int64_t batches = std::min<int64_t>(cfg.runconfig.evalSteps, available);
        if (batches <= 0) return kNaN;
        m_activity = fmt::format("evaluating the weights after step {}", afterStep);
        double sum = 0.0;
        const size_t microTokens = size_t(evalMicro) * size_t(T);
        for (int64_t i = 0; i < batches; ++i) {
            evalData->validationBatch(i, evalB, T, evalInputs.data(), evalTargets.data());
            // Equal micro-batches: the batch's mean loss is the mean of theirs.
            double batchSum = 0.0;
            for (int m = 0; m < evalB / evalMicro; ++m)
                batchSum += evalGpt.forward(weights, evalInputs.data() + m * microTokens,
                                            evalTargets.data() + m * microTokens, false, 0);
            sum += batchSum / double(evalB / evalMicro);
        }
        return sum / double(batches);
    };

    // Pause and stop act between layers (see StreamingExecutor::step for when a step can still
    // be abandoned without touching MemoryX).
    streaming::StepHooks hooks;
    hooks.cancel = &m_stopRequested;
    // Stepping while paused: each stepOnePhase() lets one layer visit through, and the next
    // pause point pauses again without leaving the Paused state.
    auto takePhaseStep = [this] {
        int n = m_phaseSteps.load();
        while (n > 0 && !m_phaseSteps.compare_exchange_weak(n, n - 1)) {
        }
        return n > 0;
    };
    hooks.pausePoint = [&] {
        if (!m_paused || m_stopRequested) return;
        const auto pausedAt = Clock::now();
        if (m_state.load() != RunState::Paused) setState(RunState::Paused);
        bool stepping = false;
        while (m_paused && !m_stopRequested && !(stepping = takePhaseStep())) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        if (!stepping) setState(RunState::Running);
        windowStart += Clock::now() - pausedAt;  // paused time is not training time
    };

    int64_t step = startStep;
    RunState endState = RunState::Finished;
    std::string endDetail;
    checkpoints.atStart(step);
    if (m_options.evaluateAtStart && !resume) {
        m_summary.initialEvalLoss = evaluate(step);
        s.metric(step, "eval_loss", m_summary.initialEvalLoss, wallStart);
        log(LogLine::Level::Info,
            fmt::format("eval loss before training: {:.4f}", m_summary.initialEvalLoss));
    }
    while (step < maxSteps) {
        if (m_options.stopAfterStep >= 0 && step >= m_options.stopAfterStep) m_stopRequested = true;
        if (m_stopRequested) {
            endState = RunState::Stopped;
            endDetail = fmt::format("stopped by request after step {}", step);
            break;
        }
        m_activity = fmt::format("training step {}", step + 1);
        if (step + 1 == m_options.failAllocationAtStep) throw std::bad_alloc();
        s.dataset->trainBatch(step, B, T, cfg.trainInput.shuffle,
                              static_cast<uint64_t>(cfg.trainInput.shuffleSeed), inputs.data(),
                              targets.data());
        const double lr = schedule.at(step);
        if (emulatedClock) {
            m_events.push(
                EmulatedStep{step, emulatedClock->stepStart(step), emulatedClock->prediction()});
        }
        const streaming::StepResult result = executor.step(
            step, inputs.data(), targets.data(), lr, cfg.optimizer.maxGradientNorm, step + 1,
            dropout ? model::rng::dropoutSeedForStep(seed, uint64_t(step)) : 0, hooks);
        if (result.cancelled) {
            endState = RunState::Stopped;
            endDetail = fmt::format("stopped by request after step {}", step);
            break;
        }
        if (sparsity) sparsity->reapply(weights);
        const double loss = result.loss;
        const double norm = result.gradNorm;
        ++step;
        windowTokens += tokensPerStep;
        windowLossSum += loss;
        ++windowSteps;

        StepMetrics m;
        m.step = step;
        m.maxSteps = maxSteps;
        m.loss = loss;
        m.evalLoss = kNaN;
        m.learningRate = lr;
        m.gradNorm = norm;
        m.layerGradNorms = result.layerGradNorms;
        m.tokensSeen = step * tokensPerStep;
        m.elapsedSec = secondsSince(trainStart);
        const double windowSec = secondsSince(windowStart);
        m.tokensPerSec = windowSec > 0 ? double(windowTokens) / windowSec : 0.0;
        const int freq = cfg.runconfig.evalFrequency;
        const bool last = step == maxSteps;
        if ((freq > 0 && step % freq == 0) || (last && cfg.runconfig.evalSteps > 0)) {
            m.evalLoss = evaluate(step);
            m_summary.finalEvalLoss = m.evalLoss;
        }
        m.logStep = step % cfg.runconfig.logSteps == 0 || last;
        const double wall = wallStart + m.elapsedSec;
        s.metric(step, "loss", loss, wall);
        s.metric(step, "lr", lr, wall);
        s.metric(step, "grad_norm", norm, wall);
        if (!std::isnan(m.evalLoss)) s.metric(step, "eval_loss", m.evalLoss, wall);
        if (m.logStep) {
            s.metric(step, "tokens_per_s", m.tokensPerSec, wall);
            lastWindowLoss = windowLossSum / windowSteps;
            windowLossSum = 0.0;
            windowSteps = 0;
            windowStart = Clock::now();
            windowTokens = 0;
        }
        m_events.push(m);
        if (cfg.runconfig.checkLossValues && !std::isfinite(loss)) {
            endState = RunState::Diverged;
            endDetail = fmt::format("loss became {} at step {}", loss, step);
            break;
        }
        if (step < maxSteps) {
            m_activity = fmt::format("writing the checkpoint of step {}", step);
            checkpoints.afterStep(step, m_checkpointRequested.exchange(false));
        }
    }

    {
        const auto st = executor.stats();
        log(LogLine::Level::Info,
            fmt::format("streaming: {:.1f} MiB of weights streamed in, {:.1f} MiB of gradients "
                        "out; at most {} layer(s) on a wafer at once; {:.0f}% of stream-in time "
                        "hidden behind compute",
                        double(st.bytesStreamedIn) / (1 << 20),
                        double(st.bytesStreamedOut) / (1 << 20), st.maxResidentLayers,
                        st.streamInSec > 0 ? 100.0 * st.streamInHiddenSec / st.streamInSec : 0.0));
    }

    // A run that ended before its first evaluation (stopped early, or max_steps 0 to evaluate a
    // checkpoint) still reports where its weights stand.
    if (std::isnan(m_summary.finalEvalLoss) && endState != RunState::Diverged &&
        cfg.runconfig.evalSteps > 0) {
        m_summary.finalEvalLoss = evaluate(step);
        if (step > 0) s.metric(step, "eval_loss", m_summary.finalEvalLoss, wallClockNow());
    }

    // --- Outputs: final weights in Hugging Face GPT-2 layout, summary in the store.
    m_summary.steps = step;
    m_summary.elapsedSec = secondsSince(trainStart);
    m_summary.tokensPerSec = m_summary.elapsedSec > 0
                                 ? double((step - startStep) * tokensPerStep) / m_summary.elapsedSec
                                 : 0.0;
    m_summary.finalLoss = windowSteps > 0 ? windowLossSum / windowSteps : lastWindowLoss;
    m_activity = "writing the final weights and checkpoint";
    if (Status st = saveWeights(s.modelDir / "model.safetensors", *s.table, weights, cfg, step);
        !st.ok()) {
        return st;
    }
    if (s.store) {
        (void)s.store->setSummary(
            s.runId,
            fmt::format(
                R"({{"steps": {}, "final_loss": {}, "final_eval_loss": {}, "tokens_per_s": {}, "elapsed_s": {}, "parameters": {}}})",
                step, jsonNumber(m_summary.finalLoss), jsonNumber(m_summary.finalEvalLoss),
                jsonNumber(m_summary.tokensPerSec), jsonNumber(m_summary.elapsedSec),
                m_summary.parameterCount));
    }
    log(LogLine::Level::Info, "wrote " + (s.modelDir / "model.safetensors").string());
    // A diverged run's weights are not worth resuming from; every other end is.
    if (endState != RunState::Diverged && m_options.finalCheckpoint) checkpoints.atEnd(step);
    setState(endState, endDetail);
    return Status::success();
}

}  // namespace ws::session
