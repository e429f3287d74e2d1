// SPDX-License-Identifier: GPL-3.0-or-later
// Lesson checks (see condition.h): parsing "left op right", observing a run's events, evaluating.
#include "engine/lesson/condition.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <variant>

#include "engine/config/config_yaml.h"
#include "engine/config/text_format.h"
#include "engine/wafer/run_fit.h"

namespace ws::lesson {
namespace {

using config::closestMatch;
using config::equalsIgnoreCase;
using config::formatNumberShort;
using config::parseDouble;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string trim(std::string_view text) {
    const size_t begin = text.find_first_not_of(" \t");
    if (begin == std::string_view::npos) return {};
    const size_t end = text.find_last_not_of(" \t");
    return std::string(text.substr(begin, end - begin + 1));
}

// "optimizer.learning_rate[0].total_iters" -> "optimizer.learning_rate[N].total_iters", the
// spelling describeFields() uses for list elements.
std::string fieldPattern(std::string_view path) {
    std::string out;
    for (size_t i = 0; i < path.size(); ++i) {
        if (path[i] == '[') {
            const size_t close = path.find(']', i);
            if (close == std::string_view::npos) return std::string(path);
            out += "[N]";
            i = close;
        } else {
            out += path[i];
        }
    }
    return out;
}

const std::vector<std::string>& configPaths() {
    static const std::vector<std::string> paths = [] {
        std::vector<std::string> out;
        for (const auto& field : config::describeFields()) out.push_back(field.path);
        return out;
    }();
    return paths;
}

bool isConfigPath(std::string_view name) {
    std::string pattern = fieldPattern(name);
    for (const std::string& path : configPaths())
        if (path == pattern) return true;
    // An element of a list field: "optimizer.betas[1]".
    if (pattern.ends_with("[N]")) {
        pattern.resize(pattern.size() - 3);
        for (const std::string& path : configPaths())
            if (path == pattern) return true;
    }
    return false;
}

bool isRunSubject(std::string_view name) {
    for (const SubjectInfo& s : checkSubjects())
        if (s.name == name) return true;
    return false;
}

// Results of the lesson's studies, not of a run: they have no "previous.".
bool isStudySubject(std::string_view name) {
    return name.starts_with("coord.") || name.starts_with("sweep.");
}

std::vector<std::string> allSubjectNames() {
    std::vector<std::string> names = configPaths();
    for (const SubjectInfo& s : checkSubjects()) {
        names.emplace_back(s.name);
        if (!isStudySubject(s.name)) names.push_back("previous." + std::string(s.name));
    }
    return names;
}

bool looksLikeSubject(std::string_view text) {
    if (text.empty() || parseDouble(text)) return false;
    return text.find('.') != std::string_view::npos;
}

const char* phaseName(Phase phase) {
    return phase == Phase::Forward ? "forward" : "backward";
}

// A config value as text, by key path (lists indexed with [i]); nullopt when absent.
std::optional<std::string> configValue(const config::Config& cfg, std::string_view path) {
    YAML::Node node = YAML::Load(config::saveConfigYaml(cfg, config::YamlStyle::Plain));
    size_t pos = 0;
    while (pos < path.size()) {
        size_t end = path.find_first_of(".[", pos);
        if (end == std::string_view::npos) end = path.size();
        if (end > pos) {
            const std::string key(path.substr(pos, end - pos));
            if (!node.IsMap() || !node[key]) return std::nullopt;
            node = node[key];
        }
        pos = end;
        if (pos < path.size() && path[pos] == '[') {
            const size_t close = path.find(']', pos);
            const auto index = parseDouble(path.substr(pos + 1, close - pos - 1));
            if (!index || !node.IsSequence() || *index < 0 || size_t(*index) >= node.size())
                return std::nullopt;
            node = node[size_t(*index)];
            pos = close + 1;
        }
        if (pos < path.size() && path[pos] == '.') ++pos;
    }
    if (node.IsScalar()) return node.Scalar();
    YAML::Emitter out;
    out << YAML::Flow << node;
    return std::string(out.c_str());
}

// The last computed layer phase's figures in the emulated step (its busy frame and its timing).
std::optional<std::string> phaseValue(std::string_view name, const RunObservation& run,
                                      const wafer::StepPrediction& p, std::string& why) {
    if (!run.hasPhase) {
        why = "no layer phase has been computed yet (pause_at one first)";
        return std::nullopt;
    }
    const bool backward = run.phase == Phase::Backward;
    if (name == "emulated.phase_compute_ms" || name == "emulated.phase_ms") {
        // The phase's busiest-core compute time (LayerTiming::computeS, per micro-batch visit),
        // or its whole time on the wafer, the wait for weights included (LayerTiming::timeS).
        const std::string label = run.layer == 0 ? std::string("embeddings")
                                  : run.layer == run.layerCount - 1
                                      ? std::string("head")
                                      : fmt::format("h.{}", run.layer - 1);
        for (const wafer::LayerTiming& t : p.layers)
            if (t.layer == label && (t.pass == wafer::Pass::Backward) == backward)
                return formatNumberShort((name == "emulated.phase_ms" ? t.timeS : t.computeS) *
                                         1e3);
        why =
            "the emulated step has no " + label + (backward ? " backward" : " forward") + " phase";
        return std::nullopt;
    }
    const wafer::UtilizationFrame* frame = p.frameFor(run.layer, backward);
    if (!frame) {
        why = "the emulated step has no busy frame for that phase";
        return std::nullopt;
    }
    if (name == "emulated.phase_busy_min_percent") return formatNumberShort(frame->min * 100.0);
    if (name == "emulated.phase_busy_max_percent") return formatNumberShort(frame->max * 100.0);
    if (name == "emulated.phase_busy_mean_percent") return formatNumberShort(frame->mean * 100.0);
    why = "unknown subject";
    return std::nullopt;
}

// A run subject's value, or nullopt with why.
std::optional<std::string> runValue(std::string_view name, const RunObservation* run,
                                    const RunObservation* previous, std::string& why) {
    if (name.starts_with("previous.")) {
        if (!previous) {
            why = "there was no run before this one";
            return std::nullopt;
        }
        return runValue(name.substr(9), previous, nullptr, why);
    }
    if (name == "run.state") {
        if (!run || !run->started) return std::string("none");
        return std::string(session::runStateName(run->state));
    }
    if (!run || !run->started) {
        why = "no run has started yet";
        return std::nullopt;
    }
    const auto number = [](double v) { return formatNumberShort(v); };
    const std::vector<double>& l = run->losses;
    if (name == "run.phase") return std::string(run->hasPhase ? phaseName(run->phase) : "none");
    if (name == "run.layer") return std::to_string(run->hasPhase ? run->layer : -1);
    if (name == "run.steps") return std::to_string(run->steps());
    if (name == "run.phase_step") return std::to_string(run->phaseStep + 1);
    if (name == "run.micro_batch") return std::to_string(run->phaseMicro + 1);
    if (name == "run.layers") return std::to_string(run->layerCount);
    if (name == "run.max_resident_layers") return std::to_string(run->maxResidentLayers);
    if (name.starts_with("loss.")) {
        if (name == "loss.finite")
            return std::string(
                std::all_of(l.begin(), l.end(), [](double v) { return std::isfinite(v); }) &&
                        run->state != session::RunState::Diverged
                    ? "true"
                    : "false");
        if (l.empty()) {
            why = "the run has logged no loss yet";
            return std::nullopt;
        }
        if (name == "loss.first") return number(l.front());
        if (name == "loss.final") return number(l.back());
        if (name == "loss.min") return number(*std::min_element(l.begin(), l.end()));
        if (name == "loss.max") return number(*std::max_element(l.begin(), l.end()));
        if (name == "loss.max_diff_previous") {
            if (!previous || previous->losses.empty()) {
                why = "there is no earlier run's loss to compare with";
                return std::nullopt;
            }
            const size_t n = std::min(l.size(), previous->losses.size());
            double worst = 0.0;
            for (size_t i = 0; i < n; ++i)
                worst = std::max(worst, std::abs(l[i] - previous->losses[i]));
            return number(worst);
        }
    }
    if (name.starts_with("answers.")) {
        if (!run->answers) {
            why = "the run's held-out answers have not been checked (a check_answers action)";
            return std::nullopt;
        }
        const RunObservation::Answers& a = *run->answers;
        if (name == "answers.cases") return std::to_string(a.cases);
        if (name == "answers.exact") return std::to_string(a.exact);
        if (name == "answers.exact_percent")
            return number(a.cases > 0 ? 100.0 * a.exact / a.cases : 0.0);
        if (name == "answers.answer_loss") return number(a.answerLoss);
    }
    if (name.starts_with("emulated.")) {
        if (run->emulatedStepS <= 0.0) {
            why = "the run is not emulated (wafer.emulate: false) or has not started a step";
            return std::nullopt;
        }
        if (name == "emulated.step_ms") return number(run->emulatedStepS * 1e3);
        if (name == "emulated.mfu_percent") return number(run->mfu * 100.0);
        if (name == "emulated.tokens_per_s") return number(run->emulatedTokensPerS);
        if (name == "emulated.micro_batches") return std::to_string(run->microBatches);
        if (name == "emulated.streaming_hidden")
            return std::string(run->streamingHidden ? "true" : "false");
        if (const wafer::StepPrediction* p = run->prediction.get()) {
            if (name == "emulated.compute_ms") return number(p->split.compute * 1e3);
            // Waiting on the link, SwarmX's lockstep queueing (cluster_links.h) included.
            if (name == "emulated.weight_wait_ms")
                return number((p->split.streaming + p->split.queueing) * 1e3);
            if (name == "emulated.weight_stream_ms") {
                double total = 0.0;
                for (const wafer::LayerTiming& t : p->layers) total += t.weightStreamS;
                return number(total * 1e3);
            }
            if (name.starts_with("emulated.phase_")) return phaseValue(name, *run, *p, why);
        }
    }
    why = "unknown subject";
    return std::nullopt;
}

// A study's result (StudyObservation), or nullopt with why.
std::optional<std::string> studyValue(std::string_view name, const StudyObservation* studies,
                                      std::string& why) {
    const auto number = [](double v) { return formatNumberShort(v); };
    if (name.starts_with("coord.")) {
        if (!studies || !studies->coordCheck) {
            why = "no coord check has run yet (a coord_check action)";
            return std::nullopt;
        }
        const mup::CoordCheckResult& r = *studies->coordCheck;
        if (name == "coord.pass") return std::string(r.pass ? "true" : "false");
        if (name == "coord.sp.worst_slope") return number(r.worstSpSlope);
        if (name == "coord.mup.worst_slope") return number(r.worstMupSlope);
        why = "unknown subject";
        return std::nullopt;
    }
    if (!studies || !studies->sweepTransfer) {
        why = "no sweep has run yet (a sweep action)";
        return std::nullopt;
    }
    if (name == "sweep.trials") return std::to_string(studies->sweepTrials);
    // sweep.<parametrization>.<figure>
    const std::string_view rest = name.substr(6);
    const size_t dot = rest.find('.');
    const std::string_view param = rest.substr(0, dot);
    const std::string_view figure = dot == std::string_view::npos ? "" : rest.substr(dot + 1);
    const sweep::ParametrizationTransfer* t = nullptr;
    for (const auto& candidate : *studies->sweepTransfer)
        if (candidate.parametrization == param) t = &candidate;
    if (!t) {
        why = "the sweep has no " + std::string(param) + " trials";
        return std::nullopt;
    }
    const auto known = [&](double v) -> std::optional<std::string> {
        if (std::isnan(v)) {
            why = t->note.empty() ? "the sweep cannot tell (too few widths or rates)" : t->note;
            return std::nullopt;
        }
        return number(v);
    };
    if (figure == "drift_log2") return known(t->driftSteps * t->gridStep);
    if (figure == "regret") return known(t->regret);
    if (t->widths.empty()) return known(kNaN);
    if (figure == "best_log2_lr_narrowest") return known(t->widths.front().bestLog2Lr);
    if (figure == "best_log2_lr_widest") return known(t->widths.back().bestLog2Lr);
    why = "unknown subject";
    return std::nullopt;
}

// Whether the config fits its wafer (wafer/run_fit.h), and in how many micro-batches.
std::optional<std::string> fitValue(std::string_view name, const config::Config& cfg,
                                    std::string& why) {
    auto fit = wafer::fitOnWafer(cfg);
    if (name == "fit.ok") return std::string(fit.ok() ? "true" : "false");
    if (!fit.ok()) {
        why = "the config does not fit its wafer: " + fit.error().message;
        return std::nullopt;
    }
    if (name == "fit.micro_batch") return std::to_string(fit->microBatch);
    const int perSystem = cfg.trainInput.batchSize / std::max(1, cfg.runconfig.numCsx);
    return std::to_string(fit->microBatch > 0 ? perSystem / fit->microBatch : 0);
}

std::optional<std::string> valueOf(const Operand& operand, const CheckContext& context,
                                   std::string& why) {
    if (!operand.isSubject) return operand.text;
    if (operand.text.starts_with("fit.")) {
        if (!context.config) {
            why = "no config";
            return std::nullopt;
        }
        return fitValue(operand.text, *context.config, why);
    }
    if (isConfigPath(operand.text)) {
        if (!context.config) {
            why = "no config";
            return std::nullopt;
        }
        auto value = configValue(*context.config, operand.text);
        if (!value) why = "the config has no " + operand.text;
        return value;
    }
    if (isStudySubject(operand.text)) return studyValue(operand.text, context.studies, why);
    return runValue(operand.text, context.run, context.previous, why);
}

const char* compareText(Compare op) {
    switch (op) {
        case Compare::Equal:
            return "==";
        case Compare::NotEqual:
            return "!=";
        case Compare::Less:
            return "<";
        case Compare::LessEqual:
            return "<=";
        case Compare::Greater:
            return ">";
        case Compare::GreaterEqual:
            return ">=";
    }
    return "?";
}

}  // namespace

void RunObservation::observe(const session::Event& event) {
    started = true;
    if (const auto* m = std::get_if<session::StepMetrics>(&event)) {
        losses.push_back(m->loss);
    } else if (const auto* s = std::get_if<session::StateChange>(&event)) {
        state = s->state;
    } else if (const auto* span = std::get_if<streaming::Span>(&event)) {
        if (span->kind == streaming::SpanKind::Forward ||
            span->kind == streaming::SpanKind::Backward) {
            hasPhase = true;
            phase = span->kind == streaming::SpanKind::Forward ? Phase::Forward : Phase::Backward;
            layer = span->layer;
            phaseStep = span->step;
            phaseMicro = span->micro;
            if (span->system <= 0)
                addVisitTime(span->step, span->micro, span->layer,
                             span->kind == streaming::SpanKind::Backward, -1.0, span->end);
        } else if (span->kind == streaming::SpanKind::StreamIn) {
            addVisitTime(span->step, span->micro, span->layer, span->backwardPass, span->start,
                         -1.0);
        }
    } else if (const auto* e = std::get_if<session::EmulatedStep>(&event)) {
        if (e->prediction) {
            const wafer::StepPrediction& p = *e->prediction;
            emulatedStepS = p.stepS;
            mfu = p.mfu;
            emulatedTokensPerS = p.tokensPerS;
            microBatches = p.microBatch > 0 ? p.batchPerSystem / p.microBatch : 0;
            streamingHidden = p.weightStreamingHidden;
            layerCount = int(p.forwardFrame.size());
            prediction = e->prediction;
        }
    }
}

void RunObservation::addVisitTime(int64_t step, int micro, int layer, bool backward, double start,
                                  double end) {
    Visit* visit = nullptr;
    for (Visit& v : visits)
        if (v.step == step && v.micro == micro && v.layer == layer && v.backward == backward)
            visit = &v;
    if (!visit) {
        if (visits.size() >= 64) visits.erase(visits.begin());  // a step or two back is enough
        visits.push_back({step, micro, layer, backward});
        visit = &visits.back();
    }
    if (start >= 0.0) visit->start = start;
    if (end >= 0.0) visit->end = end;
    if (visit->start < 0.0 || visit->end < 0.0) return;
    // The most intervals holding one point is reached at some interval's start.
    for (const Visit& at : visits) {
        if (at.start < 0.0 || at.end < 0.0) continue;
        int holding = 0;
        for (const Visit& v : visits)
            holding += v.start >= 0.0 && v.end >= 0.0 && v.start <= at.start && at.start < v.end;
        maxResidentLayers = std::max(maxResidentLayers, holding);
    }
}

const std::vector<SubjectInfo>& checkSubjects() {
    static const std::vector<SubjectInfo> subjects = {
        {"run.state", "none, preparing, running, paused, finished, stopped, diverged or failed"},
        {"run.phase",
         "the layer phase just computed (shown while paused): forward, backward, none"},
        {"run.layer", "its layer: 0 embeddings, 1..L the blocks, L+1 the head; -1 none"},
        {"run.phase_step", "the 1-based training step that phase belongs to"},
        {"run.micro_batch", "the 1-based micro-batch that phase belongs to"},
        {"run.steps", "training steps completed"},
        {"run.layers", "layers the wafer streams per pass (L + 2)"},
        {"run.max_resident_layers",
         "the most layers' weights the wafer held at once (stream-in start to compute end)"},
        {"loss.first", "the first step's training loss"},
        {"loss.final", "the last step's training loss"},
        {"loss.min", "the lowest training loss"},
        {"loss.max", "the highest training loss"},
        {"loss.finite", "true while every loss is a finite number and the run did not diverge"},
        {"loss.max_diff_previous", "largest |loss - the previous run's loss| at the same step"},
        {"answers.cases", "held-out records the run's model answered (a check_answers action)"},
        {"answers.exact", "how many of them it answered exactly"},
        {"answers.exact_percent", "the same as a percentage of answers.cases"},
        {"answers.answer_loss",
         "its mean loss on the records' answer tokens, teacher-forced, nats per token"},
        {"fit.ok", "true when the current config fits its wafer (the check a run makes)"},
        {"fit.micro_batch", "sequences per micro-batch the current config gets on its wafer"},
        {"fit.micro_batches", "wafer passes per step and system for the current config"},
        {"emulated.step_ms", "the emulated step time, milliseconds"},
        {"emulated.mfu_percent", "the emulated model FLOPs utilization, percent"},
        {"emulated.tokens_per_s", "the emulated training throughput, tokens/s (all systems)"},
        {"emulated.micro_batches", "wafer passes (micro-batches) per step and system"},
        {"emulated.streaming_hidden", "true when no layer waits for its weights"},
        {"emulated.compute_ms",
         "the emulated step's time spent computing (its time split's compute part), ms"},
        {"emulated.weight_wait_ms",
         "the emulated step's time spent waiting for weights (not hidden by prefetch; on "
         "several systems SwarmX's lockstep queueing included), ms"},
        {"emulated.weight_stream_ms", "all the step's weight stream-in time, added up, ms"},
        {"emulated.phase_compute_ms",
         "the busiest core's compute time in the layer phase just computed (run.phase), ms"},
        {"emulated.phase_ms",
         "that layer phase's whole time on the wafer, its wait for weights included, ms"},
        {"emulated.phase_busy_min_percent",
         "the least busy core's share of that phase's compute window (the heatmap's darkest "
         "core), %"},
        {"emulated.phase_busy_max_percent",
         "the busiest core's share of that phase's compute window, %"},
        {"emulated.phase_busy_mean_percent",
         "the mean core's share of that phase's compute window, %"},
        {"coord.pass", "true when the last coord check passed (every μP slope below 0.3)"},
        {"coord.sp.worst_slope",
         "its worst slope under SP: mean |activation| grows like width^slope"},
        {"coord.mup.worst_slope", "the same under μP"},
        {"sweep.trials", "trials of the last sweep with a result"},
        {"sweep.sp.drift_log2",
         "how far the best log2 learning rate moves across widths under SP (max - min)"},
        {"sweep.mup.drift_log2", "the same under μP"},
        {"sweep.sp.best_log2_lr_narrowest", "the best log2 learning rate of the narrowest width"},
        {"sweep.sp.best_log2_lr_widest", "the best log2 learning rate of the widest width"},
        {"sweep.mup.best_log2_lr_narrowest", "the same under μP"},
        {"sweep.mup.best_log2_lr_widest", "the same under μP"},
        {"sweep.sp.regret",
         "the widest model's loss at the narrowest one's best rate minus its own best, nats"},
        {"sweep.mup.regret", "the same under μP"},
    };
    return subjects;
}

Result<Condition> parseCondition(std::string_view text) {
    static const std::vector<std::pair<std::string_view, Compare>> ops = {
        {"==", Compare::Equal},        {"!=", Compare::NotEqual}, {"<=", Compare::LessEqual},
        {">=", Compare::GreaterEqual}, {"<", Compare::Less},      {">", Compare::Greater},
    };
    Condition c;
    c.text = trim(text);
    size_t at = std::string_view::npos;
    size_t width = 0;
    for (const auto& [spelling, op] : ops) {
        const size_t found = c.text.find(spelling);
        if (found != std::string::npos && (at == std::string::npos || found < at)) {
            at = found;
            width = spelling.size();
            c.op = op;
        }
    }
    if (at == std::string::npos)
        return Error{
            "expected `subject op value` with op one of ==, !=, <, <=, >, >= (e.g. "
            "`runconfig.num_csx >= 2`), found \"" +
            c.text + "\""};
    c.left = {true, trim(std::string_view(c.text).substr(0, at))};
    const std::string right = trim(std::string_view(c.text).substr(at + width));
    if (c.left.text.empty() || right.empty())
        return Error{"both sides of `" + std::string(compareText(c.op)) +
                     "` must be given, found \"" + c.text + "\""};
    c.right = {looksLikeSubject(right), right};
    for (const Operand* side : {&c.left, &c.right}) {
        if (!side->isSubject) continue;
        const std::string& name = side->text;
        const std::string_view bare =
            name.starts_with("previous.") ? std::string_view(name).substr(9) : name;
        if (isConfigPath(name) || (isRunSubject(bare) && !(bare != name && isStudySubject(bare))))
            continue;
        std::string message = "unknown subject `" + name + "`";
        if (auto hint = closestMatch(name, allSubjectNames()))
            message += "; did you mean `" + *hint + "`?";
        else
            message +=
                "; a check names a config key (as `wafer fields` lists them) or one of "
                "run.*, loss.*, answers.*, emulated.*, fit.*, coord.*, sweep.* (the user "
                "guide, docs/lessons.md)";
        return Error{message};
    }
    return c;
}

CheckResult evaluate(const Condition& c, const CheckContext& context) {
    std::string why;
    const auto left = valueOf(c.left, context, why);
    if (!left) return {false, c.left.text + ": " + why};
    const auto right = valueOf(c.right, context, why);
    if (!right) return {false, c.right.text + ": " + why};
    const std::optional<double> a = parseDouble(*left);
    const std::optional<double> b = parseDouble(*right);
    bool passed = false;
    if (a && b) {
        switch (c.op) {
            case Compare::Equal:
                passed = *a == *b;
                break;
            case Compare::NotEqual:
                passed = *a != *b;
                break;
            case Compare::Less:
                passed = *a < *b;
                break;
            case Compare::LessEqual:
                passed = *a <= *b;
                break;
            case Compare::Greater:
                passed = *a > *b;
                break;
            case Compare::GreaterEqual:
                passed = *a >= *b;
                break;
        }
    } else if (c.op == Compare::Equal || c.op == Compare::NotEqual) {
        passed = equalsIgnoreCase(*left, *right) == (c.op == Compare::Equal);
    } else {
        return {false, c.left.text + " is " + *left + ": `" + compareText(c.op) +
                           "` needs numbers on both sides"};
    }
    std::string detail = c.left.text + " is " + *left;
    if (c.right.isSubject) detail += ", " + c.right.text + " is " + *right;
    return {passed, detail};
}

std::optional<std::string> subjectValue(std::string_view subject, const CheckContext& context,
                                        std::string* why) {
    std::string reason;
    auto value = valueOf(Operand{true, std::string(subject)}, context, reason);
    if (!value && why) *why = reason;
    return value;
}

CheckResult evaluateAnswer(std::string_view subject, std::string_view typed,
                           const CheckContext& context) {
    const std::string answer = trim(typed);
    if (answer.empty()) return {false, "type your answer first"};
    std::string why;
    const auto value = subjectValue(subject, context, &why);
    if (!value) return {false, "the screen does not show it yet: " + why};
    const std::optional<double> a = parseDouble(answer);
    const std::optional<double> b = parseDouble(*value);
    const bool passed = a && b ? std::abs(*a - *b) <= 1e-9 * std::max(1.0, std::abs(*b))
                               : equalsIgnoreCase(answer, *value);
    return {passed, passed ? "your answer " + answer + " is right"
                           : "your answer " + answer + " is not what the screen shows"};
}

}  // namespace ws::lesson
