// SPDX-License-Identifier: GPL-3.0-or-later
// The studio end to end, offscreen: open the nano preset, edit a field in the form and see the
// YAML change (and back), make a value invalid and see the inline error with Run disabled,
// train a short run and watch loss points arrive, pause, resume, stop, and find the run in the
// store with its metrics; a dropped folder becomes the training data. Screenshots of each tab
// are saved as artifacts ($WAFER_TEST_ARTIFACTS); the Wafer tab receives the run's emulated
// steps and spans, and a chart point drills down to that step on the Wafer tab.
#include <QAction>
#include <QCheckBox>
#include <QDir>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMimeData>
#include <QSettings>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTextCursor>
#include <QTreeWidget>
#include <QUrl>
#include <memory>

#include "support/gui_test.h"
#include "support/studio_window.h"
#include "support/wafer_tab_views.h"
#include "ui/common/run_controller.h"
#include "ui/config/config_document.h"
#include "ui/config/config_form.h"
#include "ui/config/config_tab.h"
#include "ui/config/yaml_editor.h"
#include "ui/samples/samples_tab.h"
#include "ui/shell/log_dock.h"
#include "ui/shell/main_window.h"
#include "ui/shell/runs_dock.h"
#include "ui/training/training_tab.h"
#include "ui/wafer/core_heatmap.h"
#include "ui/wafer/layer_norm_chart.h"
#include "ui/wafer/timeline_view.h"
#include "ui/wafer/wafer_tab.h"

using ws::testing::WaferTabViews;

using namespace ws::ui;

namespace {
const QString kNano = QStringLiteral(WAFER_SOURCE_DIR "/presets/gpt-nano.yaml");

using ws::testing::artifactPath;

using ws::streaming::SpanKind;
using ws::testing::commitLine;

size_t livePoints(const TrainingTab* tab, const char* key) {
    for (const auto& [id, run] : tab->runs()) {
        if (id != 0) continue;
        const auto it = run.metrics.find(key);
        return it == run.metrics.end() ? 0 : it->second.size();
    }
    return 0;
}
}  // namespace

class MainWindowTest : public QObject {
    Q_OBJECT
private slots:
    void init() {
        QVERIFY(m_window.open());
        QVERIFY(m_window->openConfig(kNano));
    }
    void cleanup() { m_window.close(); }

    void formEditChangesYamlAndBack() {
        ConfigTab* tab = m_window.find<ConfigTab>("configTab");
        auto* hidden = qobject_cast<QLineEdit*>(tab->form()->editorFor("model.hidden_size"));
        QVERIFY(hidden);
        QCOMPARE(hidden->text(), QString("128"));
        commitLine(hidden, "192");
        QVERIFY(tab->yamlEditor()->toPlainText().contains("hidden_size: 192"));
        QVERIFY(m_window->document()->isModified());

        QString yaml = tab->yamlEditor()->toPlainText();
        yaml.replace("hidden_size: 192", "hidden_size: 160");
        QTextCursor typing(tab->yamlEditor()->document());  // an edit, as typing makes
        typing.select(QTextCursor::Document);
        typing.insertText(yaml);
        QTRY_COMPARE(hidden->text(), QString("160"));  // after the 300 ms typing pause
        auto* shuffle = qobject_cast<QCheckBox*>(tab->form()->editorFor("train_input.shuffle"));
        QVERIFY(shuffle && shuffle->isChecked());
        // Undo in the YAML view walks back through the form's edit too.
        tab->yamlEditor()->undo();
        tab->applyPendingYaml();
        QCOMPARE(hidden->text(), QString("192"));
        QVERIFY(tab->factsLabel()->text().contains("parameters"));
    }

    void invalidValueShowsInlineErrorAndDisablesRun() {
        ConfigForm* form = m_window.find<ConfigTab>("configTab")->form();
        QVERIFY(m_window.action("runAction")->isEnabled());
        auto* heads = qobject_cast<QLineEdit*>(form->editorFor("model.num_heads"));
        commitLine(heads, "5");
        QLabel* error = form->errorLabelFor("model.num_heads");
        QLabel* hiddenError = form->errorLabelFor("model.hidden_size");
        QVERIFY(error->isVisible() || hiddenError->isVisible());
        QVERIFY(!m_window.action("runAction")->isEnabled());
        QVERIFY(!m_window.find<ConfigTab>("configTab")->yamlEditor()->extraSelections().isEmpty());
        m_window->showTab("config");
        QVERIFY(m_window->saveScreenshot(artifactPath("studio-config-invalid.png")));
        QVERIFY(!m_window->startRun());

        auto* hidden = qobject_cast<QLineEdit*>(form->editorFor("model.hidden_size"));
        commitLine(hidden, "-1");  // rejected by the field's range
        QVERIFY(form->errorLabelFor("model.hidden_size")->isVisible());
        commitLine(hidden, "128");
        commitLine(heads, "4");
        QVERIFY(!error->isVisible());
        QVERIFY(m_window.action("runAction")->isEnabled());
        QVERIFY(m_window.find<ConfigTab>("configTab")->yamlEditor()->extraSelections().isEmpty());
    }

