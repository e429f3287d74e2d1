// SPDX-License-Identifier: GPL-3.0-or-later
// Tests of the Training tab's charts: overlaid runs each get a curve and appear in the
// crosshair read-out, a NaN loss becomes a visible divergence marker, the x axis switches to
// tokens seen, log-y switches the scale, and CSV export writes every point. Also (issue 12,
// item 13): human tick labels (50k, 1.2M), the crosshair's x in the same form, log-y for the
// loss chart only unless a chart chooses its own, a pause breaking the wall-time line, a PNG
// export of the charts without the toolbar, and "(now)" only on the run being trained. Issue
// 31: the legend below the loss chart (never over the curves), folding away from its menu,
// one entry per run (a trial by its short name); the runs trained earlier in this window leave
// the charts when a new one starts unless they are selected.
#include <QCheckBox>
#include <QFile>
#include <QImage>
#include <QMenu>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <limits>
#include <memory>

#include "support/gui_test.h"
#include "ui/training/training_tab.h"

using namespace ws::ui;

namespace {
RunSeries makeRun(int64_t id, const std::string& name, int steps, bool diverge) {
    RunSeries run;
    run.runId = id;
    run.name = name;
    run.tokensPerStep = 100;
    for (int s = 1; s <= steps; ++s) {
        double loss = 5.0 / s + 1.0;
        if (diverge && s >= steps - 2) loss = std::numeric_limits<double>::quiet_NaN();
        run.metrics[kLoss].append(s, s * 0.5, loss);
        run.metrics[kLearningRate].append(s, s * 0.5, 1e-3);
    }
    return run;
}

QCPGraph* graphNamed(QCustomPlot* plot, const QString& needle) {
    for (int i = 0; i < plot->graphCount(); ++i) {
        if (plot->graph(i)->name().contains(needle)) return plot->graph(i);
    }
    return nullptr;
}

QStringList graphNames(const TrainingTab& tab) {
    QStringList names;
    for (ChartPanel* p : tab.panels())
        for (int i = 0; i < p->graphCount(); ++i) names << p->graph(i)->name();
    return names;
}

int nanCount(const QCPGraph* graph) {
    int n = 0;
    for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it)
        n += std::isnan(it->value) ? 1 : 0;
    return n;
}
}  // namespace

class ChartPanelTest : public QObject {
    Q_OBJECT
private slots:
    void overlaidRunsDivergenceAndAxes() {
        TrainingTab tab;
        tab.resize(1200, 800);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        tab.addRun(makeRun(1, "steady", 200, false));
        tab.addRun(makeRun(2, "blows up", 100, true));
        tab.redrawNow();
        ChartPanel* loss = tab.lossPanel();

        const QString readout = loss->valuesAt(50);
        QVERIFY2(readout.contains("steady") && readout.contains("blows up"), qPrintable(readout));

        QCPGraph* diverged = graphNamed(loss, "blows up diverged");
        QVERIFY(diverged);
        QVERIFY(diverged->dataCount() >= 1);  // drawn, not a silent gap
        QVERIFY(std::isfinite(diverged->data()->begin()->value));

        // Loss is smoothed over its faint raw values; the learning-rate schedule is drawn as it
        // is (graphs per curve: raw, smoothed, divergence markers).
        ChartPanel* lr = tab.panels()[1];
        QVERIFY(loss->graph(0)->dataCount() > 0);
        QCOMPARE(lr->graph(0)->dataCount(), 0);
        QVERIFY(lr->graph(1)->dataCount() > 0);

        ChartPanel::Options options = tab.options();
        options.xAxis = XAxisKind::Tokens;
        options.logY = true;
        tab.setOptions(options);
        tab.redrawNow();
        QCOMPARE(loss->xAxis->range().upper, 200.0 * 100);
        QCOMPARE(loss->yAxis->scaleType(), QCPAxis::stLogarithmic);

        QTemporaryDir dir;
        const QString csv = dir.filePath("m.csv");
        QVERIFY(tab.exportCsv(csv));
        QFile file(csv);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QList<QByteArray> lines = file.readAll().split('\n');
        QCOMPARE(lines.size() - 2, 2 * 200 + 2 * 100);  // header + trailing newline
        QVERIFY(lines[0].startsWith("run_id,run,metric,step"));
    }

