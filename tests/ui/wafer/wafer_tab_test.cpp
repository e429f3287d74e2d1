// SPDX-License-Identifier: GPL-3.0-or-later
// Tests of the Wafer tab, offscreen, fed a real cycle-model prediction (wafer::predictStep on
// the teaching wafer for a small GPT, two systems) and spans made from its schedule, as a run
// publishes them: the heatmap holds the chosen frame's values, the timeline has one bar per span
// in the right lane, scrubbing back shows the earlier step, Live follows the newest again, the
// history is capped, the gradient norm per layer follows the shown step, and the empty states
// say why there is nothing to draw. Also prints how long a WSE-2 display frame (at most
// 256 x 256 cells) takes to set and replot (a figure, not a pass/fail).
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QTest>
#include <cmath>
#include <map>

#include "engine/config/config_yaml.h"
#include "engine/session/session.h"
#include "engine/wafer/cycle_model.h"
#include "engine/wafer/spec.h"
#include "support/gui_test.h"
#include "support/temp_dir.h"
#include "support/test_shapes.h"
#include "support/wafer_tab_feed.h"
#include "support/wafer_tab_views.h"
#include "ui/wafer/buffer_slots_view.h"
#include "ui/wafer/cluster_diagram.h"
#include "ui/wafer/core_heatmap.h"
#include "ui/wafer/core_regions.h"
#include "ui/wafer/layer_norm_chart.h"
#include "ui/wafer/timeline_view.h"
#include "ui/wafer/wafer_tab.h"

using ws::testing::WaferTabViews;

using namespace ws::ui;
using ws::streaming::SpanKind;

namespace {

using ws::testing::artifactPath;
using ws::testing::spansOf;

ws::model::GptShape smallShape() {
    ws::model::GptShape shape;
    shape.vocab = 64;
    shape.channels = 64;
    shape.layers = 2;
    shape.heads = 2;
    shape.ffn = 256;
    shape.maxPositions = 32;
    return shape;
}

std::shared_ptr<const ws::wafer::StepPrediction> predict(const char* spec, int systems,
                                                         int weightSlots = 2) {
    auto loaded = ws::wafer::loadWaferSpecFile(std::string(WAFER_SOURCE_DIR "/presets/wafers/") +
                                               spec + ".yaml");
    if (!loaded.ok()) qFatal("%s", loaded.error().message.c_str());
    ws::wafer::StepInput input;
    input.shape = smallShape();
    input.batchPerSystem = 2;
    input.seqLen = 32;
    input.numSystems = systems;
    input.weightBufferLayers = weightSlots;
    auto p = ws::wafer::predictStep(*loaded, input);
    if (!p.ok()) qFatal("%s", p.error().message.c_str());
    return std::make_shared<const ws::wafer::StepPrediction>(std::move(p).value());
}

ws::config::Config configFor(bool emulate, int systems) {
    ws::config::Config c;
    c.model.numHiddenLayers = 2;
    c.runconfig.numCsx = systems;
    c.wafer.spec = "teaching-16x16";
    c.wafer.emulate = emulate;
    return c;
}

const std::string kTinyRunYaml = ws::testing::tinyRunYaml();

int laneOfPlanned(const ws::wafer::TimelineSpan& t) {
    switch (t.kind) {
        case SpanKind::Update:
            return 0;
        case SpanKind::Reduce:
            return 1;
        case SpanKind::StreamIn:
            return 2 + 3 * t.system;
        case SpanKind::Forward:
        case SpanKind::Backward:
            return 2 + 3 * t.system + 1;
        case SpanKind::StreamOut:
            return 2 + 3 * t.system + 2;
    }
    return -1;
}

}  // namespace

class WaferTabTest : public QObject {
    Q_OBJECT
private slots:
    // A run across processes (mpirun -np 2, three systems): each system's box names its rank
    // and host; the next run, in one process, forgets it.
    void placementAcrossProcesses() {
        const auto p = predict("teaching-16x16", 3);
        WaferTab tab;
        tab.resize(1300, 850);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        tab.beginRun(configFor(true, 3));
        tab.setPlacement({{0, "hostA", 0, 1}, {1, "hostB", 1, 2}});
        tab.setRunState(ws::session::RunState::Running);
        tab.addEmulatedStep({0, 0.0, p});
        tab.appendSpans(spansOf(*p, 0, 1000));
        tab.redrawNow();
        const std::vector<QString> expected{"rank 0 on hostA", "rank 1 on hostB",
                                            "rank 1 on hostB"};
        QCOMPARE(WaferTabViews(tab).diagram->placement(), expected);
        QVERIFY(tab.grab().save(artifactPath("wafer-tab-placement.png")));
        tab.beginRun(configFor(true, 3));
        QVERIFY(WaferTabViews(tab).diagram->placement().empty());
    }

