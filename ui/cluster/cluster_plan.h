// SPDX-License-Identifier: GPL-3.0-or-later
// ClusterPlan: what "Run on cluster…" starts, as data: with Open MPI the hosts (or a hostfile),
// processes per host and threads per process; with Slurm the batch job's options (SlurmOptions,
// its script in slurm_script.h); either way the saved config (or the run to resume) and the
// studio's run store. With Open MPI, the exact `mpirun` command line it makes of them:
//   mpirun --host a:2,b:2 -np 4 --bind-to none <wafer> train <config> [--set
//       runconfig.num_csx=N] --threads T --db <store>
// (as root, with Open MPI's two OMPI_ALLOW_RUN_AS_ROOT variables). Also the checks made before
// anything starts, each a sentence that says what to fix: mpirun missing, no hosts, a hostfile
// that cannot be read or names no host, more processes than the config's systems (the CLI's own
// message). No widgets: the dialog (cluster_dialog.h) and the job (cluster_job.h) use it, tests
// check it directly. Plain value type; thread-compatible.
#pragma once

#include <QProcessEnvironment>
#include <QString>
#include <QStringList>
#include <cstdint>

namespace ws::ui {

// How the job's processes start.
enum class Launcher {
    Mpirun,  // mpirun as the studio's child, on the named hosts
    Slurm,   // a batch job submitted with sbatch; its tasks start with `srun --mpi=pmix`
};

// A Slurm batch job's request (sbatch's options of the same names).
struct SlurmOptions {
    QString partition;  // empty: the cluster's default partition
    int nodes = 1;
    int tasksPerNode = 1;  // processes (MPI ranks) on each node
    int cpusPerTask = 1;   // each task's CPUs, and its `--threads`
    // --time as Slurm writes it: minutes, MM:SS, H:MM:SS, D-H, D-H:MM or D-H:MM:SS.
    QString timeLimit = QStringLiteral("1:00:00");
    QString jobName;     // --job-name (empty: "wafer")
    QString scriptPath;  // where the script is written before sbatch reads it; its output
                         // (slurm-JOBID.out) goes beside it
    QString sbatch;      // sbatch found (empty: not installed); squeue, scontrol, scancel and
                         // sacct are looked for beside it
};

struct ClusterPlan {
    Launcher launcher = Launcher::Mpirun;
    SlurmOptions slurm;  // with Launcher::Slurm
    QStringList hosts;   // host names (or "host:slots"), used when hostfile is empty
    QString hostfile;    // Open MPI hostfile ("host [slots=N]" per line, # comments)
    int processesPerHost = 1;
    int threadsPerProcess = 1;
    QString configPath;  // the saved config (ignored when resumeRunId >= 0)
    // The job's runconfig.num_csx when it differs from the saved config's (0: the config's):
    // passed as `--set runconfig.num_csx=N`, so the run records it and the file stays as saved.
    int numCsx = 0;
    int64_t resumeRunId = -1;  // "Resume on cluster": `wafer train --resume ID`
    QString dbPath;            // the studio's run store: rank 0 records the run there
    QString waferBinary;       // the `wafer` CLI beside this studio
    QString mpirun;            // the mpirun found (empty: not installed)
    bool runAsRoot = false;    // Open MPI refuses root unless told it is on purpose
};

// The `wafer` CLI beside the running studio (its own folder, as installed and as built).
QString defaultWaferBinary();
// mpirun on PATH, or empty.
QString findMpirun();
// Whether this process runs as root.
bool runningAsRoot();

// The hosts named in an Open MPI hostfile (first word of each line; comments and blank lines
// skipped). Sets `error` (and returns nothing) when the file cannot be read, names no host, or
// has a line that is not "host [key=value ...]".
QStringList readHostfile(const QString& path, QString* error);
// "a, b c" -> {"a", "b", "c"}: commas or spaces separate hosts.
QStringList parseHostList(const QString& text);

// How many hosts the plan runs on (the hostfile's when given; 0 when it cannot be read; Slurm's
// nodes).
int hostCount(const ClusterPlan& plan);
int processCount(const ClusterPlan& plan);  // hosts x processes (tasks) per host
// Each process's CPU threads (--threads): threadsPerProcess, or Slurm's CPUs per task.
int threadsOf(const ClusterPlan& plan);

// A word as a POSIX shell takes it: as it is when plain, else in single quotes.
QString shellQuote(const QString& word);
// What each process runs: `<wafer> train <config> [--set runconfig.num_csx=N] --threads T --db
// <store>` (or `train --resume ID`), the program first.
QStringList waferTrainArguments(const ClusterPlan& plan);

// mpirun's arguments (program not included) and the variables added to its environment.
QStringList mpirunArguments(const ClusterPlan& plan);
QProcessEnvironment mpirunEnvironment(const ClusterPlan& plan);  // the studio's, plus root's
// The whole command line as a shell would take it (copyable): environment, mpirun, arguments,
// each quoted where needed.
QString commandLine(const ClusterPlan& plan);

// What must be fixed before the plan can start (with Slurm: slurmPlanProblems too); empty when
// it can. `systems` is the config's runconfig.num_csx (the run's, when resuming).
QStringList planProblems(const ClusterPlan& plan, int systems);

// The text for a problem where mpirun is missing.
QString mpirunMissingMessage();

}  // namespace ws::ui
