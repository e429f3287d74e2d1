// SPDX-License-Identifier: GPL-3.0-or-later
// The Wafer tab's mixture-of-experts views, offscreen: the tokens-per-expert chart follows the
// shown step and the picked MoE layer (bars = the step's counts, a dashed even share, "idle"
// for an expert without tokens), stays hidden with a plain sentence for a dense model, and the
// heatmap of an MoE block's phase labels each expert's rectangle of cores with its tokens. Fed a
// real cycle-model prediction of a skewed routing on the teaching wafer, and the events of a real
// MoE run (a tiny model, 4 experts, top-2, on the teaching wafer). Screenshots go to the test
// artifacts (expert-load-*.png).
#include <QComboBox>
#include <QTest>

#include "engine/config/config_yaml.h"
#include "engine/session/session.h"
#include "engine/store/run_store.h"
#include "engine/wafer/cycle_model.h"
#include "engine/wafer/spec.h"
#include "support/gui_test.h"
#include "support/temp_dir.h"
#include "support/test_shapes.h"
#include "support/wafer_tab_feed.h"
#include "support/wafer_tab_views.h"
#include "ui/wafer/core_heatmap.h"
#include "ui/wafer/core_regions.h"
#include "ui/wafer/expert_load_chart.h"
#include "ui/wafer/wafer_tab.h"

using ws::testing::WaferTabViews;

using namespace ws::ui;
using ws::streaming::SpanKind;

namespace {

using ws::testing::artifactPath;
using ws::testing::spansOf;

// 4 blocks, blocks 0 and 2 MoE with 4 experts, top-2.
ws::model::GptShape moeShape() {
    ws::model::GptShape shape;
    shape.vocab = 64;
    shape.channels = 64;
    shape.layers = 4;
    shape.heads = 2;
    shape.ffn = 256;
    shape.maxPositions = 32;
    shape.numExperts = 4;
    shape.topK = 2;
    shape.moeEvery = 2;
    return shape;
}

ws::config::Config moeConfig() {
    ws::config::Config c;
    c.model.numHiddenLayers = 4;
    c.model.moe = ws::config::MoeConfig{};
    c.model.moe->numExperts = 4;
    c.model.moe->topK = 2;
    c.model.moe->moeLayerFrequency = 2;
    c.wafer.spec = "teaching-16x16";
    c.wafer.emulate = true;
    return c;
}

// One pass of 2 x 32 tokens: 128 assignments per MoE block.
const std::vector<std::vector<int64_t>> kSkewed = {{70, 40, 18, 0}, {}, {32, 32, 32, 32}, {}};

std::shared_ptr<const ws::wafer::StepPrediction> predict(
    const std::vector<std::vector<int64_t>>& tokens) {
    auto spec =
        ws::wafer::loadWaferSpecFile(WAFER_SOURCE_DIR "/presets/wafers/teaching-16x16.yaml");
    if (!spec.ok()) qFatal("%s", spec.error().message.c_str());
    ws::wafer::StepInput input;
    input.shape = moeShape();
    input.batchPerSystem = 2;
    input.seqLen = 32;
    input.expertTokens = tokens;
    auto p = ws::wafer::predictStep(*spec, input);
    if (!p.ok()) qFatal("%s", p.error().message.c_str());
    return std::make_shared<const ws::wafer::StepPrediction>(std::move(p).value());
}

// A tiny MoE model (4 experts, top-2 in both blocks) that trains in a moment.
const std::string kMoeRunYaml =
    "model: {hidden_size: 32, num_hidden_layers: 2, num_heads: 2, filter_size: 64,\n"
    "        vocab_size: 256, max_position_embeddings: 64,\n"
    "        moe: {num_experts: 4, top_k: 2}}\n"
    "optimizer: {optimizer_type: adamw, learning_rate: 0.003}\n"
    "train_input: {data_dir: corpus, batch_size: 4, max_sequence_length: 32,\n"
    "              tokenizer: {type: byte}}\n"
    "eval_input: {batch_size: 4}\n"
    "runconfig: {max_steps: 6, eval_frequency: 50, eval_steps: 1, log_steps: 1, seed: 7,\n"
    "            num_threads: 1}\n";

}  // namespace

class ExpertLoadTest : public QObject {
    Q_OBJECT
private slots:
    void denseModelHidesTheChartAndSaysWhy() {
        WaferTab tab;
        ws::config::Config dense;
        dense.model.numHiddenLayers = 2;
        dense.wafer.spec = "teaching-16x16";
        tab.beginRun(dense);
        tab.redrawNow();
        ExpertLoadChart* chart = WaferTabViews(tab).expertLoads;
        QVERIFY(chart);
        QVERIFY(!chart->isMoe());
        QVERIFY(chart->isHidden());
        QVERIFY(chart->noteText().contains(QStringLiteral("no mixture-of-experts")));
        QCOMPARE(chart->barCount(), 0);
    }

