// SPDX-License-Identifier: GPL-3.0-or-later
// ClusterPlan: see cluster_plan.h.
#include "ui/cluster/cluster_plan.h"

#include <unistd.h>

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTextStream>

#include "engine/session/cluster_worker.h"
#include "ui/cluster/slurm_script.h"

namespace ws::ui {

QString shellQuote(const QString& word) {
    static const QRegularExpression plain(QStringLiteral("^[A-Za-z0-9_@%+=:,./-]+$"));
    if (plain.match(word).hasMatch()) return word;
    QString quoted = word;
    quoted.replace(QLatin1Char('\''), QStringLiteral("'\\''"));
    return QLatin1Char('\'') + quoted + QLatin1Char('\'');
}

QString defaultWaferBinary() {
    return QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("wafer"));
}

QString findMpirun() {
    return QStandardPaths::findExecutable(QStringLiteral("mpirun"));
}

bool runningAsRoot() {
    return ::geteuid() == 0;
}

QStringList readHostfile(const QString& path, QString* error) {
    QFile file(path);
    if (path.isEmpty()) {
        *error = QObject::tr("Choose a hostfile, or name the hosts instead.");
        return {};
    }
    if (!QFileInfo(path).isFile() || !file.open(QIODevice::ReadOnly | QIODevice::Text)) {
        *error = QObject::tr(
                     "The hostfile %1 cannot be read (%2). Choose an existing file with "
                     "one host per line, e.g. “node1 slots=4”.")
                     .arg(path, QFileInfo::exists(path) ? file.errorString()
                                                        : QObject::tr("no such file"));
        return {};
    }
    // Open MPI's hostfile: "host [slots=N] [max_slots=N]", '#' starts a comment.
    static const QRegularExpression line(
        QStringLiteral("^([A-Za-z0-9_.:\\[\\]-]+)(\\s+[A-Za-z_]+\\s*=\\s*\\S+)*\\s*$"));
    QStringList hosts;
    QTextStream in(&file);
    for (int number = 1; !in.atEnd(); ++number) {
        QString text = in.readLine();
        if (const qsizetype hash = text.indexOf(QLatin1Char('#')); hash >= 0) text.truncate(hash);
        text = text.trimmed();
        if (text.isEmpty()) continue;
        const auto match = line.match(text);
        if (!match.hasMatch()) {
            *error = QObject::tr(
                         "The hostfile %1, line %2, is not “host [slots=N]”: “%3”. Fix "
                         "that line or choose another file.")
                         .arg(path)
                         .arg(number)
                         .arg(text);
            return {};
        }
        hosts << match.captured(1);
    }
    if (hosts.isEmpty()) {
        *error = QObject::tr(
                     "The hostfile %1 names no host. Put one host per line in it, e.g. "
                     "“localhost slots=2”.")
                     .arg(path);
    }
    return hosts;
}

QStringList parseHostList(const QString& text) {
    static const QRegularExpression separators(QStringLiteral("[,\\s]+"));
    return text.split(separators, Qt::SkipEmptyParts);
}

int hostCount(const ClusterPlan& plan) {
    if (plan.launcher == Launcher::Slurm) return std::max(0, plan.slurm.nodes);
    if (plan.hostfile.isEmpty()) return int(plan.hosts.size());
    QString error;
    return int(readHostfile(plan.hostfile, &error).size());
}

int processCount(const ClusterPlan& plan) {
    const int perHost =
        plan.launcher == Launcher::Slurm ? plan.slurm.tasksPerNode : plan.processesPerHost;
    return hostCount(plan) * std::max(0, perHost);
}

int threadsOf(const ClusterPlan& plan) {
    return std::max(
        0, plan.launcher == Launcher::Slurm ? plan.slurm.cpusPerTask : plan.threadsPerProcess);
}

QStringList waferTrainArguments(const ClusterPlan& plan) {
    QStringList args{plan.waferBinary, QStringLiteral("train")};
    if (plan.resumeRunId >= 0) {
        args << QStringLiteral("--resume") << QString::number(plan.resumeRunId);
    } else {
        args << plan.configPath;
        if (plan.numCsx > 0)
            args << QStringLiteral("--set")
                 << QStringLiteral("runconfig.num_csx=%1").arg(plan.numCsx);
    }
    args << QStringLiteral("--threads") << QString::number(threadsOf(plan));
    args << QStringLiteral("--db") << plan.dbPath;
    return args;
}

