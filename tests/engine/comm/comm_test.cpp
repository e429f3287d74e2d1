// SPDX-License-Identifier: GPL-3.0-or-later
// The placement of systems on processes, the one-process Comm and how a process tells from its
// environment whether mpirun or Slurm's srun started it (no MPI needed); the multi-process tests
// are cluster_test.cpp, run under mpirun, and tests/app/slurm_test.sh, under a real Slurm.
#include "engine/comm/comm.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/session/cluster_worker.h"

namespace ws::comm {
namespace {

TEST(SystemsOfRank, ContiguousBlocksInSystemOrderCoveringEverySystemOnce) {
    for (int N = 1; N <= 9; ++N) {
        for (int P = 1; P <= N; ++P) {
            int next = 0;
            for (int r = 0; r < P; ++r) {
                const SystemRange mine = systemsOfRank(N, P, r);
                EXPECT_EQ(mine.first, next) << N << " systems, " << P << " ranks, rank " << r;
                EXPECT_GE(mine.count, 1);
                EXPECT_LE(mine.count, (N + P - 1) / P);
                next = mine.first + mine.count;
            }
            EXPECT_EQ(next, N);
        }
    }
    EXPECT_EQ(systemsOfRank(3, 2, 0).count, 1);
    EXPECT_EQ(systemsOfRank(3, 2, 1).first, 1);
    EXPECT_EQ(systemsOfRank(3, 2, 1).count, 2);
}

TEST(SingleProcessComm, IsRankZeroOfOneAndGatherCopies) {
    auto comm = singleProcess();
    EXPECT_EQ(comm->rank(), 0);
    EXPECT_EQ(comm->size(), 1);
    EXPECT_FALSE(comm->host().empty());
    const std::vector<float> send = {1.0f, 2.0f, 3.0f};
    std::vector<float> recv(3, 0.0f);
    comm->gather(Channel::Gradients, send.data(), 3 * sizeof(float), recv.data(),
                 {3 * sizeof(float)}, 0);
    EXPECT_EQ(recv, send);
    std::string text = "unchanged";
    broadcastString(*comm, Channel::Control, text, 0);
    EXPECT_EQ(text, "unchanged");
}

TEST(SingleProcessComm, MessagesToItselfArriveByChannelAndTagInOrder) {
    auto comm = singleProcess();
    EXPECT_FALSE(comm->tryReceive(Channel::Sweep, kAnySource, kAnyTag));
    EXPECT_TRUE(sendString(*comm, Channel::Sweep, 0, 7, "first"));
    EXPECT_TRUE(sendString(*comm, Channel::Sweep, 0, 8, "other tag"));
    EXPECT_TRUE(sendString(*comm, Channel::Sweep, 0, 7, "second"));
    EXPECT_FALSE(sendString(*comm, Channel::Sweep, 1, 7, "no such rank"));
    EXPECT_FALSE(comm->tryReceive(Channel::Control, kAnySource, kAnyTag));  // another channel
    auto m = comm->tryReceive(Channel::Sweep, 0, 8);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->bytes, "other tag");
    m = comm->receive(Channel::Sweep, kAnySource, 7, std::chrono::milliseconds(10));
    ASSERT_TRUE(m);
    EXPECT_EQ(m->source, 0);
    EXPECT_EQ(m->tag, 7);
    EXPECT_EQ(m->bytes, "first");
    m = comm->receive(Channel::Sweep, kAnySource, kAnyTag, std::chrono::milliseconds(10));
    ASSERT_TRUE(m);
    EXPECT_EQ(m->bytes, "second");
    EXPECT_FALSE(comm->receive(Channel::Sweep, kAnySource, kAnyTag, std::chrono::milliseconds(5)));
}

TEST(ClusterPlacement, MoreProcessesThanSystemsIsRefusedWithTheFix) {
    EXPECT_TRUE(session::clusterPlacementProblem(2, 2).empty());
    EXPECT_TRUE(session::clusterPlacementProblem(1, 4).empty());
    const std::string problem = session::clusterPlacementProblem(3, 2);
    EXPECT_NE(problem.find("runconfig.num_csx is 2"), std::string::npos) << problem;
    EXPECT_NE(problem.find("mpirun -np 2"), std::string::npos) << problem;
}

// Sets the launchers' variables as a test states them (every other one unset), and puts back
// what the process had when it goes: ctest itself may run inside a Slurm job or under mpirun.
class LauncherEnvironment {
public:
    explicit LauncherEnvironment(const std::map<std::string, std::string>& values) {
        for (const char* name : kNames) {
            const char* old = std::getenv(name);
            m_saved[name] = old ? std::optional<std::string>(old) : std::nullopt;
            const auto it = values.find(name);
            if (it == values.end()) {
                unsetenv(name);
            } else {
                setenv(name, it->second.c_str(), 1);
            }
        }
    }
    ~LauncherEnvironment() {
        for (const auto& [name, value] : m_saved) {
            if (value) {
                setenv(name.c_str(), value->c_str(), 1);
            } else {
                unsetenv(name.c_str());
            }
        }
    }
    LauncherEnvironment(const LauncherEnvironment&) = delete;
    LauncherEnvironment& operator=(const LauncherEnvironment&) = delete;

private:
    static constexpr const char* kNames[] = {
        "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMIX_RANK",   "SLURM_PROCID",
        "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS",         "SLURM_JOB_ID"};
    std::map<std::string, std::optional<std::string>> m_saved;
};

TEST(LaunchDetection, MpirunStatesTheRankFirst) {
    // mpirun inside a Slurm batch job: Open MPI's daemons were started by srun, so the ranks see
    // Slurm's task number too (the daemon's), and PMIx's.
    LauncherEnvironment env({{"OMPI_COMM_WORLD_SIZE", "3"},
                             {"OMPI_COMM_WORLD_RANK", "2"},
                             {"PMIX_RANK", "2"},
                             {"SLURM_PROCID", "1"},
                             {"SLURM_STEP_NUM_TASKS", "2"}});
    EXPECT_TRUE(launchedByMpirun());
    EXPECT_EQ(rankFromEnvironment(), 2);
}

TEST(LaunchDetection, SrunWithPmixIsAnMpiJob) {
    // srun --mpi=pmix sets no OMPI_COMM_WORLD_* at all.
    LauncherEnvironment env({{"PMIX_RANK", "1"},
                             {"SLURM_PROCID", "1"},
                             {"SLURM_STEP_NUM_TASKS", "2"},
                             {"SLURM_NTASKS", "2"},
                             {"SLURM_JOB_ID", "7"}});
    EXPECT_TRUE(launchedByMpirun());
    EXPECT_EQ(rankFromEnvironment(), 1);
}

TEST(LaunchDetection, SrunWithoutPmixIsRefusedWithTheFixByTaskZeroOnly) {
    LauncherEnvironment env({{"SLURM_PROCID", "1"},
                             {"SLURM_STEP_NUM_TASKS", "2"},
                             {"SLURM_NTASKS", "2"},
                             {"SLURM_JOB_ID", "7"}});
    EXPECT_FALSE(launchedByMpirun());
    EXPECT_EQ(rankFromEnvironment(), 1);  // main() prints the refusal on rank 0 only
    auto job = fromEnvironment(nullptr, nullptr, "test build");
    ASSERT_FALSE(job.ok());
    const std::string message = job.error().message;
    EXPECT_NE(message.find("srun started 2 tasks of wafer without PMIx"), std::string::npos)
        << message;
    EXPECT_NE(message.find("srun --mpi=pmix wafer"), std::string::npos) << message;
    EXPECT_NE(message.find("mpirun wafer"), std::string::npos) << message;
}

TEST(LaunchDetection, OneTaskStepAndTheBatchScriptRunAlone) {
    {
        LauncherEnvironment env(
            {{"SLURM_PROCID", "0"}, {"SLURM_STEP_NUM_TASKS", "1"}, {"SLURM_JOB_ID", "7"}});
        auto job = fromEnvironment(nullptr, nullptr, "test build");
        ASSERT_TRUE(job.ok()) << job.error().message;
        EXPECT_EQ((*job)->size(), 1);
    }
    // The batch script of a two-task job runs in no step with tasks.
    LauncherEnvironment env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_ID", "7"}});
    EXPECT_FALSE(launchedByMpirun());
    EXPECT_EQ(rankFromEnvironment(), 0);
    auto job = fromEnvironment(nullptr, nullptr, "test build");
    ASSERT_TRUE(job.ok()) << job.error().message;
    EXPECT_EQ((*job)->size(), 1);
}

}  // namespace
}  // namespace ws::comm
