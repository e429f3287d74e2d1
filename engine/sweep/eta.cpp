// SPDX-License-Identifier: GPL-3.0-or-later
// SweepEta (see eta.h).
#include "engine/sweep/eta.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <set>

#include <unistd.h>

#include "engine/session/session.h"
#include "engine/sweep/cluster.h"

namespace ws::sweep {

namespace fs = std::filesystem;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// What a step of this config computes: the shape key and its training FLOPs (forward and
// backward: 6 per weight per token, plus attention's scores and mixing, 12·L·T·C per token).
TrialCost costOf(const TrialSpec& spec) {
    const config::Config& c = spec.config.config;
    const auto& m = c.model;
    const double C = m.hiddenSize, L = m.numHiddenLayers, F = m.filterSize, V = m.vocabSize;
    const double B = c.trainInput.batchSize, T = c.trainInput.maxSequenceLength;
    double mlp = 2.0 * C * F;
    if (m.moe) mlp *= std::max(1, m.moe->topK);
    const double weights = L * (4.0 * C * C + mlp) + V * C;
    TrialCost cost;
    cost.trial = spec.index;
    cost.flopsPerStep = B * T * (6.0 * weights + 12.0 * L * T * C);
    cost.shape = fmt::format("C{} L{} H{} F{} V{} B{} T{}", m.hiddenSize, m.numHiddenLayers,
                             m.numHeads, m.filterSize, m.vocabSize, c.trainInput.batchSize,
                             c.trainInput.maxSequenceLength);
    if (m.moe) cost.shape += fmt::format(" E{}k{}", m.moe->numExperts, m.moe->topK);
    if (c.lora) cost.shape += " lora";
    cost.maxSteps = c.runconfig.maxSteps;
    return cost;
}

}  // namespace

std::vector<TrialCost> trialCosts(const SweepPlan& plan) {
    std::vector<TrialCost> out;
    out.reserve(plan.trials.size());
    for (const auto& t : plan.trials) out.push_back(costOf(t));
    return out;
}

SweepEta::SweepEta(std::vector<TrialCost> trials, int lanes, std::optional<SweepCalibration> prior)
    : m_trials(std::move(trials)),
      m_seen(m_trials.size()),
      m_lanes(std::max(1, lanes)),
      m_prior(std::move(prior)) {
    for (size_t i = 0; i < m_trials.size(); ++i) m_index[m_trials[i].trial] = i;
}

void SweepEta::started(int trial, double now) {
    const auto it = m_index.find(trial);
    if (it == m_index.end()) return;
    m_seen[it->second] = Seen{};  // a trial taken back from a lost worker starts over
    m_seen[it->second].startedAt = now;
    int running = 0;
    for (const Seen& s : m_seen) running += s.startedAt >= 0 && !s.ended;
    m_lanes = std::max(m_lanes, running);
}

void SweepEta::progress(int trial, int64_t step, double now) {
    const auto it = m_index.find(trial);
    if (it == m_index.end()) return;
    Seen& s = m_seen[it->second];
    if (s.startedAt < 0 || s.ended || step <= s.lastStep) return;
    if (s.firstStep < 0) {
        s.firstStep = step;
        s.firstAt = now;
    }
    s.lastStep = step;
    s.lastAt = now;
}

void SweepEta::finished(int trial, int64_t stepsRun, double now) {
    const auto it = m_index.find(trial);
    if (it == m_index.end()) return;
    Seen& s = m_seen[it->second];
    if (s.startedAt >= 0 && stepsRun > s.lastStep) {
        // The steps between the last progress seen and the end (a front end drains in batches).
        if (s.firstStep < 0) {
            s.firstStep = stepsRun;
            s.firstAt = now;
        }
        s.lastStep = stepsRun;
        s.lastAt = now;
    }
    s.ended = true;
    s.stepsRun = stepsRun;
    s.endAt = now;
}

size_t SweepEta::endedTrials() const {
    return size_t(
        std::count_if(m_seen.begin(), m_seen.end(), [](const Seen& s) { return s.ended; }));
}

