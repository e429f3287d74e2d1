// SPDX-License-Identifier: GPL-3.0-or-later
// Lesson files: every field read as written, the bundled lessons load, and every kind of error
// is reported at its file, line and column with the key path and what is allowed.
#include "engine/lesson/lesson.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace ws::lesson {
namespace {

const std::filesystem::path kLessonDir =
    std::filesystem::path(WAFER_SOURCE_DIR) / "resources" / "lessons";

Result<Lesson> parse(const std::string& text) {
    return parseLesson(text, "t.yaml", kLessonDir);
}

// The error of a lesson that must not load.
std::string errorOf(const std::string& text) {
    auto lesson = parse(text);
    EXPECT_FALSE(lesson.ok()) << "loaded:\n" << text;
    return lesson.ok() ? std::string() : lesson.error().message;
}

const std::string kHead =
    "title: T\n"
    "preset: ../../presets/teaching-stream.yaml\n"
    "steps:\n";

TEST(Lesson, ReadsEveryField) {
    auto lesson = parse(
        "title: \"Weight streaming\"\n"
        "summary: One step.\n"
        "preset: ../../presets/teaching-stream.yaml\n"
        "steps:\n"
        "  - title: First\n"
        "    text: |\n"
        "      Hello\n"
        "      world\n"
        "    formula: \"a = b\"\n"
        "    changes: {runconfig.max_steps: 50, optimizer.betas: [0.9, 0.99]}\n"
        "    action: {pause_at: {phase: backward, layer: 2}}\n"
        "    view: wafer/timeline\n"
        "    highlight: step_layer_button\n"
        "    expect: [run.phase == backward, \"run.layer >= 2\"]\n"
        "    try:\n"
        "      task: Switch to two systems.\n"
        "      hint: The Config tab.\n"
        "      check: runconfig.num_csx >= 2\n"
        "      solution:\n"
        "        changes: {runconfig.num_csx: 2}\n"
        "        action: {run_steps: 3}\n"
        "  - text: Second\n"
        "    action: {systems: 4}\n"
        "    view: training\n"
        "  - text: Third\n"
        "    action: {step_phases: 2}\n");
    ASSERT_TRUE(lesson.ok()) << lesson.error().message;
    EXPECT_EQ(lesson->title, "Weight streaming");
    EXPECT_EQ(lesson->summary, "One step.");
    EXPECT_EQ(lesson->preset.filename(), "teaching-stream.yaml");
    EXPECT_EQ(lesson->start.config.model.name, "teaching-stream");
    ASSERT_EQ(lesson->steps.size(), 3u);
    const LessonStep& s = lesson->steps[0];
    EXPECT_EQ(s.title, "First");
    EXPECT_EQ(s.text, "Hello\nworld\n");
    EXPECT_EQ(s.formula, "a = b");
    ASSERT_EQ(s.changes.size(), 2u);
    EXPECT_EQ(s.changes[0].override(), "runconfig.max_steps=50");
    EXPECT_EQ(s.changes[1].override(), "optimizer.betas=[0.9, 0.99]");
    EXPECT_EQ(s.changes[0].where, "t.yaml:10:15");
    EXPECT_EQ(s.action.kind, Action::Kind::PauseAt);
    EXPECT_EQ(s.action.phase, Phase::Backward);
    EXPECT_EQ(s.action.layer, 2);
    EXPECT_EQ(s.view, View::Wafer);
    EXPECT_EQ(s.subView, "timeline");
    EXPECT_EQ(s.highlight, "step_layer_button");
    ASSERT_EQ(s.expect.size(), 2u);
    EXPECT_EQ(s.expect[1].text, "run.layer >= 2");
    EXPECT_EQ(s.expect[1].op, Compare::GreaterEqual);
    ASSERT_TRUE(s.tryIt);
    EXPECT_EQ(s.tryIt->task, "Switch to two systems.");
    EXPECT_EQ(s.tryIt->hint, "The Config tab.");
    ASSERT_EQ(s.tryIt->check.size(), 1u);
    EXPECT_EQ(s.tryIt->check[0].left.text, "runconfig.num_csx");
    EXPECT_EQ(s.tryIt->solutionChanges.size(), 1u);
    EXPECT_EQ(s.tryIt->solutionAction.kind, Action::Kind::RunSteps);
    EXPECT_EQ(s.tryIt->solutionAction.count, 3);
    EXPECT_EQ(lesson->steps[1].action.kind, Action::Kind::Systems);
    EXPECT_EQ(lesson->steps[1].view, View::Training);
    EXPECT_TRUE(lesson->steps[1].subView.empty());
    EXPECT_EQ(lesson->steps[2].action.kind, Action::Kind::StepPhase);
    EXPECT_EQ(lesson->steps[2].action.count, 2);

    // The config each step acts on: the preset plus every change so far (solutions included
    // when the learner is assumed to have done the try-it).
    auto first = configAtStep(*lesson, 0, true);
    ASSERT_TRUE(first.ok()) << first.error().message;
    EXPECT_EQ(first->config.runconfig.maxSteps, 50);
    EXPECT_EQ(first->config.runconfig.numCsx, 1);  // its own try-it is not done yet
    auto second = configAtStep(*lesson, 1, false);
    ASSERT_TRUE(second.ok());
    EXPECT_EQ(second->config.runconfig.numCsx, 4);
    EXPECT_EQ(second->config.optimizer.betas[1], 0.99);
}

TEST(Lesson, EveryBundledLessonLoads) {
    const auto lessons = listLessons(kLessonDir);
    ASSERT_GE(lessons.size(), 4u);
    for (const auto& entry : lessons) {
        EXPECT_TRUE(entry.error.empty()) << entry.file << ": " << entry.error;
        EXPECT_FALSE(entry.title.empty()) << entry.file;
    }
    EXPECT_EQ(lessons.front().file.filename(), "01-weight-streaming.yaml");
}

TEST(LessonErrors, UnknownKeysSayWhatTheyMightBe) {
    const std::string e = errorOf(
        "titel: T\n"
        "preset: ../../presets/teaching-stream.yaml\n"
        "steps:\n"
        "  - text: a\n"
        "    acton: {run_steps: 2}\n");
    EXPECT_NE(e.find("t.yaml:1:1: titel: unknown key; did you mean `title`?"), std::string::npos)
        << e;
    EXPECT_NE(e.find("t.yaml:5:5: steps[0].acton: unknown key; did you mean `action`?"),
              std::string::npos)
        << e;
}

TEST(LessonErrors, MalformedYamlHasItsPosition) {
    const std::string e = errorOf("title: [unclosed\n");
    EXPECT_NE(e.find("t.yaml:"), std::string::npos) << e;
    EXPECT_NE(e.find("malformed YAML"), std::string::npos) << e;
}

TEST(LessonErrors, MissingPartsAreNamed) {
    std::string e = errorOf("title: T\nsteps: []\n");
    EXPECT_NE(e.find("preset: every lesson starts from a preset"), std::string::npos) << e;
    EXPECT_NE(e.find("steps: expected a list of steps"), std::string::npos) << e;
    e = errorOf(kHead + "  - title: no text\n");
    EXPECT_NE(e.find("t.yaml:4:5: steps[0]: needs a `text`"), std::string::npos) << e;
    e = errorOf(kHead + "  - text: a\n    try: {task: do it}\n");
    EXPECT_NE(e.find("t.yaml:5:10: steps[0].try: needs a `check`"), std::string::npos) << e;
    e = errorOf("title: T\npreset: nowhere.yaml\nsteps:\n  - text: a\n");
    EXPECT_NE(e.find("t.yaml:2:9: preset: the preset does not load"), std::string::npos) << e;
    e = errorOf(kHead + "  - text: a\n    figure: figures/none.png\n");
    EXPECT_NE(e.find("t.yaml:5:13: steps[0].figure: no such image"), std::string::npos) << e;
}

// Issue 31: a hand edit made the `preset:` line run on into the next, more indented line, which
// YAML joins into one plain value: a path with a component past the system's 255 bytes. Every
// file system call on it threw std::filesystem::filesystem_error ("File name too long"), which
// stopped the studio at start and `wafer lesson check` (exit 134). Now it is the preset's error.
const std::string kRunOnPreset =
    "title: T\n"
    "preset: ../../presets/teaching-stream.yaml\n"
    "  and the next line of the hand edit runs on and on and on and on and on and on and on and "
    "on and on and on and on and on and on and on and on and on and on and on and on and on and "
    "on and on and on and on and on and on and on and on and on and on and on and on and on\n"
    "steps:\n"
    "  - text: a\n";

TEST(LessonErrors, APathPastTheSystemsLimitIsAnErrorNotACrash) {
    std::string e = errorOf(kRunOnPreset);
    EXPECT_NE(e.find("t.yaml:2:9: preset: the preset does not load: "), std::string::npos) << e;
    EXPECT_NE(e.find("cannot be read (File name too long)"), std::string::npos) << e;
    EXPECT_NE(e.find("did the `preset:` line run on into the next"), std::string::npos) << e;
    // A figure's name past the limit, and a preset that is not a file (reading /dev/zero would
    // never end).
    e = errorOf(kHead + "  - text: a\n    figure: figures/" + std::string(300, 'x') + ".png\n");
    EXPECT_NE(e.find("t.yaml:5:13: steps[0].figure: cannot read the image"), std::string::npos)
        << e;
    EXPECT_NE(e.find("(File name too long)"), std::string::npos) << e;
    e = errorOf("title: T\npreset: /dev/zero\nsteps:\n  - text: a\n");
    EXPECT_NE(e.find("preset: the preset does not load: /dev/zero is not a file"),
              std::string::npos)
        << e;
}

// The studio and `wafer lesson list` read a whole folder: a lesson that does not load is listed
// with its error, beside the ones that do.
TEST(Lesson, AFolderWithABrokenLessonListsItWithItsError) {
    namespace fs = std::filesystem;
    const fs::path root =
        fs::temp_directory_path() / ("wafer-lesson-list-" + std::to_string(::getpid()));
    const fs::path dir = root / "resources" / "lessons";  // as shipped: presets two folders up
    fs::create_directories(dir);
    fs::create_directory_symlink(fs::path(WAFER_SOURCE_DIR) / "presets", root / "presets");
    fs::create_directory_symlink(kLessonDir / "figures", dir / "figures");
    fs::copy_file(kLessonDir / "07-learning-rate-too-high.yaml", dir / "07-good.yaml");
    std::ofstream(dir / "08-runs-on.yaml") << kRunOnPreset;
    const auto lessons = listLessons(dir);
    ASSERT_EQ(lessons.size(), 2u);
    EXPECT_TRUE(lessons[0].error.empty()) << lessons[0].error;
    EXPECT_FALSE(lessons[0].title.empty());
    EXPECT_TRUE(lessons[1].title.empty());
    EXPECT_NE(lessons[1].error.find("08-runs-on.yaml:2:9: preset: "), std::string::npos)
        << lessons[1].error;
    EXPECT_NE(lessons[1].error.find("File name too long"), std::string::npos) << lessons[1].error;
    EXPECT_FALSE(loadLesson(dir / "08-runs-on.yaml").ok());
    std::error_code ec;
    fs::remove_all(root, ec);
}

TEST(LessonErrors, ViewsAndHighlightsAreChecked) {
    std::string e = errorOf(kHead + "  - text: a\n    view: wafr\n");
    EXPECT_NE(e.find("t.yaml:5:11: steps[0].view: unknown view \"wafr\"; did you mean `wafer`?"),
              std::string::npos)
        << e;
    e = errorOf(kHead + "  - text: a\n    view: wafer/timelime\n");
    EXPECT_NE(e.find("unknown view \"timelime\" in the wafer tab; did you mean `timeline`? "
                     "(allowed: heatmap, timeline, cluster, layer_norms)"),
              std::string::npos)
        << e;
    e = errorOf(kHead + "  - text: a\n    highlight: step_layer\n");
    EXPECT_NE(e.find("t.yaml:5:16: steps[0].highlight: expected one of"), std::string::npos) << e;
    EXPECT_NE(e.find("\"step_layer_button\""), std::string::npos) << e;
}

TEST(LessonErrors, ActionsAreChecked) {
    std::string e = errorOf(kHead + "  - text: a\n    action: {run_steps: 0}\n");
    EXPECT_NE(e.find("t.yaml:5:25: steps[0].action.run_steps: expected an integer >= 1, found "
                     "\"0\""),
              std::string::npos)
        << e;
    e = errorOf(kHead + "  - text: a\n    action: {run_steps: 2, systems: 2}\n");
    EXPECT_NE(e.find("t.yaml:5:13: steps[0].action: one action per step"), std::string::npos) << e;
    e = errorOf(kHead + "  - text: a\n    action: {pause_at: {phase: sideways, layer: 1}}\n");
    EXPECT_NE(e.find("t.yaml:5:32: steps[0].action.pause_at.phase: expected one of \"forward\", "
                     "\"backward\""),
              std::string::npos)
        << e;
    e = errorOf(kHead + "  - text: a\n    action: {pause_at: {phase: forward, layer: 9}}\n");
    EXPECT_NE(e.find("t.yaml:5:13: steps[0].action.pause_at.layer: the model has layers 0 "
                     "(embeddings) to 3 (the head), found 9"),
              std::string::npos)
        << e;
    e = errorOf(kHead + "  - text: a\n    action: {jump: 3}\n");
    EXPECT_NE(e.find("steps[0].action.jump: unknown key"), std::string::npos) << e;
}

TEST(LessonErrors, ChangesAreAppliedToThePreset) {
    std::string e = errorOf(kHead + "  - text: a\n    changes: {runconfig.num_cx: 2}\n");
    EXPECT_NE(e.find("t.yaml:5:15: steps[0].changes.runconfig.num_cx: "), std::string::npos) << e;
    EXPECT_NE(e.find("did you mean runconfig.num_csx?"), std::string::npos) << e;
    EXPECT_EQ(e.find("--set"), std::string::npos) << e;
    // Cross-field rules hold at every step: 8 sequences do not split over 3 systems.
    e = errorOf(kHead + "  - text: a\n  - text: b\n    action: {systems: 3}\n");
    EXPECT_NE(e.find("t.yaml:5:5: steps[1]: the config after this step's changes is invalid:"),
              std::string::npos)
        << e;
    // A step that trains on a config its wafer cannot hold.
    e = errorOf(kHead +
                "  - text: a\n    changes: {model.hidden_size: 1024, model.filter_size: 4096}\n"
                "    action: {run_steps: 1}\n");
    EXPECT_NE(e.find("steps[0]: the config after this step's changes does not fit its wafer"),
              std::string::npos)
        << e;
    // ... but showing such a config without training on it is allowed.
    EXPECT_TRUE(parse(kHead + "  - text: a\n    changes: {model.hidden_size: 1024, "
                              "model.filter_size: 4096}\n    expect: fit.ok == false\n")
                    .ok());
}

TEST(LessonErrors, ChecksAreParsed) {
    std::string e = errorOf(kHead + "  - text: a\n    expect: [run.phaze == forward]\n");
    EXPECT_NE(e.find("t.yaml:5:14: steps[0].expect[0]: unknown subject `run.phaze`; did you "
                     "mean `run.phase`?"),
              std::string::npos)
        << e;
    e = errorOf(kHead + "  - text: a\n    expect: [run.phase is forward]\n");
    EXPECT_NE(e.find("steps[0].expect[0]: expected `subject op value`"), std::string::npos) << e;
    e = errorOf(kHead + "  - text: a\n    try: {task: t, check: [runconfig.num_csxx >= 2]}\n");
    EXPECT_NE(e.find("steps[0].try.check[0]: unknown subject `runconfig.num_csxx`; did you mean "
                     "`runconfig.num_csx`?"),
              std::string::npos)
        << e;
}

const std::string kMupHead =
    "title: T\n"
    "preset: ../../presets/teaching-mup.yaml\n"
    "steps:\n";

TEST(Lesson, ReadsStudyActions) {
    auto lesson = parse(kMupHead +
                        "  - text: a\n    action: {coord_check: {widths: [16, 32], steps: 3}}\n"
                        "    view: sweeps/coord_check\n    highlight: coord_check\n"
                        "    expect: [coord.mup.worst_slope < coord.sp.worst_slope]\n"
                        "  - text: b\n    action: {coord_check: {widths: [16, 64]}}\n"
                        "  - text: c\n    action: {sweep: {}}\n"
                        "    expect: [sweep.mup.drift_log2 <= 1, \"sweep.trials >= 2\"]\n");
    ASSERT_TRUE(lesson.ok()) << lesson.error().message;
    const Action& coord = lesson->steps[0].action;
    EXPECT_EQ(coord.kind, Action::Kind::CoordCheck);
    EXPECT_EQ(coord.widths, (std::vector<int>{16, 32}));
    EXPECT_EQ(coord.count, 3);
    EXPECT_EQ(lesson->steps[1].action.count, 10);  // `wafer coord-check`'s default steps
    EXPECT_EQ(lesson->steps[2].action.kind, Action::Kind::Sweep);
    EXPECT_EQ(describeAction(coord),
              "run the coord check at widths 16, 32 (3 steps each, SP and μP)");
    EXPECT_EQ(describeAction(lesson->steps[2].action), "run the config's sweep");
}

const std::string kChatHead =
    "title: T\n"
    "preset: ../../presets/finetune-instructions.yaml\n"
    "steps:\n";

TEST(Lesson, ReadsAnAnswerCheck) {
    auto lesson = parse(kChatHead +
                        "  - text: a\n    action: {run_steps: 2}\n"
                        "  - text: b\n    action: {check_answers: 5}\n    view: answers\n"
                        "    highlight: answers_table\n"
                        "    expect: [answers.exact >= 0, answers.cases == 5]\n"
                        "  - text: c\n    view: chat\n    highlight: chat_transcript\n");
    ASSERT_TRUE(lesson.ok()) << lesson.error().message;
    const Action& a = lesson->steps[1].action;
    EXPECT_EQ(a.kind, Action::Kind::CheckAnswers);
    EXPECT_EQ(a.count, 5);
    EXPECT_EQ(lesson->steps[1].view, View::Answers);
    EXPECT_EQ(lesson->steps[2].view, View::Chat);
    EXPECT_EQ(describeAction(a), "check the run's answers to 5 held-out records");
    // Saved and read back: the same action.
    auto again = parseLesson(saveLessonYaml(*lesson, kLessonDir), "t.yaml", kLessonDir);
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_EQ(again->steps[1].action.kind, Action::Kind::CheckAnswers);
    EXPECT_EQ(again->steps[1].action.count, 5);
}

// An answer check needs chat data (plain text has no answers) and a run of the config as it
// stands (a change makes the run `previous`): both are refused when the lesson loads, not when
// a class reaches the step.
TEST(LessonErrors, AnswerChecksAreChecked) {
    std::string e = errorOf(kHead +
                            "  - text: a\n    action: {run_steps: 2}\n"
                            "  - text: b\n    action: {check_answers: 5}\n");
    EXPECT_NE(e.find("t.yaml:7:13: steps[1].action.check_answers: the config trains on plain "
                     "text, which has no answers to check"),
              std::string::npos)
        << e;
    e = errorOf(kChatHead + "  - text: a\n    action: {check_answers: 5}\n");
    EXPECT_NE(e.find("steps[0].action.check_answers: no run has trained on the config as it "
                     "stands"),
              std::string::npos)
        << e;
    e = errorOf(kChatHead +
                "  - text: a\n    action: {run_steps: 2}\n"
                "  - text: b\n    changes: {train_input.train_on_inputs: true}\n"
                "    action: {check_answers: 5}\n");
    EXPECT_NE(e.find("steps[1].action.check_answers: no run has trained"), std::string::npos) << e;
    e = errorOf(kChatHead +
                "  - text: a\n    action: {run_steps: 2}\n"
                "  - text: b\n    action: {check_answers: 0}\n");
    EXPECT_NE(e.find("steps[1].action.check_answers: expected an integer in [1, 1000], found "
                     "\"0\""),
              std::string::npos)
        << e;
    // The try-it's solution may train and then the next step checks.
    auto ok = parse(kChatHead +
                    "  - text: a\n    try:\n      task: t\n      check: [run.steps == 2]\n"
                    "      solution: {action: {run_steps: 2}}\n"
                    "  - text: b\n    action: {check_answers: 3}\n");
    EXPECT_TRUE(ok.ok()) << ok.error().message;
}

TEST(LessonErrors, StudyActionsAreChecked) {
    // Widths the coord check cannot train, with the coord check's own reason.
    std::string e =
        errorOf(kMupHead + "  - text: a\n    action: {coord_check: {widths: [16, 24]}}\n");
    EXPECT_NE(e.find("t.yaml:5:13: steps[0].action.coord_check.widths: width 24 is not a "
                     "multiple of the head size 16"),
              std::string::npos)
        << e;
    e = errorOf(kMupHead + "  - text: a\n    action: {coord_check: {widths: [16]}}\n");
    EXPECT_NE(e.find("t.yaml:5:36: steps[0].action.coord_check.widths: needs at least two "
                     "widths"),
              std::string::npos)
        << e;
    e = errorOf(kMupHead + "  - text: a\n    action: {coord_check: {width: [16, 32]}}\n");
    EXPECT_NE(e.find("steps[0].action.coord_check.width: unknown key"), std::string::npos) << e;
    EXPECT_NE(e.find("did you mean `widths`?"), std::string::npos) << e;
    e = errorOf(kMupHead +
                "  - text: a\n    action: {coord_check: {widths: [16, 32], steps: 0}}\n");
    EXPECT_NE(e.find("t.yaml:5:53: steps[0].action.coord_check.steps: expected an integer in "
                     "[1, 1000], found \"0\""),
              std::string::npos)
        << e;
    e = errorOf(kMupHead + "  - text: a\n    action: {coord_check: [16, 32]}\n");
    EXPECT_NE(e.find("steps[0].action.coord_check: expected {widths: [16, 32, 64], steps: N}"),
              std::string::npos)
        << e;
    // μP off in the config: nothing to compare SP with.
    e = errorOf(kHead + "  - text: a\n    action: {coord_check: {widths: [64, 128]}}\n");
    EXPECT_NE(e.find("steps[0].action.coord_check.widths: the coord check compares SP with muP, "
                     "but the config has muP off"),
              std::string::npos)
        << e;
    // A sweep needs a config with a sweep: section that plans.
    e = errorOf(kHead + "  - text: a\n    action: {sweep: {}}\n");
    EXPECT_NE(e.find("t.yaml:5:13: steps[0].action.sweep: the config has no sweep: section"),
              std::string::npos)
        << e;
    e = errorOf(kMupHead + "  - text: a\n    action: {sweep: {seeds: 2}}\n");
    EXPECT_NE(e.find("t.yaml:5:21: steps[0].action.sweep: expected `sweep: {}`"), std::string::npos)
        << e;
    e = errorOf(kMupHead + "  - text: a\n    action: {swep: {}}\n");
    EXPECT_NE(e.find("steps[0].action.swep: unknown key"), std::string::npos) << e;
    EXPECT_NE(e.find("did you mean `sweep`?"), std::string::npos) << e;
    e = errorOf(kMupHead +
                "  - text: a\n    action: {sweep: {}, coord_check: {widths: [16, 32]}}\n");
    EXPECT_NE(e.find("steps[0].action: one action per step"), std::string::npos) << e;
    e = errorOf(kMupHead +
                "  - text: a\n    changes: {sweep.parametrization: [sp, mp]}\n"
                "    action: {sweep: {}}\n");
    EXPECT_NE(e.find("t.yaml:6:13: steps[0].action.sweep: the sweep cannot be planned"),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("mp is not defined in sweep.parametrizations (defined: sp, mup)"),
              std::string::npos)
        << e;
}

TEST(LessonErrors, EveryProblemIsReportedInOnePass) {
    const std::string e = errorOf(kHead +
                                  "  - text: a\n    view: wafr\n"
                                  "  - text: b\n    highlight: nothing\n");
    EXPECT_NE(e.find("steps[0].view"), std::string::npos) << e;
    EXPECT_NE(e.find("steps[1].highlight"), std::string::npos) << e;
}

}  // namespace
}  // namespace ws::lesson

