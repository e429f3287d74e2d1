// SPDX-License-Identifier: GPL-3.0-or-later
// The checks of a lesson ("run.phase == backward", "runconfig.num_csx >= 2",
// "loss.max_diff_previous < 0.01"): parsing one, what a run showed (RunObservation, fed with the
// session's events by whoever drains them: the headless runner, or the studio's event pump), and
// evaluating a check against the config, the current run and the run before it.
// Subjects: a config key path (any key `wafer fields` lists), or one of checkSubjects()
// ("run.state", "loss.final", "emulated.step_ms", "answers.exact", ... and each with "previous."
// before it for the run before the current one), or a result of the lesson's studies
// (StudyObservation: "coord.*" after a coord_check action, "sweep.*" after a sweep action). The
// right side is a number, a word, or another subject. Thread-safe: plain data and pure functions;
// one RunObservation belongs to one thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/config/config.h"
#include "engine/core/result.h"
#include "engine/mup/coord_check.h"
#include "engine/session/events.h"
#include "engine/sweep/results.h"

namespace ws::lesson {

enum class Phase { Forward, Backward };

// What one run showed, from its events.
struct RunObservation {
    bool started = false;
    session::RunState state = session::RunState::Preparing;
    std::vector<double> losses;  // every step's training loss, in order
    // The last layer phase computed (a Forward or Backward span): the phase the wafer shows
    // while the run is paused.
    bool hasPhase = false;
    Phase phase = Phase::Forward;
    int layer = -1;
    int64_t phaseStep = -1;  // 0-based step of that phase
    int phaseMicro = -1;
    // The emulated machine's prediction of a step (NaN / 0 when not emulated).
    double emulatedStepS = 0.0;
    double mfu = 0.0;
    double emulatedTokensPerS = 0.0;  // all systems
    int microBatches = 0;             // wafer passes per step and system
    // The last prediction itself (the time split, every layer phase's timing and its per-core
    // busy frame): what the Wafer tab shows for the run.
    std::shared_ptr<const wafer::StepPrediction> prediction;
    bool streamingHidden = false;
    int layerCount = 0;  // ParameterTable layers (L + 2), from the prediction; 0 unknown
    // The most layers' weights the wafer held at once (system 0, wall clock): a layer is
    // resident from the start of its stream-in until its compute ends. At most
    // wafer.weight_buffer_layers; 2 shows the prefetch at work.
    int maxResidentLayers = 0;
    // Layer visits seen recently (for maxResidentLayers): stream-in start, compute end.
    struct Visit {
        int64_t step = 0;
        int micro = 0;
        int layer = 0;
        bool backward = false;
        double start = -1.0, end = -1.0;
    };
    std::vector<Visit> visits;
    // The run's folder, once its session has claimed it (Session::place): where the model a
    // check_answers action asks lives.
    std::filesystem::path modelDir;
    // How the run's model answered its held-out records (a check_answers action,
    // sample/answer_check.h): `answers.*` in checks.
    struct Answers {
        int cases = 0;
        int exact = 0;
        double answerLoss = 0.0;  // nats per answer token
    };
    std::optional<Answers> answers;

    void observe(const session::Event& event);
    int64_t steps() const { return int64_t(losses.size()); }

private:
    void addVisitTime(int64_t step, int micro, int layer, bool backward, double start, double end);
};

// What the lesson's studies showed: the last coord_check and the last sweep action (not runs:
// they train many small models of their own and are not `previous.*`).
struct StudyObservation {
    std::optional<mup::CoordCheckResult> coordCheck;
    std::vector<int> coordWidths;  // the widths it trained
    // The sweep's μTransfer analysis per parametrization (sweep/results.h), and its trials.
    std::optional<std::vector<sweep::ParametrizationTransfer>> sweepTransfer;
    int sweepTrials = 0;  // trials with a result
};

enum class Compare { Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual };

struct Operand {
    bool isSubject = false;
    std::string text;  // the subject's name, or the literal as written
};

struct Condition {
    std::string text;  // as written: "run.layer == 3"
    Operand left;
    Compare op = Compare::Equal;
    Operand right;
    std::string where;  // "file:line:col"
};

// The run subjects a check may name (without "previous."), each with its meaning for help.
struct SubjectInfo {
    std::string_view name;
    std::string_view help;
};
const std::vector<SubjectInfo>& checkSubjects();

// Parses "left op right"; the error says what is allowed (did you mean, for subjects). Config
// subjects are checked against the config's keys.
Result<Condition> parseCondition(std::string_view text);

struct CheckContext {
    const config::Config* config = nullptr;
    const RunObservation* run = nullptr;        // null: no run yet
    const RunObservation* previous = nullptr;   // null: no run before it
    const StudyObservation* studies = nullptr;  // null: no study yet
};

struct CheckResult {
    bool passed = false;
    std::string detail;  // "run.layer is 2, expected == 3"
};
CheckResult evaluate(const Condition& condition, const CheckContext& context);

// A subject's value as a check sees it ("4", "forward", "true"); nullopt (and `why`) when it
// has none yet.
std::optional<std::string> subjectValue(std::string_view subject, const CheckContext& context,
                                        std::string* why = nullptr);
// The answer a learner typed against the subject it must equal (a try-it's `answer`): numbers
// compare as numbers, words case-insensitively. The detail never gives the value away.
CheckResult evaluateAnswer(std::string_view subject, std::string_view typed,
                           const CheckContext& context);

}  // namespace ws::lesson
