// SPDX-License-Identifier: GPL-3.0-or-later
// Run on Cluster… without a cluster: the command line the dialog makes (exactly), the dialogs that
// say what to fix before anything starts (mpirun missing, a hostfile that cannot be read, more
// processes than systems), the unsaved config saved first, and a job whose host cannot be reached
// - an mpirun stand-in that fails as Open MPI does, or says nothing and waits - ending in a
// dialog with mpirun's words instead of a hang. The real job under mpirun is cluster_mpi_test.cpp.
#include <QCheckBox>
#include <QClipboard>
#include <QDir>
#include <QFile>
#include <QGuiApplication>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>

#include "engine/session/cluster_worker.h"
#include "engine/session/run_control.h"
#include "engine/store/run_store.h"
#include "support/gui_test.h"
#include "support/studio_window.h"
#include "support/tiny_cluster_config.h"
#include "ui/cluster/cluster_controller.h"
#include "ui/cluster/cluster_dialog.h"
#include "ui/cluster/cluster_job.h"
#include "ui/common/run_controller.h"
#include "ui/config/config_document.h"
#include "ui/shell/main_window.h"
#include "ui/wafer/wafer_tab.h"

namespace {

using namespace ws;

ui::ClusterPlan planFor(const QString& dir) {
    ui::ClusterPlan plan;
    plan.hosts = {"localhost"};
    plan.processesPerHost = 2;
    plan.threadsPerProcess = 1;
    plan.configPath = dir + "/my config.yaml";
    plan.dbPath = dir + "/runs.sqlite";
    plan.waferBinary = dir + "/wafer";
    plan.mpirun = "/usr/bin/mpirun";
    QFile(plan.configPath).open(QIODevice::WriteOnly);
    QFile wafer(plan.waferBinary);
    wafer.open(QIODevice::WriteOnly);
    wafer.setPermissions(wafer.permissions() | QFileDevice::ExeOwner);
    return plan;
}

void writeFile(const QString& path, const QByteArray& text, bool executable = false) {
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
    file.write(text);
    file.close();
    if (executable) file.setPermissions(file.permissions() | QFileDevice::ExeOwner);
}

// gpt-nano made tiny, with `systems` emulated systems, saved to `path`.
void writeTinyConfig(const QString& path, int systems) {
    writeFile(path, tinyClusterConfig(systems, 5).toUtf8());
}

QString boxText(QMessageBox* box) {
    return box ? box->text() : QString();
}

}  // namespace

class ClusterTest : public QObject {
    Q_OBJECT
private slots:
    void init() {
        m_oldPath = qgetenv("PATH");
        QVERIFY(m_studio.open());
    }
    void cleanup() {
        m_studio.close();
        qputenv("PATH", m_oldPath);
    }
    void commandLineIsExactlyWhatRuns();
    void dialogShowsAndCopiesTheCommandItWillRun();
    void missingMpirunSaysWhatToInstall();
    void badHostfileIsExplained();
    void moreProcessesThanSystemsGetsTheCliMessage();
    void systemsChangeForTheJobNotTheFile();
    void unsavedConfigIsSavedFirst();
    void unreachableHostEndsInADialogWithMpirunsWords();
    void noRunInTimeShowsWhatMpirunSaidAndCanStop();
    void theStudiosOwnRunFollowsControlRequestsToo();
    void waferTabShowsTheFollowedRunsTokensPerSec();

private:
    // Puts an executable `mpirun` with `script` first on PATH.
    void fakeMpirun(const QByteArray& script) {
        QDir().mkpath(m_studio.filePath("bin"));
        writeFile(m_studio.filePath("bin/mpirun"), "#!/bin/sh\n" + script, true);
        qputenv("PATH", (m_studio.filePath("bin") + ":").toUtf8() + m_oldPath);
    }
    // Opens Run on Cluster on a saved tiny config with 2 systems.
    ui::ClusterDialog* openDialog() {
        const QString config = m_studio.filePath("cluster.yaml");
        writeTinyConfig(config, 2);
        if (!m_studio->openConfig(config)) return nullptr;
        m_studio->setClusterWaferBinary(WAFER_CLI);
        return m_studio->openClusterDialog();
    }

    testing::StudioWindow m_studio;
    QByteArray m_oldPath;
};