    // Issue 17, legibility: the buffer's slots at the shown phase, the matrix each region of
    // cores holds, and fitted colours that say they are stretched. Screenshots (looked at):
    // wafer-tab-legible.png (2 slots, fit colours), wafer-tab-one-slot.png.
    void slotsRegionsAndFittedColours() {
        for (int slotCount : {2, 1}) {
            const auto p = predict("teaching-16x16", 1, slotCount);
            WaferTab tab;
            tab.resize(1400, 900);
            tab.show();
            QVERIFY(QTest::qWaitForWindowExposed(&tab));
            tab.beginRun(configFor(true, 1));
            tab.setRunState(ws::session::RunState::Finished);
            tab.addEmulatedStep({0, 0.0, p});
            tab.appendSpans(spansOf(*p, 0, 1000));
            tab.setPhase(1 * 2);  // h.0 forward
            tab.redrawNow();
            const QString buffer = WaferTabViews(tab).bufferSlots->text();
            QVERIFY2(buffer.contains("slot 1: h.0 forward, computing") ||
                         buffer.contains("slot 2: h.0 forward, computing"),
                     qPrintable(buffer));
            QCOMPARE(buffer.contains("slot 2"), slotCount == 2);
            QVERIFY2(buffer.contains("gradients out: none"), qPrintable(buffer));
            tab.setPhase(2 * 2 + 1);  // h.1 backward: its gradients stream out
            tab.redrawNow();
            QVERIFY2(
                WaferTabViews(tab).bufferSlots->text().contains("gradients out → MemoryX: h.1") ||
                    WaferTabViews(tab).bufferSlots->text().contains("gradients out: h.1"),
                qPrintable(WaferTabViews(tab).bufferSlots->text()));
            tab.setPhase(-1);  // the whole step: no one moment to show
            tab.redrawNow();
            QVERIFY(WaferTabViews(tab).bufferSlots->text().contains("one layer phase at a time"));
            QVERIFY(WaferTabViews(tab).heatmap->regions().regions.empty());

            // Regions: a block's forward names its longest op's matrix and its parts.
            tab.setPhase(1 * 2);
            auto* fit = tab.findChild<QCheckBox*>("waferFitColours");
            QVERIFY(fit);
            fit->setChecked(false);
            tab.redrawNow();
            const CoreRegions& regions = WaferTabViews(tab).heatmap->regions();
            QVERIFY2(regions.caption.startsWith("Cores ↔ matrix:"), qPrintable(regions.caption));
            QVERIFY(!regions.regions.empty());
            for (const auto& r : regions.regions) {
                QVERIFY(r.col0 >= -0.5 && r.col1 <= 15.5 + 1e-9 && r.col0 < r.col1);
                QVERIFY(!r.label.isEmpty());
            }
            QVERIFY(WaferTabViews(tab).heatmap->titleText().contains(regions.caption));
            QVERIFY(WaferTabViews(tab).heatmap->colourNote().isEmpty());  // 0-100 %: nothing to say

            // Fitted colours say what they stretch, with the frame's own min and max.
            fit->setChecked(true);
            tab.redrawNow();
            const ws::wafer::UtilizationFrame* frame = p->frameFor(1, false);
            QVERIFY(frame && frame->max > frame->min);
            const QString note = WaferTabViews(tab).heatmap->colourNote();
            QVERIFY2(note.startsWith("Colours stretched to "), qPrintable(note));
            QVERIFY2(note.contains(QString::number(100.0 * frame->min, 'f', 1).left(3)),
                     qPrintable(note));
            QVERIFY(tab.grab().save(
                artifactPath(slotCount == 2 ? "wafer-tab-legible.png" : "wafer-tab-one-slot.png")));
            fit->setChecked(false);
        }
    }

