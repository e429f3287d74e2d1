// SPDX-License-Identifier: GPL-3.0-or-later
// The Runs dock over a store that already holds several runs, as after a restart of the studio:
// - clicking from run to run (single clicks, Ctrl-clicks, a stopped sweep and its trials, a run
//   just stopped in this window) never leaves a chart pointing at a series that was erased
//   (issue 12 item 2: a segfault in MetricSeries::xs; AddressSanitizer reports it at once);
// - runs that another connection writes (what `wafer train --db` beside the studio does) appear,
//   change status and grow on the Training tab, while the user's selection and collapsed sweeps
//   stay as they were (item 5);
// - names too long for the column stay readable: elided in the middle, whole in the tooltip,
//   trials labelled by the parameters that tell them apart (item 8).
#include <QAction>
#include <QFile>
#include <QFileInfo>
#include <QHeaderView>
#include <QMenu>
#include <QSignalSpy>
#include <QStyle>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>

#include "engine/store/run_store.h"
#include "engine/store/sweep_records.h"
#include "support/gui_test.h"
#include "support/studio_window.h"
#include "ui/common/run_controller.h"
#include "ui/common/store_follower.h"
#include "ui/config/config_document.h"
#include "ui/shell/main_window.h"
#include "ui/shell/runs_dock.h"
#include "ui/training/training_tab.h"

using namespace ws::ui;
using ws::store::NewRun;
using ws::store::RunStore;

