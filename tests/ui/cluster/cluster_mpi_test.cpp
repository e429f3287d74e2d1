// SPDX-License-Identifier: GPL-3.0-or-later
// Run on Cluster… for real: the dialog starts `mpirun -np 2` on localhost with the real `wafer`
// CLI; the studio follows the run through the store (selected in Runs, the Wafer tab naming each
// system's rank and host). Pause shows "paused" and enables Continue; Checkpoint Now writes a
// checkpoint once continued; a rank killed with SIGKILL ends the job with a dialog quoting
// mpirun (the rank and its host) and offering Resume on Cluster, which continues the same run;
// Stop ends it cleanly ("stopped", with a final checkpoint, and no error dialog). Label "mpi".
#include <signal.h>
#include <QAction>
#include <QFile>
#include <QLineEdit>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTreeWidget>

#include "engine/modelio/checkpoints.h"
#include "engine/session/folder_lock.h"
#include "engine/store/run_store.h"
#include "support/gui_test.h"
#include "support/studio_window.h"
#include "support/tiny_cluster_config.h"
#include "ui/cluster/cluster_controller.h"
#include "ui/cluster/cluster_dialog.h"
#include "ui/cluster/cluster_job.h"
#include "ui/cluster/mpirun_job.h"
#include "ui/shell/log_dock.h"
#include "ui/shell/main_window.h"
#include "ui/shell/runs_dock.h"
#include "ui/wafer/cluster_diagram.h"

namespace {

using namespace ws;

void writeTinyConfig(const QString& path) {
    QString yaml = tinyClusterConfig(2, 20);
    yaml.replace("name: \"gpt-nano\"", "name: \"gpt-cluster\"");
    QFile out(path);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(yaml.toUtf8());
}

}  // namespace

class ClusterMpiTest : public QObject {
    Q_OBJECT
private slots:
    void init() { QVERIFY(m_studio.open()); }
    void cleanup() { m_studio.close(); }
    void localhostJobIsFollowedPausedCheckpointedResumedAndStopped();

private:
    std::string status(int64_t run) {
        auto info = m_studio->runStore()->getRun(run);
        return info.ok() ? session::shownRunStatus(info->status, info->modelDir) : "";
    }
    size_t checkpoints(int64_t run) {
        auto info = m_studio->runStore()->getRun(run);
        return info.ok() ? modelio::listCheckpoints(info->modelDir).size() : 0;
    }
    ui::ClusterDialog* startDialog(ui::ClusterDialog* dialog) {
        if (!dialog) return nullptr;
        dialog->findChild<QLineEdit*>("hostsEdit")->setText("localhost");
        dialog->findChild<QSpinBox*>("processesPerHost")->setValue(2);
        dialog->findChild<QSpinBox*>("threadsPerProcess")->setValue(1);
        return dialog;
    }
    void screenshot(const QString& name) {
        QVERIFY(m_studio->saveScreenshot(testing::artifactPath(name)));
    }

    testing::StudioWindow m_studio;
};