SweepEta::Rates SweepEta::rates() const {
    Rates r;
    // Measured: per shape, the time between a trial's first and last step seen over the steps
    // between them (start-up excluded), pooled over the shape's trials.
    std::map<std::string, std::pair<double, double>> pooled;  // shape -> (seconds, steps)
    std::map<std::string, std::pair<double, double>> shares;  // shape -> (steps run, planned)
    double allRun = 0, allPlanned = 0;
    for (size_t i = 0; i < m_trials.size(); ++i) {
        const Seen& s = m_seen[i];
        const TrialCost& t = m_trials[i];
        if (s.startedAt < 0) continue;
        if (s.firstStep >= 0 && s.lastStep > s.firstStep) {
            auto& [seconds, steps] = pooled[t.shape];
            seconds += s.lastAt - s.firstAt;
            steps += double(s.lastStep - s.firstStep);
        }
        if (s.ended && t.maxSteps > 0) {
            const double run = double(std::min(s.stepsRun, t.maxSteps));
            shares[t.shape].first += run;
            shares[t.shape].second += double(t.maxSteps);
            allRun += run;
            allPlanned += double(t.maxSteps);
        }
    }
    for (const auto& [shape, p] : pooled)
        if (p.second > 0) r.measured[shape] = p.first / p.second;
    for (const auto& [shape, p] : shares) r.stepShare[shape] = p.first / p.second;
    r.defaultShare = allPlanned > 0 ? allRun / allPlanned : 1.0;
    // Not measured: seconds per step = a + b·FLOPs, fitted over the measured shapes (a: what a
    // step costs whatever its size; small models are mostly that).
    std::set<std::string> shapes;
    for (const TrialCost& t : m_trials) {
        const auto it = r.measured.find(t.shape);
        if (it != r.measured.end() && shapes.insert(t.shape).second)
            r.points.emplace_back(t.flopsPerStep, it->second);
    }
    if (r.points.size() >= 2) {
        double mx = 0, my = 0;
        for (const auto& [x, y] : r.points) {
            mx += x;
            my += y;
        }
        mx /= double(r.points.size());
        my /= double(r.points.size());
        double sxx = 0, sxy = 0;
        for (const auto& [x, y] : r.points) {
            sxx += (x - mx) * (x - mx);
            sxy += (x - mx) * (y - my);
        }
        if (sxx > 0 && sxy > 0 && my - (sxy / sxx) * mx >= 0) {
            r.slope = sxy / sxx;
            r.intercept = my - r.slope * mx;
            r.fitted = true;
        }
    }
    // Start-up: from a trial's start to its first step, less that step (session set-up, data).
    double sum = 0;
    int n = 0;
    for (size_t i = 0; i < m_trials.size(); ++i) {
        const Seen& s = m_seen[i];
        if (s.startedAt < 0 || s.firstStep < 0) continue;
        const double perStep = secondsPerStep(r, m_trials[i]);
        sum += std::max(0.0, s.firstAt - s.startedAt -
                                 (std::isfinite(perStep) ? perStep * double(s.firstStep) : 0.0));
        ++n;
    }
    r.startup = n > 0 ? sum / n : m_prior ? m_prior->startupSeconds : 0.0;
    // Wind-down: from a trial's last step to its end (its record, the weights written).
    sum = 0;
    n = 0;
    for (const Seen& s : m_seen) {
        if (!s.ended || s.startedAt < 0 || s.firstStep < 0 || s.lastStep != s.stepsRun) continue;
        sum += std::max(0.0, s.endAt - s.lastAt);
        ++n;
    }
    r.windDown = n > 0 ? sum / n : 0.0;
    return r;
}

double SweepEta::secondsPerStep(const Rates& r, const TrialCost& cost) const {
    if (auto it = r.measured.find(cost.shape); it != r.measured.end()) return it->second;
    if (m_prior) {
        if (auto it = m_prior->secondsPerStep.find(cost.shape); it != m_prior->secondsPerStep.end())
            return it->second;
    }
    if (r.points.empty()) return kNaN;
    if (r.fitted) return r.intercept + r.slope * cost.flopsPerStep;
    // Through the origin from the measured shape nearest in FLOPs.
    const auto nearest =
        std::min_element(r.points.begin(), r.points.end(), [&](const auto& a, const auto& b) {
            return std::abs(std::log(a.first / cost.flopsPerStep)) <
                   std::abs(std::log(b.first / cost.flopsPerStep));
        });
    return nearest->second * cost.flopsPerStep / nearest->first;
}

