// SPDX-License-Identifier: GPL-3.0-or-later
// The Slurm side of Run on Cluster as data (ui/cluster/slurm_script.h): the batch script, exactly;
// the time limits Slurm takes and the ones it does not; the checks that say what to change; and
// what squeue, scontrol, sacct and sinfo print, read into states and put into words. The
// outputs below are Slurm 22.05's (Debian 12), copied from the local cluster of
// tests/support/slurm_cluster.sh.
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include "ui/cluster/slurm_script.h"

using namespace ws::ui;

class SlurmScriptTest : public QObject {
    Q_OBJECT
private slots:
    void scriptIsExactlyWhatIsSubmitted();
    void resumeScriptContinuesTheRun();
    void timeLimitsAreSlurmsFormats();
    void problemsSayWhatToChange();
    void queueAnswersAreRead();
    void statesAreDescribedWithTheirReasons();
    void partitionsAreListed();
};

namespace {

ClusterPlan slurmPlan(const QString& dir) {
    ClusterPlan plan;
    plan.launcher = Launcher::Slurm;
    plan.configPath = dir + "/my config.yaml";
    plan.dbPath = dir + "/runs.sqlite";
    plan.waferBinary = dir + "/wafer";
    plan.slurm.partition = "test";
    plan.slurm.nodes = 2;
    plan.slurm.tasksPerNode = 1;
    plan.slurm.cpusPerTask = 3;
    plan.slurm.timeLimit = "0:30:00";
    plan.slurm.jobName = "wafer-my config";
    plan.slurm.scriptPath = dir + "/slurm-jobs/wafer-my-config-1.sbatch";
    plan.slurm.sbatch = "/usr/bin/sbatch";
    return plan;
}

}  // namespace

void SlurmScriptTest::scriptIsExactlyWhatIsSubmitted() {
    const QString d = "/data/store";
    ClusterPlan plan = slurmPlan(d);
    plan.numCsx = 4;
    QCOMPARE(processCount(plan), 2);
    QCOMPARE(hostCount(plan), 2);
    QCOMPARE(threadsOf(plan), 3);
    QCOMPARE(slurmBatchScript(plan),
             "#!/bin/bash\n"
             "# Wafer Studio's Slurm job: train my config.yaml, 2 task(s) of `wafer train`.\n"
             "# Submit it with: sbatch /data/store/slurm-jobs/wafer-my-config-1.sbatch\n"
             "#SBATCH --job-name=wafer-my-config\n"
             "#SBATCH --partition=test\n"
             "#SBATCH --nodes=2\n"
             "#SBATCH --ntasks-per-node=1\n"
             "#SBATCH --cpus-per-task=3\n"
             "#SBATCH --time=0:30:00\n"
             "#SBATCH --output=/data/store/slurm-jobs/slurm-%j.out\n"
             "\n"
             "# One rank per task, started with PMIx (Open MPI's ranks read their place from "
             "it).\n"
             "# A task that dies ends the job instead of leaving the others waiting for it;\n"
             "# scancel or the time limit sends SIGTERM, and wafer stops after the step in "
             "flight\n"
             "# with a checkpoint to resume from.\n"
             "srun --mpi=pmix --kill-on-bad-exit=1 /data/store/wafer train '/data/store/my "
             "config.yaml' --set runconfig.num_csx=4 --threads 3 --db /data/store/runs.sqlite\n");
    QCOMPARE(slurmOutputPath(plan, "17"), QString("/data/store/slurm-jobs/slurm-17.out"));
    // No partition: the cluster's default (no --partition line at all).
    plan.slurm.partition.clear();
    QVERIFY(!slurmBatchScript(plan).contains("--partition"));
    // A path with a space in an #SBATCH line is double-quoted (sbatch reads those itself).
    plan.slurm.scriptPath = "/my store/slurm-jobs/x.sbatch";
    QVERIFY2(
        slurmBatchScript(plan).contains("#SBATCH --output=\"/my store/slurm-jobs/slurm-%j.out\"\n"),
        qPrintable(slurmBatchScript(plan)));
}

void SlurmScriptTest::resumeScriptContinuesTheRun() {
    ClusterPlan plan = slurmPlan("/s");
    plan.resumeRunId = 7;
    plan.numCsx = 4;  // a resumed run keeps its checkpoint's systems
    const QString script = slurmBatchScript(plan);
    QVERIFY2(script.contains("# Wafer Studio's Slurm job: resume run 7, 2 task(s)") &&
                 script.contains("/s/wafer train --resume 7 --threads 3 --db /s/runs.sqlite\n") &&
                 !script.contains("num_csx"),
             qPrintable(script));
}