    void trainPauseResumeStopAndFindTheRun() {
        ConfigDocument* doc = m_window->document();
        QVERIFY(doc->setField("runconfig.max_steps", "2000"));
        QVERIFY(doc->setField("runconfig.log_steps", "5"));
        m_window->showTab("config");
        QVERIFY(m_window->saveScreenshot(artifactPath("studio-config.png")));
        m_window.action("runAction")->trigger();
        RunController* controller = m_window->controller();
        QVERIFY(controller->isActive());
        TrainingTab* training = m_window.find<TrainingTab>("trainingTab");
        QCOMPARE(m_window.find<QTabWidget>("mainTabs")->currentWidget(), training);
        QTRY_VERIFY_WITH_TIMEOUT(livePoints(training, "loss") >= 25, 120000);
        QVERIFY(m_window.action("stopAction")->isEnabled());
        QVERIFY(!m_window.action("runAction")->isEnabled());

        WaferTab* wafer = m_window.find<WaferTab>("waferTab");
        QAction* stepLayer = m_window.action("stepLayerAction");
        m_window.action("pauseAction")->trigger();
        QTRY_COMPARE_WITH_TIMEOUT(controller->state(), ws::session::RunState::Paused, 20000);
        QVERIFY(m_window.action("continueAction")->isEnabled());
        // Paused: the engine reports Paused from its pause point, after everything it did before,
        // and waits there. All it does next reaches the window as spans: from here on they may
        // only be the layer phases Step Layer lets through, one forward or backward pass each.
        int computeSpans = 0;  // passes the engine ran since it paused
        QObject counting;      // the count's connection ends with this scope
        connect(controller, &RunController::spans, &counting,
                [&](const std::vector<ws::streaming::Span>& batch) {
                    for (const auto& span : batch)
                        computeSpans +=
                            span.kind == SpanKind::Forward || span.kind == SpanKind::Backward;
                });
        QSignalSpy metricsWhilePaused(controller, &RunController::metrics);
        const size_t pausedAt = livePoints(training, "loss");
        const int64_t waferStep = wafer->shownStep();
        controller->drainNow();  // anything still queued behind the Paused state
        QCOMPARE(computeSpans, 0);
        QCOMPARE(metricsWhilePaused.count(), 0);
        QCOMPARE(livePoints(training, "loss"), pausedAt);  // paused: no new steps
        QCOMPARE(wafer->shownStep(), waferStep);           // the Wafer tab stays put
        // Step Layer: exactly one more layer phase per press, the Wafer tab follows it, the run
        // stays paused.
        QVERIFY(stepLayer->isEnabled());
        int presses = 0;
        auto stepOneLayer = [&] {
            const auto phase = wafer->followedPhase();
            stepLayer->trigger();
            ++presses;
            QTRY_VERIFY_WITH_TIMEOUT(wafer->followedPhase() != phase, 20000);
            QCOMPARE(computeSpans, presses);
            QCOMPARE(controller->state(), ws::session::RunState::Paused);
        };
        for (int i = 0; i < 3; ++i) {
            stepOneLayer();
            if (QTest::currentTestFailed()) return;
        }
        // On to the head's forward pass (the picture for the README: mid-step, the backward
        // pass's first weights streaming in).
        const int head = m_window->document()->config().model.numHiddenLayers + 1;
        for (int i = 0;
             i < 4 * (head + 1) && wafer->followedPhase() != std::pair<int, bool>(head, false);
             ++i) {
            stepOneLayer();
            if (QTest::currentTestFailed()) return;
        }
        QCOMPARE(wafer->followedPhase(), std::make_pair(head, false));
        m_window->showTab("wafer");
        QVERIFY(m_window->saveScreenshot(artifactPath("studio-wafer-step.png")));
        m_window->showTab("training");
        m_window.action("continueAction")->trigger();
        QTRY_VERIFY_WITH_TIMEOUT(!m_window.action("stepLayerAction")->isEnabled(), 20000);
        QTRY_VERIFY_WITH_TIMEOUT(livePoints(training, "loss") > pausedAt + 5, 60000);
        QVERIFY(m_window->saveScreenshot(artifactPath("studio-training.png")));
        m_window->showTab("wafer");
        QVERIFY(m_window->saveScreenshot(artifactPath("studio-wafer.png")));
        // The Wafer tab got the run's emulated steps and spans through the controller.
        QCOMPARE(wafer->emulation(), WaferTab::Emulation::On);
        QVERIFY(wafer->history().size() >= 5);
        QVERIFY(wafer->history().latestPrediction() != nullptr);
        QVERIFY(WaferTabViews(*wafer).heatmap->frame() != nullptr);
        QVERIFY(WaferTabViews(*wafer).timeline->barCount(3) > 0);  // system 0's compute lane

        QVERIFY(m_window.stopRun(60000));
        QVERIFY(!controller->isActive());
        QVERIFY(m_window.action("runAction")->isEnabled());
        const size_t points = [&] {
            for (const auto& [id, run] : training->runs()) return run.metrics.at("loss").size();
            return size_t(0);
        }();

        // The run is in the store, stopped, with every loss point the charts showed.
        auto runs = m_window->runStore()->listRuns();
        QVERIFY(runs.ok());
        QCOMPARE(runs->size(), size_t(1));
        QCOMPARE(runs->front().status, std::string("stopped"));
        auto loss = m_window->runStore()->metrics(runs->front().id, "loss");
        QVERIFY(loss.ok());
        QCOMPARE(loss->size(), points);
        QVERIFY(training->runs().count(runs->front().id));  // the live run became run N

        // It is listed in the Runs dock; selecting it overlays it without a duplicate.
        QTreeWidget* tree = m_window.find<RunsDock>("RunsDock")->tree();
        QCOMPARE(tree->topLevelItemCount(), 1);
        QCOMPARE(tree->topLevelItem(0)->text(1), QString("stopped"));
        m_window.find<RunsDock>("RunsDock")->selectRuns({runs->front().id});
        QTRY_COMPARE(training->runs().size(), size_t(1));
        QVERIFY(m_window.find<LogDock>("LogDock")->text().contains("corpus:"));
        m_window->showTab("training");
        QVERIFY(m_window->saveScreenshot(artifactPath("studio-training-finished.png")));

        // Samples: text from the run's weights, streamed into the tab, without blocking.
        SamplesTab* samples = m_window.find<SamplesTab>("samplesTab");
        QCOMPARE(samples->modelPath(), QString::fromStdString(runs->front().modelDir));
        samples->setPrompt("And the");
        samples->setLength(40);
        QSignalSpy sampled(samples, &SamplesTab::finished);
        QVERIFY(samples->generate());
        QTRY_VERIFY_WITH_TIMEOUT(!sampled.isEmpty(), 60000);
        QVERIFY2(sampled.front().at(0).toBool(), qPrintable(sampled.front().at(1).toString()));
        QVERIFY(samples->output().startsWith("And the"));
        QVERIFY(samples->output().size() > QString("And the").size());
        m_window->showTab("samples");
        QVERIFY(m_window->saveScreenshot(artifactPath("studio-samples.png")));

        // Export the data.
        const QString csv = m_window.filePath("metrics.csv");
        QVERIFY(training->exportCsv(csv));
        QVERIFY(QFileInfo(csv).size() > 100);
        QVERIFY(training->exportPng(m_window.filePath("charts.png")));
        QVERIFY(training->exportPdf(artifactPath("studio-training-charts.pdf")));
        QVERIFY(QFileInfo(artifactPath("studio-training-charts.pdf")).size() > 1000);
        // SVG is vectors: the loss curve is a path, the axis labels are text.
        QVERIFY(training->exportSvg(artifactPath("studio-training-charts.svg")));
        QFile svg(artifactPath("studio-training-charts.svg"));
        QVERIFY(svg.open(QIODevice::ReadOnly));
        const QByteArray svgText = svg.readAll();
        QVERIFY(svgText.startsWith("<?xml"));
        QVERIFY(svgText.contains("<path") || svgText.contains("<polyline"));
        QVERIFY(svgText.contains("<text"));
    }

