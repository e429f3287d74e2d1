// SPDX-License-Identifier: GPL-3.0-or-later
// The Sweeps tab end to end, offscreen: a tiny μTransfer sweep (2 widths x 3 learning rates x
// sp/mup, 6 steps) started with Run Sweep fills the chart as trials finish (one curve per width,
// one panel per parametrization, a point per rate), the trial table sorts by any column, the
// heatmap has a cell per width and rate, the parallel coordinates a line per trial, and the Runs
// dock shows the sweep with its trials as children. A plan above sweep.max_trials asks first; a
// planning error is shown, not swallowed; diverged trials are drawn as markers. While a sweep runs
// the header and the status bar show an ETA; a stopped sweep is resumable from the Runs dock's
// menu exactly when from the toolbar, its header counts every planned trial, and the log says how
// to resume it in the studio's words. Screenshots go to $WAFER_TEST_ARTIFACTS.
#include <qcustomplot.h>
#include <QAction>
#include <QDir>
#include <QFile>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>
#include <cmath>
#include <memory>

#include <QApplication>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QMessageBox>
#include <QSpinBox>
#include <QTimer>
#include "engine/config/config_yaml.h"
#include "engine/store/run_store.h"
#include "engine/sweep/space.h"
#include "support/gui_test.h"
#include "support/studio_window.h"
#include "ui/common/status_panel.h"
#include "ui/config/config_document.h"
#include "ui/shell/log_dock.h"
#include "ui/shell/main_window.h"
#include "ui/shell/runs_dock.h"
#include "ui/sweeps/coord_check_view.h"
#include "ui/sweeps/sweep_controller.h"
#include "ui/sweeps/sweep_heatmap.h"
#include "ui/sweeps/sweep_parallel_coords.h"
#include "ui/sweeps/sweep_table.h"
#include "ui/sweeps/sweeps_tab.h"
#include "ui/sweeps/transfer_chart.h"
#include "ui/sweeps/transfer_dialog.h"
#include "ui/teaching/presenter_mode.h"

using namespace ws::ui;

namespace {

using ws::testing::artifactPath;

// WCAG's contrast ratio of two colours (1 to 21; 4.5 is the minimum for body text).
double contrastRatio(const QColor& a, const QColor& b) {
    auto luminance = [](const QColor& c) {
        auto channel = [](double v) {
            return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
        };
        return 0.2126 * channel(c.redF()) + 0.7152 * channel(c.greenF()) +
               0.0722 * channel(c.blueF());
    };
    const double la = luminance(a), lb = luminance(b);
    return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

// A 1-layer byte-level GPT small enough that 12 trials of 6 steps take a few seconds.
QString tinySweepYaml(const QString& sweepExtra) {
    return QStringLiteral(
               "model:\n  name: tiny-sweep\n  hidden_size: 16\n  num_hidden_layers: 1\n"
               "  num_heads: 2\n  filter_size: 32\n  vocab_size: 256\n"
               "  max_position_embeddings: 16\n"
               "optimizer:\n  learning_rate: 0.003\n  betas: [0.9, 0.95]\n"
               "  max_gradient_norm: 1.0\n"
               "train_input:\n  data_dir: corpus\n  batch_size: 2\n  max_sequence_length: 16\n"
               "eval_input:\n  batch_size: 2\n"
               "runconfig:\n  max_steps: 6\n  eval_frequency: 0\n  eval_steps: 0\n"
               "  log_steps: 1\n  seed: 3\n"
               "wafer:\n  emulate: false\n"
               "sweep:\n  parallel_trials: 2\n  final_loss_steps: 3\n  max_steps: 6\n"
               "  parameters:\n    model.hidden_size: {values: [16, 32]}\n"
               "    optimizer.learning_rate: {log2_range: {min: -9, max: -7, step: 1}}\n"
               "  parametrization: [sp, mup]\n"
               "  parametrizations:\n    sp: {}\n"
               "    mup: {model.mup_base_hidden_size: 16, model.mup_base_filter_size: 32}\n") +
           sweepExtra;
}

}  // namespace

class SweepsTest : public QObject {
    Q_OBJECT
private slots:
    void init() {
        QVERIFY(m_window.makeFolder());
        QDir(m_window.dirPath()).mkpath(QStringLiteral("corpus"));
        QFile corpus(m_window.filePath(QStringLiteral("corpus/text.txt")));
        QVERIFY(corpus.open(QIODevice::WriteOnly));
        for (int i = 0; i < 200; ++i)
            corpus.write(QStringLiteral("the quick brown fox jumps over the lazy dog number %1.\n")
                             .arg(i % 7)
                             .toUtf8());
        corpus.close();
        QVERIFY(m_window.open({1500, 950}));
        // Run Sweep asks first; these tests answer yes on purpose (runSweepAsksHowManyAndHowLong
        // drives the real dialog).
        m_window->setSweepConfirmer([](const QString&) { return true; });
    }
    void cleanup() { m_window.close(); }