void SlurmScriptTest::timeLimitsAreSlurmsFormats() {
    QCOMPARE(slurmTimeLimitSeconds("30"), std::optional<long long>(1800));
    QCOMPARE(slurmTimeLimitSeconds("30:15"), std::optional<long long>(1815));
    QCOMPARE(slurmTimeLimitSeconds("2:00:00"), std::optional<long long>(7200));
    QCOMPARE(slurmTimeLimitSeconds(" 1-12 "), std::optional<long long>(129600));
    QCOMPARE(slurmTimeLimitSeconds("1-12:30"), std::optional<long long>(131400));
    QCOMPARE(slurmTimeLimitSeconds("1-0:0:5"), std::optional<long long>(86405));
    QCOMPARE(slurmTimeLimitSeconds("unlimited"), std::optional<long long>(0));
    for (const char* bad : {"", "0", "abc", "1h", "-5", "1:2:3:4", "1-", "1.5", "2 hours"})
        QVERIFY2(!slurmTimeLimitSeconds(bad), bad);
}

void SlurmScriptTest::problemsSayWhatToChange() {
    QTemporaryDir dir;
    ClusterPlan plan = slurmPlan(dir.path());
    QVERIFY(slurmPlanProblems(plan).isEmpty());
    plan.slurm.sbatch.clear();
    plan.slurm.timeLimit = "2 hours";
    plan.slurm.partition = "gpu; rm -rf";
    const QString problems = slurmPlanProblems(plan).join("\n");
    QVERIFY2(problems.contains("apt install slurm-client") &&
                 problems.contains("The time limit “2 hours” is not one Slurm takes") &&
                 problems.contains("H:MM:SS (2:00:00)") &&
                 problems.contains("“gpu; rm -rf” is not a Slurm partition name"),
             qPrintable(problems));
    QCOMPARE(slurmPlanProblems(plan).size(), 3);
    // The shared checks see Slurm's tasks: 2 nodes x 3 tasks for 4 systems is too many.
    plan = slurmPlan(dir.path());
    plan.slurm.tasksPerNode = 3;
    QFile(plan.configPath).open(QIODevice::WriteOnly);
    const QStringList shared = planProblems(plan, 4);
    QVERIFY2(shared.join("\n").contains("6 tasks but runconfig.num_csx is 4") &&
                 shared.join("\n").contains("at most 4 (nodes × tasks per node)"),
             qPrintable(shared.join("\n")));
    QVERIFY(!shared.join("\n").contains("mpirun"));  // Slurm needs no mpirun here
}

void SlurmScriptTest::queueAnswersAreRead() {
    QCOMPARE(sbatchJobId("17\n"), QString("17"));
    QCOMPARE(sbatchJobId("17;wafertest\n"), QString("17"));
    QCOMPARE(sbatchJobId("sbatch: error: Batch job submission failed"), QString());

    SlurmJobState pending = parseSqueue("PENDING|PartitionTimeLimit|\n");
    QCOMPARE(pending.state, QString("PENDING"));
    QCOMPARE(pending.reason, QString("PartitionTimeLimit"));
    QVERIFY(pending.nodes.isEmpty());
    SlurmJobState running = parseSqueue("RUNNING|None|n[1-2]\n");
    QCOMPARE(running.reason, QString());
    QCOMPARE(running.nodes, QString("n[1-2]"));
    QVERIFY(!parseSqueue("").known());
    QVERIFY(!isFinalSlurmState("RUNNING") && !isFinalSlurmState("COMPLETING") &&
            !isFinalSlurmState(""));

    const QString scontrol =
        "JobId=12 JobName=wafer-cluster\n"
        "   UserId=root(0) GroupId=root(0) MCS_label=N/A\n"
        "   Priority=1 Nice=0 Account=(null) QOS=(null)\n"
        "   JobState=FAILED Reason=NonZeroExitCode Dependency=(null)\n"
        "   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=1:0\n"
        "   NodeList=n[1-2]\n";
    SlurmJobState failed = parseScontrolJob(scontrol);
    QCOMPARE(failed.state, QString("FAILED"));
    QCOMPARE(failed.reason, QString("NonZeroExitCode"));
    QCOMPARE(failed.exitCode, 1);
    QCOMPARE(failed.signal, 0);
    QCOMPARE(failed.nodes, QString("n[1-2]"));
    QVERIFY(isFinalSlurmState(failed.state) && isSlurmFailure(failed.state));
    QVERIFY(!parseScontrolJob("slurm_load_jobs error: Invalid job id specified\n").known());

    SlurmJobState cancelled = parseSacct("CANCELLED by 0|0:15|None\n");
    QCOMPARE(cancelled.state, QString("CANCELLED"));
    QCOMPARE(cancelled.signal, 15);
    QVERIFY(isFinalSlurmState("CANCELLED") && !isSlurmFailure("CANCELLED") &&
            !isSlurmFailure("COMPLETED") && isSlurmFailure("TIMEOUT"));
    QVERIFY(!parseSacct("").known());
}

