// SPDX-License-Identifier: GPL-3.0-or-later
// Run control requests across processes (engine/session/run_control.h): the request file, its
// refusals and staleness rules, and a real Session driven through it - pause between layers
// (recorded as "paused" in the run store), checkpoint now, continue and stop. The CLI side (a
// real `wafer train` child, and under mpirun) is in tests/app/cli_test.sh (run_control,
// mpi_run_control).
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <thread>

#include "engine/modelio/checkpoints.h"
#include "engine/session/folder_lock.h"
#include "engine/session/run_control.h"
#include "engine/session/session.h"
#include "engine/store/run_store.h"
#include "session_test_util.h"

namespace ws::session {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

TEST(RunControl, RequestFileRoundTripsAndMalformedFilesAreNamed) {
    TempDir dir("control_file");
    auto none = readControlRequest(dir.path());
    ASSERT_TRUE(none.ok()) << none.error().message;
    EXPECT_FALSE(none->has_value());
    const ControlRequest written{7, 3, true, false, 2, 1};
    ASSERT_TRUE(writeControlRequest(dir.path(), written).ok());
    auto read = readControlRequest(dir.path());
    ASSERT_TRUE(read.ok() && read->has_value());
    EXPECT_EQ(**read, written);
    std::ofstream(dir.path() / std::string(kControlFileName)) << "{\"run\": 7, \"paus";
    auto bad = readControlRequest(dir.path());
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find(std::string(kControlFileName)), std::string::npos);
    clearControlRequest(dir.path());
    EXPECT_FALSE(fs::exists(dir.path() / std::string(kControlFileName)));
    for (auto c : {ControlCommand::Pause, ControlCommand::Continue, ControlCommand::StepLayer,
                   ControlCommand::Checkpoint, ControlCommand::Stop}) {
        EXPECT_EQ(parseControlCommand(controlCommandName(c)), c);
    }
    EXPECT_FALSE(parseControlCommand("halt").has_value());
}

TEST(RunControl, RequestsGoOnlyToARunThatIsTrainingAndKeepEveryWish) {
    TempDir dir("control_send");
    auto refused = sendRunControl(dir.path(), 4, ControlCommand::Pause);
    ASSERT_FALSE(refused.ok());  // nobody holds the folder: the run is not training
    EXPECT_NE(refused.error().message.find("not training"), std::string::npos);
    EXPECT_FALSE(readControlRequest(dir.path())->has_value());  // and nothing was written

    auto held = FolderLock::acquire(dir.path());
    ASSERT_TRUE(held.ok()) << held.error().message;
    // A file another run left: only its sequence carries on.
    ASSERT_TRUE(writeControlRequest(dir.path(), {3, 9, true, true, 5, 5}).ok());
    auto first = sendRunControl(dir.path(), 4, ControlCommand::Checkpoint);
    ASSERT_TRUE(first.ok()) << first.error().message;
    EXPECT_EQ(*first, (ControlRequest{4, 10, false, false, 1, 0}));
    // Two requests faster than any poll both survive: the file holds wishes, not a queue.
    ASSERT_TRUE(sendRunControl(dir.path(), 4, ControlCommand::Pause).ok());
    ASSERT_TRUE(sendRunControl(dir.path(), 4, ControlCommand::Checkpoint).ok());
    ASSERT_TRUE(sendRunControl(dir.path(), 4, ControlCommand::StepLayer).ok());
    EXPECT_EQ(**readControlRequest(dir.path()), (ControlRequest{4, 13, true, false, 2, 1}));
    ASSERT_TRUE(sendRunControl(dir.path(), 4, ControlCommand::Continue).ok());
    ASSERT_TRUE(sendRunControl(dir.path(), 4, ControlCommand::Stop).ok());
    EXPECT_EQ(**readControlRequest(dir.path()), (ControlRequest{4, 15, false, true, 2, 1}));
}

// A session driven only through its request file, as the studio drives a `wafer train` it
// started under mpirun: the follower is polled on this thread, as the CLI's loop polls it.
class RunControlSession : public ::testing::Test {
protected:
    void SetUp() override {
        testing::writeTinyCorpus(m_dir.path());
        // A stop request a previous session of the folder left behind: must not stop this one.
        fs::create_directories(m_dir.path() / "model");
        ASSERT_TRUE(writeControlRequest(m_dir.path() / "model", {1, 5, true, true, 3, 0}).ok());
        auto session = Session::create(
            testing::tinyConfig(m_dir.path(), 100000,
                                {"runconfig.checkpoint_steps=0", "runconfig.eval_frequency=0"}),
            testing::sessionOptionsIn(m_dir));
        ASSERT_TRUE(session.ok()) << session.error().message;
        m_session = std::move(session).value();
        m_follower.emplace(*m_session, std::chrono::milliseconds(5));
        m_session->start();
    }
    void TearDown() override {
        if (m_session) {
            m_session->requestStop();
            m_session->wait();
        }
    }

