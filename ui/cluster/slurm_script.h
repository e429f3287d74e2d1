// SPDX-License-Identifier: GPL-3.0-or-later
// SlurmScript: the Slurm side of Run on Cluster, as data. The batch script a job submits (its
// #SBATCH options from SlurmOptions, then `srun --mpi=pmix --kill-on-bad-exit=1 wafer train …`),
// the checks made before sbatch is asked (sbatch missing, a time limit Slurm would not take, …),
// and what Slurm's own tools say about a job (squeue, scontrol, sacct) read into SlurmJobState,
// with the reason codes put into words a person can act on. No widgets and no processes: the
// dialog (cluster_dialog.h) and the job (slurm_job.h) use these, tests check them directly.
// Free functions on values; thread-compatible.
#pragma once

#include <QString>
#include <QStringList>
#include <optional>

#include "ui/cluster/cluster_plan.h"

namespace ws::ui {

// The script sbatch is given: a bash script whose #SBATCH lines carry the plan's request and
// whose one command starts the job's tasks, each a rank of `wafer train`.
QString slurmBatchScript(const ClusterPlan& plan);
// Where the job's output goes: slurm-JOBID.out beside the script ("%j" for the job id when
// `jobId` is empty, as the script says it).
QString slurmOutputPath(const ClusterPlan& plan, const QString& jobId = {});
// Slurm's program `name` (squeue, scontrol, scancel, sacct, sinfo) beside the plan's sbatch,
// else on PATH; empty when neither has it.
QString slurmTool(const ClusterPlan& plan, const QString& name);
// sbatch found on PATH, or empty.
QString findSbatch();

// A --time value in seconds; nullopt when Slurm would not take it. 0 for UNLIMITED/INFINITE.
std::optional<long long> slurmTimeLimitSeconds(const QString& text);
// The Slurm options' problems, each a sentence saying what to change (the parts of a plan both
// launchers share are planProblems').
QStringList slurmPlanProblems(const ClusterPlan& plan);
QString sbatchMissingMessage();
// `sbatch --parsable`'s answer ("12" or "12;cluster") -> "12"; empty when it is no job id.
QString sbatchJobId(const QString& output);

// A job as Slurm reports it.
struct SlurmJobState {
    QString state;     // PENDING, RUNNING, COMPLETING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
    QString reason;    // Slurm's reason code (Resources, PartitionTimeLimit, NonZeroExitCode, ...);
                       // empty for "None"
    QString nodes;     // the nodes it runs on, once placed (n[1-2])
    int exitCode = 0;  // of the batch script (ExitCode=X:S's X)
    int signal = 0;    // S: the signal that ended it, 0 for none
    bool known() const { return !state.isEmpty(); }
};
// The job has ended (Slurm will not run it any more).
bool isFinalSlurmState(const QString& state);
// It ended as no one asked: FAILED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL, DEADLINE,
// PREEMPTED (COMPLETED and CANCELLED are not).
bool isSlurmFailure(const QString& state);
// `squeue -h -j ID -o %T|%r|%N` (unknown state when the job is not in the queue).
SlurmJobState parseSqueue(const QString& output);
// `scontrol show job ID` (one line with -o, or several).
SlurmJobState parseScontrolJob(const QString& output);
// `sacct -j ID -X -n -P -o State,ExitCode,Reason`.
SlurmJobState parseSacct(const QString& output);
// What a reason code or final state means and what to do about it, in a sentence (empty for a
// code this does not know; Slurm's own words are shown beside it either way).
QString explainSlurmReason(const QString& reasonOrState);
// "pending (Resources: waiting for …)", "running on n[1-2]", "failed (NonZeroExitCode, exit
// code 1)": the state as the studio shows it.
QString describeSlurmState(const SlurmJobState& state);

// A Slurm partition as sinfo lists it.
struct SlurmPartition {
    QString name;
    bool isDefault = false;
    QString avail;       // "up", "down", ...
    int nodes = 0;       // all its nodes, whatever their state
    QStringList states;  // "2 idle", "1 drain", ...
    QString timeLimit;   // its MaxTime as sinfo prints it ("10:00", "1-00:00:00", "infinite")
};
// `sinfo -h -o %P|%a|%D|%l|%t` (a line per partition and node state), the default first.
QList<SlurmPartition> parsePartitions(const QString& sinfoOutput);
// "test (default): up, 2 node(s) (2 idle), time limit 10:00".
QString describePartition(const SlurmPartition& partition);
// What Slurm would do with `options` on these partitions that the person should know before
// submitting: a partition it does not have (sbatch refuses it), a time limit or node count above
// the partition's (the job waits for ever). Empty when none, or when `partitions` is empty.
QStringList partitionWarnings(const SlurmOptions& options, const QList<SlurmPartition>& partitions);

}  // namespace ws::ui
