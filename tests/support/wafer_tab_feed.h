// SPDX-License-Identifier: GPL-3.0-or-later
// Feeding the Wafer tab in GUI tests: the spans a run would publish for a cycle-model prediction,
// and a real tiny training run (a Session on a tiny corpus) whose events replay into a tab as the
// main window would deliver them. Shared by the tests under tests/ui/wafer/. GUI thread only.
#pragma once

#include <QTest>
#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "engine/config/config_yaml.h"
#include "engine/session/session.h"
#include "support/test_shapes.h"
#include "ui/wafer/wafer_tab.h"

namespace ws::testing {

// The spans a run publishes for `step` of prediction `p`, in the order work ends (real time =
// emulated time + 1 s); every transfer carries `bytes`.
inline std::vector<streaming::Span> spansOf(const wafer::StepPrediction& p, int64_t step,
                                            int64_t bytes = 0) {
    std::vector<streaming::Span> out;
    const double t0 = double(step) * p.stepS;
    for (const auto& t : p.spans) {
        streaming::Span s;
        s.step = step;
        s.micro = t.micro;
        s.system = t.system;
        s.layer = t.layer;
        s.kind = t.kind;
        s.backwardPass = t.backwardPass;
        s.expert = t.expert;
        const bool moves =
            t.kind != streaming::SpanKind::Forward && t.kind != streaming::SpanKind::Backward;
        s.bytes = moves ? bytes : 0;
        s.emuStart = t0 + t.startS;
        s.emuEnd = t0 + t.endS;
        s.start = 1.0 + s.emuStart;
        s.end = 1.0 + s.emuEnd;
        out.push_back(s);
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const auto& a, const auto& b) { return a.emuEnd < b.emuEnd; });
    return out;
}

// A tiny model that trains in a moment (the session tests' config), `extra` appended.
inline std::string tinyRunYaml(int maxSteps = 2, int logSteps = 1, const std::string& extra = {}) {
    return "model: {hidden_size: 32, num_hidden_layers: 2, num_heads: 2, filter_size: 64,\n"
           "        vocab_size: 256, max_position_embeddings: 64}\n"
           "optimizer: {optimizer_type: adamw, learning_rate: 0.003}\n"
           "train_input: {data_dir: corpus, batch_size: 4, max_sequence_length: 32,\n"
           "              tokenizer: {type: byte}}\n"
           "eval_input: {batch_size: 4}\n"
           "runconfig: {max_steps: " +
           std::to_string(maxSteps) +
           ", eval_frequency: 50, eval_steps: 1, log_steps: " + std::to_string(logSteps) +
           ", seed: 7,\n"
           "            num_threads: 1}\n" +
           extra;
}

// A real run of `yaml` on the tiny corpus in `dir` (teaching wafer, model in dir/model, store
// dir/runs.sqlite when `record`, `overrides` as --set gives them): its config, summary and every
// event it published.
struct TinyRun {
    config::Config config;
    session::RunSummary summary;
    std::vector<session::Event> events;
};

inline bool runTiny(const std::string& yaml, const std::filesystem::path& dir, TinyRun& out,
                    bool record = false, std::vector<std::string> overrides = {}) {
    writeTinyCorpus(dir);
    overrides.insert(overrides.begin(), "wafer.spec=teaching-16x16");
    auto loaded = config::parseConfig(yaml, "tiny.yaml", dir, overrides);
    if (!loaded.ok()) {
        qWarning("%s", loaded.error().message.c_str());
        return false;
    }
    loaded->config.runconfig.modelDir = (dir / "model").string();
    out.config = loaded->config;
    session::SessionOptions options;
    options.dbPath = dir / "runs.sqlite";
    options.cacheDir = dir / "cache";
    options.recordInStore = record;
    auto session = session::Session::create(std::move(loaded).value(), options);
    if (!session.ok()) {
        qWarning("%s", session.error().message.c_str());
        return false;
    }
    (*session)->run();
    out.summary = (*session)->summary();
    (*session)->events().drain(out.events);
    return out.summary.state == session::RunState::Finished;
}

// Replays a finished run's events into `tab` as the main window delivers them: begin, the
// emulated steps, every span, every step's metrics, finished.
inline void feedTab(ui::WaferTab& tab, const TinyRun& run) {
    tab.beginRun(run.config);
    tab.setRunState(session::RunState::Running);
    std::vector<streaming::Span> spans;
    std::vector<session::StepMetrics> metrics;
    for (const auto& e : run.events) {
        if (const auto* es = std::get_if<session::EmulatedStep>(&e)) tab.addEmulatedStep(*es);
        if (const auto* sp = std::get_if<streaming::Span>(&e)) spans.push_back(*sp);
        if (const auto* m = std::get_if<session::StepMetrics>(&e)) metrics.push_back(*m);
    }
    tab.appendSpans(spans);
    tab.appendMetrics(metrics);
    tab.setRunState(session::RunState::Finished);
}

}  // namespace ws::testing