    // Q, K and V of the qkv projection each hold a third of the used core columns.
    void qkvRegionsSplitTheColumnsInThree() {
        ws::wafer::OpTiming qkv;
        qkv.name = "qkv";
        qkv.m = 64;
        qkv.n = 192;  // 3 x 64 channels
        qkv.mapping = ws::wafer::mapUnfolded(64, 192, 16, 16);
        const CoreRegions r = coreRegionsOf(qkv);
        QCOMPARE(int(r.regions.size()), 3);
        QCOMPARE(r.regions[0].label, QString("Q"));
        QCOMPARE(r.regions[1].label, QString("K"));
        QCOMPARE(r.regions[2].label, QString("V"));
        QCOMPARE(r.regions[0].col0, -0.5);
        QCOMPARE(r.regions[2].col1, 15.5);  // 192 / 12 per core = all 16 columns
        QCOMPARE(r.regions[1].col0, r.regions[0].col1);
        // A narrower output leaves columns idle, and says so.
        ws::wafer::OpTiming proj = qkv;
        proj.name = "attn_proj";
        proj.n = 40;
        proj.mapping = ws::wafer::mapUnfolded(64, 40, 16, 16);  // 3 columns per core: 14 used
        const CoreRegions q = coreRegionsOf(proj);
        QCOMPARE(q.regions.back().label, QString("idle"));
        QVERIFY(q.caption.contains("output channels"));
    }

    // Grouped-query attention: K and V are narrower than Q, and their regions say so; SwiGLU's
    // fc holds gate and up side by side.
    void qkvRegionsFollowTheKeyValueHeads() {
        ws::wafer::OpTiming qkv;
        qkv.name = "qkv";
        qkv.m = 64;
        qkv.n = 192;  // Q 128 (4 heads of 32), K and V 32 (1 KV head)
        qkv.columnParts = {128, 32, 32};
        qkv.mapping = ws::wafer::mapUnfolded(64, 192, 16, 16);
        const CoreRegions r = coreRegionsOf(qkv);
        QCOMPARE(int(r.regions.size()), 3);
        QCOMPARE(r.regions[0].label, QString("Q"));
        const double q = r.regions[0].col1 - r.regions[0].col0;
        const double k = r.regions[1].col1 - r.regions[1].col0;
        QVERIFY(std::abs(q - 4 * k) < 1e-9);
        QCOMPARE(r.regions[2].col1, 15.5);
        ws::wafer::OpTiming fc = qkv;
        fc.name = "fc.dW";
        fc.n = 688;
        fc.columnParts = {344, 344};
        fc.mapping = ws::wafer::mapUnfolded(64, 688, 16, 16);
        const CoreRegions g = coreRegionsOf(fc);
        QCOMPARE(g.regions[0].label, QString("dW gate"));
        QCOMPARE(g.regions[1].label, QString("dW up"));
        QVERIFY(g.caption.contains("SwiGLU"));
    }

