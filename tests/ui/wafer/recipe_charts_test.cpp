// SPDX-License-Identifier: GPL-3.0-or-later
// The Wafer tab's charts of the Cerebras recipes (issue 18), offscreen: the sparsity-per-layer
// chart follows a sparse run's metrics and hides for a dense one; a stored sparse run selected
// in the Runs dock shows the sparsity its store recorded, and Live brings back the window's own
// run; a config that offloads activations has an offload lane on its planned timeline; and an
// extra chart beside the gradient norms gets an equal share of the column, not its title's
// height. Screenshots go to the test artifacts (wafer-tab-sparsity*.png,
// wafer-*-activation-offload.png).
#include <QLabel>
#include <QTabBar>
#include <QTabWidget>
#include <QTest>
#include <cmath>

#include "engine/config/config_yaml.h"
#include "engine/store/run_store.h"
#include "engine/wafer/cycle_model.h"
#include "engine/wafer/spec.h"
#include "support/gui_test.h"
#include "support/temp_dir.h"
#include "support/test_shapes.h"
#include "support/wafer_tab_feed.h"
#include "support/wafer_tab_views.h"
#include "ui/wafer/expert_load_chart.h"
#include "ui/wafer/layer_norm_chart.h"
#include "ui/wafer/sparsity_chart.h"
#include "ui/wafer/timeline_view.h"
#include "ui/wafer/wafer_tab.h"

using ws::testing::WaferTabViews;

using namespace ws::ui;

namespace {

using ws::testing::artifactPath;

std::shared_ptr<const ws::wafer::StepPrediction> predictSmall() {
    auto spec =
        ws::wafer::loadWaferSpecFile(WAFER_SOURCE_DIR "/presets/wafers/teaching-16x16.yaml");
    if (!spec.ok()) qFatal("%s", spec.error().message.c_str());
    ws::wafer::StepInput input;
    input.shape.vocab = 64;
    input.shape.channels = 64;
    input.shape.layers = 2;
    input.shape.heads = 2;
    input.shape.ffn = 256;
    input.shape.maxPositions = 32;
    input.batchPerSystem = 2;
    input.seqLen = 32;
    auto p = ws::wafer::predictStep(*spec, input);
    if (!p.ok()) qFatal("%s", p.error().message.c_str());
    return std::make_shared<const ws::wafer::StepPrediction>(std::move(p).value());
}

ws::config::Config sparseConfig() {
    ws::config::Config c;
    c.model.numHiddenLayers = 2;
    c.wafer.spec = "teaching-16x16";
    c.wafer.emulate = true;
    c.sparsity = ws::config::SparsitySectionConfig{};
    c.sparsity->sparsity = 0.75;
    c.sparsity->type = "rigl";
    return c;
}

// 40 steps of a 2-block sparse run, measured on step 1 and every 5th.
std::vector<ws::session::StepMetrics> sparseMetrics() {
    std::vector<ws::session::StepMetrics> batch;
    for (int step = 1; step <= 40; ++step) {
        ws::session::StepMetrics m;
        m.step = step;
        m.maxSteps = 40;
        m.loss = 3.0;
        if (step == 1 || step % 5 == 0) {
            m.blockSparsity = {0.75, 0.75};
            m.blockImbalance = {1.2 + 0.01 * step, 1.5 - 0.005 * step};
        }
        batch.push_back(m);
    }
    return batch;
}

// A tiny model pruned to 50% (static masks), recorded in the store.
const std::string kSparseRunYaml =
    ws::testing::tinyRunYaml(6, 2, "sparsity: {sparsity: 0.5, type: static}\n");

}  // namespace