void ClusterTest::commandLineIsExactlyWhatRuns() {
    QTemporaryDir dir;
    ui::ClusterPlan plan = planFor(dir.path());
    plan.hosts = {"a", "b"};
    plan.threadsPerProcess = 3;
    plan.runAsRoot = true;
    const QString d = dir.path();
    QCOMPARE(ui::commandLine(plan),
             "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 /usr/bin/mpirun --host "
             "a:2,b:2 -np 4 --bind-to none " +
                 d + "/wafer train '" + d + "/my config.yaml' --threads 3 --db " + d +
                 "/runs.sqlite");
    QCOMPARE(ui::mpirunEnvironment(plan).value("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"), QString("1"));
    plan.runAsRoot = false;
    QVERIFY(!ui::commandLine(plan).contains("OMPI_ALLOW"));
    // Not added for others (the studio's own environment passes through: leave it out here, as
    // whoever runs the tests as root may have exported it).
    qunsetenv("OMPI_ALLOW_RUN_AS_ROOT");
    qunsetenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM");
    QVERIFY(!ui::mpirunEnvironment(plan).contains("OMPI_ALLOW_RUN_AS_ROOT"));
    // Resume on Cluster: the run's checkpoint instead of a config file.
    plan.resumeRunId = 12;
    QVERIFY(ui::commandLine(plan).contains(" train --resume 12 --threads 3 --db "));
    QCOMPARE(ui::parseHostList(" a,b  c ,"), QStringList({"a", "b", "c"}));
}

void ClusterTest::dialogShowsAndCopiesTheCommandItWillRun() {
    QTemporaryDir dir;
    ui::ClusterDialog dialog(planFor(dir.path()), 4);
    dialog.show();
    testing::commitLine(dialog.findChild<QLineEdit*>("hostsEdit"), "localhost, node2");
    dialog.findChild<QSpinBox*>("threadsPerProcess")->setValue(1);
    const QString command = dialog.findChild<QPlainTextEdit*>("commandLine")->toPlainText();
    QVERIFY2(command.contains("--host localhost:2,node2:2 -np 4 --bind-to none"),
             qPrintable(command));
    QVERIFY(command.contains(" --threads 1 --db "));
    QCOMPARE(command, ui::commandLine(dialog.plan()));
    QCOMPARE(dialog.findChild<QLabel*>("processSummary")->text(),
             "4 processes on 2 hosts for 4 systems (runconfig.num_csx)");
    QTest::mouseClick(dialog.findChild<QPushButton*>("copyCommand"), Qt::LeftButton);
    QCOMPARE(QGuiApplication::clipboard()->text(), command);

    const QString hostfile = dir.filePath("hosts");
    writeFile(hostfile, "# the lab\nnodeA slots=2\n\nnodeB slots=2 max_slots=4  # spare\n");
    dialog.findChild<QRadioButton*>("hostfileMode")->setChecked(true);
    testing::commitLine(dialog.findChild<QLineEdit*>("hostfileEdit"), hostfile);
    const QString byFile = dialog.shownCommandLine();
    QVERIFY2(byFile.contains("--hostfile " + hostfile + " --map-by ppr:2:node -np 4"),
             qPrintable(byFile));
    QVERIFY(dialog.problems().isEmpty());
    QVERIFY(!dialog.findChild<QLineEdit*>("hostsEdit")->isEnabled());
}

void ClusterTest::missingMpirunSaysWhatToInstall() {
    QTemporaryDir dir;
    ui::ClusterPlan plan = planFor(dir.path());
    plan.mpirun.clear();  // what findMpirun() gives where Open MPI is not installed
    ui::ClusterDialog dialog(plan, 2);
    QSignalSpy accepted(&dialog, &QDialog::accepted);
    dialog.show();
    QTest::mouseClick(dialog.findChild<QPushButton*>("startButton"), Qt::LeftButton);
    QTRY_VERIFY(dialog.problemBox() && dialog.problemBox()->isVisible());
    const QString text = boxText(dialog.problemBox());
    QVERIFY2(text.contains("openmpi-bin") && text.contains("installer/deps.sh"), qPrintable(text));
    QVERIFY(accepted.isEmpty());
    QVERIFY(dialog.isVisible());  // stays open for the fix
    dialog.problemBox()->close();
    // Found on PATH: Start goes through.
    plan.mpirun = "/usr/bin/true";
    ui::ClusterDialog ready(plan, 2);
    QSignalSpy readyAccepted(&ready, &QDialog::accepted);
    ready.show();
    QTest::mouseClick(ready.findChild<QPushButton*>("startButton"), Qt::LeftButton);
    QCOMPARE(readyAccepted.size(), 1);
}

