// ClusterJob: one `mpirun … wafer train` the studio started (Run on Cluster…), as a QProcess
// child. It keeps what mpirun and the ranks print (the Log shows it line by line; the last lines
// explain a failure), finds the run the job records in the studio's run store (a new run, or the
// resumed one once its folder is held), and says when none has appeared after a while (an
// unreachable host makes ssh wait) instead of hanging. The run itself is followed like any run
// another process writes (store_follower.h); this class only owns the process.
// Stop asks the run to stop through its model folder (session/run_control.h: after the step in
// flight, with a final checkpoint), because Open MPI's own stop is rough: SIGTERM to mpirun
// becomes SIGKILL for the ranks after a one-second grace. Only when the job has not ended after a
// grace period does it send SIGINT to mpirun, and after another, kill it. GUI thread only.
#pragma once

#include <QObject>
#include <QProcess>
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
        int runAppearsMs = 60000;      // no run row by then: noRunYet()
        int stopGraceMs = 120000;      // after the stop request: SIGINT to mpirun
        int interruptGraceMs = 20000;  // after SIGINT: kill
        int pollMs = 500;              // looking for the run in the store
    };

    explicit ClusterJob(QObject* parent = nullptr);
    ~ClusterJob() override;  // a job still running is killed (MainWindow stops it first)

    void setTimeouts(const Timeouts& timeouts) { m_timeouts = timeouts; }
    // Starts `plan` (checked beforehand: planProblems); the run is looked for in `store`. False
    // with `error` set when a job is already running or the process cannot start.
    bool start(const ClusterPlan& plan, store::RunStore* store, QString* error);
    // Stops the job: the stop request to its run, or SIGINT to mpirun while no run has started;
    // then the fallbacks above.
    void stop();
    // stop(), then waits (events keep flowing) until mpirun has ended or `ms` passed; kills it
    // then. For the studio's window closing.
    void stopAndWait(int ms);

    bool isActive() const { return m_process.state() != QProcess::NotRunning; }
    bool isStopping() const { return m_stopping; }
    int64_t runId() const { return m_runId; }  // -1 until the run appears
    const ClusterPlan& plan() const { return m_plan; }
    // The last `lines` lines mpirun and the ranks wrote to stderr (stdout's progress lines left
    // out), for the dialogs that explain a failure.
    QString errorTail(int lines = 20) const;
    qint64 processId() const { return m_process.processId(); }

signals:
    void runAppeared(int64_t runId);
    // The job runs but has recorded no run after Timeouts::runAppearsMs; `said` is what mpirun
    // printed so far.
    void noRunYet(const QString& said);
    void outputLine(const QString& line, bool fromStderr);
    // mpirun has ended; `said` is the tail of its stderr.
    void ended(int exitCode, bool crashed, const QString& said);

private:
    void readOutput(QProcess::ProcessChannel channel);
    void lookForRun();
    void onFinished(int exitCode, QProcess::ExitStatus status);
    void interrupt();

    QProcess m_process;
    ClusterPlan m_plan;
    store::RunStore* m_store = nullptr;
    Timeouts m_timeouts;
    QTimer* m_lookTimer;
    QTimer* m_appearTimer;
    QTimer* m_graceTimer;
    int64_t m_newerThan = 0;  // a new run has an id above this
    int64_t m_runId = -1;
    bool m_stopping = false;
    bool m_interrupted = false;
    QStringList m_errorLines;  // stderr, the last few hundred lines
    QByteArray m_partial[2];   // an unfinished line per channel
};

}  // namespace ws::ui
