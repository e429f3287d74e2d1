// SPDX-License-Identifier: GPL-3.0-or-later
// Lesson files (see lesson.h): reading with the config reader's MapReader (so unknown keys get
// the same "did you mean" and every message its file:line:col), then checking the whole lesson
// against the preset: every change applied in order must load, every step's config must pass
// config::validate() and fit its wafer, and every pause_at layer must exist.
#include "engine/lesson/lesson.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "engine/config/text_format.h"
#include "engine/config/yaml_reader.h"
#include "engine/core/paths.h"
#include "engine/mup/coord_check.h"
#include "engine/session/chat_run_data.h"
#include "engine/sweep/space.h"
#include "engine/wafer/run_fit.h"

namespace ws::lesson {
namespace fs = std::filesystem;
using config::childPath;
using config::closestMatch;
using config::describeFound;
using config::FieldInfo;
using config::indexPath;
using config::joinStrings;
using config::MapReader;
using config::ReadContext;

namespace {

// A key whose value this file reads itself: MapReader hands over the node (and so lists the key
// in its "did you mean" and "allowed keys" messages). Found by MapReader through ADL.
struct Raw {
    std::optional<YAML::Node> node;
    std::string path;
    YAML::Mark keyMark = YAML::Mark::null_mark();
};
void readValue(const YAML::Node& node, Raw& raw, const FieldInfo&, const std::string& path,
               ReadContext& ctx) {
    raw.node = node;
    raw.path = path;
    raw.keyMark = ctx.keyMark;
}

std::string where(const ReadContext& ctx, const YAML::Mark& mark) {
    return ctx.where(mark);
}

std::vector<std::string> asStrings(const std::vector<std::string_view>& views) {
    return {views.begin(), views.end()};
}

// A value as --set takes it: scalars as written, lists and maps in flow style.
std::string overrideText(const YAML::Node& node) {
    if (node.IsScalar()) return node.Scalar();
    if (node.IsNull()) return "null";
    YAML::Emitter out;
    out << YAML::Flow << node;
    return out.c_str();
}

void readChanges(const Raw& raw, std::vector<Change>& changes, ReadContext& ctx) {
    if (!raw.node || raw.node->IsNull()) return;
    if (!raw.node->IsMap()) {
        ctx.error(ctx.markOf(*raw.node), raw.path,
                  "expected `key.path: value` lines (as `wafer train --set key.path=value`), "
                  "found " +
                      describeFound(*raw.node));
        return;
    }
    for (auto it = raw.node->begin(); it != raw.node->end(); ++it) {
        if (!it->first.IsScalar()) {
            ctx.error(it->first.Mark(), raw.path, "keys must be config key paths");
            continue;
        }
        changes.push_back(
            {it->first.Scalar(), overrideText(it->second), where(ctx, it->first.Mark())});
    }
}

void readConditions(const Raw& raw, std::vector<Condition>& out, ReadContext& ctx) {
    if (!raw.node || raw.node->IsNull()) return;
    std::vector<std::pair<YAML::Node, std::string>> items;
    if (raw.node->IsSequence()) {
        for (size_t i = 0; i < raw.node->size(); ++i)
            items.emplace_back((*raw.node)[i], indexPath(raw.path, i));
    } else {
        items.emplace_back(*raw.node, raw.path);
    }
    for (const auto& [node, path] : items) {
        if (!node.IsScalar()) {
            ctx.error(ctx.markOf(node), path,
                      "expected a check such as \"runconfig.num_csx >= 2\", found " +
                          describeFound(node));
            continue;
        }
        auto parsed = parseCondition(node.Scalar());
        if (!parsed.ok()) {
            ctx.error(node.Mark(), path, parsed.error().message);
            continue;
        }
        parsed->where = where(ctx, node.Mark());
        out.push_back(std::move(*parsed));
    }
}

// coord_check: {widths: [16, 32, 64], steps: 10}
void readCoordCheck(const Raw& raw, Action& action, ReadContext& ctx) {
    action.count = 10;  // `wafer coord-check`'s default
    if (!raw.node->IsMap()) {
        ctx.error(ctx.markOf(*raw.node), raw.path,
                  "expected {widths: [16, 32, 64], steps: N}, found " + describeFound(*raw.node));
        return;
    }
    MapReader c(*raw.node, raw.path, ctx);
    std::vector<int64_t> widths;
    c.field(widths, {.key = "widths", .help = "", .min = 1});
    c.field(action.count, {.key = "steps", .help = "", .min = 1, .max = 1000});
    c.reportUnusedKeys();
    if (c.hadErrors()) return;
    if (widths.size() < 2) {
        const YAML::Node at = (*raw.node)["widths"] ? (*raw.node)["widths"] : *raw.node;
        ctx.error(at.Mark(), childPath(raw.path, "widths"),
                  "needs at least two widths (hidden sizes) to fit a slope, e.g. "
                  "widths: [16, 32, 64], found " +
                      std::to_string(widths.size()));
        return;
    }
    for (int64_t w : widths) action.widths.push_back(int(std::min<int64_t>(w, 1 << 20)));
}

struct PauseAtFields {
    std::string phase;
    int layer = -1;
};

void readAction(const Raw& raw, Action& action, ReadContext& ctx) {
    if (!raw.node || raw.node->IsNull()) return;
    const YAML::Node& node = *raw.node;
    action.where = where(ctx, node.Mark());
    if (!node.IsMap()) {
        ctx.error(ctx.markOf(node), raw.path,
                  "expected one of `run_steps: N`, `pause_at: {phase: forward, layer: K}`, "
                  "`step_phases: N`, `systems: N`, `coord_check: {widths: [16, 32, 64]}`, "
                  "`sweep: {}`, `check_answers: N`, found " +
                      describeFound(node));
        return;
    }
    MapReader reader(node, raw.path, ctx);
    int64_t runSteps = 0, stepPhases = 0, checkAnswers = 0;
    int systems = 0;
    Raw pauseAt, coordCheck, sweep;
    reader.field(runSteps, {.key = "run_steps", .help = "", .min = 1});
    reader.field(pauseAt, {.key = "pause_at", .help = ""});
    reader.field(stepPhases, {.key = "step_phases", .help = "", .min = 1, .max = 100000});
    reader.field(systems, {.key = "systems", .help = "", .min = 1, .max = 1024});
    reader.field(coordCheck, {.key = "coord_check", .help = ""});
    reader.field(sweep, {.key = "sweep", .help = ""});
    reader.field(checkAnswers, {.key = "check_answers", .help = "", .min = 1, .max = 1000});
    reader.reportUnusedKeys();
    int given = 0;
    if (runSteps > 0) {
        action.kind = Action::Kind::RunSteps;
        action.count = runSteps;
        ++given;
    }
    if (stepPhases > 0) {
        action.kind = Action::Kind::StepPhase;
        action.count = stepPhases;
        ++given;
    }
    if (systems > 0) {
        action.kind = Action::Kind::Systems;
        action.count = systems;
        ++given;
    }
    if (checkAnswers > 0) {
        action.kind = Action::Kind::CheckAnswers;
        action.count = checkAnswers;
        ++given;
    }
    if (pauseAt.node) {
        ++given;
        action.kind = Action::Kind::PauseAt;
        if (!pauseAt.node->IsMap()) {
            ctx.error(ctx.markOf(*pauseAt.node), pauseAt.path,
                      "expected {phase: forward|backward, layer: K}, found " +
                          describeFound(*pauseAt.node));
        } else {
            MapReader p(*pauseAt.node, pauseAt.path, ctx);
            PauseAtFields f;
            p.field(f.phase, {.key = "phase", .help = "", .choices = {"forward", "backward"}});
            p.field(f.layer, {.key = "layer", .help = "", .min = 0});
            p.reportUnusedKeys();
            if (!p.hadErrors() && (f.phase.empty() || f.layer < 0))
                ctx.error(pauseAt.node->Mark(), pauseAt.path,
                          "needs both `phase` (forward or backward) and `layer` (0 embeddings, "
                          "1..L the blocks, L+1 the head)");
            action.phase = f.phase == "backward" ? Phase::Backward : Phase::Forward;
            action.layer = f.layer;
        }
    }
    if (coordCheck.node) {
        ++given;
        action.kind = Action::Kind::CoordCheck;
        readCoordCheck(coordCheck, action, ctx);
    }
    if (sweep.node) {
        ++given;
        action.kind = Action::Kind::Sweep;
        // Nothing to choose: the config's sweep: section says what to sweep (`changes` edit it).
        if (!sweep.node->IsNull() && !(sweep.node->IsMap() && sweep.node->size() == 0))
            ctx.error(ctx.markOf(*sweep.node), sweep.path,
                      "expected `sweep: {}`: the step's config's own sweep: section is run as it "
                      "is (change it with the step's `changes`, e.g. sweep.max_steps: 40), "
                      "found " +
                          describeFound(*sweep.node));
    }
    if (given > 1)
        ctx.error(node.Mark(), raw.path,
                  "one action per step: run_steps, pause_at, step_phases, systems, coord_check, "
                  "sweep or check_answers (split the step in two)");
    if (given == 0 && !reader.hadErrors())
        ctx.error(node.Mark(), raw.path,
                  "expected one of run_steps, pause_at, step_phases, systems, coord_check, "
                  "sweep, check_answers; found none");
}

void readView(const Raw& raw, LessonStep& step, ReadContext& ctx) {
    if (!raw.node || raw.node->IsNull()) return;
    if (!raw.node->IsScalar()) {
        ctx.error(ctx.markOf(*raw.node), raw.path,
                  "expected a view such as \"wafer\" or \"wafer/timeline\", found " +
                      describeFound(*raw.node));
        return;
    }
    const std::string text = raw.node->Scalar();
    const size_t slash = text.find('/');
    const std::string tab = text.substr(0, slash);
    const auto& tabs = viewNames();
    const auto found = std::find(tabs.begin(), tabs.end(), tab);
    if (found == tabs.end()) {
        std::string message = "unknown view \"" + tab + "\"";
        if (auto hint = closestMatch(tab, asStrings(tabs)))
            message += "; did you mean `" + *hint + "`?";
        ctx.error(raw.node->Mark(), raw.path,
                  message + " (allowed: " + joinStrings(asStrings(tabs), ", ") + ")");
        return;
    }
    step.view = View(int(found - tabs.begin()) + 1);
    if (slash == std::string::npos) return;
    const std::string sub = text.substr(slash + 1);
    const auto subs = asStrings(subViewNames(step.view));
    if (std::find(subs.begin(), subs.end(), sub) == subs.end()) {
        std::string message = "unknown view \"" + sub + "\" in the " + tab + " tab";
        if (auto hint = closestMatch(sub, subs)) message += "; did you mean `" + *hint + "`?";
        message += subs.empty() ? " (it has no views to choose)"
                                : " (allowed: " + joinStrings(subs, ", ") + ")";
        ctx.error(raw.node->Mark(), raw.path, message);
        return;
    }
    step.subView = sub;
}

// A path written in the lesson, against the lesson's folder. Hand-written text can name anything
// (a line that ran on into the next gives a component past the system's 255 bytes), so nothing
// here may throw: a path the system refuses stays as written, and reading it reports why.
fs::path resolvePath(const fs::path& baseDir, const std::string& text) {
    const fs::path p(text);
    if (p.is_absolute() || baseDir.empty()) return p;
    std::error_code ec;
    fs::path resolved = fs::weakly_canonical(baseDir / p, ec);
    return ec ? (baseDir / p).lexically_normal() : resolved;
}

void readTry(const Raw& raw, TryIt& t, ReadContext& ctx) {
    if (!raw.node->IsMap()) {
        ctx.error(ctx.markOf(*raw.node), raw.path,
                  "expected a section with task, check and (optionally) hint and solution, "
                  "found " +
                      describeFound(*raw.node));
        return;
    }
    MapReader r(*raw.node, raw.path, ctx);
    Raw check, solution;
    r.field(t.task, {.key = "task", .help = ""});
    r.field(t.hint, {.key = "hint", .help = ""});
    r.field(check, {.key = "check", .help = ""});
    r.field(t.answer, {.key = "answer", .help = ""});
    r.field(solution, {.key = "solution", .help = ""});
    r.reportUnusedKeys();
    if (!t.answer.empty()) {
        // The answer names a subject, as a check's left side does.
        auto parsed = parseCondition(t.answer + " == 0");
        if (!parsed.ok() || !parsed->left.isSubject || parsed->left.text != t.answer)
            ctx.error(r.node()["answer"].Mark(), childPath(raw.path, "answer"),
                      "expected the subject whose value the learner types (e.g. "
                      "\"fit.micro_batches\")" +
                          (parsed.ok() ? std::string() : ": " + parsed.error().message));
    }
    if (t.task.empty()) ctx.error(raw.node->Mark(), raw.path, "needs a `task` for the learner");
    if (!check.node)
        ctx.error(raw.node->Mark(), raw.path,
                  "needs a `check` (e.g. \"runconfig.num_csx >= 2\"), evaluated before Next");
    readConditions(check, t.check, ctx);
    if (solution.node && !solution.node->IsNull()) {
        if (!solution.node->IsMap()) {
            ctx.error(ctx.markOf(*solution.node), solution.path,
                      "expected a section with `changes` and/or `action`, found " +
                          describeFound(*solution.node));
            return;
        }
        MapReader s(*solution.node, solution.path, ctx);
        Raw changes, action;
        s.field(changes, {.key = "changes", .help = ""});
        s.field(action, {.key = "action", .help = ""});
        s.reportUnusedKeys();
        readChanges(changes, t.solutionChanges, ctx);
        readAction(action, t.solutionAction, ctx);
    }
}

void readStep(const YAML::Node& node, const std::string& path, const fs::path& baseDir,
              LessonStep& step, ReadContext& ctx) {
    step.where = where(ctx, node.Mark());
    if (!node.IsMap()) {
        ctx.error(ctx.markOf(node), path,
                  "expected a step (title, text, changes, action, view, ...), found " +
                      describeFound(node));
        return;
    }
    MapReader r(node, path, ctx);
    std::string figure;
    Raw changes, action, view, expect, tryIt;
    r.field(step.title, {.key = "title", .help = ""});
    r.field(step.text, {.key = "text", .help = ""});
    r.field(figure, {.key = "figure", .help = ""});
    r.field(step.formula, {.key = "formula", .help = ""});
    r.field(changes, {.key = "changes", .help = ""});
    r.field(action, {.key = "action", .help = ""});
    r.field(view, {.key = "view", .help = ""});
    r.field(step.highlight, {.key = "highlight", .help = "", .choices = highlightNames()});
    r.field(expect, {.key = "expect", .help = ""});
    r.field(tryIt, {.key = "try", .help = ""});
    r.reportUnusedKeys();
    if (step.text.empty())
        ctx.error(node.Mark(), path, "needs a `text`: what the learner reads at this step");
    if (!figure.empty()) {
        step.figure = resolvePath(baseDir, figure);
        std::error_code ec;
        if (!baseDir.empty() && !fs::is_regular_file(step.figure, ec))
            ctx.error(
                r.node()["figure"].Mark(), childPath(path, "figure"),
                (ec && ec != std::errc::no_such_file_or_directory
                     ? "cannot read the image " + step.figure.string() + " (" + ec.message() + ")"
                     : "no such image: " + step.figure.string()) +
                    "; name a PNG file relative to the lesson's folder (figures/...)");
    }
    readChanges(changes, step.changes, ctx);
    readAction(action, step.action, ctx);
    readView(view, step, ctx);
    readConditions(expect, step.expect, ctx);
    if (tryIt.node && !tryIt.node->IsNull()) {
        step.tryIt.emplace();
        readTry(tryIt, *step.tryIt, ctx);
    }
}

// applyOverride's message without its "--set key=value: " prefix (the position says where).
std::string overrideProblem(const Change& change, const Status& status) {
    std::string message = status.error().message;
    const std::string prefix = "--set " + change.override() + ": ";
    if (message.starts_with(prefix)) message.erase(0, prefix.size());
    return message;
}

// Applies a step's config changes (and a Systems action) as the runner will, reporting at the
// change's position. False when something failed.
bool applyStepConfig(config::LoadedConfig& cfg, const std::vector<Change>& changes,
                     const Action& action, const std::string& path, ReadContext& ctx) {
    bool ok = true;
    for (const Change& change : changes) {
        if (Status s = config::applyOverride(cfg.config, change.override()); !s.ok()) {
            ctx.errors.push_back(change.where + ": " + path + ".changes." + change.key + ": " +
                                 overrideProblem(change, s));
            ok = false;
        }
    }
    if (action.kind == Action::Kind::Systems) {
        if (Status s = config::applyOverride(cfg.config,
                                             "runconfig.num_csx=" + std::to_string(action.count));
            !s.ok()) {
            ctx.errors.push_back(action.where + ": " + path +
                                 ".action.systems: " + s.error().message);
            ok = false;
        }
    }
    return ok;
}

// A coord check must fit the step's config (widths the head size divides, not below the μP base
// width, ...), and a sweep needs a sweep: section that plans.
void checkStudy(const Action& action, const config::LoadedConfig& cfg, const std::string& path,
                ReadContext& ctx) {
    if (action.kind == Action::Kind::CoordCheck) {
        config::Config base = cfg.config;
        base.sweep.reset();
        mup::CoordCheckOptions options;
        options.widths = action.widths;
        options.steps = int(action.count);
        if (Status s = mup::checkCoordCheck(base, options); !s.ok())
            ctx.errors.push_back(action.where + ": " + path +
                                 ".coord_check.widths: " + s.error().message);
    } else if (action.kind == Action::Kind::Sweep) {
        if (!cfg.config.sweep) {
            ctx.errors.push_back(action.where + ": " + path +
                                 ".sweep: the config has no sweep: section to run (start the "
                                 "lesson from a sweep preset such as presets/mup-sweep.yaml)");
            return;
        }
        if (auto plan = sweep::planSweep(cfg); !plan.ok())
            ctx.errors.push_back(action.where + ": " + path +
                                 ".sweep: the sweep cannot be planned: " + plan.error().message);
    }
}

void checkPauseLayer(const Action& action, const config::Config& cfg, const std::string& path,
                     ReadContext& ctx) {
    if (action.kind != Action::Kind::PauseAt) return;
    const int last = cfg.model.numHiddenLayers + 1;
    if (action.layer > last)
        ctx.errors.push_back(action.where + ": " + path + ".pause_at.layer: the model has layers " +
                             "0 (embeddings) to " + std::to_string(last) + " (the head), found " +
                             std::to_string(action.layer));
}

bool trains(const Action& a) {
    return a.kind == Action::Kind::RunSteps || a.kind == Action::Kind::PauseAt;
}

// A check_answers asks the current run's model the held-out records of its chat data: the run
// must train on records, and one must have trained since the config last changed (a change
// makes the run `previous`, and the current one has no model yet).
void checkAnswersAction(const Action& action, const config::Config& cfg, bool runSinceChange,
                        const std::string& path, ReadContext& ctx) {
    if (action.kind != Action::Kind::CheckAnswers) return;
    if (!session::readsRecords(cfg.trainInput))
        ctx.errors.push_back(action.where + ": " + path +
                             ".check_answers: the config trains on plain text, which has no "
                             "answers to check; start the lesson from a preset that trains on "
                             "chat or instruction records (train_input.data_dir: a .jsonl file)");
    else if (!runSinceChange)
        ctx.errors.push_back(action.where + ": " + path +
                             ".check_answers: no run has trained on the config as it stands, so "
                             "there is no model to ask; train first (run_steps: N in this step's "
                             "try solution or an earlier step without changes since)");
}

// The whole lesson against its preset, step by step as the runner will perform it.
void checkAgainstPreset(const Lesson& lesson, ReadContext& ctx) {
    config::LoadedConfig cfg = lesson.start;
    bool runSinceChange = false;
    const auto enter = [&](const std::vector<Change>& changes, const Action& action,
                           const std::string& path) {
        const std::string before = config::hashConfig(cfg.config);
        applyStepConfig(cfg, changes, action, path, ctx);
        if (config::hashConfig(cfg.config) != before) runSinceChange = false;
        checkPauseLayer(action, cfg.config, path + ".action", ctx);
        checkStudy(action, cfg, path + ".action", ctx);
        checkAnswersAction(action, cfg.config, runSinceChange, path + ".action", ctx);
        runSinceChange = runSinceChange || trains(action);
    };
    for (size_t k = 0; k < lesson.steps.size(); ++k) {
        const LessonStep& step = lesson.steps[k];
        const std::string path = indexPath("steps", k);
        const size_t before = ctx.errors.size();
        enter(step.changes, step.action, path);
        if (step.tryIt)
            enter(step.tryIt->solutionChanges, step.tryIt->solutionAction, path + ".try.solution");
        if (ctx.errors.size() != before) continue;
        const auto problems = config::validate(cfg.config);
        for (const std::string& problem : problems)
            ctx.errors.push_back(step.where + ": " + path + ": the config after this step's " +
                                 "changes is invalid: " + problem);
        // A config that does not fit is worth showing (a "try it" may ask for one); it only
        // matters when the step trains on it.
        if (problems.empty() &&
            (trains(step.action) || (step.tryIt && trains(step.tryIt->solutionAction)))) {
            auto fit = wafer::fitOnWafer(cfg.config);
            if (!fit.ok())
                ctx.errors.push_back(
                    step.where + ": " + path + ": the config after this " +
                    "step's changes does not fit its wafer: " + fit.error().message);
        }
    }
}

}  // namespace

const std::vector<std::string_view>& viewNames() {
    static const std::vector<std::string_view> names = {"config", "training", "wafer",  "samples",
                                                        "sweeps", "chat",     "answers"};
    return names;
}

const char* viewName(View view) {
    if (view == View::None) return "";
    return viewNames()[size_t(view) - 1].data();
}

const std::vector<std::string_view>& subViewNames(View view) {
    static const std::vector<std::string_view> none;
    static const std::vector<std::string_view> config = {"form", "yaml"};
    static const std::vector<std::string_view> training = {"loss", "learning_rate", "grad_norm",
                                                           "throughput"};
    static const std::vector<std::string_view> wafer = {"heatmap", "timeline", "cluster",
                                                        "layer_norms"};
    static const std::vector<std::string_view> sweeps = {"table", "heatmap", "parallel", "transfer",
                                                         "coord_check"};
    switch (view) {
        case View::Config:
            return config;
        case View::Training:
            return training;
        case View::Wafer:
            return wafer;
        case View::Sweeps:
            return sweeps;
        default:
            return none;
    }
}

const std::vector<std::string_view>& highlightNames() {
    static const std::vector<std::string_view> names = {
        "run_button",        "pause_button",
        "step_layer_button", "continue_button",
        "stop_button",       "wafer_spec",
        "num_systems",       "weight_buffer_layers",
        "micro_batch_size",  "learning_rate",
        "loss_chart",        "heatmap",
        "timeline",          "cluster_diagram",
        "buffer_slots",      "phase_label",
        "step_time",         "mfu",
        "sparsity",          "coord_check",
        "wafer_fit",         "answers_table",
        "chat_transcript",   "train_on_inputs",
    };
    return names;
}

std::string describeAction(const Action& a) {
    switch (a.kind) {
        case Action::Kind::None:
            return "nothing";
        case Action::Kind::RunSteps:
            return "train " + std::to_string(a.count) + " step" + (a.count == 1 ? "" : "s");
        case Action::Kind::PauseAt:
            return std::string("pause after the ") +
                   (a.phase == Phase::Forward ? "forward" : "backward") + " pass of layer " +
                   std::to_string(a.layer);
        case Action::Kind::StepPhase:
            return "step " + std::to_string(a.count) + " layer phase" + (a.count == 1 ? "" : "s");
        case Action::Kind::Systems:
            return "switch to " + std::to_string(a.count) + " system" + (a.count == 1 ? "" : "s");
        case Action::Kind::CoordCheck: {
            std::string widths;
            for (int w : a.widths) widths += (widths.empty() ? "" : ", ") + std::to_string(w);
            return "run the coord check at widths " + widths + " (" + std::to_string(a.count) +
                   " steps each, SP and μP)";
        }
        case Action::Kind::Sweep:
            return "run the config's sweep";
        case Action::Kind::CheckAnswers:
            return "check the run's answers to " + std::to_string(a.count) + " held-out record" +
                   (a.count == 1 ? "" : "s");
    }
    return "?";
}

Result<Lesson> parseLesson(std::string_view yamlText, std::string_view sourceName,
                           const fs::path& baseDir) {
    ReadContext ctx;
    ctx.source = std::string(sourceName);
    YAML::Node root;
    try {
        root = YAML::Load(std::string(yamlText));
    } catch (const YAML::Exception& e) {
        return Error{ctx.where(e.mark) + ": malformed YAML: " + e.msg};
    }
    if (!root.IsMap())
        return Error{ctx.where(root.Mark()) +
                     ": expected a lesson (title, summary, preset, steps), found " +
                     describeFound(root)};
    Lesson lesson;
    std::string preset;
    Raw steps;
    {
        MapReader r(root, "", ctx);
        r.field(lesson.title, {.key = "title", .help = ""});
        r.field(lesson.summary, {.key = "summary", .help = ""});
        r.field(preset, {.key = "preset", .help = ""});
        r.field(steps, {.key = "steps", .help = ""});
        r.reportUnusedKeys();
    }
    if (lesson.title.empty()) ctx.error(root.Mark(), "title", "every lesson needs a title");
    if (preset.empty())
        ctx.error(root.Mark(), "preset",
                  "every lesson starts from a preset (a config file, relative to the lesson: "
                  "../../presets/teaching-stream.yaml)");
    if (!steps.node || !steps.node->IsSequence() || steps.node->size() == 0) {
        ctx.error(steps.node ? steps.node->Mark() : root.Mark(), "steps",
                  "expected a list of steps (- text: ...), found " +
                      (steps.node ? describeFound(*steps.node) : std::string("nothing")));
    } else {
        lesson.steps.resize(steps.node->size());
        for (size_t i = 0; i < steps.node->size(); ++i)
            readStep((*steps.node)[i], indexPath("steps", i), baseDir, lesson.steps[i], ctx);
    }
    if (!preset.empty()) {
        lesson.preset = resolvePath(baseDir, preset);
        std::error_code ec;
        const fs::file_status status = fs::status(lesson.preset, ec);
        // Only a file is read: a device or a pipe (/dev/zero, a FIFO) would never end.
        if (!fs::is_regular_file(status)) {
            const std::string why = fs::exists(status) ? "is not a file"
                                    : ec && ec != std::errc::no_such_file_or_directory
                                        ? "cannot be read (" + ec.message() + ")"
                                        : "does not exist";
            // YAML joins a plain value with the next, more indented line: a hand edit that
            // lost a line break or a `-` shows as a path with spaces in it.
            const std::string runOn =
                preset.find(' ') == std::string::npos
                    ? ""
                    : " (the value has spaces: did the `preset:` line run on into the next, "
                      "indented line? YAML reads both as one value)";
            ctx.error(root["preset"].Mark(), "preset",
                      "the preset does not load: " + lesson.preset.string() + " " + why +
                          "; name a config file relative to the lesson's folder, e.g. "
                          "../../presets/teaching-stream.yaml" +
                          runOn);
        } else if (auto loaded = config::loadConfigFile(lesson.preset); !loaded.ok()) {
            ctx.error(root["preset"].Mark(), "preset",
                      "the preset does not load:\n" + loaded.error().message);
        } else {
            lesson.start = std::move(*loaded);
        }
    }
    if (ctx.errors.empty()) checkAgainstPreset(lesson, ctx);
    if (!ctx.errors.empty()) return Error{joinStrings(ctx.errors, "\n")};
    return lesson;
}

namespace {

void emitChanges(YAML::Emitter& out, const std::vector<Change>& changes) {
    out << YAML::Key << "changes" << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (const Change& c : changes) out << YAML::Key << c.key << YAML::Value << YAML::Load(c.value);
    out << YAML::EndMap;
}

void emitAction(YAML::Emitter& out, const Action& a) {
    out << YAML::Key << "action" << YAML::Value << YAML::Flow << YAML::BeginMap;
    switch (a.kind) {
        case Action::Kind::None:
            break;
        case Action::Kind::RunSteps:
            out << YAML::Key << "run_steps" << YAML::Value << a.count;
            break;
        case Action::Kind::PauseAt:
            out << YAML::Key << "pause_at" << YAML::Value << YAML::BeginMap << YAML::Key << "phase"
                << YAML::Value << (a.phase == Phase::Forward ? "forward" : "backward") << YAML::Key
                << "layer" << YAML::Value << a.layer << YAML::EndMap;
            break;
        case Action::Kind::StepPhase:
            out << YAML::Key << "step_phases" << YAML::Value << a.count;
            break;
        case Action::Kind::Systems:
            out << YAML::Key << "systems" << YAML::Value << a.count;
            break;
        case Action::Kind::CoordCheck:
            out << YAML::Key << "coord_check" << YAML::Value << YAML::BeginMap << YAML::Key
                << "widths" << YAML::Value << YAML::Flow << a.widths << YAML::Key << "steps"
                << YAML::Value << a.count << YAML::EndMap;
            break;
        case Action::Kind::Sweep:
            out << YAML::Key << "sweep" << YAML::Value << YAML::BeginMap << YAML::EndMap;
            break;
        case Action::Kind::CheckAnswers:
            out << YAML::Key << "check_answers" << YAML::Value << a.count;
            break;
    }
    out << YAML::EndMap;
}

void emitChecks(YAML::Emitter& out, const char* key, const std::vector<Condition>& checks) {
    out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const Condition& c : checks) out << c.text;
    out << YAML::EndSeq;
}

// Whether a literal block (`|`, as yaml-cpp writes it: no chomping or indentation indicator)
// reads back as exactly `text`: it must end in exactly one line break (clip chomping), its first
// line with content must not start with a blank (the block's indentation is taken from it), and
// it may hold only characters a YAML block can carry as they are (no CR, no control characters).
// Anything else is written quoted, with escapes (fuzz_lesson found a text without its final line
// break coming back with one).
bool literalKeeps(const std::string& text) {
    if (text.size() < 2 || text.back() != '\n' || text[text.size() - 2] == '\n') return false;
    const size_t content = text.find_first_not_of('\n');
    if (text[content] == ' ' || text[content] == '\t') return false;
    return std::none_of(text.begin(), text.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return (u < 0x20 && c != '\n' && c != '\t') || u == 0x7f;
    });
}

