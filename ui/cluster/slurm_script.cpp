// SPDX-License-Identifier: GPL-3.0-or-later
// SlurmScript: see slurm_script.h.
#include "ui/cluster/slurm_script.h"

#include <QDir>
#include <QFileInfo>
#include <QHash>
#include <QRegularExpression>
#include <QStandardPaths>
#include <algorithm>

namespace ws::ui {
namespace {

// An #SBATCH value: sbatch reads these lines itself, and takes a double-quoted value whole.
QString sbatchValue(const QString& value) {
    static const QRegularExpression plain(QStringLiteral("^[A-Za-z0-9_@%+=:,./-]+$"));
    if (plain.match(value).hasMatch()) return value;
    QString quoted = value;
    quoted.replace(QLatin1Char('"'), QStringLiteral("\\\""));
    return QLatin1Char('"') + quoted + QLatin1Char('"');
}

QString jobNameOf(const ClusterPlan& plan) {
    QString name = plan.slurm.jobName.trimmed();
    if (name.isEmpty()) name = QStringLiteral("wafer");
    // Slurm takes any name, but a plain one reads well in squeue and in file names.
    static const QRegularExpression unsafe(QStringLiteral("[^A-Za-z0-9_.-]+"));
    return name.replace(unsafe, QStringLiteral("-"));
}

// KEY=VALUE pairs of scontrol's output (values end at the next space).
QHash<QString, QString> keyValues(const QString& output) {
    static const QRegularExpression pair(QStringLiteral("(?:^|\\s)([A-Za-z]+)=(\\S*)"));
    QHash<QString, QString> values;
    for (auto it = pair.globalMatch(output); it.hasNext();) {
        const auto match = it.next();
        if (!values.contains(match.captured(1)))
            values.insert(match.captured(1), match.captured(2));
    }
    return values;
}

// "1:0" -> exit code 1, signal 0.
void readExitCode(const QString& text, SlurmJobState* state) {
    const QStringList parts = text.split(QLatin1Char(':'));
    state->exitCode = parts.value(0).toInt();
    state->signal = parts.value(1).toInt();
}

QString reasonOrEmpty(QString reason) {
    reason = reason.trimmed();
    if (reason == QLatin1String("None") || reason == QLatin1String("(null)")) return {};
    // squeue puts parentheses around it in its default format; sacct may too.
    if (reason.startsWith(QLatin1Char('(')) && reason.endsWith(QLatin1Char(')')))
        reason = reason.mid(1, reason.size() - 2);
    return reason;
}

}  // namespace

QString findSbatch() {
    return QStandardPaths::findExecutable(QStringLiteral("sbatch"));
}

QString slurmTool(const ClusterPlan& plan, const QString& name) {
    if (!plan.slurm.sbatch.isEmpty()) {
        const QString beside = QFileInfo(plan.slurm.sbatch).dir().filePath(name);
        if (QFileInfo(beside).isExecutable()) return beside;
    }
    return QStandardPaths::findExecutable(name);
}

QString slurmOutputPath(const ClusterPlan& plan, const QString& jobId) {
    const QString dir = QFileInfo(plan.slurm.scriptPath).absolutePath();
    return QDir(dir).filePath(
        QStringLiteral("slurm-%1.out").arg(jobId.isEmpty() ? QStringLiteral("%j") : jobId));
}

QString slurmBatchScript(const ClusterPlan& plan) {
    const SlurmOptions& o = plan.slurm;
    const int processes = processCount(plan);
    QStringList lines;
    lines << QStringLiteral("#!/bin/bash");
    lines << QStringLiteral("# Wafer Studio's Slurm job: %1, %2 task(s) of `wafer train`.")
                 .arg(plan.resumeRunId >= 0
                          ? QStringLiteral("resume run %1").arg(plan.resumeRunId)
                          : QStringLiteral("train %1").arg(QFileInfo(plan.configPath).fileName()))
                 .arg(processes);
    lines << QStringLiteral("# Submit it with: sbatch %1").arg(shellQuote(o.scriptPath));
    lines << QStringLiteral("#SBATCH --job-name=%1").arg(sbatchValue(jobNameOf(plan)));
    if (!o.partition.trimmed().isEmpty())
        lines << QStringLiteral("#SBATCH --partition=%1").arg(sbatchValue(o.partition.trimmed()));
    lines << QStringLiteral("#SBATCH --nodes=%1").arg(o.nodes);
    lines << QStringLiteral("#SBATCH --ntasks-per-node=%1").arg(o.tasksPerNode);
    lines << QStringLiteral("#SBATCH --cpus-per-task=%1").arg(std::max(1, o.cpusPerTask));
    lines << QStringLiteral("#SBATCH --time=%1").arg(sbatchValue(o.timeLimit.trimmed()));
    lines << QStringLiteral("#SBATCH --output=%1").arg(sbatchValue(slurmOutputPath(plan)));
    lines << QString();
    lines << QStringLiteral(
        "# One rank per task, started with PMIx (Open MPI's ranks read their place from it).");
    lines << QStringLiteral(
        "# A task that dies ends the job instead of leaving the others waiting for it;");
    lines << QStringLiteral(
        "# scancel or the time limit sends SIGTERM, and wafer stops after the step in flight");
    lines << QStringLiteral("# with a checkpoint to resume from.");
    QStringList command{QStringLiteral("srun"), QStringLiteral("--mpi=pmix"),
                        QStringLiteral("--kill-on-bad-exit=1")};
    for (const QString& arg : waferTrainArguments(plan)) command << shellQuote(arg);
    lines << command.join(QLatin1Char(' '));
    return lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

std::optional<long long> slurmTimeLimitSeconds(const QString& input) {
    const QString text = input.trimmed();
    if (text.compare(QLatin1String("UNLIMITED"), Qt::CaseInsensitive) == 0 ||
        text.compare(QLatin1String("INFINITE"), Qt::CaseInsensitive) == 0)
        return 0;
    // sbatch(1): "minutes", "minutes:seconds", "hours:minutes:seconds", "days-hours",
    // "days-hours:minutes" and "days-hours:minutes:seconds".
    static const QRegularExpression form(QStringLiteral(
        "^(?:(\\d+)-(\\d+)(?::(\\d+)(?::(\\d+))?)?|(\\d+)(?::(\\d+)(?::(\\d+))?)?)$"));
    const auto m = form.match(text);
    if (!m.hasMatch()) return std::nullopt;
    auto n = [&](int group) { return m.captured(group).toLongLong(); };
    long long seconds = 0;
    if (m.capturedLength(1) > 0) {  // days-hours[:minutes[:seconds]]
        seconds = ((n(1) * 24 + n(2)) * 60 + n(3)) * 60 + n(4);
    } else if (m.capturedLength(7) > 0) {  // hours:minutes:seconds
        seconds = (n(5) * 60 + n(6)) * 60 + n(7);
    } else {  // minutes[:seconds]
        seconds = n(5) * 60 + n(6);
    }
    if (seconds <= 0) return std::nullopt;  // "0" is unlimited to Slurm: say UNLIMITED
    return seconds;
}

QString sbatchMissingMessage() {
    return QObject::tr(
        "Slurm's sbatch is not installed (it is not on PATH). Install Slurm's client tools with "
        "“sudo apt install slurm-client” on a machine of the cluster (one with its slurm.conf "
        "and munge key), then open Run on Cluster… again; or choose Open MPI instead.");
}

QStringList slurmPlanProblems(const ClusterPlan& plan) {
    const SlurmOptions& o = plan.slurm;
    QStringList problems;
    if (o.sbatch.isEmpty()) problems << sbatchMissingMessage();
    static const QRegularExpression partition(QStringLiteral("^[A-Za-z0-9_.,-]*$"));
    if (!partition.match(o.partition.trimmed()).hasMatch()) {
        problems << QObject::tr(
                        "The partition “%1” is not a Slurm partition name: use letters, digits, "
                        "'_', '-' or '.' (sinfo lists the partitions), or leave it empty for "
                        "the cluster's default.")
                        .arg(o.partition);
    }
    if (o.nodes < 1) problems << QObject::tr("Ask for at least 1 node.");
    if (o.tasksPerNode < 1) problems << QObject::tr("Run at least 1 task per node.");
    if (o.cpusPerTask < 1) problems << QObject::tr("Give each task at least 1 CPU.");
    if (!slurmTimeLimitSeconds(o.timeLimit)) {
        problems << QObject::tr(
                        "The time limit “%1” is not one Slurm takes. Write minutes (30), "
                        "H:MM:SS (2:00:00), D-HH:MM:SS (1-12:00:00) or UNLIMITED.")
                        .arg(o.timeLimit);
    }
    if (o.scriptPath.isEmpty()) {
        problems << QObject::tr("The studio has no folder for the batch script: open a run store.");
    } else if (const QFileInfo dir(QFileInfo(o.scriptPath).absolutePath());
               dir.exists() && !dir.isWritable()) {
        problems << QObject::tr(
                        "The batch script's folder %1 is not writable: the run store's folder "
                        "must be, as the job writes its output there.")
                        .arg(dir.filePath());
    }
    return problems;
}

QString sbatchJobId(const QString& output) {
    const QString id = output.trimmed().section(QLatin1Char(';'), 0, 0);
    static const QRegularExpression number(QStringLiteral("^\\d+$"));
    return number.match(id).hasMatch() ? id : QString();
}

bool isFinalSlurmState(const QString& state) {
    static const QStringList live{"PENDING",     "CONFIGURING", "RUNNING",       "COMPLETING",
                                  "SUSPENDED",   "REQUEUED",    "RESIZING",      "SIGNALING",
                                  "STAGE_OUT",   "STOPPED",     "RESV_DEL_HOLD", "REQUEUE_HOLD",
                                  "REQUEUE_FED", "SPECIAL_EXIT"};
    return !state.isEmpty() && !live.contains(state);
}

bool isSlurmFailure(const QString& state) {
    return isFinalSlurmState(state) && state != QLatin1String("COMPLETED") &&
           state != QLatin1String("CANCELLED");
}

SlurmJobState parseSqueue(const QString& output) {
    SlurmJobState s;
    const QString line = output.trimmed().section(QLatin1Char('\n'), 0, 0);
    const QStringList fields = line.split(QLatin1Char('|'));
    if (fields.size() < 2) return s;
    s.state = fields[0].trimmed();
    s.reason = reasonOrEmpty(fields[1]);
    s.nodes = fields.value(2).trimmed();
    return s;
}

SlurmJobState parseScontrolJob(const QString& output) {
    SlurmJobState s;
    const auto values = keyValues(output);
    s.state = values.value(QStringLiteral("JobState"));
    s.reason = reasonOrEmpty(values.value(QStringLiteral("Reason")));
    s.nodes = values.value(QStringLiteral("NodeList"));
    if (s.nodes == QLatin1String("(null)")) s.nodes.clear();
    readExitCode(values.value(QStringLiteral("ExitCode")), &s);
    return s;
}

SlurmJobState parseSacct(const QString& output) {
    SlurmJobState s;
    const QString line = output.trimmed().section(QLatin1Char('\n'), 0, 0);
    const QStringList fields = line.split(QLatin1Char('|'));
    if (fields.size() < 2 || fields[0].trimmed().isEmpty()) return s;
    s.state = fields[0].trimmed().section(QLatin1Char(' '), 0, 0);  // "CANCELLED by 0"
    readExitCode(fields[1].trimmed(), &s);
    s.reason = reasonOrEmpty(fields.value(2));
    return s;
}

QString explainSlurmReason(const QString& code) {
    static const QHash<QString, const char*> meanings{
        {"Resources", "waiting for its nodes to become free"},
        {"Priority", "jobs of higher priority are queued ahead of it"},
        {"PartitionTimeLimit",
         "its time limit is above the partition's maximum: cancel it and lower the time limit "
         "(sinfo shows the partition's), or choose another partition"},
        {"PartitionNodeLimit",
         "it asks for more (or fewer) nodes than the partition allows a job: cancel it and "
         "change Nodes, or choose another partition"},
        {"PartitionConfig",
         "it does not fit the partition's configuration (nodes, CPUs, time or memory): cancel "
         "it and ask for less, or choose another partition"},
        {"PartitionDown", "its partition is down: choose another, or ask the administrators"},
        {"PartitionInactive", "its partition is inactive: choose another partition"},
        {"ReqNodeNotAvail", "a node it needs is down, drained or reserved"},
        {"NodeDown", "a node it needs is down"},
        {"BeginTime", "it was told not to start before a later time"},
        {"Dependency", "it waits for another job it depends on"},
        {"DependencyNeverSatisfied", "the job it depends on failed: it will never start"},
        {"JobHeldUser", "a user holds it: `scontrol release JOBID` lets it start"},
        {"JobHeldAdmin", "an administrator holds it"},
        {"QOSMaxWallDurationPerJobLimit",
         "its time limit is above what its QOS allows: cancel it and lower the time limit"},
        {"AssocMaxWallDurationLimit",
         "its time limit is above what its account allows: cancel it and lower the time limit"},
        {"QOSMaxNodePerJobLimit", "it asks for more nodes than its QOS allows a job"},
        {"InvalidAccount", "its account is not valid on this cluster"},
        {"InvalidQOS", "its QOS is not valid on this cluster"},
        {"Reservation", "it waits for its reservation to begin"},
        {"BadConstraints", "no node has the features it asks for"},
        {"NonZeroExitCode", "a task ended with an error (the job's output says which)"},
        {"RaisedSignal", "a task was ended by a signal"},
        {"TimeLimit",
         "it reached its time limit; Slurm's SIGTERM made wafer stop with a checkpoint: resume "
         "it with a longer time limit"},
        {"NodeFail", "a node of the job failed"},
        {"OutOfMemory", "a task ran out of memory: ask for fewer tasks per node"},
        {"PREEMPTED", "a job of higher priority took its nodes"},
        {"BOOT_FAIL", "a node failed to boot for it"},
        {"DEADLINE", "it could not finish before its deadline"},
    };
    // Final states that have a reason code of the same meaning.
    static const QHash<QString, QString> stateReasons{
        {"TIMEOUT", "TimeLimit"}, {"OUT_OF_MEMORY", "OutOfMemory"}, {"NODE_FAIL", "NodeFail"}};
    // A reason may carry detail after the code ("ReqNodeNotAvail, UnavailableNodes:n1").
    QString key = code.section(QLatin1Char(','), 0, 0).trimmed();
    key = stateReasons.value(key, key);
    const auto it = meanings.find(key);
    return it == meanings.end() ? QString() : QObject::tr(it.value());
}

QString describeSlurmState(const SlurmJobState& s) {
    if (!s.known()) return QObject::tr("not known to Slurm");
    QString text = s.state.toLower().replace(QLatin1Char('_'), QLatin1Char(' '));
    QStringList details;
    // Once ended, a reason from its time in the queue is shown as a code only: its advice
    // ("cancel it and ...") no longer applies.
    static const QStringList endReasons{"NonZeroExitCode", "RaisedSignal", "TimeLimit", "NodeFail",
                                        "OutOfMemory"};
    if (!s.reason.isEmpty() && isFinalSlurmState(s.state) &&
        !endReasons.contains(s.reason.section(QLatin1Char(','), 0, 0))) {
        details << s.reason;
    } else if (!s.reason.isEmpty()) {
        const QString meaning = explainSlurmReason(s.reason);
        details << (meaning.isEmpty() ? s.reason : QStringLiteral("%1: %2").arg(s.reason, meaning));
    } else if (const QString meaning = explainSlurmReason(s.state); !meaning.isEmpty()) {
        details << meaning;
    }
    if (isFinalSlurmState(s.state) && (s.exitCode != 0 || s.signal != 0)) {
        details << (s.signal != 0
                        ? QObject::tr("exit code %1, signal %2").arg(s.exitCode).arg(s.signal)
                        : QObject::tr("exit code %1").arg(s.exitCode));
    }
    if (!s.nodes.isEmpty() && !isFinalSlurmState(s.state) && s.state != QLatin1String("PENDING"))
        text += QObject::tr(" on %1").arg(s.nodes);
    if (!details.isEmpty()) text += QStringLiteral(" (%1)").arg(details.join(QStringLiteral("; ")));
    return text;
}

QList<SlurmPartition> parsePartitions(const QString& output) {
    QList<SlurmPartition> partitions;
    for (const QString& line : output.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
        const QStringList f = line.trimmed().split(QLatin1Char('|'));
        if (f.size() < 5 || f[0].isEmpty()) continue;
        QString name = f[0];
        const bool isDefault = name.endsWith(QLatin1Char('*'));
        if (isDefault) name.chop(1);
        auto it = std::find_if(partitions.begin(), partitions.end(),
                               [&](const SlurmPartition& p) { return p.name == name; });
        if (it == partitions.end()) {
            partitions.append({name, isDefault, f[1], 0, {}, f[3]});
            it = partitions.end() - 1;
        }
        it->nodes += f[2].toInt();
        it->states << QStringLiteral("%1 %2").arg(f[2].toInt()).arg(f[4]);
    }
    std::stable_partition(partitions.begin(), partitions.end(),
                          [](const SlurmPartition& p) { return p.isDefault; });
    return partitions;
}

QString describePartition(const SlurmPartition& p) {
    return QObject::tr("%1%2: %3, %4 node(s) (%5), time limit %6")
        .arg(p.name, p.isDefault ? QObject::tr(" (default)") : QString(), p.avail)
        .arg(p.nodes)
        .arg(p.states.join(QStringLiteral(", ")), p.timeLimit);
}

QStringList partitionWarnings(const SlurmOptions& o, const QList<SlurmPartition>& partitions) {
    if (partitions.isEmpty()) return {};
    const QString wanted = o.partition.trimmed();
    auto it = std::find_if(partitions.begin(), partitions.end(), [&](const SlurmPartition& p) {
        return wanted.isEmpty() ? p.isDefault : p.name == wanted;
    });
    if (it == partitions.end()) {
        if (wanted.isEmpty() || wanted.contains(QLatin1Char(','))) return {};
        QStringList names;
        for (const SlurmPartition& p : partitions) names << p.name;
        return {QObject::tr("This cluster has no partition “%1” (sinfo lists %2): sbatch would "
                            "refuse the job.")
                    .arg(wanted, names.join(QStringLiteral(", ")))};
    }
    QStringList warnings;
    const auto asked = slurmTimeLimitSeconds(o.timeLimit);
    const auto allowed = slurmTimeLimitSeconds(it->timeLimit);
    if (asked && allowed && *allowed > 0 && (*asked == 0 || *asked > *allowed)) {
        warnings << QObject::tr(
                        "Partition %1 allows %2 at most: the job would wait for ever "
                        "(PartitionTimeLimit). Lower the time limit.")
                        .arg(it->name, it->timeLimit);
    }
    if (it->nodes > 0 && o.nodes > it->nodes) {
        warnings << QObject::tr(
                        "Partition %1 has %2 node(s): a job asking for %3 would wait for "
                        "ever (PartitionNodeLimit).")
                        .arg(it->name)
                        .arg(it->nodes)
                        .arg(o.nodes);
    }
    return warnings;
}

}  // namespace ws::ui
