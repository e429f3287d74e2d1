// SPDX-License-Identifier: GPL-3.0-or-later
// The training loop of a Session and what a run leaves behind: the steps with their pause
// points, logging, evaluation and checkpoints, then the summary, the final weights and the run
// record. The preparation phases that build what it runs on are in session.cpp; the jobs the
// loop calls on (the emulator, sparsity, evaluation, the record) are classes of their own.
#include "engine/session/session.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <new>

#include "engine/core/kill_points.h"
#include "engine/core/units.h"
#include "engine/model/random.h"
#include "engine/modelio/checkpoints.h"
#include "engine/modelio/model_folder.h"
#include "engine/session/chat_run_data.h"
#include "engine/session/cluster_worker.h"

#include "engine/session/session_state.h"

namespace ws::session {

namespace {

double secondsSince(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

double wallClockNow() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// The run's summary as the store keeps it (store::RunInfo::summaryJson): one line, these keys in
// this order, a number that is not finite as null. Items read `"key": value`, the layout readers
// of the text (tests) look for.
std::string storedSummaryJson(const RunSummary& s) {
    nlohmann::ordered_json summary;
    summary["steps"] = s.steps;
    summary["final_loss"] = s.finalLoss;
    summary["final_eval_loss"] = s.finalEvalLoss;
    summary["final_eval_bpb"] = s.finalEvalBitsPerByte;
    summary["tokens_per_s"] = s.tokensPerSec;
    summary["elapsed_s"] = s.elapsedSec;
    summary["parameters"] = s.parameterCount;
    std::string line;
    for (const auto& item : summary.items()) {
        line += line.empty() ? "{" : ", ";
        line += nlohmann::json(item.key()).dump() + ": " + item.value().dump();
    }
    return line + "}";
}

}  // namespace

// The training loop: from the start step (after evaluating the starting weights when asked)
// until max_steps, a stop, or a loss that is not finite.
void Session::runTrainingLoop(Prepared& p, Progress& r) {
    setState(RunState::Running);
    r.inputs.resize(size_t(p.B) * p.T);
    r.targets.resize(size_t(p.B) * p.T);
    r.trainStart = Clock::now();
    r.wallStart = wallClockNow();
    r.windowStart = r.trainStart;
    setPauseHooks(r);
    r.step = p.startStep;
    // A resumed run's emulated clock continues where the earlier steps left it.
    p.emulator->catchUp(p.startStep, [&](int64_t step) { return attentionLength(p, r, step); });
    p.checkpoints->atStart(r.step);
    if (m_options.evaluateAtStart && !p.resume) {
        const Evaluation e = evaluate(p, r.step);
        m_summary.initialEvalLoss = e.loss;
        m_impl->record.metric(r.step, "eval_loss", e.loss, r.wallStart);
        m_impl->record.metric(r.step, "eval_bpb", e.bitsPerByte, r.wallStart);
        const std::string counts = lossCountsLabel(m_config.config.trainInput);
        log(LogLine::Level::Info,
            fmt::format("eval loss before training{}: {:.4f} ({:.4f} bits/byte)",
                        counts.empty() ? counts : " (" + counts + ")", e.loss, e.bitsPerByte));
    }
    while (r.step < p.maxSteps() && trainStep(p, r)) {
    }
}

// Pause and stop act between layers (see StreamingExecutor::step for when a step can still be
// abandoned without touching MemoryX).
void Session::setPauseHooks(Progress& r) {
    r.hooks.cancel = &m_stopRequested;
    // Stepping while paused: each stepOnePhase() lets one layer visit through, and the next
    // pause point pauses again without leaving the Paused state.
    auto takePhaseStep = [this] {
        int n = m_phaseSteps.load();
        while (n > 0 && !m_phaseSteps.compare_exchange_weak(n, n - 1)) {
        }
        return n > 0;
    };
    r.hooks.pausePoint = [this, takePhaseStep, &windowStart = r.windowStart] {
        if (!m_paused || m_stopRequested) return;
        const auto pausedAt = Clock::now();
        if (m_state.load() != RunState::Paused) setState(RunState::Paused);
        ++m_pauseStops;
        bool stepping = false;
        while (m_paused && !m_stopRequested && !(stepping = takePhaseStep())) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        if (!stepping) setState(RunState::Running);
        windowStart += Clock::now() - pausedAt;  // paused time is not training time
    };
}

// One training step: its batch, the streamed forward, backward and update, then its metrics and
// checkpoint. False when the run ends here (stopped, or the loss is not finite).
bool Session::trainStep(Prepared& p, Progress& r) {
    const config::Config& cfg = m_config.config;
    if (m_options.stopAfterStep >= 0 && r.step >= m_options.stopAfterStep) m_stopRequested = true;
    if (m_stopRequested) {
        return r.end(RunState::Stopped, fmt::format("stopped by request after step {}", r.step));
    }
    m_activity = fmt::format("training step {}", r.step + 1);
    if (r.step + 1 == m_options.failAllocationAtStep) throw std::bad_alloc();
    bool packed = false;
    if (const data::BatchSource* source = m_impl->trainSource()) {
        r.positionIds.resize(r.inputs.size());
        packed = source->hasPositionIds();
        const auto read = source->trainBatch(
            r.step, p.B, cfg.trainInput.shuffle, static_cast<uint64_t>(cfg.trainInput.shuffleSeed),
            {r.inputs.data(), r.targets.data(), packed ? r.positionIds.data() : nullptr});
        if (!read.ok()) {
            log(LogLine::Level::Error, read.error().message);
            return r.end(RunState::Failed, read.error().message);
        }
    } else {
        m_impl->dataset->trainBatch(r.step, p.B, p.T, cfg.trainInput.shuffle,
                                    static_cast<uint64_t>(cfg.trainInput.shuffleSeed),
                                    r.inputs.data(), r.targets.data());
        packed = trainPositionIds(*m_impl->dataset, *m_impl->documents, cfg.trainInput, r.step, p.B,
                                  p.T, r.positionIds);
    }
    const double lr = p.optimizer->schedule().at(r.step);
    p.executor->setPositionIds(packed ? r.positionIds.data() : nullptr);
    if (r.step == cfg.trainInput.shortSequenceSteps && cfg.trainInput.shortSequenceLength > 0) {
        log(LogLine::Level::Info,
            fmt::format("step {}: sequence length {} -> {} (train_input.short_sequence_steps)",
                        r.step + 1, cfg.trainInput.shortSequenceLength, p.T));
    }
    p.emulator->beginStep(r.step, [&](int64_t step) { return attentionLength(p, r, step); });
    const uint64_t seed = static_cast<uint64_t>(cfg.runconfig.seed);
    const bool dropout = p.shape.dropout > 0.0 || p.shape.attnDropout > 0.0;
    const uint64_t dropoutSeed =
        dropout ? model::rng::dropoutSeedForStep(seed, uint64_t(r.step)) : 0;
    if (cluster()) {
        StepOrder order;
        order.go = kOrderStep;
        order.microBatch = p.fit.microBatch;
        order.step = r.step;
        order.dropoutSeed = dropoutSeed;
        order.lr = lr;
        sendStepOrder(*m_options.comm, order, r.inputs, r.targets);
    }
    const streaming::StepResult result =
        p.executor->step(r.step, r.inputs.data(), r.targets.data(), lr,
                         cfg.optimizer.maxGradientNorm, r.step + 1, dropoutSeed, r.hooks);
    if (result.cancelled) {
        return r.end(RunState::Stopped, fmt::format("stopped by request after step {}", r.step));
    }
    killPoint("step-end");
    afterStep(p, r, result);
    const double loss = result.loss;
    ++r.step;
    r.windowTokens += p.tokensPerStep();
    r.windowLossSum += loss;
    ++r.windowSteps;

    StepMetrics m;
    m.step = r.step;
    m.maxSteps = p.maxSteps();
    m.loss = loss;
    m.evalLoss = kNaN;
    m.evalBitsPerByte = kNaN;
    m.learningRate = lr;
    m.gradNorm = result.gradNorm;
    m.layerGradNorms = result.layerGradNorms;
    m.loadBalancingLoss = result.loadBalancingLoss;
    m.expertTokens = result.expertTokens;
    if (p.sparsity->recordDue(r.step, p.startStep, p.maxSteps(), cfg.runconfig.logSteps))
        p.sparsity->record(m, m_impl->record);
    recordStep(p, r, m);
    if (cfg.runconfig.checkLossValues && !std::isfinite(loss)) {
        return r.end(RunState::Diverged, fmt::format("loss became {} at step {}", loss, r.step));
    }
    if (r.step < p.maxSteps()) {
        m_activity = fmt::format("writing the checkpoint of step {}", r.step);
        p.checkpoints->afterStep(r.step, m_checkpointRequested.exchange(false));
        if (p.checkpoints->folderGone()) {
            // Training on with nowhere to save would only lose more work.
            const std::string why = fmt::format(
                "the run's folder {} was deleted while the run was running: nothing more can "
                "be saved, so training stopped after step {}",
                p.folder->path().string(), r.step);
            log(LogLine::Level::Error, why);
            return r.end(RunState::Failed, why);
        }
    }
    return true;
}

double Session::attentionLength(const Prepared& p, Progress& r, int64_t step) {
    if (const data::BatchSource* source = m_impl->trainSource()) {
        if (!source->hasPositionIds()) return double(p.T);
        std::vector<int32_t> inputs(r.inputs.size()), targets(r.inputs.size()),
            positions(r.inputs.size());
        const config::InputConfig& input = m_config.config.trainInput;
        const auto read =
            source->trainBatch(step, p.B, input.shuffle, static_cast<uint64_t>(input.shuffleSeed),
                               {inputs.data(), targets.data(), positions.data()});
        return read.ok() ? data::attentionLength(positions) : double(p.T);
    }
    const bool packed = trainPositionIds(*m_impl->dataset, *m_impl->documents,
                                         m_config.config.trainInput, step, p.B, p.T, r.positionIds);
    return packed ? data::attentionLength(r.positionIds) : double(p.T);
}

// After the optimizer step: the sparsity kept (and the emulator re-planned when the masks
// changed), the step's real routing (MoE), and its emulated FLOPs.
void Session::afterStep(Prepared& p, Progress& r, const streaming::StepResult& result) {
    if (p.sparsity->afterStep(r.step) && p.emulator->on())
        p.emulator->masksChanged(r.step + 1, p.sparsity->blocks());
    const int passes = m_config.config.runconfig.numCsx * std::max(1, p.executor->microBatches());
    p.emulator->routed(r.step, result.expertTokens, passes);
    if (p.emulator->on())
        m_summary.emulatedFlops +=
            p.emulator->stepFlops(p.tokensPerStep(), p.sparsity->prunedWeights());
}

// A step's figures: throughput, the evaluation when it is due, the store's metrics, the log
// window, and the StepMetrics event.
void Session::recordStep(Prepared& p, Progress& r, StepMetrics& m) {
    const config::Config& cfg = m_config.config;
    const int64_t step = r.step;
    m.tokensSeen = step * p.tokensPerStep();
    m.elapsedSec = secondsSince(r.trainStart);
    const double windowSec = secondsSince(r.windowStart);
    m.tokensPerSec = windowSec > 0 ? double(r.windowTokens) / windowSec : 0.0;
    const int freq = cfg.runconfig.evalFrequency;
    const bool last = step == p.maxSteps();
    if ((freq > 0 && step % freq == 0) || (last && cfg.runconfig.evalSteps > 0)) {
        const Evaluation e = evaluate(p, step);
        m.evalLoss = e.loss;
        m.evalBitsPerByte = e.bitsPerByte;
        m_summary.finalEvalLoss = e.loss;
        m_summary.finalEvalBitsPerByte = e.bitsPerByte;
    }
    m.logStep = step % cfg.runconfig.logSteps == 0 || last;
    const double wall = r.wallStart + m.elapsedSec;
    RunRecord& s = m_impl->record;
    s.metric(step, "loss", m.loss, wall);
    s.metric(step, "lr", m.learningRate, wall);
    s.metric(step, "grad_norm", m.gradNorm, wall);
    if (p.shape.hasMoe()) {
        s.metric(step, "moe/lb_loss", m.loadBalancingLoss, wall);
        for (size_t b = 0; m.logStep && b < m.expertTokens.size(); ++b)
            for (size_t e = 0; e < m.expertTokens[b].size(); ++e)
                s.metric(step, fmt::format("moe/h.{}.expert_{}_tokens", b, e).c_str(),
                         double(m.expertTokens[b][e]), wall);
    }
    if (!std::isnan(m.evalLoss)) {
        s.metric(step, "eval_loss", m.evalLoss, wall);
        s.metric(step, "eval_bpb", m.evalBitsPerByte, wall);
    }
    if (m.logStep) {
        s.metric(step, "tokens_per_s", m.tokensPerSec, wall);
        r.lastWindowLoss = r.windowLossSum / r.windowSteps;
        r.windowLossSum = 0.0;
        r.windowSteps = 0;
        r.windowStart = Clock::now();
        r.windowTokens = 0;
    }
    m_events.push(m);
}

// The held-out loss after `afterStep` steps (evaluator.h).
Session::Evaluation Session::evaluate(Prepared& p, int64_t afterStep) {
    if (p.evaluator->batches() <= 0) return {kNaN, kNaN};
    m_activity = fmt::format("evaluating the weights after step {}", afterStep);
    const Evaluator::Result e = p.evaluator->evaluate(*m_impl->weights);
    if (!p.evaluator->lastError().empty())
        log(LogLine::Level::Error, "evaluation: " + p.evaluator->lastError());
    return {e.loss, e.bitsPerByte};
}

// After the loop: what streaming moved, and where the weights stand when no evaluation has said
// so yet.
void Session::finishTraining(Prepared& p, Progress& r) {
    const config::Config& cfg = m_config.config;
    const auto st = p.executor->stats();
    log(LogLine::Level::Info,
        fmt::format(
            "streaming: {} of {} weights streamed in, {} of fp32 "
            "gradients out; at most {} layer(s) ({} of its {} weight "
            "buffer) on a wafer at once; {:.0f}% of stream-in time hidden behind compute",
            formatBytes(double(st.bytesStreamedIn)), st.bytesPerWeight == 2 ? "bf16" : "fp32",
            formatBytes(double(st.bytesStreamedOut)), st.maxResidentLayers,
            formatBytes(double(st.peakWaferBufferBytes)), formatBytes(double(st.waferBufferBytes)),
            st.streamInSec > 0 ? 100.0 * st.streamInHiddenSec / st.streamInSec : 0.0));
    if (st.reduceLinkBytes.size() > 1) {
        // The tree reduce's links as measured (rank_tree.h): what each rank sent to its parent.
        std::string links;
        for (size_t rank = 0; rank < st.reduceLinkBytes.size(); ++rank) {
            if (rank == 0 && st.reduceLinkBytes[0] == 0) continue;  // the root of every layer
            links += fmt::format("{}rank {} {}", links.empty() ? "" : ", ", rank,
                                 formatBytes(double(st.reduceLinkBytes[rank])));
        }
        log(LogLine::Level::Info,
            fmt::format("reduce tree (memoryx.reduce_fan_in {}): gradient bytes each rank sent to "
                        "its parent in the last step: {}",
                        cfg.memoryx.reduceFanIn, links));
    }
    // Across processes, where rank 0's wall time went (summed over its systems): a slow link
    // between hosts shows as gradients out (rank 0 waits in the reduce), not as compute. Not in
    // one process, whose logs and metrics stay free of wall times (sweeps compare them).
    if (cluster() && r.step > p.startStep) {
        log(LogLine::Level::Info,
            fmt::format("wall time of rank 0's systems over this session's {} steps: {} computing "
                        "layers, {} streaming weights in, {} sending gradients out (the reduce "
                        "across processes: the network, and waiting for the slowest rank)",
                        r.step - p.startStep, formatSeconds(st.computeSec),
                        formatSeconds(st.streamInSec), formatSeconds(st.streamOutSec)));
        m_impl->record.metric(r.step, "wall_compute_s", st.computeSec, wallClockNow());
        m_impl->record.metric(r.step, "wall_stream_in_s", st.streamInSec, wallClockNow());
        m_impl->record.metric(r.step, "wall_stream_out_s", st.streamOutSec, wallClockNow());
    }
    if (p.emulator->on() && r.step > p.startStep) {
        m_summary.emulatedSec = p.emulator->elapsedThrough(r.step);
        log(LogLine::Level::Info,
            fmt::format("emulated: {:.6g} s of wafer time through step {}; {:.6g} training FLOPs "
                        "over this session's {} steps ({} zero weights skipped now)",
                        m_summary.emulatedSec, r.step, m_summary.emulatedFlops,
                        r.step - p.startStep, p.sparsity->prunedWeights()));
        m_impl->record.metric(r.step, "emulated_time_s", m_summary.emulatedSec, wallClockNow());
        m_impl->record.metric(r.step, "emulated_flops", m_summary.emulatedFlops, wallClockNow());
    }
    // A run that ended before its first evaluation (stopped early, or max_steps 0 to evaluate a
    // checkpoint) still reports where its weights stand - except a job across processes that was
    // stopped: mpirun gives it seconds (odls_base_sigkill_timeout) and the checkpoint comes first.
    const bool stoppedCluster = cluster() && r.endState == RunState::Stopped;
    if (std::isnan(m_summary.finalEvalLoss) && r.endState != RunState::Diverged &&
        cfg.runconfig.evalSteps > 0 && !stoppedCluster) {
        const Evaluation e = evaluate(p, r.step);
        m_summary.finalEvalLoss = e.loss;
        m_summary.finalEvalBitsPerByte = e.bitsPerByte;
        if (r.step > 0) {
            m_impl->record.metric(r.step, "eval_loss", e.loss, wallClockNow());
            m_impl->record.metric(r.step, "eval_bpb", e.bitsPerByte, wallClockNow());
        }
    }
}

// Outputs: final weights in Hugging Face GPT-2 layout, the summary in the store, the final
// checkpoint, and the state the run ended in.
Status Session::writeOutputs(Prepared& p, Progress& r) {
    const config::Config& cfg = m_config.config;
    RunRecord& record = m_impl->record;
    const fs::path& modelDir = p.folder->path();
    m_summary.steps = r.step;
    m_summary.elapsedSec = secondsSince(r.trainStart);
    m_summary.tokensPerSec =
        m_summary.elapsedSec > 0
            ? double((r.step - p.startStep) * p.tokensPerStep()) / m_summary.elapsedSec
            : 0.0;
    m_summary.finalLoss = r.windowSteps > 0 ? r.windowLossSum / r.windowSteps : r.lastWindowLoss;
    if (p.emulator->on()) m_summary.emulatedSec = p.emulator->elapsedThrough(r.step);
    m_activity = "writing the final weights and checkpoint";
    if (r.endState == RunState::Diverged) p.checkpoints->setAsideDiverged(r.step);
    if (Status st = modelio::writeModelWeights(modelDir, m_impl->weights->table(),
                                               m_impl->weights->reader(), cfg, r.step);
        !st.ok()) {
        // The steps since the newest checkpoint are lost; say where the run can go on from.
        const auto saved = modelio::listCheckpoints(modelDir);
        if (saved.empty()) return st;
        return Error{fmt::format(
            "{}; the run can go on from its newest complete checkpoint {} once that is fixed: "
            "wafer train --resume {}",
            st.error().message, saved.back().second.string(),
            record.runId() >= 0 ? std::to_string(record.runId()) : saved.back().second.string())};
    }
    record.setSummary(storedSummaryJson(m_summary));
    log(LogLine::Level::Info, "wrote " + (modelDir / modelio::kModelFile).string());
    // A diverged run's weights are not worth resuming from; every other end is.
    if (r.endState != RunState::Diverged && m_options.finalCheckpoint) p.checkpoints->atEnd(r.step);
    setState(r.endState, r.endDetail);
    return Status::success();
}

}  // namespace ws::session
