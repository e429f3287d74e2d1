// The placement of systems on processes and the one-process Comm (no MPI needed); the
// multi-process tests are cluster_test.cpp, run under mpirun.
#include "engine/comm/comm.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ws::comm
