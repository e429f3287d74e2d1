// SPDX-License-Identifier: GPL-3.0-or-later
// Run on Cluster → Slurm for real (run by slurm_gui_test.sh inside a Slurm cluster of this
// machine: partition "test" of the nodes n1 and n2, MaxTime 10 minutes). From the dialog's Slurm
// tab the studio submits a 2-node job of the real `wafer`; it is followed through Slurm
// (running on n[1-2]) and the store (the run selected, its two ranks on the Wafer tab, the batch
// script kept beside it); Stop ends it cleanly (the run stopped with a checkpoint, the job
// COMPLETED, no error dialog). A job whose time limit is above the partition's waits with
// Slurm's reason (PartitionTimeLimit) in the Log and status line until Stop cancels it, as does
// one asking for more nodes than the partition has (PartitionNodeLimit); one naming a partition
// the cluster does not have is refused by sbatch, in Slurm's words.
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>

#include "engine/modelio/checkpoints.h"
#include "engine/session/folder_lock.h"
#include "engine/store/run_store.h"
#include "support/gui_test.h"
#include "support/slurm_form.h"
#include "support/studio_window.h"
#include "support/tiny_cluster_config.h"
#include "ui/cluster/cluster_controller.h"
#include "ui/cluster/cluster_dialog.h"
#include "ui/cluster/slurm_job.h"
#include "ui/common/status_panel.h"
#include "ui/shell/log_dock.h"
#include "ui/shell/main_window.h"
#include "ui/shell/runs_dock.h"
#include "ui/wafer/cluster_diagram.h"

namespace {
using namespace ws;
}  // namespace

class ClusterSlurmTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        if (qEnvironmentVariableIsEmpty("SLURM_CONF"))
            QSKIP("no Slurm cluster: run through tests/ui/cluster/slurm_gui_test.sh");
    }
    void init() { QVERIFY(m_studio.open()); }
    void cleanup() { m_studio.close(); }
    void jobRunsOnTwoNodesIsFollowedAndStops();
    void pendingJobShowsSlurmsReasonAndIsCancelled();
    void unknownPartitionIsRefusedBySbatch();

private:
    // Run on Cluster on a saved tiny config with 2 systems, on the Slurm tab: partition test,
    // `nodes` nodes of 1 task with 1 CPU, `timeLimit`.
    ui::ClusterDialog* openSlurmDialog(int nodes, const QString& timeLimit) {
        const QString config = m_studio.filePath("cluster.yaml");
        QFile out(config);
        if (!out.open(QIODevice::WriteOnly)) return nullptr;
        out.write(tinyClusterConfig(2, 20).toUtf8());
        out.close();
        if (!m_studio->openConfig(config)) return nullptr;
        m_studio->setClusterWaferBinary(WAFER_CLI);
        return fillSlurmForm(m_studio->openClusterDialog(), "test", nodes, timeLimit);
    }
    QString log() const { return m_studio->findChild<ui::LogDock*>("LogDock")->text(); }
    std::string status(int64_t run) {
        auto info = m_studio->runStore()->getRun(run);
        return info.ok() ? session::shownRunStatus(info->status, info->modelDir) : "";
    }

    testing::StudioWindow m_studio;
};

void ClusterSlurmTest::jobRunsOnTwoNodesIsFollowedAndStops() {
    ui::ClusterDialog* dialog = openSlurmDialog(2, "5");
    QVERIFY(dialog);
    // sinfo answers from the cluster itself.
    QTRY_VERIFY_WITH_TIMEOUT(
        dialog->findChild<QLabel*>("slurmClusterNote")->text().contains("test (default): up, 2"),
        20000);
    dialog->grab().save(testing::artifactPath("slurm-dialog.png"));
    QVERIFY2(dialog->problems().isEmpty(), qPrintable(dialog->problems().join("\n")));
    auto* job = m_studio->cluster()->slurmJob();
    QSignalSpy appeared(job, &ui::ClusterJob::runAppeared);
    QTest::mouseClick(dialog->findChild<QPushButton*>("startButton"), Qt::LeftButton);
    QVERIFY(job->isActive());
    QVERIFY2(appeared.size() == 1 || appeared.wait(120000),
             qPrintable(log() + "\n" + job->errorTail()));
    const int64_t run = job->runId();
    QTRY_VERIFY2_WITH_TIMEOUT(
        log().contains(QString("Slurm job %1: running on n[1-2]").arg(job->jobId())),
        qPrintable(log()), 10000);
    QCOMPARE(m_studio->findChild<ui::RunsDock*>("RunsDock")->selectedRunIds(),
             std::vector<int64_t>{run});
    auto* diagram = m_studio->findChild<ui::ClusterDiagram*>();
    QTRY_VERIFY_WITH_TIMEOUT(diagram->placement().size() == 2, 20000);
    // What started the run stays with it.
    auto info = m_studio->runStore()->getRun(run);
    QVERIFY(info.ok());
    const QString kept = QDir(QString::fromStdString(info->modelDir))
                             .filePath(QString("slurm-job-%1.sbatch").arg(job->jobId()));
    QTRY_VERIFY(QFile::exists(kept));
    QFile script(kept);
    QVERIFY(script.open(QIODevice::ReadOnly));
    QVERIFY(script.readAll().contains("#SBATCH --nodes=2"));
    QTRY_VERIFY_WITH_TIMEOUT(status(run) == "running", 30000);
    m_studio->showTab("training");
    QTest::qWait(3000);  // a few logged steps on the chart
    QVERIFY(m_studio->saveScreenshot(testing::artifactPath("slurm-running.png")));

    QSignalSpy ended(job, &ui::ClusterJob::ended);
    QSignalSpy reported(m_studio->cluster(), &ui::ClusterController::endReported);
    QTRY_VERIFY(m_studio.action("stopAction")->isEnabled());
    m_studio.action("stopAction")->trigger();
    QVERIFY2(ended.size() == 1 || ended.wait(90000), qPrintable(log()));
    QVERIFY(reported.size() == 1 || reported.wait(10000));
    QCOMPARE(reported.first().at(0).toBool(), false);  // stopped on purpose
    QCOMPARE(status(run), std::string("stopped"));
    QCOMPARE(job->queueState().state, QString("COMPLETED"));  // wafer ended the job itself
    QVERIFY(!modelio::listCheckpoints(info->modelDir).empty());
    QVERIFY(!m_studio->findChild<QMessageBox*>("clusterErrorBox"));
    // Both tasks' words reached the Log through the job's output file.
    QVERIFY2(log().contains("rank 1 of 2 on ") && log().contains("stopped after"),
             qPrintable(log()));
}