    void runSweepFillsTheChartTableHeatmapAndRunsTree() {
        QVERIFY(openSweep(tinySweepYaml({})));
        QVERIFY(m_window.action("runSweepAction")->isEnabled());
        SweepsTab* tab = m_window.find<SweepsTab>("SweepsTab");
        StatusPanel* status = m_window.find<StatusPanel>("statusPanel");
        // Trials reach the tab one by one while the sweep runs, not all at the end; from the
        // first one on, the header and the status bar estimate the time left.
        std::vector<size_t> seen;
        double firstEta = std::nan("");
        QString firstHeader, firstStatusEta, firstStatusStep;
        connect(m_window->sweepController(), &SweepController::trialFinished, tab, [&, tab] {
            seen.push_back(tab->results().size());
            if (seen.size() == 1) {
                firstEta = tab->etaSeconds();
                firstHeader = tab->headerText();
                firstStatusEta = status->etaText();
                firstStatusStep = status->stepText();
            }
        });
        QSignalSpy done(m_window->sweepController(), &SweepController::finished);
        // The status bar still shows the last run's figures; a sweep starting replaces them.
        ws::session::StepMetrics last;
        last.step = 77;
        last.maxSteps = 100;
        last.loss = 2.5;
        status->showMetrics(last);
        QCOMPARE(status->stepText(), QStringLiteral("step 77 / 100"));
        m_window.action("runSweepAction")->trigger();
        QCOMPARE(status->stepText(), QStringLiteral("trials 0 / 12"));
        QVERIFY2(status->stateText().contains(QStringLiteral("Sweep running")),
                 qPrintable(status->stateText()));
        QVERIFY(status->lossText().isEmpty());
        QVERIFY(m_window->sweepController()->isActive());
        QCOMPARE(m_window.find<QTabWidget>("mainTabs")->currentWidget(), tab);
        QVERIFY(!m_window.action("runAction")->isEnabled());
        QVERIFY(m_window.action("stopAction")->isEnabled());
        QVERIFY(done.wait(180000));
        const auto outcome = done.takeFirst().at(0).value<ws::sweep::SweepOutcome>();
        QCOMPARE(QString::fromStdString(outcome.status), QStringLiteral("finished"));
        QCOMPARE(seen.size(), size_t(12));
        for (size_t i = 0; i < seen.size(); ++i) QCOMPARE(seen[i], i + 1);
        QVERIFY2(std::isfinite(firstEta) && firstEta > 0, qPrintable(QString::number(firstEta)));
        QVERIFY2(firstHeader.contains(QStringLiteral("ETA ")), qPrintable(firstHeader));
        QVERIFY2(firstStatusEta.startsWith(QStringLiteral("ETA ")), qPrintable(firstStatusEta));
        QCOMPARE(firstStatusStep, QStringLiteral("trials 1 / 12"));
        // Over: no ETA left, the count complete.
        QVERIFY(std::isnan(tab->etaSeconds()));
        QVERIFY(!tab->headerText().contains(QStringLiteral("ETA")));
        QCOMPARE(status->stepText(), QStringLiteral("trials 12 / 12"));
        QVERIFY(status->etaText().isEmpty());

        // The chart: sp | mup, two widths each, three rates per width.
        TransferChart* chart = tab->chart();
        QCOMPARE(chart->panelCount(), 2);
        for (int p = 0; p < 2; ++p) {
            QCOMPARE(chart->curveCount(p), 2);
            QCOMPARE(chart->pointCount(p) + chart->divergedMarkerCount(p), 6);
            QVERIFY2(chart->panelNote(p).contains(QStringLiteral("drift")),
                     qPrintable(chart->panelNote(p)));
            QVERIFY(chart->panelNote(p).contains(QStringLiteral("regret")));
        }

        // The table: 12 rows, sortable by final loss (numbers, ascending) and by trial.
        SweepTable* table = tab->table();
        QCOMPARE(table->rowCount(), 12);
        const int lossCol = table->column(QStringLiteral("final loss"));
        const int statusCol = table->column(QStringLiteral("status"));
        QVERIFY(lossCol > 0 && statusCol > 0);
        QVERIFY(table->column(QStringLiteral("learning_rate")) > 0);
        QVERIFY(table->column(QStringLiteral("hidden_size")) > 0);
        table->sortByColumn(lossCol, Qt::AscendingOrder);
        double previous = -1.0;
        for (int r = 0; r < table->rowCount(); ++r) {
            QCOMPARE(table->item(r, statusCol)->text(), QStringLiteral("finished"));
            const double loss = table->item(r, lossCol)->text().toDouble();
            QVERIFY2(loss >= previous, qPrintable(QStringLiteral("row %1").arg(r)));
            previous = loss;
        }
        table->sortByColumn(0, Qt::DescendingOrder);
        QCOMPARE(table->item(0, 0)->text(), QStringLiteral("11"));
        QCOMPARE(table->item(11, 0)->text(), QStringLiteral("0"));

        // The heatmap: one map per parametrization, a value in every width x rate cell.
        SweepHeatmap* heatmap = tab->heatmap();
        QCOMPARE(heatmap->mapCount(), 2);
        for (int m = 0; m < 2; ++m)
            for (int w = 0; w < 2; ++w)
                for (int l = 0; l < 3; ++l) QVERIFY(std::isfinite(heatmap->cell(m, w, l)));

        // Parallel coordinates: width, rate, parametrization and loss; a line per trial.
        SweepParallelCoords* parallel = tab->parallelCoords();
        QCOMPARE(parallel->axisCount(), 4);
        QCOMPARE(parallel->axisName(0), QStringLiteral("model.hidden_size"));
        QCOMPARE(parallel->axisName(1), QStringLiteral("optimizer.learning_rate"));
        QCOMPARE(parallel->axisName(2), QStringLiteral("parametrization"));
        QCOMPARE(parallel->lineCount(), 12);

        // Runs: the sweep is a parent item with its 12 trials as children.
        QTreeWidget* tree = m_window.find<RunsDock>("RunsDock")->tree();
        QTreeWidgetItem* sweepItem = nullptr;
        for (int i = 0; i < tree->topLevelItemCount(); ++i)
            if (tree->topLevelItem(i)->childCount() > 0) sweepItem = tree->topLevelItem(i);
        QVERIFY(sweepItem);
        QCOMPARE(sweepItem->childCount(), 12);
        QCOMPARE(sweepItem->text(1), QStringLiteral("finished"));

        QVERIFY(m_window->saveScreenshot(artifactPath(QStringLiteral("sweeps-chart.png"))));
        tab->views()->setCurrentWidget(heatmap);
        QVERIFY(m_window->saveScreenshot(artifactPath(QStringLiteral("sweeps-heatmap.png"))));
        tab->views()->setCurrentWidget(parallel);
        QVERIFY(m_window->saveScreenshot(artifactPath(QStringLiteral("sweeps-parallel.png"))));

        // μTransfer from the μP panel's narrowest width: the dialog writes a valid wide config.
        double proxyWidth = 0.0;
        const double best = tab->proxyBestLog2Lr(&proxyWidth);
        QVERIFY(std::isfinite(best));
        QCOMPARE(proxyWidth, 16.0);
        QVERIFY(tab->transferButton()->isEnabled());
        QVERIFY(tab->mupProxy());
        TransferDialog dialog(*tab->mupProxy(), int(proxyWidth), best,
                              m_window.filePath(QStringLiteral("target.yaml")));
        dialog.targetWidth()->setValue(128);
        QVERIFY2(dialog.problem().isEmpty(), qPrintable(dialog.problem()));
        QString error;
        QVERIFY2(dialog.writeConfig(&error), qPrintable(error));
        auto target = ws::config::loadConfigFile(dialog.outputPath().toStdString());
        QVERIFY2(target.ok(), target.ok() ? "" : target.error().message.c_str());
        QCOMPARE(target->config.model.hiddenSize, 128);
        QCOMPARE(target->config.model.mupBaseHiddenSize, 16);
        QCOMPARE(target->config.model.mupBaseFilterSize, 32);
        dialog.targetWidth()->setValue(8);  // narrower than the proxy: refused, with the reason
        QVERIFY(dialog.problem().contains(QStringLiteral("narrower")));

        // Selecting the stored sweep in Runs shows it again, from the store.
        tab->beginSweep({});
        QCOMPARE(tab->results().size(), size_t(0));
        tree->clearSelection();
        sweepItem->setSelected(true);
        QCOMPARE(tab->results().size(), size_t(12));
        QCOMPARE(chart->curveCount(0) + chart->curveCount(1), 4);
        QVERIFY2(tab->headerText().contains(QStringLiteral(": 12 trials (12 points × 1 seeds)")),
                 qPrintable(tab->headerText()));

        // The status bar follows the selection: a trial's own figures, then nothing.
        tree->clearSelection();
        QCOMPARE(status->stateText(), QStringLiteral("Ready"));
        QVERIFY(status->stepText().isEmpty());
        sweepItem->child(0)->setSelected(true);
        QVERIFY2(status->stateText().contains(QStringLiteral("Finished")),
                 qPrintable(status->stateText()));
        QCOMPARE(status->stepText(), QStringLiteral("step 6"));
        QVERIFY2(status->lossText().startsWith(QStringLiteral("loss ")),
                 qPrintable(status->lossText()));
    }