    void humanNumbersAndTickLabels() {
        QCOMPARE(humanNumber(50000), QStringLiteral("50k"));
        QCOMPARE(humanNumber(1.2e6), QStringLiteral("1.2M"));
        QCOMPARE(humanNumber(3e9), QStringLiteral("3B"));
        QCOMPARE(humanNumber(149021), QStringLiteral("149k"));
        QCOMPARE(humanNumber(999999), QStringLiteral("1M"));  // not "1000k"
        QCOMPARE(humanNumber(-25000), QStringLiteral("-25k"));
        QCOMPARE(humanNumber(750), QStringLiteral("750"));
        QCOMPARE(humanTickLabels({0, 25000, 50000}), QStringList({"0", "25k", "50k"}));
        QCOMPARE(humanTickLabels({1e6, 1.2e6, 1.4e6}), QStringList({"1M", "1.2M", "1.4M"}));
        // Close ticks get the digits that keep them apart.
        QCOMPARE(humanTickLabels({100000, 100250, 100500}),
                 QStringList({"100k", "100.25k", "100.5k"}));
        QVERIFY(humanTickLabels({0.1, 0.2, 0.3}).isEmpty());  // small: the axis' own labels
    }

    void tokensAxisAndCrosshairReadLikePeopleWrite() {
        TrainingTab tab;
        tab.resize(1200, 800);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        RunSeries run = makeRun(1, "big", 300, false);
        run.tokensPerStep = 1000;  // 300k tokens in all
        tab.addRun(run);
        ChartPanel::Options options = tab.options();
        options.xAxis = XAxisKind::Tokens;
        tab.setOptions(options);
        tab.redrawNow();
        ChartPanel* loss = tab.lossPanel();
        loss->replot(QCustomPlot::rpImmediateRefresh);
        const QVector<QString> labels = loss->xAxis->tickVectorLabels();
        QVERIFY(!labels.isEmpty());
        for (const QString& label : labels) {
            QVERIFY2(label == "0" || label.endsWith('k'), qPrintable(label));
        }
        const QString readout = loss->valuesAt(149000);
        QVERIFY2(readout.contains("tokens seen 149k"), qPrintable(readout));
        QVERIFY2(!readout.contains("e+"), qPrintable(readout));
        for (ChartPanel* p : tab.panels()) p->replot(QCustomPlot::rpImmediateRefresh);
        QVERIFY(tab.grab().save(ws::testing::artifactPath("charts-tokens-axis.png")));
    }

    void logScaleIsTheLossChartsUnlessAChartChoosesIt() {
        TrainingTab tab;
        tab.resize(1200, 800);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        tab.addRun(makeRun(1, "a", 50, false));
        auto* logY = tab.findChild<QCheckBox*>("logY");
        QVERIFY(logY);
        logY->setChecked(true);
        tab.redrawNow();
        ChartPanel* loss = tab.lossPanel();
        ChartPanel* lr = tab.panels()[1];
        QCOMPARE(loss->yAxis->scaleType(), QCPAxis::stLogarithmic);
        QCOMPARE(lr->yAxis->scaleType(), QCPAxis::stLinear);
        QCOMPARE(tab.panels()[3]->yAxis->scaleType(), QCPAxis::stLinear);

        // The learning-rate chart's own context menu makes it logarithmic, and only it.
        std::unique_ptr<QMenu> menu(tab.chartMenu(10, lr));
        QAction* log = menu->findChild<QAction*>("logScale");
        QVERIFY(log);
        QVERIFY(!log->isChecked());
        log->trigger();
        QCOMPARE(lr->yAxis->scaleType(), QCPAxis::stLogarithmic);
        QCOMPARE(tab.panels()[2]->yAxis->scaleType(), QCPAxis::stLinear);
        logY->setChecked(false);
        QCOMPARE(loss->yAxis->scaleType(), QCPAxis::stLinear);
        QCOMPARE(lr->yAxis->scaleType(), QCPAxis::stLogarithmic);
        // The loss chart's menu and the toolbar box are one setting.
        std::unique_ptr<QMenu> lossMenu(tab.chartMenu(10, loss));
        lossMenu->findChild<QAction*>("logScale")->trigger();
        QVERIFY(logY->isChecked());
        QCOMPARE(loss->yAxis->scaleType(), QCPAxis::stLogarithmic);
    }