void ClusterTest::badHostfileIsExplained() {
    QTemporaryDir dir;
    ui::ClusterPlan plan = planFor(dir.path());
    const auto problemFor = [&](const QString& hostfile) {
        plan.hostfile = hostfile;
        ui::ClusterDialog dialog(plan, 2);
        dialog.show();
        QTest::mouseClick(dialog.findChild<QPushButton*>("startButton"), Qt::LeftButton);
        const QString text = boxText(dialog.problemBox());
        if (dialog.problemBox()) dialog.problemBox()->close();
        return text;
    };
    QString text = problemFor(dir.filePath("no-such-hostfile"));
    QVERIFY2(text.contains("cannot be read") && text.contains("no such file"), qPrintable(text));
    writeFile(dir.filePath("empty"), "# nobody yet\n\n");
    text = problemFor(dir.filePath("empty"));
    QVERIFY2(text.contains("names no host"), qPrintable(text));
    writeFile(dir.filePath("garbled"), "node1 slots=2\nnode2 has two slots\n");
    text = problemFor(dir.filePath("garbled"));
    QVERIFY2(text.contains("line 2") && text.contains("node2 has two slots"), qPrintable(text));
    writeFile(dir.filePath("good"), "node1 slots=1\n");
    plan.processesPerHost = 1;
    QVERIFY(problemFor(dir.filePath("good")).isEmpty());
}

void ClusterTest::moreProcessesThanSystemsGetsTheCliMessage() {
    QTemporaryDir dir;
    ui::ClusterPlan plan = planFor(dir.path());
    plan.processesPerHost = 3;
    ui::ClusterDialog dialog(plan, 2);
    QVERIFY(dialog.findChild<QLabel*>("processSummary")->text().contains("too many"));
    QCOMPARE(dialog.problems(),
             QStringList{QString::fromStdString(session::clusterPlacementProblem(3, 2))});
}

void ClusterTest::systemsChangeForTheJobNotTheFile() {
    // 2 processes for a config of 1 system: refused, and fixed in the dialog by raising the
    // job's systems; the config file keeps its 1 until the user asks to save it there.
    const QString path = m_studio.filePath("one system.yaml");
    writeTinyConfig(path, 1);
    QVERIFY(m_studio->openConfig(path));
    ui::ClusterDialog* dialog = m_studio->openClusterDialog();
    QVERIFY(dialog);
    auto* systems = dialog->findChild<QSpinBox*>("systemsSpin");
    QVERIFY(systems && systems->isEnabled());
    QCOMPARE(systems->value(), 1);
    dialog->findChild<QRadioButton*>("hostsMode")->setChecked(true);
    testing::commitLine(dialog->findChild<QLineEdit*>("hostsEdit"), "localhost");
    dialog->findChild<QSpinBox*>("processesPerHost")->setValue(2);
    QVERIFY2(dialog->findChild<QLabel*>("processSummary")->text().contains("raise Systems to 2"),
             qPrintable(dialog->findChild<QLabel*>("processSummary")->text()));
    QVERIFY(dialog->problems().contains(
        QString::fromStdString(session::clusterPlacementProblem(2, 1))));
    QVERIFY(!dialog->shownCommandLine().contains("num_csx"));

    systems->setValue(3);  // batch_size 4 does not divide by 3: the config's own rule says so
    QVERIFY2(dialog->problems().join('\n').contains("runconfig.num_csx (3)"),
             qPrintable(dialog->problems().join('\n')));
    QVERIFY(dialog->findChild<QLabel*>("systemsNote")->text().contains("num_csx (3)"));
    systems->setValue(2);
    const QStringList left = dialog->problems();
    for (const QString& problem : left)
        QVERIFY2(!problem.contains("num_csx") && !problem.contains("processes but"),
                 qPrintable(problem));
    QVERIFY2(dialog->shownCommandLine().contains(" --set runconfig.num_csx=2 --threads "),
             qPrintable(dialog->shownCommandLine()));
    QCOMPARE(dialog->plan().numCsx, 2);
    QVERIFY2(dialog->findChild<QLabel*>("systemsNote")->text().contains("keeps 1"),
             qPrintable(dialog->findChild<QLabel*>("systemsNote")->text()));
    auto* saveToo = dialog->findChild<QCheckBox*>("saveSystemsBox");
    QVERIFY(saveToo && saveToo->isVisibleTo(dialog) && !saveToo->isChecked());
    QVERIFY(!dialog->saveSystemsInFile());
    QVERIFY(dialog->grab().save(testing::artifactPath("cluster-dialog-systems.png")));
    // Nothing was written: neither the file nor the document changed.
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QVERIFY(file.readAll().contains("num_csx: 1"));
    QVERIFY(!m_studio->document()->isModified());
    QCOMPARE(m_studio->document()->config().runconfig.numCsx, 1);
    dialog->reject();
}