    void longPanelNotesWrapToThePanel() {
        TransferChart chart;
        chart.resize(2 * 420, 400);  // two panels about as wide as at the default window size
        chart.setParametrizations({"sp", "mup"});
        ws::sweep::ParametrizationTransfer sp;
        sp.parametrization = "sp";
        sp.driftSteps = 3;
        sp.note =
            "the widest model has no finished trial at the narrowest model's best learning rate "
            "(pruned or not run)";
        for (double w : {16.0, 32.0, 64.0, 128.0}) {
            ws::sweep::WidthOptimum o;
            o.width = w;
            o.bestLog2Lr = -7;
            sp.widths.push_back(o);
        }
        chart.setResults({}, {sp});
        chart.show();
        QVERIFY(QTest::qWaitForWindowExposed(&chart));
        QCPTextElement* note = nullptr;
        QCustomPlot* panel = chart.panel(0);
        for (int i = 0; i < panel->plotLayout()->elementCount(); ++i)
            if (auto* t = qobject_cast<QCPTextElement*>(panel->plotLayout()->elementAt(i));
                t && t->objectName() != QStringLiteral("title"))
                note = t;
        QVERIFY(note);
        const QFontMetrics metrics(note->font());
        const QString shown = chart.panelNoteShown(0);
        QVERIFY2(shown.count('\n') > chart.panelNote(0).count('\n'), qPrintable(shown));
        for (const QString& line : shown.split('\n'))
            QVERIFY2(metrics.horizontalAdvance(line) <= panel->width(), qPrintable(line));
        // The note does not widen its panel at its neighbour's expense.
        QApplication::processEvents();  // the layout request after the rewrap
        QVERIFY2(std::abs(chart.panel(0)->width() - chart.panel(1)->width()) <= 2,
                 qPrintable(QStringLiteral("%1 vs %2")
                                .arg(chart.panel(0)->width())
                                .arg(chart.panel(1)->width())));
        for (int p = 0; p < chart.panelCount(); ++p)
            chart.panel(p)->replot(QCustomPlot::rpImmediateRefresh);
        // Every word is still there.
        QCOMPARE(shown.simplified(), chart.panelNote(0).simplified());
        QVERIFY(chart.grab().save(artifactPath(QStringLiteral("sweeps-long-note.png"))));
    }