void emitText(YAML::Emitter& out, const char* key, const std::string& text) {
    if (text.empty()) return;
    out << YAML::Key << key << YAML::Value;
    if (text.find('\n') != std::string::npos && literalKeeps(text)) out << YAML::Literal;
    out << text;
}

std::string relativePath(const fs::path& path, const fs::path& dir) {
    if (dir.empty()) return path.string();
    std::error_code ec;
    fs::path base = fs::weakly_canonical(dir, ec);
    if (ec) base = dir.lexically_normal();
    return path.lexically_relative(base).generic_string();
}

}  // namespace

std::string saveLessonYaml(const Lesson& lesson, const fs::path& dir) {
    YAML::Emitter out;
    out << YAML::BeginMap;
    emitText(out, "title", lesson.title);
    emitText(out, "summary", lesson.summary);
    out << YAML::Key << "preset" << YAML::Value << relativePath(lesson.preset, dir);
    out << YAML::Key << "steps" << YAML::Value << YAML::BeginSeq;
    for (const LessonStep& step : lesson.steps) {
        out << YAML::BeginMap;
        emitText(out, "title", step.title);
        emitText(out, "text", step.text);
        if (!step.figure.empty())
            out << YAML::Key << "figure" << YAML::Value << relativePath(step.figure, dir);
        emitText(out, "formula", step.formula);
        if (!step.changes.empty()) emitChanges(out, step.changes);
        if (step.action.kind != Action::Kind::None) emitAction(out, step.action);
        if (step.view != View::None)
            out << YAML::Key << "view" << YAML::Value
                << (std::string(viewName(step.view)) +
                    (step.subView.empty() ? "" : "/" + step.subView));
        emitText(out, "highlight", step.highlight);
        if (!step.expect.empty()) emitChecks(out, "expect", step.expect);
        if (step.tryIt) {
            const TryIt& t = *step.tryIt;
            out << YAML::Key << "try" << YAML::Value << YAML::BeginMap;
            emitText(out, "task", t.task);
            emitText(out, "hint", t.hint);
            emitChecks(out, "check", t.check);
            emitText(out, "answer", t.answer);
            if (!t.solutionChanges.empty() || t.solutionAction.kind != Action::Kind::None) {
                out << YAML::Key << "solution" << YAML::Value << YAML::BeginMap;
                if (!t.solutionChanges.empty()) emitChanges(out, t.solutionChanges);
                if (t.solutionAction.kind != Action::Kind::None) emitAction(out, t.solutionAction);
                out << YAML::EndMap;
            }
            out << YAML::EndMap;
        }
        out << YAML::EndMap;
    }
    out << YAML::EndSeq << YAML::EndMap;
    return std::string(out.c_str()) + "\n";
}

