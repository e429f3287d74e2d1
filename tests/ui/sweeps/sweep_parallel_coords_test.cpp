// SPDX-License-Identifier: GPL-3.0-or-later
// The parallel-coordinates view of a sweep, offscreen, from synthetic trials (no training): one
// axis per swept key plus parametrization and final loss, log2 placement for powers of two,
// categories evenly spaced, a line per settled trial with diverged ones grey, dashed and at the
// top of the loss axis, pruned ones faint, the best on top, a tooltip naming a hovered trial; the
// empty states; 500 trials (their redraw time is a benchmark: bench/sweep_view_bench.cpp); and
// the Sweeps tab feeding it after the heatmap.
// Screenshots go to $WAFER_TEST_ARTIFACTS (sweep_parallel_coords*.png).
#include <qcustomplot.h>
#include <QMouseEvent>
#include <QTabWidget>
#include <QTest>
#include <QToolTip>
#include <cmath>

#include "support/gui_test.h"
#include "support/synthetic_trials.h"
#include "ui/sweeps/sweep_heatmap.h"
#include "ui/sweeps/sweep_parallel_coords.h"
#include "ui/sweeps/sweeps_tab.h"

using namespace ws::ui;
using ws::sweep::TrialResult;
using ws::sweep::TrialStatus;

namespace {

using ws::testing::artifactPath;

using ws::testing::kDivergedTrial;
using ws::testing::kPrunedTrial;
using ws::testing::syntheticTrials;
const std::vector<std::string>& kKeys = ws::testing::syntheticTrialKeys();

std::string number(double v) {
    return ws::testing::trialNumber(v);
}

bool hasLabel(QCustomPlot* plot, const QString& text) {
    for (int i = 0; i < plot->itemCount(); ++i)
        if (auto* label = qobject_cast<QCPItemText*>(plot->item(i)); label && label->text() == text)
            return true;
    return false;
}

double lastValue(QCPCurve* curve) {
    return (curve->data()->constEnd() - 1)->value;
}

// The lines in the order they are drawn (the last on top).
QList<QCPCurve*> drawnOrder(QCustomPlot* plot) {
    QList<QCPCurve*> lines;
    for (QCPLayerable* l : plot->layer(QStringLiteral("trials"))->children())
        if (auto* curve = qobject_cast<QCPCurve*>(l)) lines << curve;
    return lines;
}

// Marks every line drawn now, so a later redraw shows which lines it kept and which it made.
void markLines(QCustomPlot* plot) {
    for (int i = 0; i < plot->plottableCount(); ++i)
        plot->plottable(i)->setProperty("drawnBefore", true);
}

int markedLines(QCustomPlot* plot) {
    int n = 0;
    for (int i = 0; i < plot->plottableCount(); ++i)
        n += plot->plottable(i)->property("drawnBefore").toBool() ? 1 : 0;
    return n;
}

}  // namespace

