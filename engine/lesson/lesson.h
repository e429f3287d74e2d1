// SPDX-License-Identifier: GPL-3.0-or-later
// Lessons: guided walks through a training run for teaching (issue 17), read from YAML files
// (resources/lessons/, README "Lessons"). A lesson starts from a preset and is a list of steps;
// each step has text for the learner, config changes, an action on the run (train N steps, pause
// at one layer phase, step one phase, switch the number of systems, run the μP coord check, run
// the config's sweep, check the run's held-out answers), the view to show, a widget
// to highlight, conditions the step promises (`expect`) and an optional "try it" whose check is
// evaluated before Next. Loading checks everything a run would reject later (the preset, every
// change applied in order, every check's subject) and reports each problem as
// "file:line:col: steps[2].action.pause_at.layer: what was found and what is allowed", as config
// files do. Thread-safe: pure functions of their arguments (they read the files named).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/config/config_yaml.h"
#include "engine/core/result.h"
#include "engine/lesson/condition.h"

namespace ws::lesson {

// The studio's tabs, and the views inside them a step can bring forward.
enum class View { None, Config, Training, Wafer, Samples, Sweeps, Chat, Answers };
const char* viewName(View view);                            // "wafer"
const std::vector<std::string_view>& viewNames();           // "config", "training", ...
const std::vector<std::string_view>& subViewNames(View v);  // wafer: heatmap, timeline, ...

// Widgets a step may point at; the GUI maps each name to one widget (README "Lessons").
const std::vector<std::string_view>& highlightNames();

// One config change, as `wafer train --set key.path=value` takes it.
struct Change {
    std::string key;
    std::string value;  // YAML text: "4", "[0.9, 0.95]", "{name: x}"
    std::string where;  // "file:line:col" of the key, for messages
    std::string override() const { return key + "=" + value; }
};

// What a step does to the run. At most one kind per step.
struct Action {
    enum class Kind {
        None,
        RunSteps,   // a new run of the current config, trained for `count` steps
        PauseAt,    // run (or go on) paused until `phase` of `layer` has just been computed
        StepPhase,  // the paused run computes `count` more layer phases (Step Layer)
        Systems,    // runconfig.num_csx = count (a config change; the next run uses it)
        // The μP coord check (mup/coord_check.h) of the current config at `widths`, trained
        // `count` steps each under SP and μP; its result is `coord.*` in checks.
        CoordCheck,
        // The current config's sweep: section run as a sweep (sweep/runner.h); its μTransfer
        // analysis is `sweep.*` in checks.
        Sweep,
        // The current run's model answers the first `count` of the run's held-out records
        // (sample/answer_check.h, as the Answers tab does); the result is the run's
        // `answers.*` in checks (and `previous.answers.*` once another run follows).
        CheckAnswers,
    };
    Kind kind = Kind::None;
    int64_t count = 0;
    std::vector<int> widths;       // CoordCheck
    Phase phase = Phase::Forward;  // PauseAt
    int layer = 0;                 // PauseAt: ParameterTable layer (0 embeddings, L+1 head)
    std::string where;
};
std::string describeAction(const Action& action);  // "pause at the forward pass of layer 2"

// "Try it": what the learner is asked to do, checked before Next. `solution` is what doing it
// amounts to, so the headless runner (and a "show me" button) can perform it.
struct TryIt {
    std::string task;
    std::string hint;
    std::vector<Condition> check;  // all must hold
    // A question: the subject (a check subject, "fit.micro_batches") whose value the learner
    // reads off the screen and types in; Check passes only when the typed answer equals it
    // (evaluateAnswer), besides `check`. Empty: no question. The solution's answer is the
    // subject's value once the solution is done.
    std::string answer;
    std::vector<Change> solutionChanges;
    Action solutionAction;
};

struct LessonStep {
    std::string title;
    std::string text;  // markdown-ish plain text: paragraphs, `code`, *emphasis*, - lists
    std::filesystem::path figure;  // absolute; empty when none
    std::string formula;           // plain text or LaTeX-ish, shown on its own line
    std::vector<Change> changes;   // applied in order before the action
    Action action;
    View view = View::None;         // None: leave the view as it is
    std::string subView;            // one of subViewNames(view), or empty
    std::string highlight;          // one of highlightNames(), or empty
    std::vector<Condition> expect;  // what the step's action promises (checked by the runner)
    std::optional<TryIt> tryIt;
    std::string where;  // "file:line:col" of the step
};

struct Lesson {
    std::string title;
    std::string summary;
    std::filesystem::path sourceFile;  // absolute
    std::filesystem::path preset;      // absolute
    config::LoadedConfig start;        // the preset as loaded, before any step's changes
    std::vector<LessonStep> steps;
};

// Reads and checks a lesson file; the error lists every problem, one per line.
Result<Lesson> loadLesson(const std::filesystem::path& file);
// The same for text in memory; relative paths resolve against baseDir.
Result<Lesson> parseLesson(std::string_view yamlText, std::string_view sourceName,
                           const std::filesystem::path& baseDir);

// The lesson as YAML that parseLesson() reads back to the same lesson (a lesson editor's save;
// comments are not kept). Paths are written relative to `dir` (the file's folder).
std::string saveLessonYaml(const Lesson& lesson, const std::filesystem::path& dir);

// The config a step starts its action from: the preset with every change of steps 0..k-1 and
// of step k applied (including their Systems actions and, when withSolutions, the "try it"
// solutions, as the learner would have made them). Errors name the change.
Result<config::LoadedConfig> configAtStep(const Lesson& lesson, size_t k, bool withSolutions);
// Applies changes to a config in order; the error names the change's file position.
Status applyChanges(config::LoadedConfig& config, const std::vector<Change>& changes);

// appDataDir()/resources/lessons.
std::filesystem::path defaultLessonDir();
struct LessonEntry {
    std::filesystem::path file;
    std::string title;  // empty when the file does not load
    std::string summary;
    std::string error;  // why it does not load
};
// Every *.yaml in dir, sorted by file name (lessons are numbered: 01-..., 02-...).
std::vector<LessonEntry> listLessons(const std::filesystem::path& dir);

}  // namespace ws::lesson
