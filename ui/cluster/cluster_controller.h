// SPDX-License-Identifier: GPL-3.0-or-later
// ClusterController: Run on Cluster… from the studio. It opens the cluster dialog (after the
// config is saved to a file: every process reads it), starts the job (mpirun as a child:
// MpirunJob; or a Slurm batch job: SlurmJob, whose queue state and reason go to the Log and the
// status line while it waits), and
// follows the run the job records through the store like any run another process writes: it is
// selected in Runs, the Wafer tab names each system's rank and host, and the toolbar's Pause /
// Continue / Step Layer / Checkpoint Now / Stop reach it as control requests
// (session/run_control.h); so do they a `wafer train` selected in Runs (externalRun()). Failures
// end in a dialog that says what happened and what to fix, never in a hang: "clusterWaitBox" (no
// run yet), "clusterErrorBox" (the job failed; its "resumeOnClusterButton"). The shell gives it
// the studio's pieces it drives (Studio) and puts its log lines in the Log. GUI thread only.
#pragma once

#include <QObject>
#include <QString>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "engine/session/run_control.h"
#include "ui/cluster/cluster_plan.h"
#include "ui/common/asker.h"

class QWidget;

namespace ws::store {
class RunStore;
}

namespace ws::ui {

class ClusterDialog;
class ClusterJob;
class MpirunJob;
class SlurmJob;
class ConfigDocument;
class ConfigTab;
class StatusPanel;
class StoreFollower;
class WaferTab;

class ClusterController : public QObject {
    Q_OBJECT
public:
    // What Run on Cluster needs of the studio around it.
    struct Studio {
        QWidget* window = nullptr;  // its dialogs' parent
        ConfigDocument* document = nullptr;
        ConfigTab* configTab = nullptr;
        WaferTab* waferTab = nullptr;
        StatusPanel* statusPanel = nullptr;
        StoreFollower* follower = nullptr;
        std::function<store::RunStore*()> store;  // null while none is open
        std::function<std::filesystem::path()> storePath;
        std::function<bool()> windowBusy;  // a run or sweep trains in this window
        std::function<bool()> save;        // the document to its file (Save As when untitled)
        std::function<bool(const QString&)> isShippedPreset;
        Asker ask;
        std::function<void(const QString&)> showTab;  // "config", "training", ...
        // The Runs dock.
        std::function<std::vector<int64_t>()> selectedRuns;
        std::function<void(const std::vector<int64_t>&)> selectRuns;
        std::function<void()> refreshRuns;
        std::function<bool(int64_t)> canResume;  // the run has a checkpoint
    };

    ClusterController(Studio studio, QObject* parent);

    // Opens the cluster dialog (window-modal, returns at once; nullptr when it cannot open: a
    // run, sweep or job in progress, a config with problems, the save declined). Its Start runs
    // the job. With `resumeRunId`: the same dialog continues that run from its newest
    // checkpoint ("Resume on Cluster…").
    ClusterDialog* openDialog(int64_t resumeRunId = -1);
    // The job started last (the Open MPI one before any started).
    ClusterJob* job() const { return m_job; }
    MpirunJob* mpirunJob() const { return m_mpirun; }
    SlurmJob* slurmJob() const { return m_slurm; }
    bool isActive() const;
    // The `wafer` program cluster jobs run (default: the one beside this studio; tests).
    void setWaferBinary(const QString& path) { m_waferBinary = path; }
    // Stops the job after the step in flight (with a checkpoint) and says so in the Log.
    void stopJob();
    // The run the toolbar's commands act on in another process: the job's run, else the one
    // run selected in Runs when another process trains it; -1 when none, or when this window
    // trains a run itself.
    int64_t externalRun() const;
    // Sends `command` to externalRun() as a control request (the Log says what was asked).
    void controlExternalRun(session::ControlCommand command);
    // The shown status of stored run `runId` ("running", "paused", "interrupted", ...).
    std::string shownStatusOf(int64_t runId) const;

signals:
    void logLine(int level, const QString& line);  // a session::LogLine::Level and the text
    // The job or a followed run changed: the shell's actions follow.
    void stateChanged();
    // mpirun ended and its end has been reported, once rank 0 let go of the run (up to 5 s
    // after): `failed` when the "clusterErrorBox" shows, else the Log says how it ended.
    void endReported(bool failed);

private:
    void wireJob(ClusterJob* job);
    void wireSlurm();
    bool startJob(const ClusterPlan& plan);
    ClusterPlan defaultPlan(int64_t resumeRunId, int systems) const;
    void onRunAppeared(int64_t runId);
    void onNoRunYet(const QString& said);
    void onFollowedRunsChanged();
    // After mpirun ended, once rank 0 has let go of the run's folder (`attempt` tries so far).
    void reportEnd(int exitCode, bool crashed, const QString& said, int attempt);
    void showFailure(int64_t runId, int exitCode, const std::string& status, const QString& said);
    void showPlacement();
    void log(int level, const QString& line) { emit logLine(level, line); }

    Studio m_studio;
    MpirunJob* m_mpirun;
    SlurmJob* m_slurm;
    ClusterJob* m_job;
    QString m_waferBinary;
    bool m_placementShown = false;  // the job's placement is on the Wafer tab
};

}  // namespace ws::ui