    void chartFollowsTheStepAndTheLayer() {
        WaferTab tab;
        tab.resize(1300, 850);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        tab.beginRun(moeConfig());
        tab.setRunState(ws::session::RunState::Running);
        ExpertLoadChart* chart = WaferTabViews(tab).expertLoads;
        QVERIFY(chart->isVisible());
        QVERIFY(chart->noteText().contains(QStringLiteral("No step yet")));
        // Step 0: even routing; step 1: skewed (expert 3 of h.0 idle). Counts of the whole step.
        const auto even = predict({});
        const auto skewed = predict(kSkewed);
        tab.addEmulatedStep({0, 0.0, even});
        tab.appendSpans(spansOf(*even, 0));
        tab.addExpertTokens(0, {{64, 64, 64, 64}, {}, {64, 64, 64, 64}, {}});
        tab.addEmulatedStep({1, even->stepS, skewed});
        tab.appendSpans(spansOf(*skewed, 1));
        tab.addExpertTokens(1, {{140, 80, 36, 0}, {}, {64, 64, 64, 64}, {}});
        tab.setRunState(ws::session::RunState::Finished);
        tab.redrawNow();

        QCOMPARE(chart->shownBlock(), 0);
        QCOMPARE(chart->barCount(), 4);
        QCOMPARE(chart->barValue(0), 140.0);
        QCOMPARE(chart->barValue(3), 0.0);
        QCOMPARE(chart->evenShare(), 64.0);
        QVERIFY2(chart->titleText().contains(QStringLiteral("1 idle")),
                 qPrintable(chart->titleText()));
        QVERIFY(chart->titleText().contains(QStringLiteral("2.19x")));
        // The picker holds the MoE layers only.
        auto* picker = chart->findChild<QComboBox*>(QStringLiteral("expertLoadLayer"));
        QVERIFY(picker);
        QCOMPARE(picker->count(), 2);
        QCOMPARE(picker->itemText(1), QStringLiteral("h.2"));
        chart->setShownBlock(2);
        QCOMPARE(chart->barValue(0), 64.0);
        QVERIFY(!chart->titleText().contains(QStringLiteral("idle")));
        chart->setShownBlock(0);
        // Scrubbing back shows step 0's even routing.
        tab.showStep(0);
        tab.redrawNow();
        QCOMPARE(chart->barValue(0), 64.0);
        QCOMPARE(chart->barValue(3), 64.0);
        tab.goLive();
        tab.redrawNow();
        QCOMPARE(chart->barValue(0), 140.0);

        // The heatmap of h.0's forward names each expert's cores with its tokens (per pass).
        tab.setPhase(1 * 2 + 0);
        tab.redrawNow();
        const CoreRegions regions = WaferTabViews(tab).heatmap->regions();
        QCOMPARE(int(regions.regions.size()), 4);
        QVERIFY2(regions.regions[3].label.contains(QStringLiteral("idle")),
                 qPrintable(regions.regions[3].label));
        QVERIFY(regions.regions[0].label.contains(QStringLiteral("70 tokens")));
        QVERIFY(regions.caption.contains(QStringLiteral("experts")));
        // The idle expert's cores are less busy than the busiest expert's in that frame.
        const auto* frame = skewed->frameFor(1, false);
        QVERIFY(frame);
        const auto& r = skewed->expertRegions;
        auto mean = [&](const ws::wafer::CoreRegion& g) {
            double sum = 0;
            for (int i = g.row0; i < g.row0 + g.rows; ++i)
                for (int j = g.col0; j < g.col0 + g.cols; ++j)
                    sum += frame->busy[size_t(i * 16 + j)];
            return sum / (g.rows * g.cols);
        };
        QVERIFY(mean(r[3]) < mean(r[0]));

        QCoreApplication::processEvents();  // the charts' queued replots
        QVERIFY(tab.grab().save(artifactPath("expert-load-tab.png")));
        QVERIFY(chart->grab().save(artifactPath("expert-load-chart.png")));
    }