class RecipeChartsTest : public QObject {
    Q_OBJECT
private slots:
    // Dynamic sparsity (issue 18): the chart of each block's zeros and imbalance over the run
    // shows for a sparse run, follows the metrics' blockSparsity / blockImbalance, and hides for
    // a dense one. Screenshot (looked at): wafer-tab-sparsity.png.
    void sparsityChartFollowsTheRun() {
        const auto p = predictSmall();
        WaferTab tab;
        tab.resize(1400, 900);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        tab.beginRun(sparseConfig());
        QVERIFY(WaferTabViews(tab).sparsity->isVisible());
        tab.setRunState(ws::session::RunState::Running);
        tab.addEmulatedStep({0, 0.0, p});
        tab.appendSpans(ws::testing::spansOf(*p, 0, 1000));
        tab.appendMetrics(sparseMetrics());
        tab.redrawNow();
        SparsityChart* chart = WaferTabViews(tab).sparsity;
        QCOMPARE(chart->blockCount(), 2);
        QCOMPARE(chart->pointCount(0), 9);
        QCOMPARE(chart->lastLevel(1), 0.75);
        QVERIFY(std::abs(chart->lastImbalance(0) - 1.6) < 1e-9);
        QVERIFY2(chart->titleText().contains("step 40: 75.0% zeros"),
                 qPrintable(chart->titleText()));
        QVERIFY2(chart->titleText().contains("1.60×"), qPrintable(chart->titleText()));
        QVERIFY(tab.grab().save(artifactPath("wafer-tab-sparsity.png")));
        ws::config::Config dense = sparseConfig();
        dense.sparsity.reset();
        tab.beginRun(dense);
        QVERIFY(!WaferTabViews(tab).sparsity->isVisible());
        QCOMPARE(WaferTabViews(tab).sparsity->blockCount(), 0);
    }