void ClusterTest::unsavedConfigIsSavedFirst() {
    QFile preset(WAFER_SOURCE_DIR "/presets/gpt-nano.yaml");
    QVERIFY(preset.open(QIODevice::ReadOnly));
    m_studio->document()->setUntitled(QString::fromUtf8(preset.readAll()), "untitled nano");
    QStringList asked;
    m_studio->setAsker([&](const QString& title, const QString&, QMessageBox::StandardButtons,
                           QMessageBox::StandardButton) {
        asked << title;
        return QMessageBox::Cancel;
    });
    QVERIFY(!m_studio->openClusterDialog());  // cancelled: nothing opens
    QCOMPARE(asked, QStringList{"Save the config first"});
    const QString saved = m_studio.filePath("saved nano.yaml");
    m_studio->setAsker([](const QString&, const QString&, QMessageBox::StandardButtons,
                          QMessageBox::StandardButton) { return QMessageBox::Save; });
    m_studio->setSaveFileChooser([&](const QString&) { return saved; });
    ui::ClusterDialog* dialog = m_studio->openClusterDialog();
    QVERIFY(dialog);
    QVERIFY(QFile::exists(saved));
    QCOMPARE(dialog->plan().configPath, saved);
    QVERIFY(dialog->shownCommandLine().contains(" train '" + saved + "' --threads "));
    dialog->reject();
}

void ClusterTest::unreachableHostEndsInADialogWithMpirunsWords() {
    // What Open MPI 4 prints when ssh cannot reach a host, then its exit status.
    fakeMpirun(
        "echo 'ssh: Could not resolve hostname node9: Name or service not known' >&2\n"
        "echo 'ORTE was unable to reliably start one or more daemons.' >&2\n"
        "exit 1\n");
    ui::ClusterDialog* dialog = openDialog();
    QVERIFY(dialog);
    QSignalSpy ended(m_studio->clusterJob(), &ui::ClusterJob::ended);
    QTest::mouseClick(dialog->findChild<QPushButton*>("startButton"), Qt::LeftButton);
    QVERIFY(ended.wait(10000));
    QMessageBox* box = nullptr;
    QTRY_VERIFY((box = m_studio->findChild<QMessageBox*>("clusterErrorBox")));
    const QString text = box->text();
    QVERIFY2(text.contains("before the job recorded a run") && text.contains("node9") &&
                 text.contains("ssh HOST"),
             qPrintable(text));
    QVERIFY(!box->findChild<QPushButton*>("resumeOnClusterButton"));  // no run to resume
    QVERIFY(!m_studio->clusterJob()->isActive());
    box->close();
    QVERIFY(m_studio.action("runClusterAction")->isEnabled());  // ready to try again
}

void ClusterTest::noRunInTimeShowsWhatMpirunSaidAndCanStop() {
    // An mpirun that waits on a host that never answers.
    fakeMpirun(
        "echo 'ssh: connect to host node9 port 22: Connection timed out' >&2\n"
        "exec sleep 120\n");
    ui::ClusterDialog* dialog = openDialog();
    QVERIFY(dialog);
    ui::ClusterJob::Timeouts timeouts;
    timeouts.runAppearsMs = 500;
    m_studio->clusterJob()->setTimeouts(timeouts);
    QTest::mouseClick(dialog->findChild<QPushButton*>("startButton"), Qt::LeftButton);
    QVERIFY(m_studio->clusterJob()->isActive());
    QVERIFY(m_studio.action("stopAction")->isEnabled());
    QVERIFY(!m_studio.action("runAction")->isEnabled());  // one job at a time
    QMessageBox* box = nullptr;
    QTRY_VERIFY_WITH_TIMEOUT((box = m_studio->findChild<QMessageBox*>("clusterWaitBox")), 10000);
    QVERIFY2(box->text().contains("node9 port 22: Connection timed out"), qPrintable(box->text()));
    QSignalSpy ended(m_studio->clusterJob(), &ui::ClusterJob::ended);
    QSignalSpy reported(m_studio->cluster(), &ui::ClusterController::endReported);
    QTest::mouseClick(box->findChild<QPushButton*>("stopJobButton"), Qt::LeftButton);
    QVERIFY(ended.size() == 1 || ended.wait(10000));  // SIGINT: no run to ask yet
    QVERIFY(!m_studio->clusterJob()->isActive());
    // The end has been judged (no retries pending): stopped on purpose, not failed.
    QVERIFY(reported.size() == 1 || reported.wait(10000));
    QCOMPARE(reported.first().at(0).toBool(), false);
    QVERIFY(!m_studio->findChild<QMessageBox*>("clusterErrorBox"));
}

