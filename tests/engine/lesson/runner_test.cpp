// SPDX-License-Identifier: GPL-3.0-or-later
// The headless lesson runner on real runs of presets/teaching-stream.yaml (a few steps each):
// each action reaches the state it promises, and a failing check is reported as failing.
#include "engine/lesson/lesson_runner.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "engine/modelio/checkpoints.h"
#include "support/temp_dir.h"

namespace ws::lesson {
namespace {

const std::string kHead =
    "title: T\npreset: " WAFER_SOURCE_DIR "/presets/teaching-stream.yaml\nsteps:\n";

struct Fixture {
    ws::testing::TempDir dir{"lesson"};
    Lesson lesson;
    std::unique_ptr<LessonRunner> runner;

    explicit Fixture(const std::string& steps, const std::string& head = kHead,
                     std::chrono::milliseconds timeout = std::chrono::seconds(600)) {
        auto loaded = parseLesson(head + steps, "t.yaml", dir.path());
        if (!loaded.ok()) throw std::runtime_error(loaded.error().message);
        lesson = std::move(*loaded);
        RunnerOptions options;
        options.workDir = dir.path();
        options.cacheDir = dir.path() / "cache";
        options.timeout = timeout;
        runner = std::make_unique<LessonRunner>(lesson, options);
    }
};

bool allPassed(const std::vector<CheckOutcome>& checks) {
    for (const auto& c : checks)
        if (!c.passed) return false;
    return !checks.empty();
}

std::string describe(const StepOutcome& o) {
    std::string text = o.error;
    for (const auto& c : o.expect) text += "\n" + c.text + ": " + c.detail;
    for (const auto& c : o.tryCheck) text += "\ntry " + c.text + ": " + c.detail;
    return text;
}

TEST(LessonRunner, PausesAtTheAskedPhaseAndStepsOn) {
    Fixture f(
        "  - text: to the second block's backward pass\n"
        "    action: {pause_at: {phase: backward, layer: 2}}\n"
        "    expect: [run.state == paused, run.phase == backward, run.layer == 2]\n"
        "  - text: one more phase\n"
        "    action: {step_phases: 1}\n"
        "    expect: [run.phase == backward, run.layer == 1, run.steps == 0]\n"
        "  - text: the embeddings' backward pass, the step's last phase\n"
        "    action: {pause_at: {phase: backward, layer: 0}}\n"
        "    expect: [run.phase == backward, run.layer == 0, run.phase_step == 1]\n"
        "  - text: a target behind the current phase is the next step's\n"
        "    action: {pause_at: {phase: forward, layer: 1}}\n"
        "    expect: [run.phase_step == 2, run.steps == 1]\n");
    for (size_t k = 0; k < 4; ++k) {
        const StepOutcome o = f.runner->runStep(k);
        EXPECT_TRUE(o.passed()) << "step " << k << describe(o);
    }
    EXPECT_EQ(f.runner->current().state, session::RunState::Paused);
    EXPECT_EQ(f.runner->current().layer, 1);
    EXPECT_EQ(f.runner->current().phase, Phase::Forward);
}

// A lesson's run ends with a checkpoint, as `wafer train`'s do: it can be resumed or sampled.
TEST(LessonRunner, ARunEndsWithACheckpoint) {
    Fixture f(
        "  - text: three steps\n"
        "    action: {run_steps: 3}\n");
    const StepOutcome o = f.runner->runStep(0);
    ASSERT_TRUE(o.passed()) << describe(o);
    const auto checkpoints = modelio::listCheckpoints(f.dir.path() / "run-1");
    ASSERT_EQ(checkpoints.size(), 1u);
    EXPECT_EQ(checkpoints.front().first, 3);
}

// An action that cannot finish within the timeout (none at all here, so the check does not
// depend on how fast the machine is) fails with a message naming the step, what it waited for
// and where the run stood, instead of waiting forever; the run is ended.
TEST(LessonRunner, AnActionWithoutProgressTimesOutNamingTheStep) {
    Fixture f(
        "  - title: Pause at the head\n"
        "    text: never in no time\n"
        "    action: {pause_at: {phase: forward, layer: 3}}\n",
        kHead, std::chrono::milliseconds(0));
    const StepOutcome o = f.runner->runStep(0);
    EXPECT_FALSE(o.passed());
    EXPECT_EQ(
        o.error.rfind("step 1 (\"Pause at the head\"), pause after the forward pass of layer 3: "
                      "no progress for 0 ms while waiting for the run to pause after the "
                      "forward pass of layer 3 (",
                      0),
        0u)
        << o.error;
    EXPECT_NE(o.error.find("; the run is "), std::string::npos) << o.error;
    EXPECT_NE(f.runner->current().state, session::RunState::Paused);  // ended, not left paused
}

// A layer the model does not have is never reached: it fails after a whole step of phases,
// however long the timeout.
TEST(LessonRunner, APauseAtALayerTheModelLacksFailsAfterAWholeStep) {
    Fixture f("  - text: nothing\n");
    Action impossible;
    impossible.kind = Action::Kind::PauseAt;
    impossible.layer = 99;
    const Status s = f.runner->perform(impossible);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().message,
              "pause after the forward pass of layer 99 was not reached in a whole step of layer "
              "phases (the model has layers 0 to 3)");
}

TEST(LessonRunner, RunsStepsAndSwitchesSystems) {
    Fixture f(
        "  - text: three steps\n"
        "    action: {run_steps: 3}\n"
        "    expect: [run.steps == 3, run.state == stopped, emulated.step_ms > 0]\n"
        "  - text: two systems\n"
        "    action: {systems: 2}\n"
        "    expect: [runconfig.num_csx == 2, previous.run.steps == 3]\n"
        "  - text: the same three steps on two systems\n"
        "    action: {run_steps: 3}\n"
        "    expect: [run.steps == 3, loss.max_diff_previous < 0.01]\n");
    for (size_t k = 0; k < 3; ++k) {
        const StepOutcome o = f.runner->runStep(k);
        EXPECT_TRUE(o.passed()) << "step " << k << describe(o);
    }
    EXPECT_EQ(f.runner->config().config.runconfig.numCsx, 2);
}

TEST(LessonRunner, AChangeEndsThePausedRun) {
    Fixture f(
        "  - text: paused\n"
        "    action: {pause_at: {phase: forward, layer: 2}}\n"
        "  - text: a config change ends it; the paused run is `previous`\n"
        "    changes: {wafer.weight_buffer_layers: 1}\n"
        "    expect: [previous.run.phase == forward, previous.run.layer == 2, run.state == none]\n"
        "  - text: step_phases needs a paused run\n"
        "    action: {step_phases: 1}\n");
    EXPECT_TRUE(f.runner->runStep(0).passed());
    const StepOutcome changed = f.runner->runStep(1);
    EXPECT_TRUE(changed.passed()) << describe(changed);
    const StepOutcome stepped = f.runner->runStep(2);
    EXPECT_FALSE(stepped.passed());
    EXPECT_NE(stepped.error.find("step_phases needs a paused run"), std::string::npos)
        << stepped.error;
}

TEST(LessonRunner, TriesTheSolutionAndReportsFailingChecks) {
    Fixture f(
        "  - text: the learner switches to two systems\n"
        "    try:\n"
        "      task: Use two systems.\n"
        "      check: runconfig.num_csx == 2\n"
        "      answer: fit.micro_batches\n"
        "      solution: {changes: {runconfig.num_csx: 2}}\n"
        "  - text: a check that fails\n"
        "    action: {run_steps: 2}\n"
        "    expect: [run.steps == 2, loss.final < 0]\n");
    const StepOutcome tried = f.runner->runStep(0);
    EXPECT_FALSE(tried.tryPassedBefore);
    EXPECT_TRUE(allPassed(tried.tryCheck)) << describe(tried);
    EXPECT_TRUE(tried.passed());
    // A question: once the solution is done, the subject it asks for has a value to type.
    ASSERT_EQ(tried.tryCheck.size(), 2u) << describe(tried);
    EXPECT_EQ(tried.tryCheck[1].text, "answer: fit.micro_batches");
    EXPECT_EQ(tried.tryCheck[1].detail, "fit.micro_batches is 1");
    const StepOutcome failing = f.runner->runStep(1);
    EXPECT_FALSE(failing.passed());
    ASSERT_EQ(failing.expect.size(), 2u);
    EXPECT_TRUE(failing.expect[0].passed);
    EXPECT_FALSE(failing.expect[1].passed);
    EXPECT_NE(failing.expect[1].detail.find("loss.final is "), std::string::npos);
    EXPECT_EQ(failing.expect[1].where, "t.yaml:12:30");
}

// presets/teaching-mup.yaml shrunk to a sweep of 2 widths x 2 rates x 2 parametrizations of 4
// steps, written beside the test's lesson.
std::filesystem::path tinyMupPreset(const std::filesystem::path& dir) {
    std::ifstream in(WAFER_SOURCE_DIR "/presets/teaching-mup.yaml");
    std::stringstream buffer;
    buffer << in.rdbuf();
    std::string text = buffer.str();
    const auto replace = [&](const std::string& from, const std::string& to) {
        for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at))
            text.replace(at, from.size(), to), at += to.size();
    };
    replace("values: [16, 32, 64, 128]", "values: [16, 32]");
    replace("model.num_heads: [1, 2, 4, 8]", "model.num_heads: [1, 2]");
    replace("model.filter_size: [64, 128, 256, 512]", "model.filter_size: [64, 128]");
    replace("{min: -11, max: -4, step: 1}", "{min: -8, max: -7, step: 1}");
    replace("max_steps: 100", "max_steps: 4");
    replace("final_loss_steps: 10", "final_loss_steps: 2");
    replace("../resources/corpus", WAFER_SOURCE_DIR "/resources/corpus");
    const auto file = dir / "tiny-mup.yaml";
    std::ofstream(file) << text;
    return file;
}