    void runSweepAsksHowManyAndHowLong() {
        // Below sweep.max_trials too: every sweep says what it will cost before it starts.
        QVERIFY(openSweep(tinySweepYaml({})));
        m_window->setSweepConfirmer({});  // the real dialog
        QString shown;
        bool sawBox = false;
        // Answers the dialog once it is up (after the steps are timed): Run Sweep or Cancel.
        auto answer = [&](bool run) {
            auto* poll = new QTimer(this);
            connect(poll, &QTimer::timeout, this, [&, run, poll] {
                auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
                if (!box || box->objectName() != QLatin1String("sweepConfirmBox")) return;
                poll->deleteLater();
                poll->stop();
                sawBox = true;
                shown = box->text();
                box->grab().save(artifactPath(QStringLiteral("sweeps-confirm.png")));
                QAbstractButton* button =
                    run ? box->findChild<QPushButton*>(QStringLiteral("runSweepButton"))
                        : box->button(QMessageBox::Cancel);
                button->click();
            });
            poll->start(20);
        };
        answer(false);
        QVERIFY(!m_window->startSweep());
        QVERIFY(sawBox);
        QVERIFY(!m_window->sweepController()->isActive());
        QVERIFY2(shown.contains(QStringLiteral("Run 12 trials of 6 steps, 2 at a time?")),
                 qPrintable(shown));
        QVERIFY2(shown.contains(QStringLiteral("Estimated time: ~")), qPrintable(shown));
        // Run Sweep in the same dialog starts it.
        sawBox = false;
        answer(true);
        QSignalSpy done(m_window->sweepController(), &SweepController::finished);
        QVERIFY(m_window->startSweep());
        QVERIFY(sawBox);
        QVERIFY(done.wait(120000));
    }