namespace {
const QString kNano = QStringLiteral(WAFER_SOURCE_DIR "/presets/gpt-nano.yaml");
using ws::testing::artifactPath;

std::string nanoYaml() {
    QFile file(kNano);
    if (!file.open(QIODevice::ReadOnly)) return {};
    return file.readAll().toStdString();
}

// Logs `steps` steps of a plausible run (loss, lr, gradient norm, throughput, eval every 50).
void logRun(RunStore& store, int64_t id, int64_t from, int64_t to, double scale) {
    for (int64_t s = from; s <= to; ++s) {
        const double t = 1000.0 + 0.05 * double(s);
        store.logMetric(id, s, "loss", scale * (5.5 / (1.0 + 0.01 * double(s)) + 1.0), t);
        store.logMetric(id, s, "lr", 1e-3, t);
        store.logMetric(id, s, "grad_norm", 0.5 + 0.1 * std::sin(double(s)), t);
        store.logMetric(id, s, "tokens_per_s", 30000.0, t);
        if (s % 50 == 0) store.logMetric(id, s, "eval_loss", scale * 2.2, t);
    }
}

int64_t addRun(RunStore& store, const std::string& name, const std::string& status, int64_t steps,
               double scale, std::string kind = "train", std::optional<int64_t> sweep = {}) {
    NewRun run;
    run.name = name;
    run.configYaml = nanoYaml();
    run.kind = std::move(kind);
    run.sweepId = sweep;
    auto id = store.createRun(run);
    if (!id.ok()) qFatal("%s", id.error().message.c_str());
    if (steps > 0) logRun(store, *id, 1, steps, scale);
    if (status != "created" && !store.setStatus(*id, status).ok()) qFatal("setStatus failed");
    if (status == "finished")
        (void)store.setSummary(*id, "{\"final_loss\": " + std::to_string(scale * 2.0) + "}");
    return *id;
}

struct Ids {
    int64_t longName = 0, wide = 0, stopped = 0, sweep = 0;
    std::vector<int64_t> trials;
};

// The store a user has after a few sessions: two finished runs, a stopped one, and a stopped
// sweep of four trials (two finished, one stopped, one never started).
Ids fillStore(const std::filesystem::path& path) {
    auto opened = RunStore::open(path);
    if (!opened.ok()) qFatal("%s", opened.error().message.c_str());
    RunStore& store = **opened;
    Ids ids;
    ids.longName =
        addRun(store, "gpt-nano-baseline-warmup200-cosine-lr3e-3-seed7", "finished", 400, 1.0);
    ids.wide = addRun(store, "gpt-nano-wide-hidden256", "finished", 300, 0.9);
    ids.sweep = addRun(store, "lr sweep 2026-12-01 03:10", "stopped", 0, 1.0, "sweep");
    const char* lrs[] = {"0.001", "0.004", "0.016", "0.064"};
    const char* statuses[] = {"finished", "finished", "stopped", "created"};
    for (int k = 0; k < 4; ++k) {
        const std::string name = std::string("lr sweep 2026-12-01 03:10 #") + std::to_string(k) +
                                 ": learning_rate=" + lrs[k] + " hidden_size=64 seed=0";
        const int64_t trial = addRun(store, name, statuses[k], k < 3 ? 120 - 30 * k : 0,
                                     1.0 + 0.1 * k, "sweep-trial", ids.sweep);
        ids.trials.push_back(trial);
        ws::store::SweepTrialRecord record;
        record.sweepRun = ids.sweep;
        record.trial = k;
        record.pointKey = std::string("learning_rate=") + lrs[k] + ";seed=0";
        record.paramsJson = std::string("{\"optimizer.learning_rate\": ") + lrs[k] + "}";
        record.run = trial;
        record.status = k < 2 ? "finished" : "stopped";
        record.steps = k < 3 ? 120 - 30 * k : 0;
        record.finalLoss = 2.0 + 0.1 * k;
        if (!ws::store::saveSweepTrial(store, record).ok()) qFatal("saveSweepTrial failed");
    }
    ids.stopped = addRun(store, "gpt-nano-stopped-at-77", "stopped", 77, 1.1);
    return ids;
}

QTreeWidgetItem* itemOf(QTreeWidget* tree, int64_t id) {
    for (QTreeWidgetItemIterator it(tree); *it; ++it) {
        if ((*it)->data(0, Qt::UserRole + 1).toLongLong() == id) return *it;
    }
    return nullptr;
}

// A real click on the row, as the user makes it (Ctrl adds to the selection).
void clickRun(QTreeWidget* tree, int64_t id, Qt::KeyboardModifiers modifiers = {}) {
    QTreeWidgetItem* item = itemOf(tree, id);
    QVERIFY2(item, qPrintable(QString("run %1 is not in the Runs dock").arg(id)));
    tree->scrollToItem(item);
    const QRect rect = tree->visualItemRect(item);
    QVERIFY(rect.isValid());
    QTest::mouseClick(tree->viewport(), Qt::LeftButton, modifiers, rect.center());
}

std::vector<int64_t> shownIds(const TrainingTab* tab) {
    std::vector<int64_t> ids;
    for (const auto& [id, run] : tab->runs()) ids.push_back(id);
    return ids;
}

size_t pointsOf(const TrainingTab* tab, int64_t id, const char* key) {
    const auto run = tab->runs().find(id);
    if (run == tab->runs().end()) return 0;
    const auto it = run->second.metrics.find(key);
    return it == run->second.metrics.end() ? 0 : it->second.size();
}

// Every chart draws what the Training tab holds: one loss curve with points per run that has
// loss points (the raw, eval and divergence graphs aside).
void checkChartsMatchRuns(TrainingTab* tab) {
    tab->redrawNow();
    size_t expected = 0;
    for (const auto& [id, run] : tab->runs()) {
        const auto it = run.metrics.find(kLoss);
        if (it != run.metrics.end() && it->second.size() > 0) ++expected;
    }
    ChartPanel* loss = tab->lossPanel();
    size_t drawn = 0;
    for (int i = 0; i < loss->graphCount(); ++i) {
        QCPGraph* graph = loss->graph(i);
        const QString name = graph->name();
        // The smoothed curves are the legend's; raw and divergence graphs are not in it.
        if (!loss->legend->hasItemWithPlottable(graph) || name == "eval" || name.endsWith("(eval)"))
            continue;
        if (graph->data()->size() > 0) ++drawn;
    }
    QCOMPARE(drawn, expected);
}
}  // namespace

class RunsDockTest : public QObject {
    Q_OBJECT
private slots:
    void init() {
        QVERIFY(m_window.makeFolder());
        m_path = m_window.filePath("runs.sqlite").toStdString();
        m_ids = fillStore(m_path);
        // The studio starts on the store, as after a restart.
        QVERIFY(m_window.open({1400, 900}, QString::fromStdString(m_path.string())));
        m_window->showTab("training");
    }
    void cleanup() { m_window.close(); }