class SweepParallelCoordsTest : public QObject {
    Q_OBJECT
private slots:
    void threeKeySweepHasAnAxisPerKeyAndALinePerTrial() {
        SweepParallelCoords view;
        view.resize(1100, 480);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        auto trials = syntheticTrials();
        TrialResult running;  // still training: no result to place, so no line
        running.trial = 20;
        running.params = trials[0].params;
        trials.push_back(running);
        view.setResults(trials, kKeys);

        // The keys in the sweep's order, parametrization (it varies, seed does not), loss.
        QCOMPARE(view.axisCount(), 5);
        const QStringList names = {"model.hidden_size", "optimizer.learning_rate",
                                   "model.num_heads", "parametrization", "final loss"};
        for (int i = 0; i < 5; ++i) QCOMPARE(view.axisName(i), names[i]);
        using Scale = SweepParallelCoords::AxisScale;
        QCOMPARE(view.axisScale(0), Scale::Log2);
        QCOMPARE(view.axisScale(1), Scale::Log2);
        QCOMPARE(view.axisScale(2), Scale::Log2);
        QCOMPARE(view.axisScale(3), Scale::Categorical);
        QCOMPARE(view.lineCount(), 20);
        QVERIFY(view.lineOf(20) == nullptr);
        QVERIFY(view.emptyText().isEmpty());

        // Powers of two are evenly spaced by exponent: 64 halfway between 32 and 128 (a linear
        // axis would put it at a third), rates rising one step per doubling.
        QCOMPARE(view.axisPosition(0, "32"), 0.0);
        QCOMPARE(view.axisPosition(0, "64"), 0.5);
        QCOMPARE(view.axisPosition(0, "128"), 1.0);
        double previous = -1.0;
        for (int e = -10; e <= -6; ++e) {
            const double y = view.axisPosition(1, number(std::exp2(e)));
            QVERIFY2(y > previous, qPrintable(QStringLiteral("2^%1 at %2").arg(e).arg(y)));
            QVERIFY(std::abs(y - (e + 10) / 4.0) < 1e-12);
            previous = y;
        }
        QCOMPARE(view.axisPosition(3, "sp"), 0.0);
        QCOMPARE(view.axisPosition(3, "mup"), 1.0);
        QVERIFY(std::isnan(view.axisPosition(3, "ntk")));
        // Tick labels as the other sweep views write them, and the categories by their titles.
        QCustomPlot* plot = view.plot();
        for (const char* label : {"32", "128", "2^-10", "2^-6", "8", "SP", "μP", "diverged"})
            QVERIFY2(hasLabel(plot, QString::fromUtf8(label)), label);

        // The diverged trial is drawn: grey, dashed, ending at the top of the loss axis.
        QCPCurve* diverged = view.lineOf(kDivergedTrial);
        QVERIFY(diverged);
        QCOMPARE(diverged->pen().style(), Qt::DashLine);
        QCOMPARE(diverged->data()->size(), 5);
        QCOMPARE(lastValue(diverged), 1.0);
        QCOMPARE((diverged->data()->constEnd() - 1)->key, 4.0);
        // Finished trials are solid and below it; the pruned one sits at its rung loss, faint.
        QCPCurve* best = nullptr;
        double bestLoss = INFINITY;
        for (const auto& t : trials) {
            if (t.status != TrialStatus::Finished) continue;
            QCPCurve* line = view.lineOf(t.trial);
            QVERIFY(line);
            QCOMPARE(line->pen().style(), Qt::SolidLine);
            QVERIFY(lastValue(line) < 0.9);
            QVERIFY(line->pen().color().alpha() > 150);
            if (t.finalLoss < bestLoss) {
                bestLoss = t.finalLoss;
                best = line;
            }
        }
        QCPCurve* pruned = view.lineOf(kPrunedTrial);
        QVERIFY(pruned);
        QVERIFY(pruned->pen().color().alpha() < 80);
        QVERIFY(lastValue(pruned) > 0.0 && lastValue(pruned) < 0.9);
        // The best trial is drawn last, on top of the pile, and in its own colour.
        QCOMPARE(drawnOrder(plot).last(), best);
        QVERIFY(best->pen().color().rgb() != view.lineOf(0)->pen().color().rgb());

        plot->replot(QCustomPlot::rpImmediateRefresh);
        QVERIFY(view.grab().save(artifactPath(QStringLiteral("sweep_parallel_coords.png"))));

        // Hovering a line names its trial: halfway along the diverged line's first segment.
        const auto first = diverged->data()->constBegin();
        const QPointF at(plot->xAxis->coordToPixel(0.5),
                         plot->yAxis->coordToPixel((first->value + (first + 1)->value) / 2));
        QMouseEvent move(QEvent::MouseMove, at, plot->mapToGlobal(at), Qt::NoButton, Qt::NoButton,
                         Qt::NoModifier);
        QApplication::sendEvent(plot, &move);
        QTRY_VERIFY2(QToolTip::text().contains(QStringLiteral("trial 13")),
                     qPrintable(QToolTip::text()));
        QVERIFY(QToolTip::text().contains(QStringLiteral("diverged")));
    }