    void heatmapTimelineAndScrubbing() {
        const auto p = predict("teaching-16x16", 2);
        QCOMPARE(p->numSystems, 2);
        WaferTab tab;
        tab.resize(1300, 850);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        tab.beginRun(configFor(true, 2));
        tab.setRunState(ws::session::RunState::Running);
        // Three whole steps, step 0 moving different bytes, then half of step 3.
        for (int64_t step = 0; step < 3; ++step) {
            tab.addEmulatedStep({step, double(step) * p->stepS, p});
            tab.appendSpans(spansOf(*p, step, step == 0 ? 1000 : 2000));
        }
        tab.addEmulatedStep({3, 3 * p->stepS, p});
        auto partial = spansOf(*p, 3, 2000);
        partial.resize(partial.size() / 2);
        tab.appendSpans(partial);
        tab.redrawNow();
        QVERIFY(tab.isLive());
        QCOMPARE(tab.shownStep(), int64_t(3));
        QCOMPARE(tab.emulation(), WaferTab::Emulation::On);
        QVERIFY(tab.noticeText().isEmpty());

        // Following the run: the heatmap shows the phase of the latest compute span.
        const ws::streaming::Span* lastCompute = nullptr;
        for (const auto& s : partial)
            if (s.kind == SpanKind::Forward || s.kind == SpanKind::Backward) lastCompute = &s;
        QVERIFY(lastCompute);
        QCOMPARE(WaferTabViews(tab).heatmap->frame(),
                 p->frameFor(lastCompute->layer, lastCompute->kind == SpanKind::Backward));
        QVERIFY(WaferTabViews(tab).heatmap->titleText().contains("just computed"));
        QVERIFY(!WaferTabViews(tab).diagram->inFlightText().isEmpty());
        QVERIFY(tab.grab().save(artifactPath("wafer-tab-live.png")));

        // A chosen phase: h.0 backward; the map holds that frame's values, cell by cell.
        tab.setPhase(1 * 2 + 1);
        tab.redrawNow();
        const ws::wafer::UtilizationFrame* frame = p->frameFor(1, true);
        QVERIFY(frame);
        QCOMPARE(WaferTabViews(tab).heatmap->frame(), frame);
        QCOMPARE(frame->rows, 16);
        for (int r = 0; r < frame->rows; ++r) {
            for (int c = 0; c < frame->cols; ++c) {
                const double want = frame->busy[size_t(r * frame->cols + c)];
                QVERIFY2(std::abs(WaferTabViews(tab).heatmap->cellValue(r, c) - want) < 1e-6,
                         qPrintable(QString("cell %1,%2").arg(r).arg(c)));
            }
        }
        const QString title = WaferTabViews(tab).heatmap->titleText();
        QVERIFY2(title.contains("h.0 backward on teaching-16x16 (16 x 16 cores)"),
                 qPrintable(title));
        QVERIFY2(title.contains(QString("mean %1 %").arg(100.0 * frame->mean, 0, 'f', 1)),
                 qPrintable(title));
        tab.setPhase(-1);  // whole step
        tab.redrawNow();
        QCOMPARE(WaferTabViews(tab).heatmap->frame(), p->frameFor(-1, false));

        // The timeline of the step in progress: lanes MemoryX, SwarmX, 3 per system; planned
        // ghosts for the whole schedule, bars only for the spans that arrived.
        TimelineView* timeline = WaferTabViews(tab).timeline;
        QVERIFY(!timeline->compact());
        QCOMPARE(timeline->laneCount(), 2 + 3 * 2);
        QCOMPARE(timeline->plannedCount(), int(p->spans.size()));
        int drawn = 0;
        for (int lane = 0; lane < timeline->laneCount(); ++lane) drawn += timeline->barCount(lane);
        QCOMPARE(drawn, int(partial.size()));

        // Scrub back to step 1 (0-based 0): a whole step, one bar per planned span per lane.
        tab.showStep(0);
        tab.redrawNow();
        QVERIFY(!tab.isLive());
        QCOMPARE(tab.shownStep(), int64_t(0));
        std::map<int, int> expected;
        for (const auto& t : p->spans) ++expected[laneOfPlanned(t)];
        QVERIFY(expected[1] > 0);  // two systems: SwarmX really reduces
        for (int lane = 0; lane < timeline->laneCount(); ++lane) {
            QVERIFY2(timeline->barCount(lane) == expected[lane],
                     qPrintable(QString("lane %1 (%2): %3 bars, want %4")
                                    .arg(lane)
                                    .arg(timeline->laneNames()[lane])
                                    .arg(timeline->barCount(lane))
                                    .arg(expected[lane])));
        }
        QVERIFY(timeline->xAxis->label().contains("emulated"));
        // The diagram counts step 0's own traffic (1000 bytes a span there).
        int64_t streamIns = 0;
        for (const auto& t : p->spans) streamIns += t.kind == SpanKind::StreamIn && t.system == 0;
        QCOMPARE(WaferTabViews(tab).diagram->traffic().weightsDown, streamIns * 1000);
        QVERIFY(WaferTabViews(tab).diagram->inFlightText().contains("complete"));
        // Hovering a bar names it.
        QString hover;
        for (int x = 0; x < timeline->width() && hover.isEmpty(); x += 3) {
            hover = timeline->describeAt(
                QPointF(x, timeline->yAxis->coordToPixel(2 + 1)));  // system 0 compute
        }
        QVERIFY2(hover.contains("forward") || hover.contains("backward"), qPrintable(hover));
        QVERIFY(hover.contains("emulated"));

        // Wall time instead of emulated time.
        tab.setClock(TimelineView::Clock::Real);
        tab.redrawNow();
        QVERIFY(timeline->xAxis->label().contains("real CPU"));
        QCOMPARE(timeline->plannedCount(), 0);

        // Too short for three lanes per system: one row per system, the same bars.
        tab.setClock(TimelineView::Clock::Emulated);
        timeline->resize(timeline->width(), 160);
        tab.redrawNow();
        QVERIFY(timeline->compact());
        QCOMPARE(timeline->laneCount(), 2 + 2);
        QCOMPARE(timeline->barCount(2), expected[2] + expected[3] + expected[4]);
        QCOMPARE(timeline->barCount(3), expected[5] + expected[6] + expected[7]);

        // The controls a teacher uses: the step box scrubs, Live follows again, the phase list
        // names each layer phase of the prediction.
        auto* spin = tab.findChild<QSpinBox*>("waferStepSpin");
        auto* live = tab.findChild<QPushButton*>("waferLive");
        auto* phases = tab.findChild<QComboBox*>("waferPhase");
        QVERIFY(spin && live && phases);
        tab.goLive();
        tab.redrawNow();
        QCOMPARE(spin->maximum(), 4);  // steps shown 1-based
        QVERIFY(live->isChecked());
        spin->setValue(2);
        QVERIFY(!tab.isLive());
        QCOMPARE(tab.shownStep(), int64_t(1));
        tab.redrawNow();
        QVERIFY(!live->isChecked());
        live->click();
        QVERIFY(tab.isLive());
        QCOMPARE(tab.shownStep(), int64_t(3));
        QVERIFY(phases->findText("h.1 backward") >= 0);
        QVERIFY(phases->findText("embeddings forward") >= 0);

        // Live again: the newest step.
        tab.goLive();
        tab.redrawNow();
        QVERIFY(tab.isLive());
        QCOMPARE(tab.shownStep(), int64_t(3));
    }