namespace ws::lesson {
namespace {

// Everything a lesson says, without the file positions (which move when it is saved again).
std::string contentOf(const Lesson& l) {
    std::string s = l.title + "|" + l.summary + "|" + l.preset.string();
    const auto checks = [](const std::vector<Condition>& cs) {
        std::string t;
        for (const auto& c : cs) t += c.text + ";";
        return t;
    };
    const auto changes = [](const std::vector<Change>& cs) {
        std::string t;
        for (const auto& c : cs) t += c.override() + ";";
        return t;
    };
    for (const LessonStep& st : l.steps) {
        s += "\n" + st.title + "|" + st.text + "|" + st.figure.string() + "|" + st.formula + "|" +
             changes(st.changes) + "|" + describeAction(st.action) + "|" + viewName(st.view) + "/" +
             st.subView + "|" + st.highlight + "|" + checks(st.expect);
        if (st.tryIt)
            s += "|try " + st.tryIt->task + "|" + st.tryIt->hint + "|" + checks(st.tryIt->check) +
                 "|" + changes(st.tryIt->solutionChanges) + "|" +
                 describeAction(st.tryIt->solutionAction) + "|answer " + st.tryIt->answer;
    }
    return s;
}

// Saving a lesson gives text that reads back to the same lesson, for every bundled lesson (they
// use every field between them) and one with changes of every value shape.
TEST(Lesson, SavedLessonsReadBackTheSame) {
    std::vector<std::filesystem::path> files;
    for (const auto& entry : listLessons(kLessonDir)) files.push_back(entry.file);
    ASSERT_FALSE(files.empty());
    for (const auto& file : files) {
        auto lesson = loadLesson(file);
        ASSERT_TRUE(lesson.ok()) << lesson.error().message;
        const std::string text = saveLessonYaml(*lesson, kLessonDir);
        auto again = parseLesson(text, "saved.yaml", kLessonDir);
        ASSERT_TRUE(again.ok()) << file << ":\n" << again.error().message << "\n" << text;
        EXPECT_EQ(contentOf(*again), contentOf(*lesson)) << text;
        EXPECT_EQ(saveLessonYaml(*again, kLessonDir), text);
    }
    auto shapes = parse(kHead +
                        "  - text: \"a: b\"\n"
                        "    changes: {optimizer.betas: [0.9, 0.99], runconfig.max_steps: 7,\n"
                        "              model.name: \"x y\"}\n"
                        "    try: {task: t, check: \"runconfig.num_csx != 3\",\n"
                        "          solution: {changes: {runconfig.num_csx: 2}}}\n");
    ASSERT_TRUE(shapes.ok()) << shapes.error().message;
    auto again = parseLesson(saveLessonYaml(*shapes, kLessonDir), "saved.yaml", kLessonDir);
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_EQ(contentOf(*again), contentOf(*shapes));
}

// A try-it may ask a question (issue 31): `answer` names the subject whose value the learner
// types; it must be a subject a check could name.
TEST(Lesson, ReadsATryItsQuestion) {
    auto lesson = parse(kHead +
                        "  - text: How many micro-batches?\n"
                        "    try:\n"
                        "      task: Count them.\n"
                        "      check: wafer.weight_buffer_layers == 2\n"
                        "      answer: fit.micro_batches\n");
    ASSERT_TRUE(lesson.ok()) << lesson.error().message;
    ASSERT_TRUE(lesson->steps[0].tryIt);
    EXPECT_EQ(lesson->steps[0].tryIt->answer, "fit.micro_batches");
    auto again = parseLesson(saveLessonYaml(*lesson, kLessonDir), "saved.yaml", kLessonDir);
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_EQ(again->steps[0].tryIt->answer, "fit.micro_batches");
    const std::string e = errorOf(kHead +
                                  "  - text: How many?\n"
                                  "    try: {task: t, check: \"run.steps > 0\",\n"
                                  "          answer: fit.micro_bathces}\n");
    EXPECT_NE(e.find("steps[0].try.answer: expected the subject whose value the learner types"),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("did you mean `fit.micro_batches`"), std::string::npos) << e;
}

}  // namespace
}  // namespace ws::lesson
