// SPDX-License-Identifier: GPL-3.0-or-later
// PeerWatch (engine/comm/peer_watch.h) between two ranks of a fake in-process network: a peer
// whose link is cut is reported once, naming its rank and host; a peer that said goodbye is
// not; the timeout's environment variable is read or refused with the fix.
#include "engine/comm/peer_watch.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

namespace ws::comm {
namespace {

using namespace std::chrono_literals;

// Two ranks' mailboxes; a cut link drops every message to or from rank 1.
struct Network {
    std::mutex mutex;
    std::deque<Message> mailbox[2];
    bool cut = false;
    int delivered[2] = {0, 0};
};

class FakeRank final : public Comm {
public:
    FakeRank(Network& net, int rank) : m_net(net), m_rank(rank) {}
    int rank() const override { return m_rank; }
    int size() const override { return 2; }
    std::string host() const override { return hostOf(m_rank); }
    std::string hostOf(int rank) const override { return rank == 0 ? "hostA" : "hostB"; }
    void broadcast(Channel, void*, size_t, int) override {}
    void gather(Channel, const void*, size_t, void*, const std::vector<size_t>&, int) override {}
    void barrier() override {}
    bool send(Channel channel, int dest, int tag, const void* data, size_t bytes,
              std::chrono::milliseconds) override {
        EXPECT_EQ(channel, Channel::Sweep);
        std::lock_guard lock(m_net.mutex);
        if (m_net.cut && (dest == 1 || m_rank == 1)) return true;  // lost on the wire
        m_net.mailbox[dest].push_back(
            {m_rank, tag, std::string(static_cast<const char*>(data), bytes)});
        ++m_net.delivered[dest];
        return true;
    }
    std::optional<Message> tryReceive(Channel, int, int) override {
        std::lock_guard lock(m_net.mutex);
        if (m_net.mailbox[m_rank].empty()) return std::nullopt;
        Message m = std::move(m_net.mailbox[m_rank].front());
        m_net.mailbox[m_rank].pop_front();
        return m;
    }
    // The watch sends and receives heartbeats only; the tree reduce's exact messages are unused.
    void sendExact(Channel, int, int, const void*, size_t) override {
        ADD_FAILURE() << "sendExact is not part of the watch";
    }
    void receiveExact(Channel, int, int, void*, size_t) override {
        ADD_FAILURE() << "receiveExact is not part of the watch";
    }
    [[noreturn]] void abort(int, const std::string& message) override {
        ADD_FAILURE() << "abort: " << message;
        std::abort();
    }

private:
    Network& m_net;
    int m_rank;
};

// What rank 0's watch reported.
struct Reports {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<std::pair<int, std::string>> silent;
    PeerWatch::OnSilent sink() {
        return [this](int rank, const std::string& message) {
            std::lock_guard lock(mutex);
            silent.emplace_back(rank, message);
            changed.notify_all();
        };
    }
};

// Waits (up to 10 s) until rank 0 has heard a few heartbeats.
void waitForHeartbeats(Network& net) {
    for (int i = 0; i < 1000; ++i) {
        {
            std::lock_guard lock(net.mutex);
            if (net.delivered[0] >= 3) return;
        }
        std::this_thread::sleep_for(10ms);
    }
    FAIL() << "no heartbeats within 10 s";
}

TEST(PeerWatch, ACutLinkIsReportedOnceNamingTheRankAndHost) {
    Network net;
    FakeRank r0(net, 0), r1(net, 1);
    Reports reports;
    PeerWatch w0(r0, 200ms, reports.sink(), 10ms);
    PeerWatch w1(r1, 1h, {}, 10ms);
    waitForHeartbeats(net);
    {
        std::lock_guard lock(reports.mutex);
        EXPECT_TRUE(reports.silent.empty()) << reports.silent.front().second;
    }
    {
        std::lock_guard lock(net.mutex);
        net.cut = true;
    }
    std::unique_lock lock(reports.mutex);
    ASSERT_TRUE(reports.changed.wait_for(lock, 10s, [&] { return !reports.silent.empty(); }))
        << "rank 1 went silent and nothing was reported within 10 s";
    EXPECT_EQ(reports.silent[0].first, 1);
    const std::string& message = reports.silent[0].second;
    EXPECT_NE(message.find("rank 1 on hostB has not answered for "), std::string::npos) << message;
    EXPECT_NE(message.find("wafer train --resume"), std::string::npos) << message;
    // Reported once, however long the silence lasts.
    reports.changed.wait_for(lock, 300ms, [&] { return reports.silent.size() > 1; });
    EXPECT_EQ(reports.silent.size(), 1u);
    lock.unlock();
    std::lock_guard netLock(net.mutex);
    net.cut = false;  // rank 1's goodbye gets through: its destructor runs first
}

TEST(PeerWatch, APeerThatSaidGoodbyeIsNotWatched) {
    Network net;
    FakeRank r0(net, 0), r1(net, 1);
    Reports reports;
    PeerWatch w0(r0, 100ms, reports.sink(), 10ms);
    {
        PeerWatch w1(r1, 1h, {}, 10ms);
        waitForHeartbeats(net);
    }  // rank 1 ends first (rank 0 still writes its checkpoint): it says goodbye
    std::unique_lock lock(reports.mutex);
    reports.changed.wait_for(lock, 1s, [&] { return !reports.silent.empty(); });
    EXPECT_TRUE(reports.silent.empty()) << reports.silent.front().second;
}

TEST(PeerWatch, TimeoutFromTheEnvironmentOrRefusedWithTheFix) {
    unsetenv("WAFER_PEER_TIMEOUT");
    ASSERT_TRUE(peerTimeoutFromEnvironment().ok());
    EXPECT_EQ(*peerTimeoutFromEnvironment(), 30s);
    setenv("WAFER_PEER_TIMEOUT", "2.5", 1);
    EXPECT_EQ(*peerTimeoutFromEnvironment(), 2500ms);
    setenv("WAFER_PEER_TIMEOUT", "0", 1);
    EXPECT_EQ(*peerTimeoutFromEnvironment(), 0ms);
    for (const char* bad : {"ten", "5s", "-1"}) {
        setenv("WAFER_PEER_TIMEOUT", bad, 1);
        const auto t = peerTimeoutFromEnvironment();
        ASSERT_FALSE(t.ok()) << bad;
        EXPECT_NE(t.error().message.find(std::string("WAFER_PEER_TIMEOUT is '") + bad + "'"),
                  std::string::npos)
            << t.error().message;
    }
    unsetenv("WAFER_PEER_TIMEOUT");
}

TEST(PeerWatch, TimeoutZeroSendsNothing) {
    Network net;
    FakeRank r1(net, 1);
    { PeerWatch off(r1, 0ms, {}, 1ms); }
    std::lock_guard lock(net.mutex);
    EXPECT_EQ(net.delivered[0], 0);
}

// Only rank 0 reports (a cut-off rank's words could not get out): the other ranks send
// heartbeats and never read any.
TEST(PeerWatch, OnlyRankZeroReports) {
    Network net;
    FakeRank r0(net, 0), r1(net, 1);
    Reports reports;
    {
        PeerWatch w1(r1, 50ms, reports.sink(), 10ms);
        waitForHeartbeats(net);
        std::this_thread::sleep_for(200ms);  // past rank 1's timeout: rank 0 never sent a word
    }
    std::lock_guard lock(reports.mutex);
    EXPECT_TRUE(reports.silent.empty()) << reports.silent.front().second;
    std::lock_guard netLock(net.mutex);
    EXPECT_EQ(net.delivered[1], 0);
}

}  // namespace
}  // namespace ws::comm