    void aPauseBreaksTheWallTimeLine() {
        // 100 steps 0.5 s apart, a 10-minute pause, 100 more: wall time 0-50 s, 650-700 s.
        RunSeries run;
        run.runId = 1;
        run.name = "paused";
        for (int s = 1; s <= 200; ++s) {
            const double wall = s * 0.5 + (s > 100 ? 600.0 : 0.0);
            run.metrics[kLoss].append(s, wall, 5.0 / s + 1.0);
            run.metrics[kLearningRate].append(s, wall, 1e-3);
        }
        const auto gaps = findTimeGaps(run.metrics[kLoss].wall);
        QCOMPARE(gaps.size(), size_t(1));
        QCOMPARE(gaps[0].from, 50.0);
        QCOMPARE(gaps[0].to, 650.5);

        TrainingTab tab;
        tab.resize(1200, 800);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        tab.addRun(run);
        tab.redrawNow();
        ChartPanel* loss = tab.lossPanel();
        // On the step axis the run is continuous.
        QCOMPARE(nanCount(loss->graph(1)), 0);
        ChartPanel::Options options = tab.options();
        options.xAxis = XAxisKind::WallTime;
        tab.setOptions(options);
        tab.redrawNow();
        // Raw and smoothed loss, and the learning rate, each break once, inside the pause.
        for (QCPGraph* graph : {loss->graph(0), loss->graph(1), tab.panels()[1]->graph(1)}) {
            QCOMPARE(nanCount(graph), 1);
            for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it) {
                if (std::isnan(it->value)) QVERIFY(it->key > 50.0 && it->key < 650.5);
            }
        }
        // The y range comes from the data, not from the break.
        QVERIFY(std::isfinite(loss->yAxis->range().lower));
        QVERIFY(std::isfinite(loss->yAxis->range().upper));
        for (ChartPanel* p : tab.panels()) p->replot(QCustomPlot::rpImmediateRefresh);
        QVERIFY(tab.grab().save(ws::testing::artifactPath("charts-wall-time-pause.png")));
        // A steady run has no pause to break at.
        QVERIFY(findTimeGaps(makeRun(2, "steady", 100, false).metrics[kLoss].wall).empty());
    }

    void pngExportHoldsTheChartsNotTheToolbar() {
        TrainingTab tab;
        tab.resize(1200, 800);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        tab.addRun(makeRun(1, "a", 50, false));
        QTemporaryDir dir;
        const QString png = dir.filePath("charts.png");
        QVERIFY(tab.exportPng(png));
        QFile::remove(ws::testing::artifactPath("charts-export.png"));
        QFile::copy(png, ws::testing::artifactPath("charts-export.png"));
        const QImage image(png);
        QVERIFY(!image.isNull());
        QRect charts;
        for (ChartPanel* p : tab.panels()) charts |= p->geometry();
        const double dpr = tab.devicePixelRatioF();
        QCOMPARE(image.size(), (QSizeF(charts.size()) * dpr).toSize());
        // The toolbar sits above the first chart, outside what was saved.
        auto* logY = tab.findChild<QCheckBox*>("logY");
        QVERIFY(logY->geometry().bottom() < charts.top());
        QVERIFY(image.height() < int(tab.height() * dpr));
    }

    // A chat run's loss counts its answers only (session::lossCountsLabel), and the legend of a
    // single run says so for both curves; a plain-text run's says train and eval.
    void aChatRunsLegendSaysItsLossCountsAnswers() {
        TrainingTab tab;
        tab.resize(1000, 600);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        RunSeries chat = makeRun(1, "chat fine-tune", 30, false);
        chat.lossCounts = "answer tokens";
        for (int s = 10; s <= 30; s += 10) chat.metrics[kEvalLoss].append(s, s * 0.5, 2.0);
        tab.addRun(chat);
        tab.redrawNow();
        QCOMPARE(tab.lossPanel()->legendEntries(),
                 (QStringList{"train (answer tokens)", "eval (answer tokens)"}));

        TrainingTab text;
        text.resize(1000, 600);
        text.show();
        RunSeries plain = makeRun(2, "text fine-tune", 30, false);
        for (int s = 10; s <= 30; s += 10) plain.metrics[kEvalLoss].append(s, s * 0.5, 2.0);
        text.addRun(plain);
        text.redrawNow();
        QCOMPARE(text.lossPanel()->legendEntries(), (QStringList{"train", "eval"}));
    }

    void theLegendIsBelowTheLossChartAndFolds() {
        TrainingTab tab;
        tab.resize(1366, 700);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        // Thirteen runs with eval points, as lesson 5 had by its step 6.
        for (int64_t id = 1; id <= 13; ++id) {
            RunSeries run = makeRun(
                id, "lesson 5: Unstructured sparsity, step " + std::to_string(id), 30, false);
            for (int s = 10; s <= 30; s += 10) run.metrics[kEvalLoss].append(s, s * 0.5, 2.0);
            tab.addRun(run);
        }
        RunSeries trial = makeRun(
            14, "sweep 2026-03-01 10:15 #62: hidden_size=128 learning_rate=0.00390625 seed=0", 30,
            false);
        tab.addRun(trial);
        tab.redrawNow();
        ChartPanel* loss = tab.lossPanel();
        loss->replot(QCustomPlot::rpImmediateRefresh);
        QVERIFY(loss->legend->visible());
        // One entry per run and one saying what dashed means, not one per eval curve; those
        // that do not fit a quarter of the chart's height are counted in a last entry.
        const QStringList entries = loss->legendEntries();
        QVERIFY2(entries.size() >= 4, qPrintable(entries.join(", ")));
        QVERIFY2(entries.filter("(eval)").isEmpty(), qPrintable(entries.join(", ")));
        const QRegularExpression more(QStringLiteral("^\\+(\\d+) more"));
        const auto counted = more.match(entries.last());
        QVERIFY2(counted.hasMatch(), qPrintable(entries.last()));
        QCOMPARE(entries.size() - 1 + counted.captured(1).toInt(), 14 + 1);
        QVERIFY(graphNames(tab).contains(
            QString::fromUtf8("#62 width 128\u2009·\u2009lr 2⁻⁸\u2009·\u2009seed 0")));
        // Below the plot area, not over the curves; in several columns; the plot keeps most
        // of the chart's height.
        const QRect plotArea = loss->axisRect()->rect();
        QVERIFY(!loss->legend->outerRect().intersects(plotArea));
        QVERIFY(loss->legend->outerRect().top() >= plotArea.bottom());
        QVERIFY(loss->legend->columnCount() >= 2);
        QVERIFY2(loss->legend->outerRect().height() <= loss->height() / 4 + 4,
                 qPrintable(QString("legend %1 px of %2")
                                .arg(loss->legend->outerRect().height())
                                .arg(loss->height())));
        // A few runs: every one listed.
        TrainingTab few;
        few.resize(1366, 700);
        few.show();
        for (int64_t id = 1; id <= 3; ++id)
            few.addRun(makeRun(id, "run " + std::to_string(id), 30, false));
        few.redrawNow();
        QCOMPARE(few.lossPanel()->legendEntries(), (QStringList{"run 1", "run 2", "run 3"}));
        // The other charts have no legend of their own: the colours are the loss chart's.
        for (size_t i = 1; i < tab.panels().size(); ++i)
            QVERIFY(!tab.panels()[i]->legend->visible());
        for (ChartPanel* p : tab.panels()) p->replot(QCustomPlot::rpImmediateRefresh);
        QVERIFY(tab.grab().save(ws::testing::artifactPath("charts-legend-14-runs.png")));

        // The loss chart's menu folds it away, and the plot area takes the room.
        std::unique_ptr<QMenu> menu(tab.chartMenu(10, loss));
        QAction* shown = menu->findChild<QAction*>("showLegend");
        QVERIFY(shown && shown->isChecked());
        const int before = plotArea.height();
        shown->trigger();
        loss->replot(QCustomPlot::rpImmediateRefresh);
        QVERIFY(!loss->legend->visible());
        QVERIFY(loss->axisRect()->rect().height() > before);
        std::unique_ptr<QMenu> again(tab.chartMenu(10, loss));
        again->findChild<QAction*>("showLegend")->trigger();
        loss->replot(QCustomPlot::rpImmediateRefresh);
        QVERIFY(loss->legend->visible());
        QCOMPARE(loss->axisRect()->rect().height(), before);
    }

    void earlierRunsLeaveUnlessSelected() {
        TrainingTab tab;
        tab.resize(1200, 800);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        ws::session::StepMetrics m;
        m.step = 1;
        m.loss = 4.0;
        m.learningRate = 1e-3;
        m.gradNorm = 1.0;
        m.evalLoss = std::nan("");
        auto train = [&](const QString& name, int64_t id) {
            tab.beginLiveRun(name, 100);
            tab.appendLive({m});
            tab.adoptLiveRun(id);
        };
        auto shown = [&] {
            std::vector<int64_t> ids;
            for (const auto& [id, run] : tab.runs()) ids.push_back(id);
            return ids;
        };
        train("first", 1);
        QCOMPARE(shown(), std::vector<int64_t>{1});  // the run just ended stays in view
        train("second", 2);
        QCOMPARE(shown(), std::vector<int64_t>{2});  // the first was not selected: gone
        tab.setOverlayRuns({2}, nullptr);            // selected in the Runs dock
        train("third", 3);
        QCOMPARE(shown(), (std::vector<int64_t>{2, 3}));
        tab.beginLiveRun("fourth", 100);
        QCOMPARE(shown(), (std::vector<int64_t>{0, 2}));
        tab.setOverlayRuns({}, nullptr);
        tab.forgetEndedRuns();
        QCOMPARE(shown(), std::vector<int64_t>{0});
    }

    void onlyTheRunTrainedNowIsNow() {
        TrainingTab tab;
        tab.resize(1200, 800);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        tab.addRun(makeRun(3, "earlier", 50, false));
        tab.beginLiveRun("gpt-nano", 100);
        ws::session::StepMetrics m;
        m.step = 1;
        m.maxSteps = 10;
        m.loss = 4.0;
        m.learningRate = 1e-3;
        m.gradNorm = 1.0;
        tab.appendLive({m});
        tab.redrawNow();
        QVERIFY(tab.isTrainingNow());
        QVERIFY(graphNames(tab).contains("gpt-nano (now)"));
        QVERIFY(!graphNames(tab).contains("earlier (now)"));

        tab.adoptLiveRun(7);  // it finished and the store numbered it
        tab.redrawNow();
        QVERIFY(!tab.isTrainingNow());
        const QStringList names = graphNames(tab);
        QVERIFY2(names.filter("(now)").isEmpty(), qPrintable(names.join(", ")));
        QVERIFY(names.contains("gpt-nano"));
        QCOMPARE(tab.runs().at(7).name, std::string("gpt-nano"));

        // A run that ends without a store id is not "(now)" either.
        tab.beginLiveRun("no store", 100);
        tab.appendLive({m});
        tab.redrawNow();
        QVERIFY(graphNames(tab).contains("no store (now)"));
        tab.adoptLiveRun(-1);
        tab.redrawNow();
        QVERIFY(graphNames(tab).filter("(now)").isEmpty());
    }
};

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    ChartPanelTest test;
    return QTest::qExec(&test, argc, argv);
}
#include "chart_panel_test.moc"