void SlurmScriptTest::statesAreDescribedWithTheirReasons() {
    QCOMPARE(describeSlurmState(parseSqueue("PENDING|Resources|")),
             QString("pending (Resources: waiting for its nodes to become free)"));
    QCOMPARE(describeSlurmState(parseSqueue("RUNNING|None|n[1-2]")), QString("running on n[1-2]"));
    const QString limit = describeSlurmState(parseSqueue("PENDING|PartitionTimeLimit|"));
    QVERIFY2(limit.startsWith("pending (PartitionTimeLimit: its time limit is above the "
                              "partition's maximum") &&
                 limit.contains("lower the time limit"),
             qPrintable(limit));
    QCOMPARE(describeSlurmState(parseScontrolJob("JobState=FAILED Reason=NonZeroExitCode "
                                                 "ExitCode=1:0")),
             QString("failed (NonZeroExitCode: a task ended with an error (the job's output says "
                     "which); exit code 1)"));
    const QString timeout =
        describeSlurmState(parseScontrolJob("JobState=TIMEOUT Reason=TimeLimit ExitCode=0:0"));
    QVERIFY2(timeout.startsWith("timeout (TimeLimit: ") && timeout.contains("longer time limit"),
             qPrintable(timeout));
    // Ended: a reason from the queue is only named (its advice no longer applies).
    QCOMPARE(describeSlurmState(parseScontrolJob("JobState=CANCELLED Reason=PartitionTimeLimit "
                                                 "ExitCode=0:15")),
             QString("cancelled (PartitionTimeLimit; exit code 0, signal 15)"));
    // A code this does not know is shown as Slurm says it.
    QCOMPARE(describeSlurmState(parseSqueue("PENDING|FrontEndDown|")),
             QString("pending (FrontEndDown)"));
    QCOMPARE(describeSlurmState(parseSqueue("PENDING|ReqNodeNotAvail, UnavailableNodes:n1|")),
             QString("pending (ReqNodeNotAvail, UnavailableNodes:n1: a node it needs is down, "
                     "drained or reserved)"));
}

void SlurmScriptTest::partitionsAreListed() {
    const QList<SlurmPartition> partitions =
        parsePartitions("debug|up|1|30:00|mix\ntest*|up|2|10:00|idle\ntest*|up|1|10:00|drain\n");
    QCOMPARE(partitions.size(), 2);
    QCOMPARE(partitions[0].name, QString("test"));  // the default first
    QCOMPARE(describePartition(partitions[0]),
             QString("test (default): up, 3 node(s) (2 idle, 1 drain), time limit 10:00"));
    QCOMPARE(describePartition(partitions[1]),
             QString("debug: up, 1 node(s) (1 mix), time limit 30:00"));
    QVERIFY(parsePartitions("").isEmpty());

    // What Slurm would do, said before submitting.
    SlurmOptions o;
    o.nodes = 2;
    o.timeLimit = "5";
    QVERIFY(partitionWarnings(o, partitions).isEmpty());  // the default partition fits
    o.timeLimit = "1:00:00";
    QCOMPARE(partitionWarnings(o, partitions),
             QStringList{"Partition test allows 10:00 at most: the job would wait for ever "
                         "(PartitionTimeLimit). Lower the time limit."});
    o.partition = "debug";
    QCOMPARE(partitionWarnings(o, partitions),
             QStringList({"Partition debug allows 30:00 at most: the job would wait for ever "
                          "(PartitionTimeLimit). Lower the time limit.",
                          "Partition debug has 1 node(s): a job asking for 2 would wait for ever "
                          "(PartitionNodeLimit)."}));
    o.partition = "gpu";
    QCOMPARE(partitionWarnings(o, partitions),
             QStringList{"This cluster has no partition “gpu” (sinfo lists test, debug): sbatch "
                         "would refuse the job."});
    QVERIFY(partitionWarnings(o, {}).isEmpty());  // sinfo not answered: nothing to say
    const QList<SlurmPartition> unlimited = parsePartitions("long*|up|4|infinite|idle\n");
    o.partition.clear();
    o.timeLimit = "UNLIMITED";
    QVERIFY(partitionWarnings(o, unlimited).isEmpty());
}

QTEST_GUILESS_MAIN(SlurmScriptTest)
#include "slurm_script_test.moc"