    // The gradient norm per layer: one bar per layer with the step's recorded norms, for a
    // scrubbed step and (while its own norms have not arrived) the newest measured step live.
    // Issue 14: a real bf16 run streams its weights as bf16, so the cluster diagram's "weights
    // down" and the timeline's stream-in bars carry half the bytes of the same fp32 run.
    void bf16RunShowsHalfTheWeightTraffic() {
        int64_t weightsDown[2] = {0, 0}, gradientsUp[2] = {0, 0};
        for (const bool bf16 : {false, true}) {
            ws::testing::TempDir dir;
            std::vector<std::string> overrides = {"runconfig.num_csx=2"};
            if (bf16) {
                overrides.push_back("model.mixed_precision=true");
                overrides.push_back("model.fp16_type=bfloat16");
            }
            ws::testing::TinyRun run;
            QVERIFY(ws::testing::runTiny(kTinyRunYaml, dir.path(), run, false, overrides));
            WaferTab tab;
            tab.resize(1300, 850);
            tab.show();
            QVERIFY(QTest::qWaitForWindowExposed(&tab));
            ws::testing::feedTab(tab, run);
            tab.showStep(0);
            tab.redrawNow();
            QCOMPARE(tab.emulation(), WaferTab::Emulation::On);
            weightsDown[bf16] = WaferTabViews(tab).diagram->traffic().weightsDown;
            gradientsUp[bf16] = WaferTabViews(tab).diagram->traffic().gradientsUp;
            QVERIFY(tab.grab().save(
                artifactPath(bf16 ? "wafer-tab-bf16-run.png" : "wafer-tab-fp32-run.png")));
        }
        QVERIFY(weightsDown[1] > 0);
        QCOMPARE(weightsDown[0], 2 * weightsDown[1]);
        QCOMPARE(gradientsUp[0], gradientsUp[1]);  // gradients stream out fp32 in both
    }