void ClusterMpiTest::localhostJobIsFollowedPausedCheckpointedResumedAndStopped() {
    const QString config = m_studio.filePath("cluster.yaml");
    writeTinyConfig(config);
    QVERIFY(m_studio->openConfig(config));
    m_studio->setClusterWaferBinary(WAFER_CLI);
    ui::ClusterJob* job = m_studio->clusterJob();
    auto* mpirun = m_studio->cluster()->mpirunJob();
    ui::ClusterDialog* dialog = startDialog(m_studio->openClusterDialog());
    QVERIFY(dialog);
    QVERIFY2(dialog->problems().isEmpty(), qPrintable(dialog->problems().join("\n")));
    QVERIFY(dialog->shownCommandLine().contains("--host localhost:2 -np 2 --bind-to none"));
    QSignalSpy appeared(job, &ui::ClusterJob::runAppeared);
    QTest::mouseClick(dialog->findChild<QPushButton*>("startButton"), Qt::LeftButton);
    QVERIFY(job->isActive());
    QVERIFY2(appeared.size() == 1 || appeared.wait(120000), qPrintable(job->errorTail()));
    const int64_t run = job->runId();
    QCOMPARE(m_studio->externalRun(), run);
    QCOMPARE(m_studio->findChild<ui::RunsDock*>("RunsDock")->selectedRunIds(),
             std::vector<int64_t>{run});
    // The Wafer tab names the ranks (placement recorded by rank 0 just after the run's row).
    auto* diagram = m_studio->findChild<ui::ClusterDiagram*>();
    QVERIFY(diagram);
    QTRY_VERIFY_WITH_TIMEOUT(diagram->placement().size() == 2, 10000);
    QVERIFY2(diagram->placement()[0].startsWith("rank 0 on ") &&
                 diagram->placement()[1].startsWith("rank 1 on "),
             qPrintable(diagram->placement()[1]));

    QTRY_VERIFY_WITH_TIMEOUT(m_studio.action("pauseAction")->isEnabled(), 60000);
    QVERIFY(m_studio.action("checkpointAction")->isEnabled());
    m_studio.action("pauseAction")->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(status(run) == "paused", 30000);
    QTRY_VERIFY_WITH_TIMEOUT(m_studio.action("continueAction")->isEnabled(), 10000);
    QVERIFY(!m_studio.action("pauseAction")->isEnabled());
    m_studio->showTab("training");
    screenshot("cluster_paused.png");
    // The job's own words reach the Log as lines: rank 0's terminal progress line (mpirun gives
    // it a pseudo-terminal) is left to the charts, its escape sequences never shown.
    const QString log = m_studio->findChild<ui::LogDock*>("LogDock")->text();
    QVERIFY2(log.contains("cluster: control: pause requested") &&
                 log.contains("cluster: paused between layers"),
             qPrintable(log));
    QVERIFY(!log.contains(QChar(0x1b)) && !log.contains("tok/s | ETA"));

    QCOMPARE(checkpoints(run), size_t(0));
    m_studio.action("continueAction")->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(
        m_studio.action("checkpointAction")->isEnabled() && status(run) == "running", 30000);
    m_studio.action("checkpointAction")->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(checkpoints(run) == 1, 30000);

    // A rank dies: mpirun ends the job, the run is shown interrupted, the dialog quotes mpirun.
    QProcess pgrep;
    pgrep.start("pgrep", {"-P", QString::number(mpirun->processId())});
    QVERIFY(pgrep.waitForFinished(5000));
    const QStringList ranks = QString::fromUtf8(pgrep.readAll()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(ranks.size(), 2);
    QSignalSpy ended(job, &ui::ClusterJob::ended);
    ::kill(ranks.last().toInt(), SIGKILL);
    QVERIFY(ended.wait(30000));
    QMessageBox* box = nullptr;
    QTRY_VERIFY_WITH_TIMEOUT((box = m_studio->findChild<QMessageBox*>("clusterErrorBox")), 10000);
    QVERIFY2(box->text().contains("interrupted") && box->text().contains("exited on signal 9") &&
                 box->text().contains("rank") && box->text().contains("Resume on Cluster"),
             qPrintable(box->text()));
    screenshot("cluster_rank_killed.png");
    QPushButton* resume = box->findChild<QPushButton*>("resumeOnClusterButton");
    QVERIFY(resume);
    QTest::mouseClick(resume, Qt::LeftButton);
    ui::ClusterDialog* again = nullptr;
    QTRY_VERIFY((again = m_studio->findChild<ui::ClusterDialog*>("ClusterDialog")));
    startDialog(again);
    QVERIFY(again->shownCommandLine().contains(QString(" train --resume %1 ").arg(run)));
    appeared.clear();
    QTest::mouseClick(again->findChild<QPushButton*>("startButton"), Qt::LeftButton);
    QVERIFY2(appeared.size() == 1 || appeared.wait(120000), qPrintable(job->errorTail()));
    QCOMPARE(job->runId(), run);  // the same run continues

    QTRY_VERIFY_WITH_TIMEOUT(status(run) == "running", 60000);
    ended.clear();
    QSignalSpy reported(m_studio->cluster(), &ui::ClusterController::endReported);
    QTRY_VERIFY(m_studio.action("stopAction")->isEnabled());
    m_studio.action("stopAction")->trigger();
    QVERIFY(ended.size() == 1 || ended.wait(60000));
    // Judged once rank 0 has let go of the run (it may still look "running" when mpirun ends).
    QVERIFY(reported.size() == 1 || reported.wait(10000));
    QCOMPARE(reported.first().at(0).toBool(), false);  // stopped on purpose, not failed
    QCOMPARE(status(run), std::string("stopped"));
    QCOMPARE(ended.first().at(0).toInt(), 0);  // mpirun's exit code: the request, not a signal
    QVERIFY(checkpoints(run) >= 2);            // checkpoint now, then the final one
    QVERIFY(!m_studio->findChild<QMessageBox*>("clusterErrorBox"));
    QVERIFY(m_studio.action("runClusterAction")->isEnabled());
}

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<ClusterMpiTest>(argc, argv);
}

#include "cluster_mpi_test.moc"
