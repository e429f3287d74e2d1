// Lesson checks: parsing, what a run's events make of the observation, and evaluation against
// the config, the current run and the one before it.
#include "engine/lesson/condition.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace ws::lesson {
namespace {

CheckResult check(const std::string& text, const CheckContext& context) {
    auto c = parseCondition(text);
    EXPECT_TRUE(c.ok()) << c.error().message;
    return c.ok() ? evaluate(*c, context) : CheckResult{};
}

TEST(LessonCheck, ParsesSidesAndOperators) {
    auto c = parseCondition("  runconfig.num_csx>=2 ");
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->text, "runconfig.num_csx>=2");
    EXPECT_TRUE(c->left.isSubject);
    EXPECT_EQ(c->op, Compare::GreaterEqual);
    EXPECT_FALSE(c->right.isSubject);
    EXPECT_EQ(c->right.text, "2");
    c = parseCondition("loss.final < previous.loss.final");
    ASSERT_TRUE(c.ok());
    EXPECT_TRUE(c->right.isSubject);
    EXPECT_FALSE(parseCondition("loss.final <").ok());
    EXPECT_FALSE(parseCondition("previous.los.final < 3").ok());
    EXPECT_TRUE(parseCondition("optimizer.learning_rate[0].total_iters == 10").ok());
}

TEST(LessonCheck, ConfigValues) {
    config::Config cfg;
    cfg.runconfig.numCsx = 4;
    CheckContext context{&cfg, nullptr, nullptr};
    EXPECT_TRUE(check("runconfig.num_csx >= 2", context).passed);
    EXPECT_FALSE(check("runconfig.num_csx < 2", context).passed);
    EXPECT_EQ(check("runconfig.num_csx < 2", context).detail, "runconfig.num_csx is 4");
    EXPECT_TRUE(check("wafer.spec == WSE2", context).passed);  // words: case-insensitive
    EXPECT_TRUE(check("optimizer.betas[1] == 0.999", context).passed);
    const CheckResult ordered = check("wafer.spec < 3", context);
    EXPECT_FALSE(ordered.passed);
    EXPECT_NE(ordered.detail.find("needs numbers"), std::string::npos);
}

TEST(LessonCheck, RunValuesComeFromEvents) {
    RunObservation run;
    CheckContext context{nullptr, &run, nullptr};
    EXPECT_TRUE(check("run.state == none", context).passed);
    const CheckResult early = check("loss.final < 9", context);
    EXPECT_FALSE(early.passed);
    EXPECT_NE(early.detail.find("no run has started"), std::string::npos);

    run.observe(session::StateChange{session::RunState::Paused, ""});
    streaming::Span stream{0, 0, 0, 2, streaming::SpanKind::StreamIn, 100, 1.0, 1.5};
    stream.backwardPass = true;
    run.observe(stream);
    run.observe(streaming::Span{0, 0, 0, 2, streaming::SpanKind::Backward, 0, 1.5, 2.0});
    session::StepMetrics m;
    m.loss = 5.0;
    run.observe(m);
    m.loss = 4.0;
    run.observe(m);
    EXPECT_TRUE(check("run.state == paused", context).passed);
    EXPECT_TRUE(check("run.phase == backward", context).passed);
    EXPECT_TRUE(check("run.layer == 2", context).passed);
    EXPECT_TRUE(check("run.phase_step == 1", context).passed);
    EXPECT_TRUE(check("run.steps == 2", context).passed);
    EXPECT_TRUE(check("loss.final < loss.first", context).passed);
    EXPECT_TRUE(check("loss.max == 5", context).passed);
    EXPECT_TRUE(check("loss.finite == true", context).passed);
    EXPECT_TRUE(check("run.max_resident_layers == 1", context).passed);
    EXPECT_FALSE(check("loss.max_diff_previous < 1", context).passed);  // no previous run

    m.loss = std::numeric_limits<double>::quiet_NaN();
    run.observe(m);
    EXPECT_TRUE(check("loss.finite == false", context).passed);
}

TEST(LessonCheck, ComparesWithThePreviousRun) {
    RunObservation before, now;
    for (double loss : {5.0, 4.0, 3.0}) {
        session::StepMetrics m;
        m.loss = loss;
        before.observe(m);
        m.loss = loss + 0.01 * loss;
        now.observe(m);
    }
    CheckContext context{nullptr, &now, &before};
    EXPECT_TRUE(check("loss.max_diff_previous < 0.06", context).passed);
    EXPECT_FALSE(check("loss.max_diff_previous < 0.04", context).passed);
    EXPECT_TRUE(check("loss.final > previous.loss.final", context).passed);
    EXPECT_TRUE(check("previous.run.steps == 3", context).passed);
}

TEST(LessonCheck, ResidentLayersCountOverlappingVisits) {
    // Two layers' weights on the wafer at once: layer 2 streams in while layer 1 computes.
    RunObservation run;
    run.observe(streaming::Span{0, 0, 0, 1, streaming::SpanKind::StreamIn, 8, 0.0, 1.0});
    run.observe(streaming::Span{0, 0, 0, 2, streaming::SpanKind::StreamIn, 8, 1.5, 2.5});
    run.observe(streaming::Span{0, 0, 0, 1, streaming::SpanKind::Forward, 0, 1.0, 2.0});
    run.observe(streaming::Span{0, 0, 0, 2, streaming::SpanKind::Forward, 0, 2.5, 3.0});
    EXPECT_EQ(run.maxResidentLayers, 2);
}

}  // namespace
}  // namespace ws::lesson