    void twoKeySweepIsShownAndFewerKeysExplainThemselves() {
        SweepParallelCoords view;
        view.resize(800, 400);
        QCOMPARE(view.axisCount(), 0);
        QVERIFY(view.emptyText().contains(QStringLiteral("No finished trials")));
        // Without lines the colour scale means nothing: it is neither laid out nor drawn.
        auto scaleShown = [&view] {
            const auto scales = view.plot()->findChildren<QCPColorScale*>();
            if (scales.size() != 1) return true;  // a stray second scale: fail either way
            const bool laidOut = view.plot()->plotLayout()->hasElement(1, 1) &&
                                 view.plot()->plotLayout()->element(1, 1) == scales[0];
            return laidOut || scales[0]->visible();
        };
        QVERIFY(!scaleShown());

        // Two keys, no parametrization: still a useful picture.
        std::vector<TrialResult> trials;
        for (int i = 0; i < 6; ++i) {
            TrialResult t;
            t.trial = i;
            t.status = TrialStatus::Finished;
            t.finalLoss = 3.0 - 0.1 * i;
            t.params = {{"model.hidden_size", number(48 + 16 * (i % 3))},  // not powers of two
                        {"scheduler.kind", i < 3 ? "cosine" : "linear"}};
            trials.push_back(t);
        }
        view.setResults(trials, {"model.hidden_size", "scheduler.kind"});
        QCOMPARE(view.axisCount(), 3);
        QCOMPARE(view.axisScale(0), SweepParallelCoords::AxisScale::Linear);
        QCOMPARE(view.axisScale(1), SweepParallelCoords::AxisScale::Categorical);
        QCOMPARE(view.axisPosition(0, "64"), 0.5);
        QCOMPARE(view.lineCount(), 6);
        QVERIFY(view.emptyText().isEmpty());
        QVERIFY(scaleShown());
        QVERIFY(view.plot()->findChildren<QCPColorScale*>().at(0)->visible());
        // Learning rates over decades that are not powers of two: a log10 axis, so 1e-4, 1e-3
        // and 1e-2 are evenly spaced instead of crowding at the bottom.
        auto decades = trials;
        const char* rates[] = {"0.0001", "0.001", "0.01"};
        for (size_t i = 0; i < decades.size(); ++i)
            decades[i].params[0] = {"optimizer.learning_rate", rates[i % 3]};
        view.setResults(decades, {"optimizer.learning_rate", "scheduler.kind"});
        QCOMPARE(view.axisScale(0), SweepParallelCoords::AxisScale::Log10);
        QCOMPARE(view.axisPosition(0, "0.0001"), 0.0);
        QVERIFY(std::abs(view.axisPosition(0, "0.001") - 0.5) < 1e-12);
        QCOMPARE(view.axisPosition(0, "0.01"), 1.0);
        QVERIFY(hasLabel(view.plot(), QStringLiteral("0.001")));
        // No keys given: the trials' own keys, in order.
        view.setResults(trials, {});
        QCOMPARE(view.axisCount(), 3);
        QCOMPARE(view.axisName(1), QStringLiteral("scheduler.kind"));

        // One key: said so, nothing half-drawn.
        for (auto& t : trials) t.params.resize(1);
        view.setResults(trials, {"model.hidden_size"});
        QCOMPARE(view.axisCount(), 0);
        QCOMPARE(view.lineCount(), 0);
        QVERIFY2(view.emptyText().contains(QStringLiteral("two or more keys")),
                 qPrintable(view.emptyText()));
        QVERIFY(hasLabel(view.plot(), view.emptyText()));
        QVERIFY(!scaleShown());
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QVERIFY(view.grab().save(artifactPath(QStringLiteral("sweep_parallel_coords_empty.png"))));
    }

    // Its redraw time is bench/sweep_view_bench.cpp's figure; here, what 500 trials show.
    void fiveHundredTrialsGetALineEachAndASeedAxis() {
        SweepParallelCoords view;
        view.resize(1100, 480);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        auto trials = syntheticTrials(500);
        // A second seed axis: seeds vary here, so they get an axis of their own.
        for (auto& t : trials) t.seed = t.trial % 4;
        view.setResults(trials, kKeys);
        view.plot()->replot(QCustomPlot::rpImmediateRefresh);
        QCOMPARE(view.lineCount(), 500);
        QCOMPARE(view.axisCount(), 6);
        QCOMPARE(view.axisName(4), QStringLiteral("seed"));
        QVERIFY(view.grab().save(artifactPath(QStringLiteral("sweep_parallel_coords_500.png"))));
        // The Sweeps tab at a laptop's size with the same 500 trials, the view in front.
        SweepsTab tab;
        tab.resize(1100, 640);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        for (const auto& t : trials) tab.addResult(t);
        tab.views()->setCurrentWidget(tab.parallelCoords());
        tab.redrawNow();
        QCOMPARE(tab.parallelCoords()->lineCount(), 500);
        QVERIFY(tab.grab().save(artifactPath(QStringLiteral("sweeps_tab_500.png"))));
    }