    void progressPercentReadsInEveryPalette() {
        auto loaded = ws::config::parseConfig(tinySweepYaml({}).toStdString(), "tiny-sweep.yaml",
                                              m_window.dirPath().toStdString());
        QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().message.c_str());
        auto plan = ws::sweep::planSweep(*loaded);
        QVERIFY2(plan.ok(), plan.ok() ? "" : plan.error().message.c_str());
        const QPalette normal = QApplication::palette();
        QPalette dark = normal;
        for (auto [role, color] : {std::pair{QPalette::Window, QColor(0x2b, 0x2b, 0x2b)},
                                   {QPalette::WindowText, QColor(0xee, 0xee, 0xee)},
                                   {QPalette::Base, QColor(0x1e, 0x1e, 0x1e)},
                                   {QPalette::Text, QColor(0xee, 0xee, 0xee)},
                                   {QPalette::Highlight, QColor(0x3d, 0x8e, 0xc9)}})
            dark.setColor(role, color);
        const std::pair<const char*, QPalette> palettes[] = {
            {"normal", normal},
            {"dark", dark},
            {"high-contrast", PresenterMode::highContrastPalette()}};
        for (const auto& [name, palette] : palettes) {
            QApplication::setPalette(palette);
            SweepsTab tab;
            tab.resize(1200, 500);
            tab.show();
            tab.beginSweep(*plan);
            for (int i = 0; i < 5; ++i) {
                ws::sweep::TrialResult r;
                r.trial = i;
                r.status = ws::sweep::TrialStatus::Finished;
                r.finalLoss = 2.0 + 0.1 * i;
                tab.addResult(r);
            }
            QVERIFY(QTest::qWaitForWindowExposed(&tab));
            QVERIFY(tab.progressBar()->isVisible());
            // The bar draws no text over its own fill; the figures sit beside it, in the
            // palette's text colour on its window colour.
            QVERIFY2(!tab.progressBar()->isTextVisible(), name);
            QLabel* percent = tab.percentLabel();
            QVERIFY2(percent->isVisible(), name);
            QCOMPARE(percent->text(), QStringLiteral("5 / 12 (41%)"));
            const QColor fg = percent->palette().color(QPalette::WindowText);
            const QColor bg = percent->palette().color(QPalette::Window);
            QVERIFY2(contrastRatio(fg, bg) >= 4.5,
                     qPrintable(QStringLiteral("%1: %2 on %3").arg(name, fg.name(), bg.name())));
            // And it is drawn: the label's picture holds text-coloured pixels.
            const QImage shot = percent->grab().toImage();
            int textPixels = 0;
            for (int y = 0; y < shot.height(); ++y)
                for (int x = 0; x < shot.width(); ++x)
                    textPixels += contrastRatio(shot.pixelColor(x, y), bg) >= 3.0;
            QVERIFY2(textPixels > 20, name);
            const QRect header = tab.progressBar()->geometry().united(percent->geometry());
            QVERIFY(tab.grab(header.adjusted(-200, -10, 10, 10))
                        .save(artifactPath(QStringLiteral("sweeps-progress-%1.png").arg(name))));
        }
        QApplication::setPalette(normal);
    }