    void switchingBetweenStoredRunsKeepsTheChartsValid() {
        QTreeWidget* tree = m_window.find<RunsDock>("RunsDock")->tree();
        TrainingTab* training = m_window.find<TrainingTab>("trainingTab");
        QCOMPARE(tree->topLevelItemCount(), 4);  // three runs and the sweep (trials under it)

        // A run trained and stopped in this window just now: it becomes a stored run too.
        QVERIFY(m_window->openConfig(kNano));
        QVERIFY(m_window->document()->setField("runconfig.max_steps", "2000"));
        QVERIFY(m_window->document()->setField("runconfig.log_steps", "2"));
        RunController* controller = m_window->controller();
        QSignalSpy finished(controller, &RunController::finished);
        m_window.action("runAction")->trigger();
        m_window->showTab("training");
        QTRY_VERIFY_WITH_TIMEOUT(pointsOf(training, 0, kLoss) >= 6, 120000);
        m_window.action("stopAction")->trigger();
        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), 60000);
        auto listed = m_window->runStore()->listRuns();
        QVERIFY(listed.ok());
        const int64_t justStopped = listed->front().id;  // newest first
        QCOMPARE(listed->front().status, std::string("stopped"));
        QTRY_VERIFY(itemOf(tree, justStopped) != nullptr);
        QVERIFY(training->runs().count(justStopped));

        // Click from run to run: one run at a time, a sweep, its trials, Ctrl-click overlays,
        // and back to the just-stopped run, many times over. Right after each click the mouse
        // crosses a chart (its read-out reads every curve) before the coalesced redraw runs.
        const std::vector<std::pair<int64_t, Qt::KeyboardModifiers>> clicks = {
            {m_ids.longName, {}},
            {m_ids.wide, {}},
            {justStopped, {}},
            {m_ids.sweep, {}},
            {m_ids.trials[0], {}},
            {m_ids.trials[1], Qt::ControlModifier},
            {m_ids.trials[2], Qt::ControlModifier},
            {m_ids.stopped, {}},
            {m_ids.trials[3], {}},
            {m_ids.longName, Qt::ControlModifier},
            {justStopped, Qt::ControlModifier},
            {m_ids.wide, {}},
        };
        ChartPanel* loss = training->lossPanel();
        for (int round = 0; round < 6; ++round) {
            for (const auto& [id, modifiers] : clicks) {
                clickRun(tree, id, modifiers);
                std::vector<int64_t> selected =
                    m_window.find<RunsDock>("RunsDock")->selectedRunIds();
                std::sort(selected.begin(), selected.end());
                QCOMPARE(shownIds(training), selected);  // exactly the selection, no stale run
                QTest::mouseMove(loss, loss->rect().center());
                QTest::mouseMove(loss, loss->rect().center() + QPoint(20, 0));
                QVERIFY(!loss->valuesAt(loss->xAxis->range().center()).isEmpty());
                if (round % 2 == 1) checkChartsMatchRuns(training);
                if (QTest::currentTestFailed()) return;
            }
            QTest::qWait(50);  // let the coalesced redraws and the store poll run between rounds
        }
        // The last click shows one run, drawn with all its stored points.
        QCOMPARE(shownIds(training), std::vector<int64_t>{m_ids.wide});
        QCOMPARE(pointsOf(training, m_ids.wide, kLoss), size_t(300));
        checkChartsMatchRuns(training);
        if (QTest::currentTestFailed()) return;
        QVERIFY(m_window->saveScreenshot(artifactPath("runs-dock-switching.png")));
    }

    // Issue 35: a run that ended before its first checkpoint (killed early) cannot be resumed;
    // Resume, in the context menu and the toolbar, says so and how to start it again.
    void aRunWithoutCheckpointsSaysHowToStartItAgain() {
        QTreeWidget* tree = m_window.find<RunsDock>("RunsDock")->tree();
        RunsDock* dock = m_window.find<RunsDock>("RunsDock");
        const std::filesystem::path folder = m_window.filePath("killed-early").toStdString();
        std::filesystem::create_directories(folder);
        std::ofstream(folder / "config.yaml") << nanoYaml();
        auto opened = RunStore::open(m_path);
        QVERIFY(opened.ok());
        NewRun run;
        run.name = "killed-before-its-first-checkpoint";
        run.configYaml = nanoYaml();
        run.modelDir = folder.string();
        auto id = (*opened)->createRun(run);
        QVERIFY(id.ok());
        QVERIFY((*opened)->setStatus(*id, "running").ok());
        dock->refresh();
        QVERIFY(!dock->canResume(*id));
        std::unique_ptr<QMenu> menu(dock->contextMenu(*id, dock));
        QVERIFY(menu);
        auto* resume = menu->findChild<QAction*>(QStringLiteral("resumeRun"));
        QVERIFY(resume && !resume->isEnabled());
        QVERIFY2(resume->toolTip().contains("ended before its first checkpoint") &&
                     resume->toolTip().contains("Open config in editor"),
                 qPrintable(resume->toolTip()));
        clickRun(tree, *id);
        QAction* toolbar = m_window.action("resumeRunAction");
        QTRY_VERIFY(toolbar->toolTip().contains("Open config in editor"));
        QVERIFY(!toolbar->isEnabled());
        // A run that never had a folder is only told about checkpoints; a sweep keeps its text.
        QVERIFY2(dock->resumeToolTip(m_ids.stopped).contains("runconfig.checkpoint_steps"),
                 qPrintable(dock->resumeToolTip(m_ids.stopped)));
        QVERIFY(dock->resumeToolTip(m_ids.sweep).startsWith("Continue this sweep"));
    }

    void runsWrittenElsewhereAppearAndGrow() {
        QTreeWidget* tree = m_window.find<RunsDock>("RunsDock")->tree();
        TrainingTab* training = m_window.find<TrainingTab>("trainingTab");
        StoreFollower* follower = m_window.find<StoreFollower>("storeFollower");
        QVERIFY(follower);
        QCOMPARE(follower->interval(), 1000);  // the studio's pace; the test need not wait
        follower->setInterval(50);

        // The user's state: one run selected, the sweep collapsed.
        clickRun(tree, m_ids.wide);
        itemOf(tree, m_ids.sweep)->setExpanded(false);
        QCOMPARE(shownIds(training), std::vector<int64_t>{m_ids.wide});

        // Another process opens the same store and starts a run.
        auto opened = RunStore::open(m_path);
        QVERIFY2(opened.ok(), opened.ok() ? "" : opened.error().message.c_str());
        RunStore& cli = **opened;
        NewRun run;
        run.name = "cli-run-from-a-terminal";
        run.configYaml = nanoYaml();
        auto cliRun = cli.createRun(run);
        QVERIFY(cliRun.ok());
        QVERIFY(cli.setStatus(*cliRun, "running").ok());
        logRun(cli, *cliRun, 1, 20, 1.2);
        cli.flush();

        QTRY_VERIFY_WITH_TIMEOUT(itemOf(tree, *cliRun) != nullptr, 10000);
        QCOMPARE(itemOf(tree, *cliRun)->text(1), QString("running"));
        QCOMPARE(tree->indexOfTopLevelItem(itemOf(tree, *cliRun)), 0);  // newest first
        // The user's selection and collapsed sweep are as they were.
        QCOMPARE(m_window.find<RunsDock>("RunsDock")->selectedRunIds(),
                 std::vector<int64_t>{m_ids.wide});
        QVERIFY(!itemOf(tree, m_ids.sweep)->isExpanded());
        QCOMPARE(shownIds(training), std::vector<int64_t>{m_ids.wide});

        // Overlaid while it trains, it grows on the charts as the other process logs.
        clickRun(tree, *cliRun, Qt::ControlModifier);
        QCOMPARE(pointsOf(training, *cliRun, kLoss), size_t(20));
        const int pollsBefore = follower->pollsCompleted();
        logRun(cli, *cliRun, 21, 60, 1.2);
        cli.flush();
        QTRY_COMPARE_WITH_TIMEOUT(pointsOf(training, *cliRun, kLoss), size_t(60), 10000);
        QVERIFY(follower->pollsCompleted() > pollsBefore);
        QCOMPARE(pointsOf(training, *cliRun, kEvalLoss), size_t(1));   // step 50's evaluation
        QCOMPARE(pointsOf(training, m_ids.wide, kLoss), size_t(300));  // the other run untouched
        // Appended in order, with wall time still counted from the run's first point.
        const MetricSeries& grown = training->runs().at(*cliRun).metrics.at(kLoss);
        for (size_t i = 0; i < grown.size(); ++i) QCOMPARE(grown.step[i], double(i + 1));
        QCOMPARE(grown.wall.front(), 0.0);
        QVERIFY(std::fabs(grown.wall.back() - 0.05 * 59) < 1e-9);

        // It ends: the status and final loss show, still without touching the selection.
        QVERIFY(cli.setSummary(*cliRun, "{\"final_loss\": 2.345}").ok());
        QVERIFY(cli.setStatus(*cliRun, "finished").ok());
        QTRY_COMPARE_WITH_TIMEOUT(itemOf(tree, *cliRun)->text(1), QString("finished"), 10000);
        QCOMPARE(itemOf(tree, *cliRun)->text(2), QString("2.345"));
        std::vector<int64_t> selected = m_window.find<RunsDock>("RunsDock")->selectedRunIds();
        std::sort(selected.begin(), selected.end());
        QCOMPARE(selected, (std::vector<int64_t>{m_ids.wide, *cliRun}));

        // A new trial of the collapsed sweep goes under it, and the sweep stays collapsed.
        NewRun trial;
        trial.name = "lr sweep 2026-12-01 03:10 #4: learning_rate=0.256 hidden_size=64 seed=0";
        trial.kind = "sweep-trial";
        trial.sweepId = m_ids.sweep;
        auto trialId = cli.createRun(trial);
        QVERIFY(trialId.ok());
        QTRY_VERIFY_WITH_TIMEOUT(itemOf(tree, *trialId) != nullptr, 10000);
        QCOMPARE(itemOf(tree, *trialId)->parent(), itemOf(tree, m_ids.sweep));
        QCOMPARE(itemOf(tree, m_ids.sweep)->indexOfChild(itemOf(tree, *trialId)), 0);
        QVERIFY(!itemOf(tree, m_ids.sweep)->isExpanded());
        QVERIFY(m_window->saveScreenshot(artifactPath("runs-dock-followed.png")));

        // Deleted elsewhere while overlaid: it leaves the dock and the charts.
        QVERIFY(cli.deleteRun(*cliRun).ok());
        QTRY_VERIFY_WITH_TIMEOUT(itemOf(tree, *cliRun) == nullptr, 10000);
        QCOMPARE(shownIds(training), std::vector<int64_t>{m_ids.wide});
        checkChartsMatchRuns(training);
    }

    void longNamesStayReadable() {
        RunsDock* dock = m_window.find<RunsDock>("RunsDock");
        QTreeWidget* tree = dock->tree();
        // Names are elided in the middle: the start and the distinguishing end both show.
        QCOMPARE(tree->textElideMode(), Qt::ElideMiddle);
        // The whole name is in the tooltip, whichever column the mouse is over.
        QTreeWidgetItem* item = itemOf(tree, m_ids.longName);
        QVERIFY(item);
        for (int column = 0; column < tree->columnCount(); ++column) {
            QVERIFY2(
                item->toolTip(column).contains("gpt-nano-baseline-warmup200-cosine-lr3e-3-seed7"),
                qPrintable(item->toolTip(column)));
        }
        // Trials are labelled by what tells them apart: the parts all trials share (the sweep's
        // name, hidden_size=64, seed=0) are left out of the label and kept in the tooltip.
        QTreeWidgetItem* trial = itemOf(tree, m_ids.trials[1]);
        QVERIFY(trial);
        QCOMPARE(trial->text(0), QString("#1 lr 0.004"));
        QVERIFY(trial->toolTip(0).contains(
            "lr sweep 2026-12-01 03:10 #1: learning_rate=0.004 hidden_size=64 seed=0"));
        // The dock asks for room for names beside status, loss and date (a tree's default left
        // them a few letters wide). The main window grants it unless the widest tab's minimum
        // width (the Wafer tab's timeline) leaves less.
        QVERIFY(dock->sizeHint().width() >= 440);
        QTest::qWait(50);
        // In the window's default layout every trial's label and the runs' names show whole
        // (status and date columns start hidden; the icon and the tooltip carry them).
        QVERIFY(tree->isColumnHidden(1) && tree->isColumnHidden(3));
        QVERIFY(item->toolTip(0).contains("finished") && item->toolTip(0).contains("created"));
        for (int64_t id : {m_ids.trials[0], m_ids.trials[1], m_ids.trials[2], m_ids.trials[3],
                           m_ids.wide, m_ids.stopped}) {
            QTreeWidgetItem* t = itemOf(tree, id);
            const QRect cell = tree->visualItemRect(t);
            const int room =
                cell.width() - tree->style()->pixelMetric(QStyle::PM_SmallIconSize) - 12;
            const int needed = tree->fontMetrics().horizontalAdvance(t->text(0));
            QVERIFY2(room >= needed, qPrintable(QString("'%1' needs %2 px, has %3 (dock %4 px)")
                                                    .arg(t->text(0))
                                                    .arg(needed)
                                                    .arg(room)
                                                    .arg(dock->width())));
        }
        QVERIFY(dock->grab().save(artifactPath("runs-dock-names.png")));
    }

    // Issue 31: a μP sweep's trials ("#62: hidden_size=128 num_heads=8 filter_size=512
    // learning_rate=0.00390625 parametrization=sp seed=0" under the sweep) were cut to
    // "#62: hidd…zation=sp" at 1366 x 768 and at 1920 x 1080. Their labels now say what tells
    // them apart in the words people use, and fit the column at both sizes.
    void sweepTrialNamesFitAtLaptopAndDesktopSizes() {
        auto opened = RunStore::open(m_path);
        QVERIFY(opened.ok());
        RunStore& store = **opened;
        const std::string sweepName = "sweep 2026-03-01 10:15";
        const int64_t sweep = addRun(store, sweepName, "finished", 0, 1.0, "sweep");
        std::vector<int64_t> trials;
        int number = 0;
        for (int width : {32, 64, 128})
            for (int e = -10; e <= -6; ++e)
                for (const char* p : {"sp", "mup"}) {
                    const std::string name =
                        sweepName + " #" + std::to_string(number++) +
                        ": hidden_size=" + std::to_string(width) +
                        " num_heads=" + std::to_string(width / 16) +
                        " filter_size=" + std::to_string(4 * width) +
                        " learning_rate=" + QString::number(std::exp2(e), 'g', 17).toStdString() +
                        " parametrization=" + p + " seed=0";
                    trials.push_back(addRun(store, name, "finished", 0, 1.0, "sweep-trial", sweep));
                }
        RunsDock* dock = m_window.find<RunsDock>("RunsDock");
        dock->refresh();
        QTreeWidget* tree = dock->tree();
        QTreeWidgetItem* last = itemOf(tree, trials.back());
        QVERIFY(last);
        QCOMPARE(last->text(0),
                 QString::fromUtf8("#29 width 128\u2009·\u2009lr 2⁻⁶\u2009·\u2009μP"));
        QVERIFY(
            last->toolTip(0).contains(QString::fromStdString(sweepName + " #29: hidden_size=128")));
        for (const QSize size : {QSize(1366, 768), QSize(1920, 1080)}) {
            m_window->resize(size);
            QTest::qWait(100);
            for (int64_t id : trials) {
                QTreeWidgetItem* t = itemOf(tree, id);
                tree->scrollToItem(t);
                // The name's own cell (not the row: the loss column is beside it), after the
                // indentation and the status icon.
                const QRect cell = tree->visualRect(tree->indexFromItem(t, 0));
                const int room =
                    cell.width() - tree->style()->pixelMetric(QStyle::PM_SmallIconSize) - 8;
                const int needed = tree->fontMetrics().horizontalAdvance(t->text(0));
                QVERIFY2(room >= needed,
                         qPrintable(QString("%1 x %2: '%3' needs %4 px, has %5 (dock %6 px)")
                                        .arg(size.width())
                                        .arg(size.height())
                                        .arg(t->text(0))
                                        .arg(needed)
                                        .arg(room)
                                        .arg(dock->width())));
            }
            QVERIFY(m_window->saveScreenshot(
                artifactPath(QStringLiteral("runs-dock-mup-trials-%1.png").arg(size.width()))));
        }
    }

private:
    std::filesystem::path m_path;
    Ids m_ids;
    ws::testing::StudioWindow m_window;
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<RunsDockTest>(argc, argv);
}
#include "runs_dock_test.moc"
