// SPDX-License-Identifier: GPL-3.0-or-later
// ClusterJob: one job the studio started with Run on Cluster…, whichever way its processes start
// (MpirunJob: mpirun as the studio's child; SlurmJob: a batch job through sbatch). What both
// share lives here: finding the run the job records in the studio's run store (a new run, or
// the resumed one once its folder is held), saying when none has appeared after a while instead
// of hanging, asking that run to stop through its model folder (session/run_control.h: after the
// step in flight, with a final checkpoint), and the job's output split into lines (the Log shows
// them; the last lines explain a failure). The run itself is followed like any run another
// process writes (store_follower.h); a job only owns the way its processes start and end.
// GUI thread only.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <cstdint>

#include "ui/cluster/cluster_plan.h"

class QTimer;

namespace ws::store {
class RunStore;
}

namespace ws::ui {

class ClusterJob : public QObject {
    Q_OBJECT
public:
    struct Timeouts {
        int runAppearsMs = 60000;      // running, but no run row by then: noRunYet()
        int stopGraceMs = 120000;      // after the stop request: the launcher's own stop
        int interruptGraceMs = 20000;  // after that: kill
        int pollMs = 500;              // looking for the run in the store
        int queueMs = 1000;            // asking Slurm about the job
    };

    explicit ClusterJob(QObject* parent = nullptr);
    ~ClusterJob() override;

    void setTimeouts(const Timeouts& timeouts) { m_timeouts = timeouts; }
    // Starts `plan` (checked beforehand: planProblems); the run is looked for in `store`. False
    // with `error` set when a job is already running or it cannot start.
    bool start(const ClusterPlan& plan, store::RunStore* store, QString* error);
    // Stops the job: the stop request to its run, else the launcher's own stop; then the
    // fallbacks of the launcher.
    virtual void stop() = 0;
    // stop(), then waits (events keep flowing) until the job has ended or `ms` passed; ends it
    // harder then. For the studio's window closing.
    virtual void stopAndWait(int ms) = 0;
    virtual bool isActive() const = 0;
    // How the failure dialog names what ended: "mpirun ended (exit code 1)", "Slurm job 12
    // ended failed (NonZeroExitCode: …)".
    virtual QString endSummary(int exitCode) const = 0;

    bool isStopping() const { return m_stopping; }
    int64_t runId() const { return m_runId; }  // -1 until the run appears
    const ClusterPlan& plan() const { return m_plan; }
    // The last `lines` lines of the job's error output (its progress lines left out), for the
    // dialogs that explain a failure.
    QString errorTail(int lines = 20) const;

signals:
    void runAppeared(int64_t runId);
    // The job runs but has recorded no run after Timeouts::runAppearsMs; `said` is what it
    // printed so far.
    void noRunYet(const QString& said);
    void outputLine(const QString& line, bool fromStderr);
    // The job has ended; `said` is the tail of its error output.
    void ended(int exitCode, bool crashed, const QString& said);

protected:
    // Starts the processes of m_plan; false with `error` set when they cannot start.
    virtual bool launch(QString* error) = 0;
    // The run has appeared; a stop asked for before it did is asked of the run now.
    virtual void onRunFound() {}

    // Output bytes of one channel (0 stdout, 1 stderr), split into lines: outputLine each.
    void consumeOutput(const QByteArray& bytes, int channel);
    // Starts looking for the run; noRunYet() after Timeouts::runAppearsMs unless found.
    void startLooking();
    void stopLooking();
    // One last look, for a run that appeared just before the job ended.
    void lookOnceMore();
    // Asks the run to stop after the step in flight; false when there is no run to ask.
    bool askRunToStop();
    void setStopping() { m_stopping = true; }

    Timeouts m_timeouts;
    store::RunStore* m_store = nullptr;

private:
    void lookForRun();

    ClusterPlan m_plan;
    QTimer* m_lookTimer;
    QTimer* m_appearTimer;
    int64_t m_newerThan = 0;  // a new run has an id above this
    int64_t m_runId = -1;
    bool m_stopping = false;
    QStringList m_errorLines;  // stderr, the last few hundred lines
    QByteArray m_partial[2];   // an unfinished line per channel
};

}  // namespace ws::ui