    // Issue 16: a real LoRA run. The timeline draws each block's adapter products inside its
    // compute bars (one bar per product, named on hover), the heatmap offers the adapters' own
    // frames, the summary says what they cost, and the step completes once the adapters' layers
    // are updated (the frozen embeddings and head have no update on the emulated machine).
    void loraRunShowsTheAdapterOps() {
        ws::testing::TempDir dir;
        ws::testing::TinyRun run;
        QVERIFY(ws::testing::runTiny(
            kTinyRunYaml +
                "lora: {rank: 4, alpha: 8, targets: [c_attn, attn.c_proj, c_fc, mlp.c_proj]}\n",
            dir.path(), run));
        WaferTab tab;
        tab.resize(1300, 850);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        ws::testing::feedTab(tab, run);
        std::vector<ws::streaming::Span> spans;
        std::shared_ptr<const ws::wafer::StepPrediction> prediction;
        for (const auto& e : run.events) {
            if (const auto* es = std::get_if<ws::session::EmulatedStep>(&e))
                prediction = es->prediction;
            if (const auto* sp = std::get_if<ws::streaming::Span>(&e)) spans.push_back(*sp);
        }
        QVERIFY(prediction);
        QCOMPARE(prediction->loraRank, 4);
        QVERIFY(prediction->adapterS > 0);
        tab.showStep(0);
        tab.redrawNow();
        QCOMPARE(tab.emulation(), WaferTab::Emulation::On);

        // Timeline: 2 blocks x (8 forward + 16 backward products) per micro-batch.
        const int micros = prediction->batchPerSystem / prediction->microBatch;
        TimelineView* timeline = WaferTabViews(tab).timeline;
        QCOMPARE(timeline->adapterBarCount(), 2 * (8 + 16) * micros);
        int legendEntries = 0;  // the six span kinds and the adapters (in two rows)
        for (int i = 0; i < timeline->legend->itemCount(); ++i)
            legendEntries += timeline->legend->item(i) != nullptr;
        QCOMPARE(legendEntries, 7);
        // Hovering h.0's first forward adapter product names it: find the span and the op.
        const ws::wafer::LayerTiming* h0 = nullptr;
        for (const auto& l : prediction->layers)
            if (l.layer == "h.0" && l.pass == ws::wafer::Pass::Forward && !h0) h0 = &l;
        QVERIFY(h0);
        const ws::wafer::OpTiming* xA = nullptr;
        for (const auto& op : h0->ops)
            if (op.name == "qkv.lora_A") xA = &op;
        QVERIFY(xA && xA->adapter);
        double h0Start = -1;
        for (const auto& sp : spans)
            if (sp.step == 0 && sp.layer == 1 && sp.kind == SpanKind::Forward && h0Start < 0)
                h0Start = sp.emuStart;
        QVERIFY(h0Start >= 0);
        for (int i = 0;
             i < 40 && std::abs(timeline->xAxis->coordToPixel((h0Start + xA->startS) *
                                                              timeline->unitScale()) -
                                timeline->xAxis->coordToPixel((h0Start + xA->startS + xA->timeS) *
                                                              timeline->unitScale())) < 6;
             ++i) {
            // Zoom in on the op until its bar is a few pixels wide.
            const double centre = (h0Start + xA->startS + xA->timeS / 2) * timeline->unitScale();
            timeline->xAxis->scaleRange(0.5, centre);
        }
        const double mid = (h0Start + xA->startS + xA->timeS / 2) * timeline->unitScale();
        const QString hover = timeline->describeAt(
            QPointF(timeline->xAxis->coordToPixel(mid), timeline->yAxis->coordToPixel(3)));
        QVERIFY2(hover.contains("h.0 · LoRA adapter op qkv.lora_A (forward)"), qPrintable(hover));

        // Heatmap: the adapters' own frames, forward and backward.
        auto* phases = tab.findChild<QComboBox*>("waferPhase");
        QVERIFY(phases->findText("LoRA adapter ops, forward (every block)") >= 0);
        QVERIFY(phases->findText("LoRA adapter ops, backward (every block)") >= 0);
        QVERIFY(phases->findText("embeddings backward") < 0);  // frozen: no work
        tab.setPhase(-4);
        tab.redrawNow();
        QCOMPARE(WaferTabViews(tab).heatmap->frame(), prediction->adapterFrame(true));
        QVERIFY2(WaferTabViews(tab).heatmap->titleText().contains("LoRA adapter ops, backward"),
                 qPrintable(WaferTabViews(tab).heatmap->titleText()));
        const QString summary = tab.findChild<QLabel*>("waferSummary")->text();
        QVERIFY2(summary.contains("LoRA rank 4") && summary.contains("adapter ops"),
                 qPrintable(summary));
        // MemoryX updates the adapters' layers only: the blocks.
        QCOMPARE(WaferTabViews(tab).diagram->traffic().updatedLayers, 2);
        QCOMPARE(WaferTabViews(tab).diagram->traffic().plannedUpdates, 2);
        QTest::qWait(50);  // the summary's second line re-lays the tab out
        QVERIFY(tab.grab().save(artifactPath("wafer-tab-lora-run.png")));
        tab.setPhase(-2);
        tab.redrawNow();
        timeline->xAxis->setRange(0, 1.01 * prediction->stepS * timeline->unitScale());
        timeline->replot();
        QVERIFY(tab.grab().save(artifactPath("wafer-tab-lora-run-step.png")));

        // The step is complete once the adapters' layers are updated.
        const StepRecord* record = tab.history().find(0);
        QVERIFY(record);
        QVERIFY(stepComplete(*record, 2));
        StepRecord partial = *record;
        const auto lastBlockUpdate =
            std::find_if(partial.spans.rbegin(), partial.spans.rend(), [](const RecordedSpan& s) {
                return s.kind() == SpanKind::Update && s.layer >= 1 && s.layer <= 2;
            });
        QVERIFY(lastBlockUpdate != partial.spans.rend());
        partial.spans.erase(std::next(lastBlockUpdate).base());
        QVERIFY(!stepComplete(partial, 2));
    }