double SweepEta::remainingSeconds(double now) const {
    const Rates r = rates();
    // Lanes free at these times from now: one per running trial (when it is expected to end),
    // the rest free now.
    std::priority_queue<double, std::vector<double>, std::greater<double>> lanes;
    std::vector<const TrialCost*> waiting;  // in run order
    int running = 0;
    for (size_t i = 0; i < m_trials.size(); ++i) {
        const Seen& s = m_seen[i];
        const TrialCost& cost = m_trials[i];
        if (s.ended) continue;
        if (s.startedAt < 0) {
            waiting.push_back(&cost);
            continue;
        }
        const double perStep = secondsPerStep(r, cost);
        if (!std::isfinite(perStep)) return kNaN;
        const double left =
            s.firstStep < 0
                ? r.startup + perStep * double(cost.maxSteps) + r.windDown - (now - s.startedAt)
                : perStep * double(std::max<int64_t>(0, cost.maxSteps - s.lastStep)) + r.windDown -
                      (now - s.lastAt);
        lanes.push(std::max(0.0, left));
        ++running;
    }
    for (int i = running; i < m_lanes; ++i) lanes.push(0.0);
    // The runner starts waiting trials in order, each on the first lane that frees up.
    for (const TrialCost* cost : waiting) {
        const double perStep = secondsPerStep(r, *cost);
        if (!std::isfinite(perStep)) return kNaN;
        const auto share = r.stepShare.find(cost->shape);
        const double duration = r.startup + r.windDown +
                                perStep * double(cost->maxSteps) *
                                    (share != r.stepShare.end() ? share->second : r.defaultShare);
        const double free = lanes.top();
        lanes.pop();
        lanes.push(free + duration);
    }
    double end = 0;
    for (; !lanes.empty(); lanes.pop()) end = std::max(end, lanes.top());
    return end;
}

Result<SweepCalibration> calibrateSweep(const SweepPlan& plan, const CalibrationOptions& options) {
    SweepCalibration out;
    const int parallel = std::max(
        1, std::min<int>(plan.sweep.parallelTrials, int(std::max<size_t>(1, plan.trials.size()))));
    const int cores = options.cores > 0 ? options.cores : availableCores();
    const int steps = std::max(2, options.steps);
    double startupSum = 0;
    int startups = 0;
    std::set<std::string> done;
    // The sessions' folders (weights, lock) go in a scratch folder removed afterwards.
    std::error_code ec;
    const fs::path scratch =
        fs::temp_directory_path(ec) /
        fmt::format("wafer-sweep-timing-{}-{}", ::getpid(),
                    std::chrono::steady_clock::now().time_since_epoch().count());
    struct Remove {
        fs::path path;
        ~Remove() {
            std::error_code ignored;
            fs::remove_all(path, ignored);
        }
    } removeScratch{scratch};
    for (const TrialSpec& spec : plan.trials) {
        if (options.stop && options.stop->load()) return Error{"the estimate was cancelled"};
        const TrialCost cost = costOf(spec);
        if (!done.insert(cost.shape).second) continue;
        config::LoadedConfig cfg = spec.config;
        auto& rc = cfg.config.runconfig;
        if (rc.numThreads <= 0) rc.numThreads = std::max(1, cores / parallel);
        rc.modelDir = (scratch / fmt::format("shape-{}", done.size())).string();
        rc.checkpointSteps = 0;
        rc.evalFrequency = 0;
        rc.evalSteps = 0;
        session::SessionOptions so;
        so.recordInStore = false;
        so.cacheDir = options.cacheDir;
        so.finalCheckpoint = false;
        so.stopAfterStep = steps;  // the config as the trial has it (its schedule, its checks)
        const auto created = std::chrono::steady_clock::now();
        auto session = session::Session::create(cfg, so);
        if (!session.ok())
            return Error{
                fmt::format("trial {} cannot be timed: {}", spec.index, session.error().message)};
        (*session)->run();
        const session::RunSummary& summary = (*session)->summary();
        if (summary.state == session::RunState::Failed)
            return Error{fmt::format("trial {} cannot be timed: {}", spec.index, summary.detail)};
        std::vector<session::Event> events;
        (*session)->events().drain(events);
        std::vector<double> at;  // elapsedSec of each step
        for (const auto& e : events)
            if (const auto* m = std::get_if<session::StepMetrics>(&e)) at.push_back(m->elapsedSec);
        if (at.size() < 2) continue;  // it ended at once (diverged): no timing
        const double perStep = (at.back() - at.front()) / double(at.size() - 1);
        out.secondsPerStep[cost.shape] = perStep;
        const double total =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - created).count();
        startupSum += std::max(0.0, total - perStep * double(at.size()));
        ++startups;
    }
    if (startups > 0) out.startupSeconds = startupSum / startups;
    return out;
}

double estimateSweepSeconds(const SweepPlan& plan, const SweepCalibration& calibration) {
    const SweepEta eta(trialCosts(plan), plan.sweep.parallelTrials, calibration);
    return eta.remainingSeconds(0.0);
}

}  // namespace ws::sweep
