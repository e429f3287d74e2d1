// SPDX-License-Identifier: GPL-3.0-or-later
// Run on Cluster's Slurm tab with Slurm's tools stood in for by small scripts (sbatch, squeue,
// scontrol, scancel, sacct, sinfo printing what Slurm 22.05 prints), so every state a job can be
// in is reached on purpose and quickly: the tab lists sinfo's partitions and shows the batch
// script it submits, exactly the file sbatch is given; a time limit Slurm would not take is
// refused before anything is submitted; a job pending with PartitionTimeLimit says so in the Log
// and the status line, and Stop cancels it with scancel; sbatch's refusal and a FAILED job end
// in the error dialog with Slurm's own words and the job's output. The real cluster is
// slurm_gui_test.sh (cluster_slurm_test.cpp).
#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>

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

namespace {

using namespace ws;

void writeFile(const QString& path, const QByteArray& text, bool executable = false) {
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
    file.write(text);
    file.close();
    if (executable) file.setPermissions(file.permissions() | QFileDevice::ExeOwner);
}

QByteArray readFile(const QString& path) {
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

}  // namespace

class SlurmJobTest : public QObject {
    Q_OBJECT
private slots:
    void init();
    void cleanup() {
        m_studio.close();
        qputenv("PATH", m_oldPath);
    }
    void slurmTabShowsTheScriptItSubmits();
    void pendingReasonIsShownAndStopCancels();
    void sbatchRefusalIsShownInSlurmsWords();
    void failedJobShowsStateReasonAndOutput();

private:
    // What the stand-ins answer is in files of m_state: squeue.out (empty: not in the queue),
    // scontrol.out (missing: "Invalid job id"), sbatch.fail (sbatch fails with its text).
    QString state(const QString& name) const { return m_studio.filePath("slurm/" + name); }
    // Opens Run on Cluster on a saved tiny config with 2 systems, on the Slurm tab, asking for
    // 2 nodes of 1 task and 10 minutes.
    ui::ClusterDialog* openSlurmDialog();
    QString log() const { return m_studio->findChild<ui::LogDock*>("LogDock")->text(); }
    QString status() const { return m_studio->findChild<ui::StatusPanel*>()->stateText(); }

