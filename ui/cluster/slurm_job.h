// SPDX-License-Identifier: GPL-3.0-or-later
// SlurmJob: a cluster job submitted to Slurm as a batch job. It writes the batch script
// (slurm_script.h) where the plan says, submits it with `sbatch --parsable`, and follows the job
// through Slurm's own tools, one question at a time: squeue while the job is queued or runs,
// then scontrol (which remembers an ended job for MinJobAge) and sacct (where accounting is on)
// for how it ended. Each change of state or reason is signalled with Slurm's reason code and
// what it means. The job's output file (slurm-JOBID.out beside the script) is read as it grows,
// line by line. Once the run appears the script is copied beside it, in its model folder.
// Stop asks the run to stop after the step in flight (with a checkpoint) and, when it has not
// ended after a grace period, cancels the job with scancel (SIGTERM, which wafer takes as a
// stop too), then with SIGKILL; a job that has not started a run is cancelled at once.
// The job does not need the studio: detach() leaves it to Slurm. GUI thread only.
#pragma once

#include <QProcess>
#include <functional>

#include "ui/cluster/cluster_job.h"
#include "ui/cluster/slurm_script.h"

namespace ws::ui {

class SlurmJob : public ClusterJob {
    Q_OBJECT
public:
    explicit SlurmJob(QObject* parent = nullptr);
    ~SlurmJob() override;  // stops following; the job itself runs on under Slurm

    void stop() override;
    void stopAndWait(int ms) override;
    bool isActive() const override { return m_active; }
    QString endSummary(int exitCode) const override;

    QString jobId() const { return m_jobId; }  // empty until sbatch has answered
    const SlurmJobState& queueState() const { return m_state; }
    QString outputPath() const;  // slurm-JOBID.out beside the script
    // Stops following the job and leaves it to Slurm (the studio closing); no ended().
    void detach();

signals:
    void submitted(const QString& jobId);
    // Slurm's state changed: its code (PENDING, RUNNING, FAILED, ...) and the studio's words
    // for it with the reason (describeSlurmState).
    void queueStateChanged(const QString& state, const QString& described);
    // The batch script was copied beside the run, to `path`.
    void scriptSaved(const QString& path);

protected:
    bool launch(QString* error) override;
    void onRunFound() override;

private:
    void onSubmitted(int exitCode, QProcess::ExitStatus status);
    void poll();
    void askAfterQueue();
    // Runs Slurm's `tool` with `args`, then `done(ok, stdout)`; one at a time.
    void ask(const QString& tool, const QStringList& args,
             std::function<void(bool ok, const QString& out)> done);
    void applyState(const SlurmJobState& state);
    void finish(const SlurmJobState& state);
    void readJobOutput();
    void cancel(const QString& signal = {});

    QProcess* m_submit = nullptr;
    QProcess* m_question = nullptr;  // the squeue / scontrol / sacct asked now
    QTimer* m_pollTimer;
    QTimer* m_graceTimer;
    QString m_jobId;
    SlurmJobState m_state;
    qint64 m_outputRead = 0;  // bytes of the output file already read
    int m_unknownPolls = 0;   // polls in a row where no tool knew the job
    int m_cancels = 0;        // scancel sent so far (1: SIGTERM, 2: SIGKILL)
    bool m_active = false;
};

}  // namespace ws::ui