    // Issue 31: a live sweep redraws on every finished trial. A new trial adds its line (in its
    // place in the pile), the others are kept; the axes are laid out again only when what they
    // show changed, and then every line follows.
    void aNewTrialAddsItsLineAndKeepsTheOthers() {
        SweepParallelCoords view;
        view.resize(1100, 480);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        auto all = syntheticTrials(60);
        std::vector<TrialResult> trials(all.begin(), all.begin() + 50);
        view.setResults(trials, kKeys);
        QCustomPlot* plot = view.plot();
        QCOMPARE(view.lineCount(), 50);
        markLines(plot);
        QCPAbstractItem* firstItem = plot->item(0);
        const double lossOf10 = lastValue(view.lineOf(10));

        // A trial inside the ranges seen (a loss between the best and the worst, values the
        // axes have): one new line; the axes and every other line as they were.
        TrialResult middle = all[50];
        middle.finalLoss = (trials[0].finalLoss + trials[1].finalLoss) / 2;
        trials.push_back(middle);
        view.setResults(trials, kKeys);
        QCOMPARE(view.lineCount(), 51);
        QCOMPARE(markedLines(plot), 50);
        QVERIFY(!view.lineOf(50)->property("drawnBefore").toBool());
        QCOMPARE(plot->item(0), firstItem);
        QCOMPARE(lastValue(view.lineOf(10)), lossOf10);
        // In its place in the pile: above every worse finished trial, below every better one.
        const QList<QCPCurve*> order = drawnOrder(plot);
        const qsizetype at = order.indexOf(view.lineOf(50));
        for (const auto& t : trials) {
            if (t.status != TrialStatus::Finished || t.trial == 50) continue;
            const qsizetype other = order.indexOf(view.lineOf(t.trial));
            QVERIFY2(t.finalLoss > middle.finalLoss ? other < at : other > at,
                     qPrintable(QString("trial %1 (loss %2) at %3, the new one (%4) at %5")
                                    .arg(t.trial)
                                    .arg(t.finalLoss)
                                    .arg(other)
                                    .arg(middle.finalLoss)
                                    .arg(at)));
        }

        // A new best loss moves the bottom of the loss axis: the lines are kept but follow it,
        // and the new best is drawn on top.
        markLines(plot);
        TrialResult best = all[51];
        best.finalLoss = 1.0;
        trials.push_back(best);
        view.setResults(trials, kKeys);
        QCOMPARE(view.lineCount(), 52);
        QCOMPARE(markedLines(plot), 51);
        QVERIFY(lastValue(view.lineOf(10)) != lossOf10);
        QCOMPARE(lastValue(view.lineOf(51)), 0.0);
        QCOMPARE(drawnOrder(plot).last(), view.lineOf(51));

        // A trial that is gone (a sweep's results read again without it) loses its line.
        trials.erase(trials.begin() + 3);
        view.setResults(trials, kKeys);
        QCOMPARE(view.lineCount(), 51);
        QVERIFY(view.lineOf(3) == nullptr);
        QCOMPARE(plot->plottableCount(), 51);
        QCOMPARE(drawnOrder(plot).size(), 51);
        plot->replot(QCustomPlot::rpImmediateRefresh);
        QVERIFY(view.grab().save(artifactPath(QStringLiteral("sweep_parallel_coords_grown.png"))));
    }

    void sweepsTabFeedsItAfterTheHeatmap() {
        SweepsTab tab;
        tab.resize(1200, 900);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        QTabWidget* views = tab.views();
        const int heatmap = views->indexOf(tab.heatmap());
        const int parallel = views->indexOf(tab.parallelCoords());
        QCOMPARE(parallel, heatmap + 1);
        QCOMPARE(views->tabText(parallel), QStringLiteral("Parallel Coordinates"));
        for (const auto& t : syntheticTrials()) tab.addResult(t);
        tab.redrawNow();
        QCOMPARE(tab.parallelCoords()->lineCount(), 20);
        QCOMPARE(tab.parallelCoords()->axisCount(), 5);
        views->setCurrentIndex(parallel);
        QVERIFY(tab.grab().save(artifactPath(QStringLiteral("sweep_parallel_coords_tab.png"))));
    }
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<SweepParallelCoordsTest>(argc, argv);
}
#include "sweep_parallel_coords_test.moc"