    testing::StudioWindow m_studio;
    QByteArray m_oldPath;
};

void SlurmJobTest::init() {
    m_oldPath = qgetenv("PATH");
    QVERIFY(m_studio.open());
    QDir().mkpath(m_studio.filePath("bin"));
    QDir().mkpath(state(""));
    const QByteArray d = state("").toUtf8();
    auto tool = [&](const char* name, const QByteArray& body) {
        writeFile(m_studio.filePath(QStringLiteral("bin/") + name),
                  "#!/bin/sh\nD=" + d + "\n" + body, true);
    };
    tool("sbatch",
         "echo \"$@\" > $D/sbatch.args\n"
         "if [ -f $D/sbatch.fail ]; then cat $D/sbatch.fail >&2; exit 1; fi\n"
         "cp \"$2\" $D/submitted.sbatch\n"
         "echo '4242;wafertest'\n");
    tool("squeue", "[ -f $D/squeue.out ] && cat $D/squeue.out\nexit 0\n");
    tool("scontrol",
         "if [ -f $D/scontrol.out ]; then cat $D/scontrol.out; exit 0; fi\n"
         "echo 'slurm_load_jobs error: Invalid job id specified' >&2\nexit 1\n");
    tool("scancel",
         "echo \"$@\" >> $D/scancel.log\nrm -f $D/squeue.out\n"
         "echo 'JobId=4242 JobState=CANCELLED Reason=None ExitCode=0:15' > $D/scontrol.out\n");
    tool("sacct", "echo 'sacct: error: Slurm accounting storage is disabled' >&2\nexit 1\n");
    tool("sinfo", "echo 'test*|up|2|10:00|idle'\n");
    qputenv("PATH", (m_studio.filePath("bin") + ":").toUtf8() + m_oldPath);
}

ui::ClusterDialog* SlurmJobTest::openSlurmDialog() {
    const QString config = m_studio.filePath("cluster.yaml");
    writeFile(config, tinyClusterConfig(2, 5).toUtf8());
    if (!m_studio->openConfig(config)) return nullptr;
    m_studio->setClusterWaferBinary(WAFER_CLI);
    return fillSlurmForm(m_studio->openClusterDialog(), "test", 2, "10");
}

void SlurmJobTest::slurmTabShowsTheScriptItSubmits() {
    writeFile(state("squeue.out"), "PENDING|Priority|\n");
    ui::ClusterDialog* dialog = openSlurmDialog();
    QVERIFY(dialog);
    // sinfo's partitions, with their state and time limit.
    auto* note = dialog->findChild<QLabel*>("slurmClusterNote");
    QTRY_VERIFY2(note->text().contains("test (default): up, 2 node(s) (2 idle), time limit 10:00"),
                 qPrintable(note->text()));
    QCOMPARE(dialog->findChild<QComboBox*>("slurmPartition")->itemText(0), QString("test"));
    // What Slurm would do with a time limit above the partition's is said before submitting.
    auto* summary = dialog->findChild<QLabel*>("processSummary");
    QVERIFY(!summary->text().contains("PartitionTimeLimit"));
    dialog->findChild<QLineEdit*>("slurmTimeLimit")->setText("1:00:00");
    QVERIFY2(summary->text().contains("Partition test allows 10:00 at most: the job would wait for "
                                      "ever (PartitionTimeLimit)"),
             qPrintable(summary->text()));
    dialog->findChild<QLineEdit*>("slurmTimeLimit")->setText("10");
    QVERIFY(!summary->text().contains("PartitionTimeLimit"));
    auto* start = dialog->findChild<QPushButton*>("startButton");
    QCOMPARE(start->text(), QString("Submit"));
    const QString script = dialog->shownCommandLine();
    const QString scriptPath = dialog->plan().slurm.scriptPath;
    QVERIFY2(script.contains("#SBATCH --partition=test\n#SBATCH --nodes=2\n"
                             "#SBATCH --ntasks-per-node=1\n#SBATCH --cpus-per-task=1\n"
                             "#SBATCH --time=10\n") &&
                 script.contains("srun --mpi=pmix --kill-on-bad-exit=1 " WAFER_CLI " train ") &&
                 script.contains("--threads 1 --db "),
             qPrintable(script));
    QVERIFY2(dialog->findChild<QLabel*>("commandCaption")->text().contains(scriptPath),
             qPrintable(dialog->findChild<QLabel*>("commandCaption")->text()));
    QTest::mouseClick(dialog->findChild<QPushButton*>("copyCommand"), Qt::LeftButton);
    QCOMPARE(QApplication::clipboard()->text(), script);

    // A time limit Slurm would not take: nothing is submitted.
    dialog->findChild<QLineEdit*>("slurmTimeLimit")->setText("soon");
    QTest::mouseClick(start, Qt::LeftButton);
    QMessageBox* box = nullptr;
    QTRY_VERIFY((box = dialog->problemBox()));
    QVERIFY2(box->text().contains("The time limit “soon” is not one Slurm takes"),
             qPrintable(box->text()));
    QVERIFY(!QFile::exists(state("sbatch.args")));
    box->close();

    dialog->findChild<QLineEdit*>("slurmTimeLimit")->setText("10");
    QTest::mouseClick(start, Qt::LeftButton);
    QTRY_VERIFY(QFile::exists(state("submitted.sbatch")));
    // sbatch was given exactly the script shown, from the file the caption named.
    QCOMPARE(QString::fromUtf8(readFile(state("submitted.sbatch"))), script);
    QCOMPARE(QString::fromUtf8(readFile(state("sbatch.args"))).trimmed(),
             "--parsable " + scriptPath);
    QVERIFY(QFile::exists(scriptPath));
    QTRY_VERIFY2(log().contains("Slurm job 4242 submitted"), qPrintable(log()));
    auto* job = m_studio->cluster()->slurmJob();
    QCOMPARE(m_studio->clusterJob(), static_cast<ui::ClusterJob*>(job));
    QCOMPARE(job->jobId(), QString("4242"));
    // The choice is remembered for the next dialog.
    QSignalSpy ended(job, &ui::ClusterJob::ended);
    m_studio.action("stopAction")->trigger();
    QVERIFY(ended.size() == 1 || ended.wait(10000));
    ui::ClusterDialog* again = m_studio->openClusterDialog();
    QVERIFY(again);
    QCOMPARE(again->findChild<QTabWidget*>("launcherTabs")->currentIndex(), 1);
    QCOMPARE(again->plan().slurm.nodes, 2);
    QCOMPARE(again->plan().slurm.timeLimit, QString("10"));
    again->reject();
}

void SlurmJobTest::pendingReasonIsShownAndStopCancels() {
    writeFile(state("squeue.out"), "PENDING|PartitionTimeLimit|\n");
    ui::ClusterDialog* dialog = openSlurmDialog();
    QVERIFY(dialog);
    auto* job = m_studio->cluster()->slurmJob();
    QSignalSpy changed(job, &ui::SlurmJob::queueStateChanged);
    QTest::mouseClick(dialog->findChild<QPushButton*>("startButton"), Qt::LeftButton);
    QVERIFY(changed.size() == 1 || changed.wait(10000));
    QCOMPARE(changed.first().at(0).toString(), QString("PENDING"));
    // Slurm's code and what to do about it, in the Log and the status line.
    QTRY_VERIFY2(log().contains("Slurm job 4242: pending (PartitionTimeLimit: its time limit is "
                                "above the partition's maximum"),
                 qPrintable(log()));
    QVERIFY2(status().contains("Waiting") && status().contains("PartitionTimeLimit"),
             qPrintable(status()));
    QVERIFY(m_studio.action("stopAction")->isEnabled());
    QVERIFY(!m_studio.action("runClusterAction")->isEnabled());  // one job at a time
    QVERIFY(m_studio->saveScreenshot(testing::artifactPath("slurm-pending.png")));

    // Stop: no run to ask, so scancel at once; Slurm then says CANCELLED.
    QSignalSpy ended(job, &ui::ClusterJob::ended);
    QSignalSpy reported(m_studio->cluster(), &ui::ClusterController::endReported);
    m_studio.action("stopAction")->trigger();
    QVERIFY(ended.size() == 1 || ended.wait(10000));
    QCOMPARE(QString::fromUtf8(readFile(state("scancel.log"))), QString("4242\n"));
    QVERIFY(reported.size() == 1 || reported.wait(10000));
    QCOMPARE(reported.first().at(0).toBool(), false);  // stopped on purpose
    QVERIFY(!m_studio->findChild<QMessageBox*>("clusterErrorBox"));
    QVERIFY2(log().contains("Slurm job 4242: cancelled") &&
                 log().contains("cluster job stopped before it started a run"),
             qPrintable(log()));
    QVERIFY(m_studio.action("runClusterAction")->isEnabled());
}

void SlurmJobTest::sbatchRefusalIsShownInSlurmsWords() {
    writeFile(state("sbatch.fail"),
              "sbatch: error: Batch job submission failed: Requested node configuration is not "
              "available\n");
    ui::ClusterDialog* dialog = openSlurmDialog();
    QVERIFY(dialog);
    QSignalSpy ended(m_studio->cluster()->slurmJob(), &ui::ClusterJob::ended);
    QTest::mouseClick(dialog->findChild<QPushButton*>("startButton"), Qt::LeftButton);
    QVERIFY(ended.size() == 1 || ended.wait(10000));
    QMessageBox* box = nullptr;
    QTRY_VERIFY((box = m_studio->findChild<QMessageBox*>("clusterErrorBox")));
    QVERIFY2(box->text().contains("sbatch did not submit the job (exit code 1) before the job "
                                  "recorded a run") &&
                 box->text().contains("Requested node configuration is not available"),
             qPrintable(box->text()));
    QVERIFY(!QFile::exists(state("scancel.log")));
    box->close();
    QVERIFY(m_studio.action("runClusterAction")->isEnabled());
}

void SlurmJobTest::failedJobShowsStateReasonAndOutput() {
    writeFile(state("squeue.out"), "RUNNING|None|n[1-2]\n");
    ui::ClusterDialog* dialog = openSlurmDialog();
    QVERIFY(dialog);
    auto* job = m_studio->cluster()->slurmJob();
    QSignalSpy changed(job, &ui::SlurmJob::queueStateChanged);
    QTest::mouseClick(dialog->findChild<QPushButton*>("startButton"), Qt::LeftButton);
    QVERIFY(changed.size() == 1 || changed.wait(10000));
    QTRY_VERIFY2(log().contains("Slurm job 4242: running on n[1-2]"), qPrintable(log()));
    // The job writes its output (read as it grows), then fails.
    writeFile(job->outputPath(), "rank 1 of 2 on n2: systems 1-1 of 2\n");
    QTRY_VERIFY2(log().contains("cluster: rank 1 of 2 on n2"), qPrintable(log()));
    writeFile(job->outputPath(),
              "rank 1 of 2 on n2: systems 1-1 of 2\n"
              "error: the data set /nowhere/corpus.txt cannot be read\n"
              "srun: error: n2: task 1: Exited with exit code 1\n");
    QSignalSpy ended(job, &ui::ClusterJob::ended);
    QFile::remove(state("squeue.out"));
    writeFile(state("scontrol.out"),
              "JobId=4242 JobName=wafer-cluster\n   JobState=FAILED Reason=NonZeroExitCode "
              "Dependency=(null)\n   ExitCode=1:0\n   NodeList=n[1-2]\n");
    QVERIFY(ended.size() == 1 || ended.wait(10000));
    QMessageBox* box = nullptr;
    QTRY_VERIFY((box = m_studio->findChild<QMessageBox*>("clusterErrorBox")));
    const QString text = box->text();
    QVERIFY2(text.contains("Slurm job 4242 ended failed (NonZeroExitCode: a task ended with an "
                           "error") &&
                 text.contains("exit code 1)") &&
                 text.contains("/nowhere/corpus.txt cannot be read") &&
                 text.contains("task 1: Exited with exit code 1"),
             qPrintable(text));
    QVERIFY(m_studio->saveScreenshot(testing::artifactPath("slurm-failed.png")));
    box->close();
    QVERIFY(!QFile::exists(state("scancel.log")));  // it had ended: nothing to cancel
}

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<SlurmJobTest>(argc, argv);
}

#include "slurm_job_test.moc"