    void stopLeavesTheSweepResumable() {
        QVERIFY(openSweep(tinySweepYaml({}).replace(QStringLiteral("  parallel_trials: 2\n"),
                                                    QStringLiteral("  parallel_trials: 1\n"))));
        SweepController* sweeps = m_window->sweepController();
        QSignalSpy done(sweeps, &SweepController::finished);
        QSignalSpy oneDone(sweeps, &SweepController::trialFinished);
        QVERIFY(m_window->startSweep());
        QVERIFY(oneDone.wait(60000));
        m_window.action("stopAction")->trigger();
        QVERIFY(done.wait(60000));
        const auto stopped = done.takeFirst().at(0).value<ws::sweep::SweepOutcome>();
        QCOMPARE(QString::fromStdString(stopped.status), QStringLiteral("stopped"));
        QVERIFY(stopped.trials.size() < 12);
        QVERIFY(!m_window.action("stopAction")->isEnabled());
        QVERIFY(m_window.action("runSweepAction")->isEnabled());
        // The log says how to resume in the studio's words, not the CLI's.
        const QString log = m_window.find<LogDock>("LogDock")->text();
        QVERIFY2(log.contains(QStringLiteral("resume it with Run ▸ Resume Run… (F8)")),
                 qPrintable(log));
        QVERIFY2(!log.contains(QStringLiteral("--resume")), qPrintable(log));
        QVERIFY2(m_window.find<StatusPanel>("statusPanel")
                     ->stateText()
                     .contains(QStringLiteral("Sweep stopped")),
                 qPrintable(m_window.find<StatusPanel>("statusPanel")->stateText()));
        // Shown from the store, the stopped sweep counts all 12 planned trials, not the rows
        // of the trials that started.
        m_window.find<RunsDock>("RunsDock")->selectRuns({stopped.sweepRunId});
        SweepsTab* tab = m_window.find<SweepsTab>("SweepsTab");
        QCOMPARE(tab->plannedTrials(), size_t(12));
        QVERIFY2(tab->headerText().contains(QStringLiteral(": 12 trials")),
                 qPrintable(tab->headerText()));
        QVERIFY2(tab->headerText().contains(QStringLiteral("started")),
                 qPrintable(tab->headerText()));
        // The Runs dock's "Resume run…" is enabled exactly when the toolbar's Resume Run is.
        auto dockResume = [this](int64_t id) {
            std::unique_ptr<QMenu> menu(
                m_window.find<RunsDock>("RunsDock")->contextMenu(id, nullptr));
            QAction* resume =
                menu ? menu->findChild<QAction*>(QStringLiteral("resumeRun")) : nullptr;
            return resume && resume->isEnabled();
        };
        QVERIFY(m_window.action("resumeRunAction")->isEnabled());
        QVERIFY(dockResume(stopped.sweepRunId));
        // What a killed studio would leave: "running" in the store and nobody holding the
        // sweep's folder. Runs shows it interrupted, and it resumes like a stopped sweep.
        {
            auto other = ws::store::RunStore::open(
                m_window.filePath(QStringLiteral("runs.sqlite")).toStdString());
            QVERIFY(other.ok());
            QVERIFY((*other)->setStatus(stopped.sweepRunId, "running").ok());
        }
        m_window.find<RunsDock>("RunsDock")->refresh();
        const auto interrupted = m_window.find<RunsDock>("RunsDock")
                                     ->tree()
                                     ->findItems(QStringLiteral("interrupted"),
                                                 Qt::MatchExactly | Qt::MatchRecursive, 1);
        QCOMPARE(interrupted.size(), 1);
        QVERIFY(!interrupted.front()->toolTip(1).isEmpty());
        // Resume Run on the sweep continues it; the Sweeps tab ends with all 12.
        m_window.find<RunsDock>("RunsDock")->selectRuns({stopped.sweepRunId});
        QVERIFY(m_window.action("resumeRunAction")->isEnabled());
        m_window.action("resumeRunAction")->trigger();
        QVERIFY(sweeps->isActive());
        QVERIFY(!m_window.action("resumeRunAction")->isEnabled());
        QVERIFY(!dockResume(stopped.sweepRunId));  // nothing resumes while a sweep runs
        QVERIFY(done.wait(120000));
        const auto resumed = done.takeFirst().at(0).value<ws::sweep::SweepOutcome>();
        QCOMPARE(QString::fromStdString(resumed.status), QStringLiteral("finished"));
        QCOMPARE(resumed.sweepRunId, stopped.sweepRunId);
        QCOMPARE(m_window.find<SweepsTab>("SweepsTab")->results().size(), size_t(12));
        QCOMPARE(m_window.find<SweepsTab>("SweepsTab")->chart()->pointCount(0) +
                     m_window.find<SweepsTab>("SweepsTab")->chart()->pointCount(1),
                 12);
    }

