// SPDX-License-Identifier: GPL-3.0-or-later
// MpirunJob: a cluster job whose processes `mpirun … wafer train` starts as the studio's child
// (QProcess). It keeps what mpirun and the ranks print (cluster_job.h).
// Stop asks the run to stop through its model folder, because Open MPI's own stop is rough:
// SIGTERM to mpirun becomes SIGKILL for the ranks after a one-second grace. Only when the job has
// not ended after a grace period does it send SIGINT to mpirun, and after another, kill it. GUI
// thread only.
#pragma once

#include <QProcess>

#include "ui/cluster/cluster_job.h"

namespace ws::ui {

class MpirunJob : public ClusterJob {
    Q_OBJECT
public:
    explicit MpirunJob(QObject* parent = nullptr);
    ~MpirunJob() override;  // a job still running is killed (MainWindow stops it first)

    void stop() override;
    void stopAndWait(int ms) override;
    bool isActive() const override { return m_process.state() != QProcess::NotRunning; }
    QString endSummary(int exitCode) const override;
    qint64 processId() const { return m_process.processId(); }

protected:
    bool launch(QString* error) override;
    void onRunFound() override;

private:
    void readOutput(QProcess::ProcessChannel channel);
    void onFinished(int exitCode, QProcess::ExitStatus status);
    void interrupt();

    QProcess m_process;
    QTimer* m_graceTimer;
    bool m_interrupted = false;
};

}  // namespace ws::ui