TEST(LessonRunner, RunsTheCoordCheckAndTheSweep) {
    ws::testing::TempDir presetDir{"lesson-preset"};
    const std::string head =
        "title: T\npreset: " + tinyMupPreset(presetDir.path()).string() + "\nsteps:\n";
    Fixture f(
        "  - text: the coord check\n"
        "    action: {coord_check: {widths: [16, 32], steps: 2}}\n"
        "    expect: [coord.sp.worst_slope > coord.mup.worst_slope, coord.pass == true]\n"
        "  - text: the sweep\n"
        "    action: {sweep: {}}\n"
        "    expect: [sweep.trials == 8, sweep.sp.best_log2_lr_narrowest <= -7,\n"
        "             sweep.mup.drift_log2 <= 1]\n",
        head);
    const StepOutcome coord = f.runner->runStep(0);
    EXPECT_TRUE(coord.passed()) << describe(coord);
    ASSERT_TRUE(f.runner->studies().coordCheck);
    EXPECT_EQ(f.runner->studies().coordWidths, (std::vector<int>{16, 32}));
    const StepOutcome swept = f.runner->runStep(1);
    EXPECT_TRUE(swept.passed()) << describe(swept);
    ASSERT_TRUE(f.runner->studies().sweepTransfer);
    EXPECT_EQ(f.runner->studies().sweepTransfer->size(), 2u);  // sp and mup
}

}  // namespace
}  // namespace ws::lesson

