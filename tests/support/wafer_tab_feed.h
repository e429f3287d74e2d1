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

// A real run of `yaml` on the tiny corpus in `dir` (teaching wafer, model in dir/model, store
// dir/runs.sqlite when `record`): its config, summary and every event it published.
struct TinyRun {
    config::Config config;
    session::RunSummary summary;
    std::vector<session::Event> events;
};

inline bool runTiny(const std::string& yaml, const std::filesystem::path& dir, TinyRun& out,
                    bool record = false) {
    writeTinyCorpus(dir);
    auto loaded = config::parseConfig(yaml, "tiny.yaml", dir, {"wafer.spec=teaching-16x16"});
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
