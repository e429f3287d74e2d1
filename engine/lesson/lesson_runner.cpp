// SPDX-License-Identifier: GPL-3.0-or-later
// The headless lesson runner (see lesson_runner.h).
#include "engine/lesson/lesson_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "engine/interop/model_ref.h"
#include "engine/sample/answer_check.h"
#include "engine/sample/chat_model.h"
#include "engine/sweep/runner.h"
#include "engine/sweep/space.h"

namespace ws::lesson {
namespace {

using Clock = std::chrono::steady_clock;

bool terminal(session::RunState state) {
    return state == session::RunState::Finished || state == session::RunState::Stopped ||
           state == session::RunState::Diverged || state == session::RunState::Failed;
}

}  // namespace

std::string describeDuration(std::chrono::milliseconds d) {
    if (d.count() >= 1000 && d.count() % 1000 == 0) return fmt::format("{} s", d.count() / 1000);
    return fmt::format("{} ms", d.count());
}

bool StepOutcome::passed() const {
    if (!error.empty()) return false;
    for (const auto& c : expect)
        if (!c.passed) return false;
    for (const auto& c : tryCheck)
        if (!c.passed) return false;
    return true;
}

bool reached(const Action& pauseAt, const RunObservation& run) {
    return run.hasPhase && run.phase == pauseAt.phase && run.layer == pauseAt.layer;
}

ActionDriver::Start ActionDriver::start(bool pausedRunLive, int64_t pauseStops) {
    Start out;
    switch (m_action.kind) {
        case Action::Kind::None:
        case Action::Kind::Systems:     // a config change, made with the step's changes
        case Action::Kind::CoordCheck:  // studies: performed by their owner (performStudy)
        case Action::Kind::Sweep:
        case Action::Kind::CheckAnswers:
            break;
        case Action::Kind::RunSteps:
            out.newRun = true;
            out.stopAfterStep = m_action.count;
            break;
        case Action::Kind::PauseAt:
            if (pausedRunLive) {
                m_lastStops = pauseStops - 1;  // decide at the pause it stands at
            } else {
                out.newRun = true;
                out.paused = true;
                m_lastStops = 0;  // wait for its first pause
            }
            break;
        case Action::Kind::StepPhase:
            if (!pausedRunLive)
                out.error = "step_phases needs a paused run (pause_at in an earlier step)";
            m_lastStops = pauseStops - 1;
            m_remaining = m_action.count;
            break;
    }
    return out;
}

ActionDriver::Next ActionDriver::next(const RunObservation& run, session::RunState state,
                                      int64_t pauseStops) {
    switch (m_action.kind) {
        case Action::Kind::None:
        case Action::Kind::Systems:
        case Action::Kind::CoordCheck:
        case Action::Kind::Sweep:
        case Action::Kind::CheckAnswers:
            return Next::Done;
        case Action::Kind::RunSteps:
            return terminal(state) ? Next::Done : Next::Wait;
        case Action::Kind::PauseAt:
        case Action::Kind::StepPhase:
            break;
    }
    if (terminal(state)) {
        m_error = fmt::format("the run ended ({}) before {}", session::runStateName(state),
                              describeAction(m_action));
        return Next::Failed;
    }
    if (pauseStops <= m_lastStops) return Next::Wait;  // not paused again yet
    if (m_action.kind == Action::Kind::PauseAt) {
        if (reached(m_action, run)) return Next::Done;
        if (run.hasPhase) {
            if (m_firstStep < 0) m_firstStep = run.phaseStep;
            // Every phase of step m_firstStep + 1 has run: the target is not in a step.
            if (run.phaseStep > m_firstStep + 1) {
                m_error = fmt::format(
                    "{} was not reached in a whole step of layer phases{}",
                    describeAction(m_action),
                    run.layerCount > 0
                        ? fmt::format(" (the model has layers 0 to {})", run.layerCount - 1)
                        : std::string());
                return Next::Failed;
            }
        }
    } else if (m_remaining-- == 0) {
        return Next::Done;
    }
    m_lastStops = pauseStops;
    return Next::StepOnePhase;
}

std::string ActionDriver::waitingFor(const RunObservation& run, session::RunState state) const {
    std::string what;
    switch (m_action.kind) {
        case Action::Kind::RunSteps:
            what = fmt::format("the run to train {} steps, {} so far", m_action.count, run.steps());
            break;
        case Action::Kind::PauseAt:
            what = "the run to " + describeAction(m_action);
            break;
        case Action::Kind::StepPhase:
            what = fmt::format("the run to compute {} more layer phase{} and pause again",
                               m_remaining + 1, m_remaining == 0 ? "" : "s");
            break;
        case Action::Kind::None:
        case Action::Kind::Systems:
        case Action::Kind::CoordCheck:  // studies are performed by their owner, not driven
        case Action::Kind::Sweep:
        case Action::Kind::CheckAnswers:
            return "nothing";
    }
    std::string where =
        run.hasPhase ? fmt::format("the last phase computed: the {} pass of layer {} of step {}",
                                   run.phase == Phase::Forward ? "forward" : "backward", run.layer,
                                   run.phaseStep + 1)
                     : std::string("no layer phase computed yet");
    return fmt::format("{} ({}; the run is {})", what, where, session::runStateName(state));
}

std::string describeStep(const LessonStep& step, size_t index) {
    if (step.title.empty()) return fmt::format("step {}", index + 1);
    return fmt::format("step {} (\"{}\")", index + 1, step.title);
}

LessonRunner::LessonRunner(const Lesson& lesson, RunnerOptions options)
    : m_lesson(lesson), m_options(std::move(options)), m_config(lesson.start) {}

LessonRunner::~LessonRunner() {
    endRun();
}

bool LessonRunner::runLive() const {
    return m_session && !terminal(m_session->state());
}

size_t LessonRunner::drain() {
    if (!m_session) return 0;
    std::vector<session::Event> events;
    m_session->events().drain(events);
    for (const auto& e : events) m_current.observe(e);
    if (m_current.modelDir.empty())
        if (auto place = m_session->place()) m_current.modelDir = place->modelDir;
    return events.size();
}

void LessonRunner::endRun() {
    if (!m_session) return;
    m_session->requestStop();
    m_session->setPaused(false);
    m_session->wait();
    drain();
    m_current.state = m_session->summary().state;
    m_session.reset();
}

Status LessonRunner::startRun(bool paused, int64_t stopAfterStep) {
    endRun();
    if (m_current.started) m_previous = std::move(m_current);
    m_current = RunObservation{};
    session::SessionOptions options;
    options.dbPath = m_options.workDir / "runs.sqlite";
    options.cacheDir = m_options.cacheDir;
    options.recordInStore = false;
    // A lesson's run ends with a checkpoint as `wafer train` does: it can be resumed or sampled.
    options.stopAfterStep = stopAfterStep;
    options.runName = fmt::format("lesson run {}", ++m_runs);
    config::LoadedConfig cfg = m_config;
    // Each run gets its own folder: the preset leaves model_dir to the store, and there is none.
    cfg.config.runconfig.modelDir = (m_options.workDir / fmt::format("run-{}", m_runs)).string();
    auto created = session::Session::create(std::move(cfg), options);
    if (!created.ok()) return Error{"the run cannot start: " + created.error().message};
    m_session = std::move(*created);
    m_current.started = true;
    if (paused) m_session->setPaused(true);
    m_session->start();
    return Status::success();
}

Status LessonRunner::applyConfigChanges(const std::vector<Change>& changes, const Action& action) {
    const std::string before = config::hashConfig(m_config.config);
    if (Status s = applyChanges(m_config, changes); !s.ok()) return s;
    if (action.kind == Action::Kind::Systems) {
        if (Status s = config::applyOverride(m_config.config,
                                             fmt::format("runconfig.num_csx={}", action.count));
            !s.ok())
            return s;
    }
    // A run's config is fixed: a change ends the run in flight, and the run (live or not)
    // becomes `previous`, the reference the next run is compared with.
    if (config::hashConfig(m_config.config) != before) {
        endRun();
        if (m_current.started) {
            m_previous = std::move(m_current);
            m_current = RunObservation{};
        }
    }
    return Status::success();
}

Status LessonRunner::enterStep(size_t k) {
    const LessonStep& step = m_lesson.steps.at(k);
    return applyConfigChanges(step.changes, step.action);
}

mup::CoordCheckOptions coordCheckOptions(const Action& action) {
    mup::CoordCheckOptions options;
    options.widths = action.widths;
    options.steps = int(action.count);
    options.threshold = 0.3;  // as `wafer coord-check` (coord_check.h says why)
    return options;
}

config::Config coordCheckBase(const config::Config& config) {
    config::Config base = config;
    base.sweep.reset();  // as the studio's Run Coord Check: the sweep: section is not trained
    return base;
}

void noteSweep(StudyObservation& studies, const sweep::SweepOutcome& outcome) {
    studies.sweepTransfer = outcome.transfer;
    studies.sweepTrials = int(outcome.trials.size());
}

Status LessonRunner::performStudy(const Action& action) {
    endRun();  // the cores are the study's
    if (action.kind == Action::Kind::CoordCheck) {
        mup::CoordCheckOptions options = coordCheckOptions(action);
        options.cacheDir = m_options.cacheDir;
        auto result = mup::runCoordCheck(coordCheckBase(m_config.config), options);
        if (!result.ok()) return Error{"the coord check failed: " + result.error().message};
        m_studies.coordCheck = std::move(result).value();
        m_studies.coordWidths = action.widths;
        return Status::success();
    }
    auto plan = sweep::planSweep(m_config);
    if (!plan.ok()) return Error{"the sweep cannot be planned: " + plan.error().message};
    sweep::RunnerOptions options;
    options.dbPath = m_options.workDir / "runs.sqlite";
    options.cacheDir = m_options.cacheDir;
    options.name = "lesson sweep";
    options.confirmed = true;  // the lesson's author chose its size
    auto runner = sweep::SweepRunner::create(std::move(plan).value(), options);
    if (!runner.ok()) return Error{"the sweep cannot start: " + runner.error().message};
    (*runner)->run();
    const sweep::SweepOutcome& outcome = (*runner)->outcome();
    if (outcome.status != "finished")
        return Error{"the sweep " + outcome.status +
                     (outcome.detail.empty() ? std::string() : ": " + outcome.detail)};
    noteSweep(m_studies, outcome);
    return Status::success();
}

Result<RunObservation::Answers> checkRunAnswers(const std::filesystem::path& modelDir, int cases,
                                                const std::atomic<bool>* cancel) {
    if (modelDir.empty())
        return Error{"no run has trained since the config last changed: there is no model to ask"};
    auto loaded = interop::loadModelRef(modelDir.string(), {});
    if (!loaded.ok()) return Error{"the run's model: " + loaded.error().message};
    auto conversations = sample::runHeldOutConversations(loaded->config);
    if (!conversations.ok()) return conversations.error();
    const auto answerCases = sample::answerCases(*conversations, size_t(std::max(cases, 1)));
    if (answerCases.empty())
        return Error{"the run's held-out records hold no conversation ending with an answer"};
    auto chatModel = sample::prepareChatModelOrPlain(std::move(loaded).value(), "auto");
    if (!chatModel.ok()) return chatModel.error();
    auto outcomes =
        sample::checkAnswers(*chatModel, true, answerCases,
                             sample::greedyAnswerOptions(kCheckAnswersMaxNewTokens), {}, cancel);
    if (!outcomes.ok()) return outcomes.error();
    const sample::AnswerSummary summary = sample::summarize(*outcomes);
    return RunObservation::Answers{summary.cases, summary.exact, summary.meanAnswerLoss};
}

Status LessonRunner::performAnswerCheck(const Action& action) {
    endRun();  // the run has ended (run_steps waits for it); its model is on disk
    if (!m_current.started)
        return Error{"no run has trained since the config last changed: there is no model to ask"};
    auto answers = checkRunAnswers(m_current.modelDir, int(action.count));
    if (!answers.ok()) return answers.error();
    m_current.answers = *answers;
    return Status::success();
}

Status LessonRunner::perform(const Action& action) {
    if (action.kind == Action::Kind::CoordCheck || action.kind == Action::Kind::Sweep)
        return performStudy(action);
    if (action.kind == Action::Kind::CheckAnswers) return performAnswerCheck(action);
    ActionDriver driver(action);
    const bool pausedLive = runLive() && m_session->state() == session::RunState::Paused;
    const ActionDriver::Start start =
        driver.start(pausedLive, pausedLive ? m_session->pauseStops() : 0);
    if (!start.error.empty()) return Error{start.error};
    if (start.newRun) {
        if (Status s = startRun(start.paused, start.stopAfterStep); !s.ok()) return s;
    }
    // The timeout counts time without progress: any event from the run starts it again.
    auto deadline = Clock::now() + m_options.timeout;
    while (true) {
        const int64_t stops = m_session ? m_session->pauseStops() : 0;
        const session::RunState state =
            m_session ? m_session->state() : session::RunState::Preparing;
        if (drain() > 0) deadline = Clock::now() + m_options.timeout;
        switch (driver.next(m_current, state, stops)) {
            case ActionDriver::Next::Wait:
                if (Clock::now() >= deadline) {
                    const std::string waited = driver.waitingFor(m_current, state);
                    endRun();  // a stuck run is not left behind
                    return Error{fmt::format("no progress for {} while waiting for {}",
                                             describeDuration(m_options.timeout), waited)};
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
                break;
            case ActionDriver::Next::StepOnePhase:
                m_session->stepOnePhase();
                deadline = Clock::now() + m_options.timeout;
                break;
            case ActionDriver::Next::Done:
            case ActionDriver::Next::Failed: {
                if (m_session && terminal(state)) {
                    m_session->wait();
                    drain();
                    m_current.state = m_session->summary().state;
                }
                if (m_current.state == session::RunState::Failed)
                    return Error{"the run failed: " + m_session->summary().detail};
                if (!driver.error().empty()) {
                    std::string message = driver.error();
                    if (m_session && !m_session->summary().detail.empty())
                        message += " (" + m_session->summary().detail + ")";
                    return Error{message};
                }
                return Status::success();
            }
        }
    }
}

std::vector<CheckOutcome> LessonRunner::evaluate(const std::vector<Condition>& checks) const {
    CheckContext context{&m_config.config, &m_current, previous(), &m_studies};
    std::vector<CheckOutcome> out;
    for (const Condition& c : checks) {
        const CheckResult r = ws::lesson::evaluate(c, context);
        out.push_back({c.text, c.where, r.passed, r.detail});
    }
    return out;
}

Status LessonRunner::applySolution(size_t k) {
    const LessonStep& step = m_lesson.steps.at(k);
    if (!step.tryIt) return Status::success();
    if (Status s = applyConfigChanges(step.tryIt->solutionChanges, step.tryIt->solutionAction);
        !s.ok())
        return s;
    return perform(step.tryIt->solutionAction);
}

StepOutcome LessonRunner::runStep(size_t k) {
    StepOutcome out;
    out.index = k;
    const LessonStep& step = m_lesson.steps.at(k);
    if (Status s = enterStep(k); !s.ok()) {
        out.error = s.error().message;
        return out;
    }
    if (Status s = perform(step.action); !s.ok()) {
        out.error =
            describeStep(step, k) + ", " + describeAction(step.action) + ": " + s.error().message;
        return out;
    }
    out.expect = evaluate(step.expect);
    if (step.tryIt) {
        bool all = !step.tryIt->check.empty();
        for (const auto& c : evaluate(step.tryIt->check)) all = all && c.passed;
        out.tryPassedBefore = all && step.tryIt->answer.empty();  // a question still waits
        if (Status s = applySolution(k); !s.ok()) {
            out.error = describeStep(step, k) + ", try solution: " + s.error().message;
            return out;
        }
        out.tryCheck = evaluate(step.tryIt->check);
        if (const std::string& subject = step.tryIt->answer; !subject.empty()) {
            // The learner reads the answer off the screen: once the task is done it must have
            // a value (the one "Show me" types in).
            const CheckContext context{&m_config.config, &m_current, previous(), &m_studies};
            std::string why;
            const auto value = subjectValue(subject, context, &why);
            out.tryCheck.push_back({"answer: " + subject, step.where, value.has_value(),
                                    value ? subject + " is " + *value : subject + ": " + why});
        }
    }
    return out;
}

}  // namespace ws::lesson