namespace ws::lesson {
namespace {

// The non-blocking driver the studio uses, fed by hand: pause at the head's forward pass of a
// 2-block model, then step two phases.
// check_answers asks the model the run has just trained its run's own held-out records (on the
// chat preset the answer-mask lesson starts from), greedily; the answers are the run's, and once
// a change makes that run `previous` they are `previous.answers.*`.
TEST(LessonRunner, ChecksTheRunsHeldOutAnswers) {
    Fixture f(
        "  - text: a\n    action: {run_steps: 2}\n"
        "  - text: b\n    action: {check_answers: 3}\n"
        "    expect: [answers.cases == 3, \"answers.exact >= 0\", answers.answer_loss > 0]\n"
        "  - text: c\n    changes: {train_input.train_on_inputs: true}\n"
        "    expect: [previous.answers.cases == 3]\n",
        "title: T\npreset: " WAFER_SOURCE_DIR "/presets/finetune-instructions.yaml\nsteps:\n");
    for (size_t k = 0; k < 3; ++k) {
        const StepOutcome o = f.runner->runStep(k);
        ASSERT_TRUE(o.passed()) << "step " << k << ": " << describe(o);
    }
    const RunObservation* checked = f.runner->previous();
    ASSERT_TRUE(checked != nullptr);
    ASSERT_TRUE(checked->answers.has_value());
    const RunObservation::Answers answers = checked->answers.value();
    EXPECT_FALSE(f.runner->current().answers);
    // The same check on the run folder gives the same answers: greedy replies are deterministic.
    auto again = checkRunAnswers(checked->modelDir, 3);
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_EQ(again->exact, answers.exact);
    EXPECT_DOUBLE_EQ(again->answerLoss, answers.answerLoss);
    // A folder that holds no run is named, not crashed on.
    auto none = checkRunAnswers(f.dir.path() / "nothing", 3);
    ASSERT_FALSE(none.ok());
    EXPECT_NE(none.error().message.find("the run's model"), std::string::npos)
        << none.error().message;
}

TEST(LessonActionDriver, SaysWhatToDoAfterEachPause) {
    using Next = ActionDriver::Next;
    const auto paused = session::RunState::Paused;
    Action pauseAt;
    pauseAt.kind = Action::Kind::PauseAt;
    pauseAt.layer = 3;
    ActionDriver driver(pauseAt);
    const ActionDriver::Start start = driver.start(false, 0);
    EXPECT_TRUE(start.newRun);
    EXPECT_TRUE(start.paused);
    RunObservation run;
    EXPECT_EQ(driver.next(run, session::RunState::Preparing, 0), Next::Wait);
    EXPECT_EQ(driver.next(run, paused, 1), Next::StepOnePhase);  // paused before layer 0
    EXPECT_EQ(driver.next(run, paused, 1), Next::Wait);          // not paused again yet
    for (int layer = 0; layer <= 3; ++layer) {
        run.observe(streaming::Span{0, 0, 0, layer, streaming::SpanKind::Forward, 0, 0.0, 1.0});
        EXPECT_EQ(driver.next(run, paused, 2 + layer), layer == 3 ? Next::Done : Next::StepOnePhase)
            << layer;
    }

    Action step;
    step.kind = Action::Kind::StepPhase;
    step.count = 2;
    ActionDriver stepper(step);
    EXPECT_FALSE(stepper.start(true, 5).newRun);
    EXPECT_EQ(stepper.next(run, paused, 5), Next::StepOnePhase);
    EXPECT_EQ(stepper.next(run, paused, 5), Next::Wait);
    EXPECT_EQ(stepper.next(run, paused, 6), Next::StepOnePhase);
    EXPECT_EQ(stepper.next(run, paused, 7), Next::Done);
    EXPECT_EQ(stepper.next(run, session::RunState::Finished, 7), Next::Failed);
    EXPECT_NE(stepper.error().find("the run ended (finished)"), std::string::npos);

    ActionDriver noPause(step);
    EXPECT_FALSE(noPause.start(false, 0).error.empty());
}

// What a timeout message says the driver waited for, and where the run stood.
TEST(LessonActionDriver, SaysWhatItWaitsFor) {
    Action pauseAt;
    pauseAt.kind = Action::Kind::PauseAt;
    pauseAt.phase = Phase::Backward;
    pauseAt.layer = 2;
    ActionDriver driver(pauseAt);
    RunObservation run;
    EXPECT_EQ(driver.waitingFor(run, session::RunState::Preparing),
              "the run to pause after the backward pass of layer 2 (no layer phase computed yet; "
              "the run is preparing)");
    run.observe(streaming::Span{4, 0, 0, 1, streaming::SpanKind::Forward, 0, 0.0, 1.0});
    EXPECT_EQ(driver.waitingFor(run, session::RunState::Paused),
              "the run to pause after the backward pass of layer 2 (the last phase computed: the "
              "forward pass of layer 1 of step 5; the run is paused)");
    Action steps;
    steps.kind = Action::Kind::RunSteps;
    steps.count = 30;
    EXPECT_EQ(ActionDriver(steps).waitingFor(RunObservation{}, session::RunState::Running),
              "the run to train 30 steps, 0 so far (no layer phase computed yet; the run is "
              "running)");
}

}  // namespace
}  // namespace ws::lesson