    void largePlanAsksFirstAndPlanningErrorsAreShown() {
        QVERIFY(openSweep(tinySweepYaml(QStringLiteral("  max_trials: 4\n"))));
        QString asked;
        m_window->setSweepConfirmer([&asked](const QString& message) {
            asked = message;
            return false;
        });
        QVERIFY(!m_window->startSweep());
        QVERIFY2(asked.contains(QStringLiteral("12")), qPrintable(asked));
        QVERIFY2(asked.contains(QStringLiteral("Run 12 trials")), qPrintable(asked));
        QVERIFY2(asked.contains(QStringLiteral("Estimated time")), qPrintable(asked));
        QVERIFY(!m_window->sweepController()->isActive());

        QVERIFY(openSweep(tinySweepYaml({}).replace(QStringLiteral("model.hidden_size: {"),
                                                    QStringLiteral("model.hiden_size: {"))));
        QVERIFY(!m_window->startSweep());
        const QString header = m_window.find<SweepsTab>("SweepsTab")
                                   ->findChild<QLabel*>(QStringLiteral("SweepHeader"))
                                   ->text();
        QVERIFY2(header.contains(QStringLiteral("hiden_size")), qPrintable(header));
        QVERIFY2(header.contains(QStringLiteral("did you mean")), qPrintable(header));
    }