    void layerNormChartShowsTheShownStep() {
        const auto p = predict("teaching-16x16", 2);
        WaferTab tab;
        tab.resize(1300, 850);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        tab.beginRun(configFor(true, 2));
        tab.setRunState(ws::session::RunState::Running);
        const int numBlocks = 2;
        auto normsOf = [](int64_t step) {
            // Spread over decades, as real per-layer norms are (embeddings small, head large).
            return std::vector<double>{2e-3 * double(step + 1), 0.05, 0.08 + 0.01 * double(step),
                                       1.5};
        };
        for (int64_t step = 0; step < 3; ++step) {
            tab.addEmulatedStep({step, double(step) * p->stepS, p});
            tab.appendSpans(spansOf(*p, step, 2000));
            ws::session::StepMetrics m;
            m.step = step + 1;  // StepMetrics count from 1
            m.layerGradNorms = normsOf(step);
            double sumSquares = 0;
            for (double n : m.layerGradNorms) sumSquares += n * n;
            m.gradNorm = std::sqrt(sumSquares);
            tab.appendMetrics({m});
        }
        // Step 4 (0-based 3) has begun but has no metrics yet.
        tab.addEmulatedStep({3, 3 * p->stepS, p});
        tab.appendSpans(spansOf(*p, 3, 2000));
        tab.redrawNow();
        LayerNormChart* chart = WaferTabViews(tab).layerNorms;
        QVERIFY(tab.isLive());
        QCOMPARE(tab.shownStep(), int64_t(3));
        QCOMPARE(chart->barCount(), numBlocks + 2);
        QCOMPARE(chart->barValue(3), 1.5);
        QCOMPARE(chart->barValue(0), normsOf(2)[0]);  // the newest measured step
        QVERIFY2(chart->titleText().contains("step 3"), qPrintable(chart->titleText()));

        tab.showStep(1);  // scrub to the second step
        tab.redrawNow();
        QCOMPARE(tab.history().find(1)->layerGradNorms, normsOf(1));
        QCOMPARE(chart->barCount(), numBlocks + 2);
        const QStringList names = {"embeddings", "h.0", "h.1", "head"};
        for (int l = 0; l < numBlocks + 2; ++l) {
            QCOMPARE(chart->barValue(l), normsOf(1)[size_t(l)]);
            // Names the layer ("emb" when "embeddings" does not fit under its bar).
            QVERIFY2(chart->barLabel(l) == names[l] || (l == 0 && chart->barLabel(l) == "emb"),
                     qPrintable(chart->barLabel(l)));
        }
        const double global = tab.history().find(1)->gradNorm;
        QVERIFY2(chart->titleText().contains("step 2") &&
                     chart->titleText().contains(QString::number(global, 'g', 3)),
                 qPrintable(chart->titleText()));
        // Hover names every layer with its norm, however thin the axis labels are.
        QVERIFY2(chart->toolTip().contains("embeddings: 0.004") &&
                     chart->toolTip().contains("head: 1.5"),
                 qPrintable(chart->toolTip()));
        QVERIFY(tab.grab().save(artifactPath("wafer-tab-layer-norms.png")));

        // A step without metrics scrubbed to says so rather than showing another step's bars.
        tab.showStep(3);
        tab.redrawNow();
        QCOMPARE(chart->barCount(), 0);
        QVERIFY2(chart->titleText().contains("not measured"), qPrintable(chart->titleText()));
    }