Result<Lesson> loadLesson(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in)
        return Error{file.string() + ": cannot read the lesson file (" + std::strerror(errno) +
                     ")"};
    std::stringstream text;
    text << in.rdbuf();
    std::error_code ec;
    fs::path absolute = fs::absolute(file, ec);
    if (ec) absolute = file;
    absolute = absolute.lexically_normal();
    // parseLesson reports what it finds as errors; this catch is the last line for a reader
    // below it that throws (a lesson is hand-written: one that does not load must be listed as
    // such, never stop the studio or `wafer lesson`).
    try {
        auto lesson = parseLesson(text.str(), file.string(), absolute.parent_path());
        if (lesson.ok()) lesson->sourceFile = absolute;
        return lesson;
    } catch (const std::exception& e) {
        return Error{file.string() + ": the lesson could not be read: " + e.what()};
    }
}

Status applyChanges(config::LoadedConfig& cfg, const std::vector<Change>& changes) {
    for (const Change& change : changes) {
        if (Status s = config::applyOverride(cfg.config, change.override()); !s.ok())
            return Error{change.where + ": " + change.key + ": " + overrideProblem(change, s)};
    }
    return Status::success();
}

Result<config::LoadedConfig> configAtStep(const Lesson& lesson, size_t k, bool withSolutions) {
    config::LoadedConfig cfg = lesson.start;
    for (size_t i = 0; i <= k && i < lesson.steps.size(); ++i) {
        const LessonStep& step = lesson.steps[i];
        ReadContext ctx;
        applyStepConfig(cfg, step.changes, step.action, indexPath("steps", i), ctx);
        if (withSolutions && i < k && step.tryIt)
            applyStepConfig(cfg, step.tryIt->solutionChanges, step.tryIt->solutionAction,
                            indexPath("steps", i) + ".try.solution", ctx);
        if (!ctx.errors.empty()) return Error{joinStrings(ctx.errors, "\n")};
    }
    return cfg;
}

fs::path defaultLessonDir() {
    return appDataDir() / "resources" / "lessons";
}

std::vector<LessonEntry> listLessons(const fs::path& dir) {
    std::vector<LessonEntry> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        if (it->path().extension() != ".yaml") continue;
        LessonEntry e;
        e.file = it->path();
        auto lesson = loadLesson(e.file);
        if (lesson.ok()) {
            e.title = lesson->title;
            e.summary = lesson->summary;
        } else {
            e.error = lesson.error().message;
        }
        out.push_back(std::move(e));
    }
    std::sort(out.begin(), out.end(),
              [](const LessonEntry& a, const LessonEntry& b) { return a.file < b.file; });
    return out;
}

}  // namespace ws::lesson
