// SPDX-License-Identifier: GPL-3.0-or-later
// Run on Cluster → Open MPI across separate hosts (run by netns_gui_test.sh: the hosts nshost1
// and nshost2 are network namespaces of this machine, reached over TCP only; the studio sits in
// a head namespace beside them). From the dialog the studio starts one rank on each host with
// the real `wafer`; it follows the run through the store (selected in Runs, the Wafer tab naming
// rank 0 on nshost1 and rank 1 on nshost2), Pause and Continue reach it across the hosts, and
// Stop ends it cleanly (stopped, with a final checkpoint, no error dialog).
#include <QFile>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QRadioButton>
#include <QSignalSpy>
#include <QSpinBox>

#include "engine/modelio/checkpoints.h"
#include "engine/session/folder_lock.h"
#include "engine/store/run_store.h"
#include "support/gui_test.h"
#include "support/studio_window.h"
#include "support/tiny_cluster_config.h"
#include "ui/cluster/cluster_controller.h"
#include "ui/cluster/cluster_dialog.h"
#include "ui/cluster/cluster_job.h"
#include "ui/shell/main_window.h"
#include "ui/shell/runs_dock.h"
#include "ui/wafer/cluster_diagram.h"

namespace {
using namespace ws;
}  // namespace

class ClusterNetnsTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        if (qEnvironmentVariableIsEmpty("WAFER_TEST_NETNS_HOSTS"))
            QSKIP("no namespace hosts: run through tests/ui/cluster/netns_gui_test.sh");
    }
    void init() { QVERIFY(m_studio.open()); }
    void cleanup() { m_studio.close(); }
    void jobOnTwoHostsIsFollowedPausedAndStopped();

private:
    std::string status(int64_t run) {
        auto info = m_studio->runStore()->getRun(run);
        return info.ok() ? session::shownRunStatus(info->status, info->modelDir) : "";
    }

    testing::StudioWindow m_studio;
};

void ClusterNetnsTest::jobOnTwoHostsIsFollowedPausedAndStopped() {
    const QString config = m_studio.filePath("cluster.yaml");
    QFile out(config);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(tinyClusterConfig(2, 20).toUtf8());
    out.close();
    QVERIFY(m_studio->openConfig(config));
    m_studio->setClusterWaferBinary(WAFER_CLI);
    ui::ClusterDialog* dialog = m_studio->openClusterDialog();
    QVERIFY(dialog);
    dialog->findChild<QRadioButton*>("hostsMode")->setChecked(true);
    dialog->findChild<QLineEdit*>("hostsEdit")
        ->setText(qEnvironmentVariable("WAFER_TEST_NETNS_HOSTS"));
    dialog->findChild<QSpinBox*>("processesPerHost")->setValue(1);
    dialog->findChild<QSpinBox*>("threadsPerProcess")->setValue(1);
    QVERIFY2(dialog->problems().isEmpty(), qPrintable(dialog->problems().join("\n")));
    QVERIFY(dialog->shownCommandLine().contains("--host nshost1:1,nshost2:1 -np 2"));
    ui::ClusterJob* job = m_studio->clusterJob();
    QSignalSpy appeared(job, &ui::ClusterJob::runAppeared);
    QTest::mouseClick(dialog->findChild<QPushButton*>("startButton"), Qt::LeftButton);
    QVERIFY(job->isActive());
    QVERIFY2(appeared.size() == 1 || appeared.wait(120000), qPrintable(job->errorTail()));
    const int64_t run = job->runId();
    QCOMPARE(m_studio->findChild<ui::RunsDock*>("RunsDock")->selectedRunIds(),
             std::vector<int64_t>{run});
    // Each system on its own host, as the ranks recorded their host names.
    auto* diagram = m_studio->findChild<ui::ClusterDiagram*>();
    QTRY_VERIFY_WITH_TIMEOUT(diagram->placement().size() == 2, 20000);
    QVERIFY2(diagram->placement()[0] == "rank 0 on nshost1" &&
                 diagram->placement()[1] == "rank 1 on nshost2",
             qPrintable(diagram->placement()[0] + " | " + diagram->placement()[1]));
    m_studio->showTab("wafer");
    QVERIFY(m_studio->saveScreenshot(testing::artifactPath("cluster-netns-wafer.png")));

    QTRY_VERIFY_WITH_TIMEOUT(m_studio.action("pauseAction")->isEnabled(), 60000);
    m_studio.action("pauseAction")->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(status(run) == "paused", 30000);
    QTRY_VERIFY_WITH_TIMEOUT(m_studio.action("continueAction")->isEnabled(), 10000);
    m_studio.action("continueAction")->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(status(run) == "running", 30000);

    QSignalSpy ended(job, &ui::ClusterJob::ended);
    QSignalSpy reported(m_studio->cluster(), &ui::ClusterController::endReported);
    m_studio.action("stopAction")->trigger();
    QVERIFY2(ended.size() == 1 || ended.wait(60000), qPrintable(job->errorTail()));
    QVERIFY(reported.size() == 1 || reported.wait(10000));
    QCOMPARE(reported.first().at(0).toBool(), false);  // stopped on purpose, not failed
    QCOMPARE(status(run), std::string("stopped"));
    auto info = m_studio->runStore()->getRun(run);
    QVERIFY(info.ok() && !modelio::listCheckpoints(info->modelDir).empty());
    QVERIFY(!m_studio->findChild<QMessageBox*>("clusterErrorBox"));
}

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<ClusterNetnsTest>(argc, argv);
}

#include "cluster_netns_test.moc"
