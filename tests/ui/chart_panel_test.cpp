// Tests of the Training tab's charts: overlaid runs each get a curve and appear in the
// crosshair read-out, a NaN loss becomes a visible divergence marker, the x axis switches to
// tokens seen, log-y switches the scale, and CSV export writes every point.
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <limits>

#include "ui/training_tab.h"

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
};

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    ChartPanelTest test;
    return QTest::qExec(&test, argc, argv);
}
#include "chart_panel_test.moc"
