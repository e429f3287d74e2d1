// SPDX-License-Identifier: GPL-3.0-or-later
// A mixture-of-experts run through the session: every step publishes the tokens each expert of
// each MoE block computed and the load-balancing loss, the run store records "moe/lb_loss" every
// step and per-expert token counts on log steps, and the loss metric stays the cross-entropy.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "engine/session/session.h"
#include "engine/store/run_store.h"
#include "session_test_util.h"

namespace ws::session {
namespace {
using namespace testing;

TEST(SessionMoe, PublishesTokensPerExpertAndLogsTheLoadBalancingLoss) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    // Two blocks, MoE every other one (block 0), 4 experts, top_k 2, capacity 1.0 (drops).
    auto config = tinyConfig(dir.path(), 6,
                             {"model.moe.num_experts=4", "model.moe.top_k=2",
                              "model.moe.moe_layer_frequency=2", "model.moe.capacity_factor=1.0",
                              "model.moe.load_balancing_loss_coef=0.1", "runconfig.log_steps=3"});
    auto session = Session::create(std::move(config), sessionOptionsIn(dir));
    ASSERT_TRUE(session.ok()) << session.error().message;
    const auto steps = stepsOf(runToEnd(**session));
    const auto& summary = (*session)->summary();
    ASSERT_EQ(summary.state, RunState::Finished) << summary.detail;
    ASSERT_EQ(steps.size(), 6u);
    const int64_t assignments = 4 * 32 * 2;   // batch x sequence x top_k
    const int64_t capacity = 4 * 32 * 2 / 4;  // ceil(1.0 * N * k / E)
    for (const StepMetrics& m : steps) {
        ASSERT_EQ(m.expertTokens.size(), 2u);
        EXPECT_TRUE(m.expertTokens[1].empty()) << "block 1 is dense";
        ASSERT_EQ(m.expertTokens[0].size(), 4u);
        const int64_t kept =
            std::accumulate(m.expertTokens[0].begin(), m.expertTokens[0].end(), int64_t{0});
        EXPECT_LE(kept, assignments);
        EXPECT_GT(kept, assignments / 2);
        for (int64_t c : m.expertTokens[0]) EXPECT_LE(c, capacity);
        // Balanced routing gives the coefficient; imbalance more.
        EXPECT_GE(m.loadBalancingLoss, 0.1 * 0.999);
        EXPECT_LT(m.loadBalancingLoss, 0.1 * 4);
        EXPECT_TRUE(std::isfinite(m.loss));
    }
    auto store = store::RunStore::open(dir.path() / "runs.sqlite");
    ASSERT_TRUE(store.ok());
    auto lb = (*store)->metrics(summary.runId, "moe/lb_loss");
    ASSERT_TRUE(lb.ok());
    ASSERT_EQ(lb->size(), 6u);
    EXPECT_EQ((*lb)[4].value, steps[4].loadBalancingLoss);
    auto loss = (*store)->metrics(summary.runId, "loss");
    ASSERT_TRUE(loss.ok());
    EXPECT_EQ((*loss)[4].value, steps[4].loss);
    auto tokens = (*store)->metrics(summary.runId, "moe/h.0.expert_3_tokens");
    ASSERT_TRUE(tokens.ok());
    ASSERT_EQ(tokens->size(), 2u);  // log steps 3 and 6
    EXPECT_EQ((*tokens)[1].value, double(steps[5].expertTokens[0][3]));
}

// A dense run publishes no MoE figures and records no MoE metric.
TEST(SessionMoe, DenseRunHasNoExpertFigures) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    auto session = Session::create(tinyConfig(dir.path(), 2), sessionOptionsIn(dir));
    ASSERT_TRUE(session.ok()) << session.error().message;
    const auto steps = stepsOf(runToEnd(**session));
    ASSERT_EQ(steps.size(), 2u);
    EXPECT_TRUE(steps[0].expertTokens.empty());
    EXPECT_EQ(steps[0].loadBalancingLoss, 0.0);
    auto store = store::RunStore::open(dir.path() / "runs.sqlite");
    ASSERT_TRUE(store.ok());
    auto lb = (*store)->metrics((*session)->summary().runId, "moe/lb_loss");
    ASSERT_TRUE(lb.ok());
    EXPECT_TRUE(lb->empty());
}

}  // namespace
}  // namespace ws::session
