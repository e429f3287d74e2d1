// SPDX-License-Identifier: GPL-3.0-or-later
// The Wafer tab's weight buffer row shows what the run's executor really held (issue 31): with
// two slots, while a layer computes the next one is already in the other slot, at the phase the
// heatmap shows and in slow motion alike; with one slot, only the layer computing. Read off a
// real tiny run's spans (the emulated schedule of this stream-bound model starts the next
// layer's stream only as this layer's last weights arrive, so it showed the other slot empty).
// Screenshots: executor-buffer-2-slots.png, executor-buffer-slow-motion.png.
#include <QTest>

#include <memory>
#include <variant>
#include <vector>

#include "engine/wafer/buffer_slots.h"
#include "support/gui_test.h"
#include "support/temp_dir.h"
#include "support/wafer_tab_feed.h"
#include "support/wafer_tab_views.h"
#include "ui/wafer/buffer_slots_view.h"
#include "ui/wafer/executor_buffer.h"
#include "ui/wafer/wafer_tab.h"

using ws::testing::WaferTabViews;

using namespace ws::ui;
using ws::testing::artifactPath;

namespace {

int occupied(const ws::wafer::BufferState& b) {
    int n = 0;
    for (const auto& s : b.slotStates) n += s.activity != ws::wafer::SlotActivity::Empty;
    return n;
}

// The middle of a phase's compute on the emulated schedule (system 0, micro-batch 0).
double middleOf(const ws::wafer::StepPrediction& p, int layer, bool backward) {
    return ws::wafer::phaseMidpoint(p, layer, backward);
}

// Read straight off the run's spans (not through ExecutorBuffer): whether the executor's loader
// thread had begun streaming layer + 1's forward weights by `fraction` of layer's last forward
// compute of step 1 on system 0. With two slots it usually has; on a busy machine the loader
// thread can be scheduled late, and then the executor really held one layer.
bool loaderAhead(const ws::testing::TinyRun& run, int layer, double fraction) {
    using ws::streaming::Span;
    using ws::streaming::SpanKind;
    std::vector<Span> spans;
    for (const auto& e : run.events)
        if (const auto* s = std::get_if<Span>(&e); s && s->step == 1 && s->system == 0)
            spans.push_back(*s);
    double start = -1, end = -1;
    for (const Span& s : spans)
        if (s.layer == layer && s.kind == SpanKind::Forward) start = s.start, end = s.end;
    if (end < 0) return false;
    const double at = start + fraction * (end - start);
    for (const Span& s : spans)
        if (s.layer == layer + 1 && s.kind == SpanKind::StreamIn && !s.backwardPass && s.start < at)
            return true;
    return false;
}

}  // namespace

class ExecutorBufferTest : public QObject {
    Q_OBJECT
private slots:
    void twoSlotsHoldTheNextLayerWhileOneComputes() {
        for (int slotCount : {2, 1}) {
            // A run whose loader kept ahead (the usual case; a few tries on a busy machine).
            // Whatever the run, what is shown must match its spans.
            std::unique_ptr<ws::testing::TempDir> dir;
            ws::testing::TinyRun run;
            const auto ahead = [&](int layer, double fraction) {
                return slotCount == 2 && loaderAhead(run, layer, fraction);
            };
            for (int attempt = 0; attempt < 5; ++attempt) {
                dir = std::make_unique<ws::testing::TempDir>();
                run = {};
                QVERIFY(ws::testing::runTiny(
                    ws::testing::tinyRunYaml(2), dir->path(), run, false,
                    {"wafer.weight_buffer_layers=" + std::to_string(slotCount)}));
                if (slotCount == 1 || (ahead(0, 1) && ahead(1, 1) && ahead(2, 1))) break;
            }
            WaferTab tab;
            tab.resize(1366, 768);
            tab.show();
            QVERIFY(QTest::qWaitForWindowExposed(&tab));
            ws::testing::feedTab(tab, run);
            tab.showStep(1);
            const StepRecord* record = tab.history().find(1);
            QVERIFY(record && record->prediction);
            const ws::wafer::StepPrediction& p = *record->prediction;

            // Every forward phase but the last: the next layer is in the other slot once the
            // loader has begun it.
            const ExecutorBuffer executor(*record, slotCount);
            QVERIFY(!executor.empty());
            for (int layer = 0; layer <= 2; ++layer) {
                const auto at = executor.atPhase(layer, false);
                QVERIFY(at);
                QCOMPARE(occupied(*at), ahead(layer, 1 - 1e-3) ? 2 : 1);
            }
            // The heatmap's phase: h.0 forward.
            tab.setPhase(1 * 2);
            tab.redrawNow();
            const QString shown = WaferTabViews(tab).bufferSlots->text();
            QVERIFY2(shown.contains("h.0 forward, computing"), qPrintable(shown));
            QCOMPARE(shown.contains("h.1 forward"), ahead(1, 1 - 1e-3));
            QCOMPARE(shown.contains("slot 2"), slotCount == 2);
            QVERIFY2(shown.contains("gradients out: none"), qPrintable(shown));
            if (slotCount == 2)
                QVERIFY(tab.grab().save(artifactPath("executor-buffer-2-slots.png")));
            // h.1 backward: its own gradients stream out as it ends.
            tab.setPhase(2 * 2 + 1);
            tab.redrawNow();
            QVERIFY2(WaferTabViews(tab).bufferSlots->text().contains("gradients out: h.1"),
                     qPrintable(WaferTabViews(tab).bufferSlots->text()));
            tab.setPhase(1 * 2);
            tab.redrawNow();

            // Slow motion: late in h.0's emulated forward is as late in its real one.
            double start = 0, end = 0;
            for (const auto& s : p.spans)
                if (s.system == 0 && s.layer == 1 && s.kind == ws::streaming::SpanKind::Forward &&
                    s.micro == 0)
                    start = s.startS, end = s.endS;
            QVERIFY(end > start);
            tab.setReplayTime(start + 0.9 * (end - start));
            QVERIFY(tab.isReplaying());
            const QString replayed = WaferTabViews(tab).bufferSlots->text();
            QVERIFY2(replayed.contains("h.0 forward, computing"), qPrintable(replayed));
            QCOMPARE(replayed.contains("h.1 forward"), ahead(1, 0.9));
            if (slotCount == 2)
                QVERIFY(tab.grab().save(artifactPath("executor-buffer-slow-motion.png")));
            // The emulated schedule alone (a stream-bound model): the other slot is empty then.
            if (slotCount == 2)
                QCOMPARE(occupied(ws::wafer::bufferStateAt(p, middleOf(p, 1, false))), 1);
            tab.leaveReplay();
        }
    }
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<ExecutorBufferTest>(argc, argv);
}
#include "executor_buffer_test.moc"