    // A real MoE run: its steps' metrics carry the tokens per expert, the tab charts the newest,
    // each step's counts add up to the batch's tokens x top_k, and the heatmap of an MoE block
    // names the experts' cores; the emulated step was re-planned with the run's routing.
    void liveMoeRun() {
        ws::testing::TempDir dir;
        ws::testing::TinyRun run;
        QVERIFY(ws::testing::runTiny(kMoeRunYaml, dir.path(), run));
        WaferTab tab;
        tab.resize(1300, 850);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        ws::testing::feedTab(tab, run);
        tab.redrawNow();
        ExpertLoadChart* chart = WaferTabViews(tab).expertLoads;
        QVERIFY(chart->isVisible());
        QCOMPARE(chart->barCount(), 4);
        double sum = 0;
        for (int e = 0; e < 4; ++e) sum += chart->barValue(e);
        QCOMPARE(sum, 4.0 * 32 * 2);  // the step's B x T tokens x top_k, none dropped
        QVERIFY(chart->titleText().contains(QStringLiteral("step 6")));
        chart->setShownBlock(1);
        QCOMPARE(chart->shownBlock(), 1);
        chart->setShownBlock(0);
        // The last step was re-planned with its routing, which the heatmap's regions show.
        const auto* record = tab.history().last();
        QVERIFY(record && record->prediction);
        QVERIFY(!record->prediction->uniformRouting);
        tab.setPhase(1 * 2 + 0);
        tab.redrawNow();
        QCOMPARE(int(WaferTabViews(tab).heatmap->regions().regions.size()), 4);
        QCoreApplication::processEvents();  // the charts' queued replots
        QVERIFY(tab.grab().save(artifactPath("expert-load-live-run.png")));
        QVERIFY(chart->grab().save(artifactPath("expert-load-live-chart.png")));
    }

    // A stored MoE run selected in the Runs dock: the chart shows the routing its store recorded
    // on its newest log step (not the plan's uniform routing), marked as recorded, while the run
    // trained in the window comes back on Live. Screenshot: expert-load-stored-run.png.
    void storedRunShowsItsRecordedRouting() {
        ws::testing::TempDir dir;
        ws::testing::TinyRun stored;
        std::string yaml = kMoeRunYaml;
        yaml.replace(yaml.find("log_steps: 1"), 12, "log_steps: 4");
        QVERIFY(ws::testing::runTiny(yaml, dir.path(), stored, /*record=*/true));
        auto store = ws::store::RunStore::open(dir.path() / "runs.sqlite");
        QVERIFY2(store.ok(), store.ok() ? "" : store.error().message.c_str());
        // Counts on the log steps (4, and the last, 6): the chart shows the newest.
        auto h0e0 = (*store)->metrics(stored.summary.runId, "moe/h.0.expert_0_tokens");
        QVERIFY(h0e0.ok());
        QCOMPARE(int(h0e0->size()), 2);
        QCOMPARE(h0e0->back().step, int64_t(6));
        std::vector<double> recorded;
        for (int e = 0; e < 4; ++e)
            recorded.push_back((*store)
                                   ->metrics(stored.summary.runId,
                                             "moe/h.1.expert_" + std::to_string(e) + "_tokens")
                                   ->back()
                                   .value);

        WaferTab tab;
        tab.resize(1300, 850);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        tab.beginRun(moeConfig());  // the window's own run: 4 blocks, MoE on 0 and 2
        const auto even = predict({});
        tab.addEmulatedStep({0, 0.0, even});
        tab.appendSpans(spansOf(*even, 0));
        tab.addExpertTokens(0, {{64, 64, 64, 64}, {}, {64, 64, 64, 64}, {}});
        auto info = (*store)->getRun(stored.summary.runId);
        QVERIFY(info.ok());
        QString error;
        QVERIFY2(tab.showStoredRun(info->id, "moe", info->configYaml, &error, store->get()),
                 qPrintable(error));
        tab.redrawNow();
        ExpertLoadChart* chart = WaferTabViews(tab).expertLoads;
        QVERIFY(chart->isVisible());
        QVERIFY(chart->showsRecorded());
        auto* picker = chart->findChild<QComboBox*>(QStringLiteral("expertLoadLayer"));
        QCOMPARE(picker->count(), 2);  // the stored model's MoE blocks, h.0 and h.1
        chart->setShownBlock(1);
        double sum = 0;
        for (int e = 0; e < 4; ++e) {
            QCOMPARE(chart->barValue(e), recorded[size_t(e)]);
            sum += chart->barValue(e);
        }
        QCOMPARE(sum, 4.0 * 32 * 2);
        QVERIFY2(chart->titleText().contains(QStringLiteral("step 6 (recorded)")),
                 qPrintable(chart->titleText()));
        QCoreApplication::processEvents();
        QVERIFY(tab.grab().save(artifactPath("expert-load-stored-run.png")));
        // Live: the window's run and its model again.
        tab.goLive();
        tab.redrawNow();
        QVERIFY(!chart->showsRecorded());
        QCOMPARE(picker->count(), 2);
        QCOMPARE(picker->itemText(1), QStringLiteral("h.2"));
        QCOMPARE(chart->barValue(0), 64.0);
    }
};

QTEST_MAIN(ExpertLoadTest)
#include "expert_load_test.moc"