QStringList mpirunArguments(const ClusterPlan& plan) {
    QStringList args;
    const int perHost = std::max(1, plan.processesPerHost);
    if (plan.hostfile.isEmpty()) {
        QStringList hostSlots;
        for (const QString& host : plan.hosts) {
            // "host:N" gives each host exactly the slots it runs, so no --oversubscribe is needed.
            hostSlots << host.section(QLatin1Char(':'), 0, 0) + QLatin1Char(':') +
                             QString::number(perHost);
        }
        args << QStringLiteral("--host") << hostSlots.join(QLatin1Char(','));
    } else {
        args << QStringLiteral("--hostfile") << plan.hostfile << QStringLiteral("--map-by")
             << QStringLiteral("ppr:%1:node").arg(perHost);
    }
    args << QStringLiteral("-np") << QString::number(processCount(plan));
    // Open MPI binds each rank to one core by default: a rank's threads would share it.
    args << QStringLiteral("--bind-to") << QStringLiteral("none");
    return args + waferTrainArguments(plan);
}

QProcessEnvironment mpirunEnvironment(const ClusterPlan& plan) {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    if (plan.runAsRoot) {
        env.insert(QStringLiteral("OMPI_ALLOW_RUN_AS_ROOT"), QStringLiteral("1"));
        env.insert(QStringLiteral("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"), QStringLiteral("1"));
    }
    return env;
}

QString commandLine(const ClusterPlan& plan) {
    QStringList words;
    if (plan.runAsRoot) {
        words << QStringLiteral("OMPI_ALLOW_RUN_AS_ROOT=1")
              << QStringLiteral("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1");
    }
    words << (plan.mpirun.isEmpty() ? QStringLiteral("mpirun") : plan.mpirun);
    for (const QString& arg : mpirunArguments(plan)) words << shellQuote(arg);
    return words.join(QLatin1Char(' '));
}

QString mpirunMissingMessage() {
    return QObject::tr(
        "Open MPI's mpirun is not installed (it is not on PATH). Install it with "
        "“sudo apt install openmpi-bin” (installer/deps.sh installs it with the studio's other "
        "dependencies), then open Run on Cluster… again.");
}

namespace {

// The Open MPI side's problems: mpirun, the hosts or hostfile, processes per host.
QStringList mpirunPlanProblems(const ClusterPlan& plan) {
    QStringList problems;
    if (plan.mpirun.isEmpty()) problems << mpirunMissingMessage();
    if (!plan.hostfile.isEmpty()) {
        QString error;
        readHostfile(plan.hostfile, &error);
        if (!error.isEmpty()) problems << error;
    } else if (plan.hosts.isEmpty()) {
        problems << QObject::tr(
            "Name at least one host (localhost runs on this machine), or "
            "choose a hostfile.");
    }
    if (plan.processesPerHost < 1) problems << QObject::tr("Run at least 1 process per host.");
    return problems;
}

}  // namespace

QStringList planProblems(const ClusterPlan& plan, int systems) {
    const bool slurm = plan.launcher == Launcher::Slurm;
    QStringList problems = slurm ? slurmPlanProblems(plan) : mpirunPlanProblems(plan);
    if (!QFileInfo(plan.waferBinary).isExecutable()) {
        problems << QObject::tr(
                        "The wafer command-line program is not at %1, where the studio "
                        "expects it beside itself. Build it (./run.sh builds both) or "
                        "reinstall the studio.")
                        .arg(plan.waferBinary);
    }
    if (plan.resumeRunId < 0 &&
        (plan.configPath.isEmpty() || !QFileInfo(plan.configPath).isFile())) {
        problems << QObject::tr("Save the config to a file first: every process reads it.");
    }
    const int processes = processCount(plan);
    if (processes > 0 && systems > 0) {
        const std::string problem = session::clusterPlacementProblem(processes, systems);
        if (!problem.empty() && slurm) {
            problems << QObject::tr(
                            "%1 tasks but runconfig.num_csx is %2: each task computes whole "
                            "systems, so ask for at most %2 (nodes × tasks per node) or raise "
                            "runconfig.num_csx")
                            .arg(processes)
                            .arg(systems);
        } else if (!problem.empty()) {
            problems << QString::fromStdString(problem);
        }
    }
    return problems;
}

}  // namespace ws::ui