// Another process (a second studio, `wafer runs control`) can pause and stop the run this window
// trains, as it can a `wafer train`.
void ClusterTest::theStudiosOwnRunFollowsControlRequestsToo() {
    const QString config = m_studio.filePath("own.yaml");
    writeTinyConfig(config, 1);
    QVERIFY(m_studio->openConfig(config));
    QSignalSpy finished(m_studio->controller(), &ui::RunController::finished);
    m_studio.action("runAction")->trigger();
    store::RunStore* store = m_studio->runStore();
    std::filesystem::path folder;
    int64_t runId = -1;
    QTRY_VERIFY_WITH_TIMEOUT(
        [&] {
            auto runs = store->listRuns();
            if (!runs.ok() || runs->empty() || runs->front().modelDir.empty()) return false;
            folder = runs->front().modelDir;
            runId = runs->front().id;
            return m_studio->controller()->state() == session::RunState::Running;
        }(),
        60000);
    QVERIFY(session::sendRunControl(folder, runId, session::ControlCommand::Pause).ok());
    QTRY_COMPARE_WITH_TIMEOUT(m_studio->controller()->state(), session::RunState::Paused, 10000);
    QTRY_COMPARE_WITH_TIMEOUT(store->getRun(runId)->status, std::string("paused"), 10000);
    QVERIFY(session::sendRunControl(folder, runId, session::ControlCommand::Stop).ok());
    QVERIFY(finished.size() == 1 || finished.wait(30000));
    QCOMPARE(m_studio->controller()->state(), session::RunState::Stopped);
    QCOMPARE(store->getRun(runId)->status, std::string("stopped"));
}

void ClusterTest::waferTabShowsTheFollowedRunsTokensPerSec() {
    // An mpirun stand-in that runs its one process here: the wafer command after its options.
    fakeMpirun("while [ $# -gt 0 ] && [ \"$1\" != '" WAFER_CLI
               "' ]; do shift; done\n"
               "exec \"$@\"\n");
    const QString config = m_studio.filePath("followed.yaml");
    writeTinyConfig(config, 1);
    QVERIFY(m_studio->openConfig(config));
    m_studio->setClusterWaferBinary(WAFER_CLI);
    ui::ClusterDialog* dialog = m_studio->openClusterDialog();
    QVERIFY(dialog);
    dialog->findChild<QRadioButton*>("hostsMode")->setChecked(true);
    testing::commitLine(dialog->findChild<QLineEdit*>("hostsEdit"), "localhost");
    dialog->findChild<QSpinBox*>("processesPerHost")->setValue(1);
    dialog->findChild<QSpinBox*>("threadsPerProcess")->setValue(1);
    QTest::mouseClick(dialog->findChild<QPushButton*>("startButton"), Qt::LeftButton);
    QVERIFY(m_studio->clusterJob()->isActive());
    auto* wafer = m_studio.find<ui::WaferTab>("waferTab");
    // The run logs tokens/s every 5 steps; the follower brings it to the Training tab and here.
    QTRY_VERIFY_WITH_TIMEOUT(m_studio->clusterJob()->runId() >= 0, 60000);
    m_studio->showTab("wafer");  // where the user looks for it
    QTRY_VERIFY2_WITH_TIMEOUT(wafer->realSummaryText().contains("tokens/s ("),
                              qPrintable(wafer->realSummaryText()), 60000);
    QVERIFY2(!wafer->realSummaryText().contains("not measured"),
             qPrintable(wafer->realSummaryText()));
    wafer->redrawNow();
    QVERIFY(m_studio->saveScreenshot(testing::artifactPath("cluster-wafer-tokens.png")));
    QSignalSpy ended(m_studio->clusterJob(), &ui::ClusterJob::ended);
    m_studio.action("stopAction")->trigger();
    QVERIFY(ended.size() == 1 || ended.wait(30000));
}

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<ClusterTest>(argc, argv);
}

#include "cluster_test.moc"