    // Polls the follower until `done` (false after 60 s); returns the lines it applied.
    bool pollUntil(const std::function<bool()>& done) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (std::chrono::steady_clock::now() < deadline) {
            for (auto& line : m_follower->poll()) m_applied.push_back(line);
            m_events.clear();
            m_session->events().drain(m_events);
            for (const auto& e : m_events)
                if (const auto* m = std::get_if<StepMetrics>(&e)) m_step = m->step;
            if (done()) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        return false;
    }
    std::string storedStatus() {
        auto store = store::RunStore::open(m_dir.path() / "runs.sqlite");
        if (!store.ok()) return store.error().message;
        auto run = (*store)->getRun(m_session->place()->runId);
        return run.ok() ? run->status : run.error().message;
    }
    void send(ControlCommand command) {
        auto sent =
            sendRunControl(m_session->place()->modelDir, m_session->place()->runId, command);
        ASSERT_TRUE(sent.ok()) << sent.error().message;
    }
    std::vector<int64_t> checkpointSteps() {
        std::vector<int64_t> steps;
        for (const auto& [step, folder] : modelio::listCheckpoints(m_dir.path() / "model"))
            steps.push_back(step);
        return steps;
    }

    TempDir m_dir{"control_session"};
    std::unique_ptr<Session> m_session;
    std::optional<RunControlFollower> m_follower;
    std::vector<std::string> m_applied;
    std::vector<Event> m_events;
    int64_t m_step = 0;  // the newest step the session reported
};

TEST_F(RunControlSession, PauseCheckpointContinueAndStopThroughTheRequestFile) {
    ASSERT_TRUE(pollUntil([&] { return m_session->state() == RunState::Running; }));
    ASSERT_TRUE(m_session->place().has_value());
    EXPECT_EQ(m_session->place()->modelDir, m_dir.path() / "model");
    // The stale request was cleared when the session claimed the folder.
    EXPECT_FALSE(readControlRequest(m_dir.path() / "model")->has_value());

    send(ControlCommand::Pause);
    ASSERT_TRUE(pollUntil([&] { return m_session->state() == RunState::Paused; }));
    // What a studio in another process sees, once the store's writer has recorded it (the
    // session's state changes first; the status row follows on the writer thread).
    EXPECT_TRUE(pollUntil([&] { return storedStatus() == "paused"; })) << storedStatus();
    const int64_t stops = m_session->pauseStops();
    send(ControlCommand::StepLayer);  // one layer phase, then paused again
    ASSERT_TRUE(pollUntil([&] { return m_session->pauseStops() > stops; }));
    EXPECT_EQ(m_session->state(), RunState::Paused);
    EXPECT_TRUE(checkpointSteps().empty());

    send(ControlCommand::Checkpoint);  // taken after the step in flight, once running again
    send(ControlCommand::Continue);
    ASSERT_TRUE(pollUntil([&] { return !checkpointSteps().empty(); }));
    EXPECT_EQ(checkpointSteps().size(), 1u);
    ASSERT_TRUE(pollUntil([&] { return storedStatus() == "running"; }));
    const int64_t checkpointStep = checkpointSteps().front();
    ASSERT_TRUE(pollUntil([&] { return m_step > checkpointStep + 1; }));  // and trains on

    send(ControlCommand::Stop);
    ASSERT_TRUE(pollUntil([&] {
        const RunState s = m_session->state();
        return s != RunState::Running && s != RunState::Paused;
    }));
    m_session->wait();
    EXPECT_EQ(m_session->summary().state, RunState::Stopped);
    EXPECT_EQ(storedStatus(), "stopped");
    EXPECT_EQ(checkpointSteps().size(), 2u);  // checkpoint now, then the final one
    EXPECT_EQ(checkpointSteps().back(), m_session->summary().steps);
    const std::vector<std::string> expected = {
        "pause requested (between layers)", "1 layer phase requested",
        "checkpoint requested (after the step in flight)", "continue requested",
        "stop requested (after the step in flight)"};
    // Checkpoint and Continue may be read in one poll or two; either way, in this order.
    std::vector<std::string> got = m_applied;
    if (got.size() == 5 && got[2] == "continue requested") std::swap(got[2], got[3]);
    EXPECT_EQ(got, expected);
}

}  // namespace
}  // namespace ws::session