void ClusterSlurmTest::pendingJobShowsSlurmsReasonAndIsCancelled() {
    ui::ClusterDialog* dialog = openSlurmDialog(2, "20");  // the partition allows 10 minutes
    QVERIFY(dialog);
    auto* job = m_studio->cluster()->slurmJob();
    QTest::mouseClick(dialog->findChild<QPushButton*>("startButton"), Qt::LeftButton);
    QTRY_VERIFY2_WITH_TIMEOUT(log().contains("pending (PartitionTimeLimit: its time limit is above "
                                             "the partition's maximum"),
                              qPrintable(log()), 30000);
    const QString shown = m_studio->findChild<ui::StatusPanel*>()->stateText();
    QVERIFY2(shown.contains("Waiting") && shown.contains("PartitionTimeLimit"), qPrintable(shown));
    QVERIFY(m_studio->saveScreenshot(testing::artifactPath("slurm-pending.png")));
    QSignalSpy ended(job, &ui::ClusterJob::ended);
    QSignalSpy reported(m_studio->cluster(), &ui::ClusterController::endReported);
    m_studio.action("stopAction")->trigger();
    QVERIFY2(ended.size() == 1 || ended.wait(60000), qPrintable(log()));
    QCOMPARE(job->queueState().state, QString("CANCELLED"));
    QVERIFY(reported.size() == 1 || reported.wait(10000));
    QCOMPARE(reported.first().at(0).toBool(), false);
    QVERIFY(job->runId() < 0);
    QVERIFY(!m_studio->findChild<QMessageBox*>("clusterErrorBox"));

    // More nodes than the partition has: Slurm queues it all the same, saying why it waits.
    dialog = openSlurmDialog(3, "5");
    QVERIFY(dialog);
    dialog->findChild<QSpinBox*>("systemsSpin")->setValue(4);  // 3 tasks need 3 systems
    QVERIFY2(dialog->problems().isEmpty(), qPrintable(dialog->problems().join("\n")));
    QTest::mouseClick(dialog->findChild<QPushButton*>("startButton"), Qt::LeftButton);
    QTRY_VERIFY2_WITH_TIMEOUT(log().contains("pending (PartitionNodeLimit: it asks for more (or "
                                             "fewer) nodes than the partition allows"),
                              qPrintable(log()), 30000);
    ended.clear();
    m_studio.action("stopAction")->trigger();
    QVERIFY2(ended.size() == 1 || ended.wait(60000), qPrintable(log()));
    QCOMPARE(job->queueState().state, QString("CANCELLED"));
}

void ClusterSlurmTest::unknownPartitionIsRefusedBySbatch() {
    ui::ClusterDialog* dialog = openSlurmDialog(2, "5");
    QVERIFY(dialog);
    dialog->findChild<QComboBox*>("slurmPartition")->setEditText("gpu");
    QVERIFY2(dialog->problems().isEmpty(), qPrintable(dialog->problems().join("\n")));
    QSignalSpy ended(m_studio->cluster()->slurmJob(), &ui::ClusterJob::ended);
    QTest::mouseClick(dialog->findChild<QPushButton*>("startButton"), Qt::LeftButton);
    QVERIFY2(ended.size() == 1 || ended.wait(30000), qPrintable(log()));
    QMessageBox* box = nullptr;
    QTRY_VERIFY((box = m_studio->findChild<QMessageBox*>("clusterErrorBox")));
    QVERIFY2(box->text().contains("sbatch did not submit the job") &&
                 box->text().contains("Invalid partition name specified"),
             qPrintable(box->text()));
    box->grab().save(testing::artifactPath("slurm-refused.png"));
}

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<ClusterSlurmTest>(argc, argv);
}

#include "cluster_slurm_test.moc"