    void divergedTrialsAreDrawnNotDropped() {
        // Every loss is above 1 nat from the first step: every trial diverges.
        QVERIFY(openSweep(tinySweepYaml(QStringLiteral("  max_loss: 1.0\n"))
                              .replace(QStringLiteral("  parametrization: [sp, mup]\n"),
                                       QStringLiteral("  parametrization: [sp]\n"))));
        QSignalSpy done(m_window->sweepController(), &SweepController::finished);
        QVERIFY(m_window->startSweep());
        QVERIFY(done.wait(120000));
        TransferChart* chart = m_window.find<SweepsTab>("SweepsTab")->chart();
        QCOMPARE(chart->panelCount(), 1);
        QCOMPARE(chart->pointCount(0), 0);
        QCOMPARE(chart->divergedMarkerCount(0), 6);
        QVERIFY(m_window->saveScreenshot(artifactPath(QStringLiteral("sweeps-diverged.png"))));
    }

    void coordCheckPlotsOnePanelPerStepWithAVerdict() {
        // Synthetic points: μP flat, SP's output logits growing like sqrt(width).
        std::vector<ws::mup::CoordPoint> points;
        for (auto p : {ws::mup::Parametrization::Standard, ws::mup::Parametrization::Mup})
            for (int step = 1; step <= 5; ++step)
                for (int w : {32, 64, 128, 256})
                    for (std::string_view layer : ws::mup::kLayerTypes) {
                        const bool grows = p == ws::mup::Parametrization::Standard &&
                                           layer == std::string_view("output_logits");
                        points.push_back({p, w, step, layer, grows ? std::sqrt(double(w)) : 1.0});
                    }
        CoordCheckView* view = m_window.find<SweepsTab>("SweepsTab")->coordCheck();
        view->setResult(ws::mup::judge(points, 0.3));
        QCOMPARE(view->panelCount(), 3);            // first, middle and last step
        QCOMPARE(view->panel(0)->graphCount(), 8);  // 4 layer types x SP, μP
        QCOMPARE(view->panel(0)->graph(0)->dataCount(), 4);
        QVERIFY2(view->verdictText().contains(QStringLiteral("PASS")),
                 qPrintable(view->verdictText()));

        // A real, small check of the μP base preset through the button's path.
        QVERIFY(m_window->openConfig(QStringLiteral(WAFER_SOURCE_DIR "/presets/mup-base.yaml")));
        ws::mup::CoordCheckOptions options;
        options.widths = {32, 64};
        options.steps = 2;
        QSignalSpy done(view, &CoordCheckView::finished);
        QVERIFY(view->runOn(m_window->document()->config(), options));
        QVERIFY(done.wait(120000));
        QVERIFY2(done.first().at(0).toBool(), qPrintable(done.first().at(1).toString()));
        QCOMPARE(view->panelCount(), 2);
        m_window->showTab(QStringLiteral("sweeps"));
        m_window.find<SweepsTab>("SweepsTab")->views()->setCurrentWidget(view);
        QVERIFY(m_window->saveScreenshot(artifactPath(QStringLiteral("sweeps-coord-check.png"))));
    }

private:
    bool openSweep(const QString& yaml) {
        const QString path = m_window.filePath(QStringLiteral("tiny-sweep.yaml"));
        QFile file(path);
        if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate)) return false;
        file.write(yaml.toUtf8());
        file.close();
        return m_window->openConfig(path);
    }

    ws::testing::StudioWindow m_window;
};

int main(int argc, char** argv) {
    qRegisterMetaType<ws::sweep::SweepOutcome>();
    return ws::testing::runIsolatedGuiTest<SweepsTest>(argc, argv);
}
#include "sweeps_test.moc"