    void historyKeepsTheLastStepsOnly() {
        WaferHistory history;
        const size_t steps = WaferHistory::kMaxSteps + 100;
        for (size_t s = 0; s < steps; ++s) {
            ws::streaming::Span span;
            span.step = int64_t(s);
            span.kind = SpanKind::Forward;
            history.addSpans({span, span});
        }
        QCOMPARE(history.size(), WaferHistory::kMaxSteps);
        QCOMPARE(history.firstStep(), int64_t(100));
        QCOMPARE(history.droppedSteps(), int64_t(100));
        QCOMPARE(history.spanCount(), 2 * WaferHistory::kMaxSteps);
        QVERIFY(history.find(99) == nullptr);
        QVERIFY(history.find(100) != nullptr);
    }

    void emptyStatesSayWhy() {
        WaferTab tab;
        tab.resize(1000, 800);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        QVERIFY2(tab.noticeText().contains("No run"), qPrintable(tab.noticeText()));

        // Emulator switched off: real-time timeline only, and the tab says so.
        tab.beginRun(configFor(false, 1));
        QVERIFY2(tab.noticeText().contains("emulator is off"), qPrintable(tab.noticeText()));
        ws::streaming::Span span;
        span.step = 0;
        span.system = 0;
        span.kind = SpanKind::Forward;
        span.start = 0.5;
        span.end = 0.75;
        tab.appendSpans({span});
        tab.redrawNow();
        QCOMPARE(tab.emulation(), WaferTab::Emulation::Off);
        QVERIFY(WaferTabViews(tab).heatmap->frame() == nullptr);
        QVERIFY(WaferTabViews(tab).heatmap->titleText().contains("emulator is off"));
        QVERIFY(WaferTabViews(tab).timeline->xAxis->label().contains("real CPU"));
        QCOMPARE(WaferTabViews(tab).timeline->barCount(
                     WaferTabViews(tab).timeline->compact() ? 2 : 2 + 1),
                 1);

        // The emulator could not plan the config: the reason from the log is shown.
        tab.beginRun(configFor(true, 1));
        QVERIFY(tab.noticeText().isEmpty());
        tab.noteLog(1,
                    "emulator off for this run (training is unaffected): h.0 attn does not "
                    "fit a core's SRAM");
        tab.appendSpans({span});
        tab.redrawNow();
        QCOMPARE(tab.emulation(), WaferTab::Emulation::NotPlanned);
        QVERIFY2(tab.noticeText().contains("could not plan") &&
                     tab.noticeText().contains("does not fit a core's SRAM"),
                 qPrintable(tab.noticeText()));
        QVERIFY(WaferTabViews(tab).heatmap->frame() == nullptr);
    }

    void wse2FrameReplotTime() {
        // WSE-2's 750 x 994 cores arrive averaged to 256 x 256 display cells.
        const auto p = predict("wse2", 1);
        const ws::wafer::UtilizationFrame* frame = p->frameFor(-1, false);
        QVERIFY(frame);
        QVERIFY(frame->rows <= 256 && frame->rows >= 128);
        QVERIFY(frame->cols <= 256 && frame->cols >= 128);
        CoreHeatmap map;
        map.resize(700, 600);
        map.show();
        QVERIFY(QTest::qWaitForWindowExposed(&map));
        double worst = 0, total = 0;
        const int rounds = 10;
        for (int i = 0; i < rounds; ++i) {
            // Alternate two frames so every round really sets 65,536 cells.
            const auto* f = p->frameFor(i % 2 ? 1 : -1, false);
            map.showFrame(p, f);
            map.replotTimed();
            worst = std::max(worst, map.lastFrameMs());
            total += map.lastFrameMs();
        }
        qInfo("%d x %d WSE-2 frame: set + replot %.2f ms mean, %.2f ms worst (%d rounds)",
              frame->rows, frame->cols, total / rounds, worst, rounds);
        QVERIFY(map.titleText().contains("750 x 994 cores"));
        QVERIFY(
            map.titleText().contains(QString("%1 x %2 cells").arg(frame->rows).arg(frame->cols)));
        QVERIFY(map.grab().save(artifactPath("wafer-heatmap-wse2.png")));
    }
};

QTEST_MAIN(WaferTabTest)
#include "wafer_tab_test.moc"
