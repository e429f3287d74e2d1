// SPDX-License-Identifier: GPL-3.0-or-later
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

// A try-it's question (issue 31): Check passes on the right answer only, and a wrong answer's
// detail does not give the right one away.
TEST(LessonCheck, AnswersAreComparedWithTheSubjectWithoutGivingItAway) {
    config::Config cfg;
    cfg.runconfig.numCsx = 4;
    cfg.wafer.spec = "wse2";
    const CheckContext context{&cfg, nullptr, nullptr};
    EXPECT_TRUE(evaluateAnswer("runconfig.num_csx", "4", context).passed);
    EXPECT_TRUE(evaluateAnswer("runconfig.num_csx", " 4.0 ", context).passed);
    EXPECT_TRUE(evaluateAnswer("wafer.spec", "WSE2", context).passed);
    const CheckResult wrong = evaluateAnswer("runconfig.num_csx", "2", context);
    EXPECT_FALSE(wrong.passed);
    EXPECT_EQ(wrong.detail.find('4'), std::string::npos) << wrong.detail;
    const CheckResult empty = evaluateAnswer("runconfig.num_csx", "  ", context);
    EXPECT_FALSE(empty.passed);
    EXPECT_NE(empty.detail.find("type your answer"), std::string::npos) << empty.detail;
    // A subject with no value yet (no run) cannot be answered.
    const CheckResult noRun = evaluateAnswer("run.steps", "0", context);
    EXPECT_FALSE(noRun.passed);
    EXPECT_NE(noRun.detail.find("no run has started"), std::string::npos) << noRun.detail;
    EXPECT_EQ(subjectValue("runconfig.num_csx", context), std::optional<std::string>("4"));
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

// A check_answers action's result belongs to its run: `answers.*` reads the current run's,
// `previous.answers.*` the run before it, and a run never checked says so.
TEST(LessonCheck, AnswersBelongToTheirRun) {
    RunObservation before, now;
    before.started = now.started = true;
    before.answers = RunObservation::Answers{20, 4, 1.25};
    CheckContext context{nullptr, &now, &before};
    std::string why;
    EXPECT_FALSE(subjectValue("answers.exact", context, &why).has_value());
    EXPECT_NE(why.find("a check_answers action"), std::string::npos) << why;
    now.answers = RunObservation::Answers{20, 13, 0.5};
    EXPECT_EQ(subjectValue("answers.exact", context), "13");
    EXPECT_EQ(subjectValue("answers.cases", context), "20");
    EXPECT_EQ(subjectValue("answers.exact_percent", context), "65");
    EXPECT_EQ(subjectValue("previous.answers.exact_percent", context), "20");
    EXPECT_TRUE(check("answers.exact > previous.answers.exact", context).passed);
    EXPECT_TRUE(check("answers.answer_loss < previous.answers.answer_loss", context).passed);
    EXPECT_FALSE(check("answers.answer_loss > 0.6", context).passed);
    auto typo = parseCondition("answers.exactly > 3");
    ASSERT_FALSE(typo.ok());
    EXPECT_NE(typo.error().message.find("did you mean `answers.exact`?"), std::string::npos)
        << typo.error().message;
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

// A prediction of a 1-block model (layers 0, 1, 2) whose block's forward frame is uneven.
std::shared_ptr<wafer::StepPrediction> unevenPrediction() {
    auto p = std::make_shared<wafer::StepPrediction>();
    p->stepS = 0.010;
    p->split.compute = 0.006;
    p->split.streaming = 0.001;
    for (const char* name : {"embeddings", "h.0", "head"}) {
        wafer::LayerTiming t;
        t.layer = name;
        t.computeS = 0.001;
        t.weightStreamS = 0.0005;
        p->layers.push_back(t);
    }
    p->layers[1].computeS = 0.002;
    wafer::LayerTiming backward = p->layers[1];
    backward.pass = wafer::Pass::Backward;
    backward.computeS = 0.004;
    p->layers.push_back(backward);
    wafer::UtilizationFrame frame;
    frame.label = "h.0 forward";
    frame.min = 0.25;
    frame.max = 0.9;
    frame.mean = 0.5;
    p->frames = {frame};
    p->forwardFrame = {-1, 0, -1};
    p->backwardFrame = {-1, -1, -1};
    return p;
}

TEST(LessonCheck, EmulatedPhaseFiguresComeFromThePrediction) {
    RunObservation run;
    CheckContext context{nullptr, &run, nullptr};
    run.observe(session::EmulatedStep{0, 0.0, unevenPrediction()});
    EXPECT_TRUE(check("emulated.compute_ms == 6", context).passed);
    EXPECT_TRUE(check("emulated.weight_wait_ms == 1", context).passed);
    EXPECT_TRUE(check("emulated.weight_stream_ms == 2", context).passed);  // 4 x 0.5 ms
    const CheckResult none = check("emulated.phase_busy_min_percent < 50", context);
    EXPECT_FALSE(none.passed);
    EXPECT_NE(none.detail.find("no layer phase has been computed yet"), std::string::npos)
        << none.detail;

    run.observe(streaming::Span{0, 0, 0, 1, streaming::SpanKind::Forward, 0, 1.0, 2.0});
    EXPECT_TRUE(check("emulated.phase_busy_min_percent == 25", context).passed);
    EXPECT_TRUE(check("emulated.phase_busy_max_percent == 90", context).passed);
    EXPECT_TRUE(check("emulated.phase_busy_mean_percent == 50", context).passed);
    EXPECT_TRUE(check("emulated.phase_compute_ms == 2", context).passed);
    run.observe(streaming::Span{0, 0, 0, 1, streaming::SpanKind::Backward, 0, 3.0, 4.0});
    EXPECT_TRUE(check("emulated.phase_compute_ms == 4", context).passed);
    const CheckResult noFrame = check("emulated.phase_busy_max_percent > 0", context);
    EXPECT_FALSE(noFrame.passed);
    EXPECT_NE(noFrame.detail.find("no busy frame"), std::string::npos) << noFrame.detail;
}

TEST(LessonCheck, StudySubjectsReadTheLastStudies) {
    StudyObservation studies;
    CheckContext context{nullptr, nullptr, nullptr, &studies};
    const CheckResult before = check("coord.pass == true", context);
    EXPECT_FALSE(before.passed);
    EXPECT_NE(before.detail.find("no coord check has run yet"), std::string::npos) << before.detail;
    EXPECT_NE(check("sweep.sp.drift_log2 > 1", context).detail.find("no sweep has run yet"),
              std::string::npos);

    mup::CoordCheckResult coord;
    coord.worstSpSlope = 1.1;
    coord.worstMupSlope = -0.05;
    coord.pass = true;
    studies.coordCheck = coord;
    EXPECT_TRUE(check("coord.pass == true", context).passed);
    EXPECT_TRUE(check("coord.sp.worst_slope > 0.5", context).passed);
    EXPECT_TRUE(check("coord.mup.worst_slope < coord.sp.worst_slope", context).passed);

    sweep::ParametrizationTransfer sp, mup;
    sp.parametrization = "sp";
    sp.gridStep = 1.0;
    sp.driftSteps = 3.0;
    sp.regret = 0.2;
    const auto optimum = [](double width, double bestLog2Lr) {
        sweep::WidthOptimum w;
        w.width = width;
        w.bestLog2Lr = bestLog2Lr;
        return w;
    };
    sp.widths = {optimum(16, -7), optimum(128, -10)};
    mup.parametrization = "mup";
    mup.gridStep = 0.5;
    mup.driftSteps = 1.0;
    mup.widths = {optimum(16, -5), optimum(128, -5)};
    studies.sweepTransfer = std::vector{sp, mup};
    studies.sweepTrials = 32;
    EXPECT_TRUE(check("sweep.trials == 32", context).passed);
    EXPECT_TRUE(check("sweep.sp.drift_log2 == 3", context).passed);
    EXPECT_TRUE(check("sweep.mup.drift_log2 == 0.5", context).passed);  // steps x grid step
    EXPECT_TRUE(check("sweep.sp.best_log2_lr_widest == -10", context).passed);
    EXPECT_TRUE(
        check("sweep.mup.best_log2_lr_narrowest == sweep.mup.best_log2_lr_widest", context).passed);
    EXPECT_TRUE(check("sweep.sp.regret > 0.1", context).passed);
    const CheckResult unknown = check("sweep.mup.regret < 1", context);
    EXPECT_FALSE(unknown.passed);  // NaN: the sweep could not tell
    EXPECT_NE(unknown.detail.find("cannot tell"), std::string::npos) << unknown.detail;

    // Studies are not runs: they have no previous.
    auto previous = parseCondition("previous.sweep.trials > 1");
    ASSERT_FALSE(previous.ok());
    EXPECT_NE(previous.error().message.find("unknown subject"), std::string::npos);
    auto typo = parseCondition("sweep.mup.drift < 1");
    ASSERT_FALSE(typo.ok());
    EXPECT_NE(typo.error().message.find("did you mean `sweep.mup.drift_log2`?"), std::string::npos)
        << typo.error().message;
}

}  // namespace
}  // namespace ws::lesson