    // A config whose activations do not fit (the 70B-class preset on one CS-3): its planned step
    // recomputes and offloads the block inputs to MemoryX, and the timeline shows that traffic in
    // a lane of its own per system, the summary the planner's one line.
    void plannedStepThatOffloadsHasAnOffloadLane() {
        auto loaded = ws::config::loadConfigFile(WAFER_SOURCE_DIR "/presets/llama-70b-class.yaml",
                                                 {"wafer.spec=wse3"});
        QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().message.c_str());
        WaferTab tab;
        tab.resize(1400, 900);
        tab.show();
        QString error;
        QVERIFY2(tab.showPlannedRun(loaded->config, QStringLiteral("llama-70b-class"), &error),
                 qPrintable(error));
        tab.setPhase(-1);
        tab.redrawNow();
        const TimelineView* timeline = WaferTabViews(tab).timeline;
        QCOMPARE(timeline->lanesPerSystem(), 4);
        QVERIFY(timeline->laneNames().contains(QStringLiteral("system 0 activation offload")));
        QVERIFY(timeline->offloadBarCount() > 0);
        const int offloadLane = 2 + 3;  // MemoryX, SwarmX, then system 0's in/compute/out
        QCOMPARE(timeline->barCount(offloadLane), timeline->offloadBarCount());
        const QString summary = tab.findChild<QLabel*>("waferSummary")->text();
        QVERIFY2(summary.contains(QStringLiteral("Activations:")) &&
                     summary.contains(QStringLiteral("MemoryX")),
                 qPrintable(summary));
        QTest::qWait(50);  // the summary's second line re-lays the page out
        QVERIFY(tab.grab().save(artifactPath("wafer-tab-activation-offload.png")));
        // Zoomed on the first micro-batch: inputs out during its forward, back in during its
        // backward. The tooltip names the traffic.
        TimelineView* view = tab.findChild<TimelineView*>();
        QVERIFY(view);
        const double unit = view->unitScale();
        view->xAxis->setRange(0, 12.0 * unit);
        view->replot();
        QVERIFY(view->grab().save(artifactPath("wafer-timeline-activation-offload.png")));
        bool named = false;
        for (int x = 0; x < view->width() && !named; x += 2) {
            const double y = view->yAxis->coordToPixel(offloadLane);
            named = view->describeAt(QPointF(x, y)).contains(QStringLiteral("activation offload"));
        }
        QVERIFY(named);
    }

    // A stored sparse run selected in the Runs dock: its recorded sparsity per layer shows (the
    // window's own run's chart comes back on Live). Screenshot: wafer-tab-sparsity-stored.png.
    void storedSparseRunShowsItsRecordedSparsity() {
        ws::testing::TempDir dir;
        ws::testing::TinyRun stored;
        QVERIFY(ws::testing::runTiny(kSparseRunYaml, dir.path(), stored, /*record=*/true));
        auto store = ws::store::RunStore::open(dir.path() / "runs.sqlite");
        QVERIFY2(store.ok(), store.ok() ? "" : store.error().message.c_str());
        auto level = (*store)->metrics(stored.summary.runId, "sparsity/h.1");
        QVERIFY(level.ok() && level->size() >= 2);
        auto info = (*store)->getRun(stored.summary.runId);
        QVERIFY(info.ok());

        WaferTab tab;
        tab.resize(1400, 900);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        tab.beginRun(sparseConfig());
        tab.addEmulatedStep({0, 0.0, predictSmall()});
        tab.appendMetrics(sparseMetrics());
        QString error;
        QVERIFY2(tab.showStoredRun(info->id, "sparse", info->configYaml, &error, store->get()),
                 qPrintable(error));
        tab.redrawNow();
        SparsityChart* chart = WaferTabViews(tab).sparsity;
        QVERIFY(chart->isVisible());
        QCOMPARE(chart->pointCount(1), int(level->size()));
        QVERIFY(std::abs(chart->lastLevel(1) - level->back().value) < 1e-12);
        QVERIFY(std::abs(chart->lastLevel(1) - 0.5) < 0.01);
        QCoreApplication::processEvents();
        QVERIFY(tab.grab().save(artifactPath("wafer-tab-sparsity-stored.png")));
        tab.goLive();
        tab.redrawNow();
        QCOMPARE(chart->pointCount(0), 9);
        QCOMPARE(chart->lastLevel(1), 0.75);
        // A dense stored run: no sparsity chart.
        ws::config::Config dense = stored.config;
        dense.sparsity.reset();
        QVERIFY2(tab.showStoredRun(info->id, "dense", ws::config::saveConfigYaml(dense), &error),
                 qPrintable(error));
        tab.redrawNow();
        QVERIFY(chart->isHidden());
    }

    // The column beside the timeline: the gradient norms, and a tab for a sparse run's sparsity
    // or an MoE run's tokens per expert, which opens first and gets the column's whole height
    // (two charts stacked there were unreadable at the default window size).
    void recipeChartsGetTheirOwnTab() {
        WaferTab tab;
        tab.resize(1400, 900);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        auto* tabs = tab.findChild<QTabWidget*>(QStringLiteral("waferChartTabs"));
        QVERIFY(tabs);
        ws::config::Config c = sparseConfig();
        c.sparsity.reset();
        tab.beginRun(c);  // dense: the norms alone, no tab bar
        tab.redrawNow();
        QVERIFY(WaferTabViews(tab).layerNorms->isVisible());
        QVERIFY(!tabs->tabBar()->isVisible());
        QVERIFY(!tab.chartShown(WaferTabViews(tab).expertLoads) &&
                !tab.chartShown(WaferTabViews(tab).sparsity));
        const int height = WaferTabViews(tab).layerNorms->height();
        QVERIFY(height > 150);

        tab.beginRun(sparseConfig());
        tab.addEmulatedStep({0, 0.0, predictSmall()});
        tab.redrawNow();
        QCoreApplication::processEvents();
        QVERIFY(tabs->tabBar()->isVisible());
        QVERIFY(tab.chartShown(WaferTabViews(tab).sparsity) &&
                !tab.chartShown(WaferTabViews(tab).expertLoads));
        QCOMPARE(tabs->currentWidget(), static_cast<QWidget*>(WaferTabViews(tab).sparsity));
        QVERIFY(WaferTabViews(tab).sparsity->height() > height - 40);  // less the tab bar
        QVERIFY(tab.grab().save(artifactPath("wafer-tab-sparse-column.png")));

        c.model.moe = ws::config::MoeConfig{};
        c.model.moe->numExperts = 4;
        c.model.moe->topK = 2;
        tab.beginRun(c);
        tab.redrawNow();
        QCoreApplication::processEvents();
        QVERIFY(tab.chartShown(WaferTabViews(tab).expertLoads) &&
                !tab.chartShown(WaferTabViews(tab).sparsity));
        QCOMPARE(tabs->currentWidget(), static_cast<QWidget*>(WaferTabViews(tab).expertLoads));
        QVERIFY(WaferTabViews(tab).expertLoads->height() > height - 40);
        QVERIFY(tab.grab().save(artifactPath("wafer-tab-moe-column.png")));
        tabs->setCurrentWidget(WaferTabViews(tab).layerNorms);  // the norms stay one click away
        QVERIFY(WaferTabViews(tab).layerNorms->isVisible());
    }
};

QTEST_MAIN(RecipeChartsTest)
#include "recipe_charts_test.moc"