    void droppedFolderBecomesTrainingData() {
        QMimeData mime;
        mime.setUrls({QUrl::fromLocalFile(m_window.dirPath())});
        QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton,
                              Qt::NoModifier);
        QApplication::sendEvent(m_window.get(), &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(m_window.get(), &drop);
        QVERIFY(
            m_window->document()->fieldValue("train_input.data_dir").contains(m_window.dirPath()));
    }

    // Drill-down: a point of the Training tab's charts opens that step on the Wafer tab, whose
    // bar chart shows the step's per-layer gradient norms as the run reported them.
    void chartPointOpensThatStepOnTheWaferTab() {
        TrainingTab* training = m_window.find<TrainingTab>("trainingTab");
        WaferTab* wafer = m_window.find<WaferTab>("waferTab");
        {  // Nothing trained in this window yet: nothing to inspect, and the menu says so.
            std::unique_ptr<QMenu> menu(training->chartMenu(3, training));
            QAction* inspect = menu->findChild<QAction*>("inspectStep");
            QVERIFY(inspect && !inspect->isEnabled());
            QVERIFY(!inspect->toolTip().isEmpty());
        }
        ConfigDocument* doc = m_window->document();
        QVERIFY(doc->setField("runconfig.max_steps", "40"));  // past the 30-step warm-up
        std::vector<ws::session::StepMetrics> reported;
        connect(m_window->controller(), &RunController::metrics, this,
                [&](const std::vector<ws::session::StepMetrics>& batch) {
                    reported.insert(reported.end(), batch.begin(), batch.end());
                });
        QVERIFY(m_window.runToEnd(120000));
        QCOMPARE(reported.size(), size_t(40));
        training->redrawNow();
        wafer->redrawNow();
        const int numBlocks = 4;  // gpt-nano
        QCOMPARE(wafer->history().size(), size_t(40));

        // Right-click at x = step 5 on the loss chart: the menu offers step 5, and triggering it
        // shows Wafer tab step 4 (0-based) with step 5's norms.
        const int64_t k = 5;
        std::unique_ptr<QMenu> menu(training->chartMenu(double(k), training->lossPanel()));
        QAction* inspect = menu->findChild<QAction*>("inspectStep");
        QVERIFY(inspect);
        QVERIFY(inspect->isEnabled());
        QVERIFY2(inspect->text().contains("step 5"), qPrintable(inspect->text()));
        QSignalSpy requested(training, &TrainingTab::inspectStepRequested);
        inspect->trigger();
        QCOMPARE(requested.size(), 1);
        QCOMPARE(requested.front().at(0).toLongLong(), k);
        QCOMPARE(m_window.find<QTabWidget>("mainTabs")->currentWidget(), wafer);
        QVERIFY(!wafer->isLive());
        QCOMPARE(wafer->shownStep(), k - 1);
        wafer->redrawNow();
        const ws::session::StepMetrics& m = reported[size_t(k - 1)];
        QCOMPARE(m.step, k);
        QCOMPARE(m.layerGradNorms.size(), size_t(numBlocks + 2));
        LayerNormChart* chart = WaferTabViews(*wafer).layerNorms;
        QCOMPARE(chart->barCount(), numBlocks + 2);
        for (int l = 0; l < numBlocks + 2; ++l)
            QCOMPARE(chart->barValue(l), m.layerGradNorms[size_t(l)]);
        QVERIFY(chart->barLabel(0) == "embeddings" || chart->barLabel(0) == "emb");
        QCOMPARE(chart->barLabel(numBlocks + 1), QString("head"));
        QVERIFY2(chart->titleText().contains("step 5"), qPrintable(chart->titleText()));
        QVERIFY(m_window->saveScreenshot(artifactPath("studio-wafer-drilldown.png")));

        // Tokens and wall time on the x axis map back to the same step.
        ChartPanel::Options options = training->options();
        options.xAxis = XAxisKind::Tokens;
        training->setOptions(options);
        const auto& live = training->runs().begin()->second;
        QCOMPARE(training->stepAt(double(k) * live.tokensPerStep), k);
        options.xAxis = XAxisKind::WallTime;
        training->setOptions(options);
        QCOMPARE(training->stepAt(live.metrics.at("loss").wall[size_t(k - 1)]), k);
        // Steps the Wafer tab does not hold cannot be inspected.
        QVERIFY(!training->inspectStep(0));
        QVERIFY(!training->inspectStep(41));
        QCOMPARE(requested.size(), 1);
    }

private:
    ws::testing::StudioWindow m_window;
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<MainWindowTest>(argc, argv);
}
#include "main_window_test.moc"
