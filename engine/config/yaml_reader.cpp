// SPDX-License-Identifier: GPL-3.0-or-later
// YAML -> Config reading (see yaml_reader.h): the per-type readValue() overloads, MapReader's
// key bookkeeping (aliases, duplicates, unknown keys with hints, ModelZoo keys we ignore) and the
// per-struct hooks.
#include "engine/config/yaml_reader.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "engine/config/describe.h"
#include "engine/config/modelzoo_keys.h"
#include "engine/config/text_format.h"

namespace ws::config {

using detail::findIgnoredModelZooKey;
using detail::IgnoredModelZooKey;
using detail::sectionKind;

namespace {

// " >= 1", " in [0, 0.999]", "" (no bounds).
std::string rangeText(const FieldInfo& info) {
    const bool lo = std::isfinite(info.min);
    const bool hi = std::isfinite(info.max);
    if (lo && hi)
        return " in [" + formatNumberShort(info.min) + ", " + formatNumberShort(info.max) + "]";
    if (lo) return " >= " + formatNumberShort(info.min);
    if (hi) return " <= " + formatNumberShort(info.max);
    return "";
}

bool inRange(double value, const FieldInfo& info) {
    return value >= info.min && value <= info.max;
}

std::optional<long long> readInteger(const YAML::Node& node, const FieldInfo& info,
                                     const std::string& path, ReadContext& ctx, long long typeMin,
                                     long long typeMax, std::string_view bits) {
    const std::string expected = "expected an integer" + rangeText(info);
    if (!node.IsScalar()) {
        ctx.error(ctx.markOf(node), path, expected + ", found " + describeFound(node));
        return std::nullopt;
    }
    bool isNumber = false;
    const std::optional<long long> parsed = parseInteger(node.Scalar(), &isNumber);
    if (!parsed) {
        ctx.error(ctx.markOf(node), path,
                  expected + ", found " + describeFound(node) +
                      (isNumber ? " (integers have no fractional part)" : ""));
        return std::nullopt;
    }
    if (*parsed < typeMin || *parsed > typeMax) {
        ctx.error(
            ctx.markOf(node), path,
            expected + " that fits in " + std::string(bits) + ", found " + describeFound(node));
        return std::nullopt;
    }
    if (!inRange(static_cast<double>(*parsed), info)) {
        ctx.error(ctx.markOf(node), path, expected + ", found " + describeFound(node));
        return std::nullopt;
    }
    return parsed;
}

std::optional<double> readNumber(const YAML::Node& node, const FieldInfo& info,
                                 const std::string& path, ReadContext& ctx) {
    const std::string expected = "expected a number" + rangeText(info);
    std::optional<double> parsed;
    if (node.IsScalar()) parsed = parseDouble(node.Scalar());
    if (!parsed || !inRange(*parsed, info)) {
        ctx.error(ctx.markOf(node), path, expected + ", found " + describeFound(node));
        return std::nullopt;
    }
    return parsed;
}

std::string quotedList(const std::vector<std::string_view>& items) {
    std::vector<std::string> quoted;
    for (std::string_view item : items) quoted.push_back(quoteYaml(item));
    return joinStrings(quoted, ", ");
}

// Whether a value in the file means the same as the value Wafer Studio implements.
bool sameSetting(std::string_view fileValue, std::string_view implemented) {
    const std::optional<bool> a = parseBool(fileValue);
    const std::optional<bool> b = parseBool(implemented);
    if (a && b) return *a == *b;
    const std::optional<double> x = parseDouble(fileValue);
    const std::optional<double> y = parseDouble(implemented);
    if (x && y) return *x == *y;
    return equalsIgnoreCase(fileValue, implemented);
}

// A key as messages show it: a broken multi-line scalar can turn a whole block into one key.
std::string displayKey(const std::string& key) {
    const size_t newline = key.find('\n');
    if (newline == std::string::npos && key.size() <= 60) return key;
    return key.substr(0, std::min<size_t>({newline, 57})) + "...";
}

// Sections (by path) where a key is declared, for "belongs in train_input" hints.
std::vector<std::string> sectionsDeclaring(std::string_view key) {
    std::vector<std::string> sections;
    for (const FieldDescription& field : describeFields()) {
        const size_t dot = field.path.rfind('.');
        const std::string_view last = dot == std::string::npos
                                          ? std::string_view(field.path)
                                          : std::string_view(field.path).substr(dot + 1);
        if (last == key)
            sections.push_back(dot == std::string::npos ? "the top level"
                                                        : field.path.substr(0, dot));
    }
    return sections;
}

// Whether two values of one repeated key mean the same: equal text, equal numbers ("150000" and
// "1.5e5"), or lists/sections that are equal element by element.
bool sameValue(const YAML::Node& a, const YAML::Node& b) {
    if (a.Type() != b.Type()) return false;
    if (a.IsNull()) return true;
    if (a.IsScalar()) {
        if (a.Scalar() == b.Scalar()) return true;
        const std::optional<double> x = parseDouble(a.Scalar());
        const std::optional<double> y = parseDouble(b.Scalar());
        return x && y && *x == *y;
    }
    return YAML::Dump(a) == YAML::Dump(b);
}

// A repeated key's value in a message: the scalar in quotes, or "a list" / "a section" shown as
// flow YAML when short.
std::string describeValue(const YAML::Node& node) {
    if (node.IsScalar() || node.IsNull()) return describeFound(node);
    YAML::Emitter out;
    out << YAML::Flow << node;
    const std::string flow = out.c_str();
    return flow.size() <= 60 ? flow : describeFound(node);
}

}  // namespace

std::string ReadContext::where(const YAML::Mark& mark) const {
    if (!useMarks || mark.is_null() || mark.line < 0) return source;
    return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

void ReadContext::error(const YAML::Mark& mark, std::string_view path, std::string_view message) {
    std::string text = where(mark) + ": ";
    if (!path.empty()) text += std::string(path) + ": ";
    errors.push_back(text + std::string(message));
}

void ReadContext::warn(const YAML::Mark& mark, std::string_view path, std::string_view message) {
    std::string text = where(mark) + ": ";
    if (!path.empty()) text += std::string(path) + ": ";
    warnings.push_back(text + std::string(message));
}

std::string describeFound(const YAML::Node& node) {
    if (!node || node.IsNull()) return "nothing";
    if (node.IsSequence()) return "a list";
    if (node.IsMap()) return "a section";
    std::string text = node.Scalar();
    if (text.size() > 60) text = text.substr(0, 57) + "...";
    return quoteYaml(text);
}

std::string childPath(std::string_view parent, std::string_view key) {
    if (parent.empty()) return std::string(key);
    return std::string(parent) + "." + std::string(key);
}

std::string indexPath(std::string_view parent, size_t index) {
    return std::string(parent) + "[" + std::to_string(index) + "]";
}

void readValue(const YAML::Node& node, std::string& value, const FieldInfo& info,
               const std::string& path, ReadContext& ctx) {
    if (!node.IsScalar() && !node.IsNull()) {
        ctx.error(ctx.markOf(node), path,
                  (info.choices.empty() ? std::string("expected text")
                                        : "expected one of " + quotedList(info.choices)) +
                      ", found " + describeFound(node));
        return;
    }
    const std::string text = node.IsNull() ? std::string() : node.Scalar();
    if (info.choices.empty()) {
        value = text;
        return;
    }
    for (std::string_view choice : info.choices) {
        if (equalsIgnoreCase(text, choice)) {
            value = std::string(choice);
            return;
        }
    }
    for (const ValueAlias& alias : info.valueAliases) {
        if (equalsIgnoreCase(text, alias.from)) {
            value = std::string(alias.to);
            ctx.warn(ctx.markOf(node), path,
                     "read " + quoteYaml(text) + " as " + quoteYaml(alias.to) +
                         " (the same setting under Wafer Studio's name)");
            return;
        }
    }
    std::string message = "expected one of " + quotedList(info.choices) +
                          " (any letter case), found " + describeFound(node);
    std::vector<std::string> candidates(info.choices.begin(), info.choices.end());
    if (equalsIgnoreCase(text, "float16") && info.key == "fp16_type")
        message +=
            "; float16 needs loss scaling, which Wafer Studio does not implement: use "
            "bfloat16";
    else if (std::optional<std::string> hint = closestMatch(text, candidates))
        message += "; did you mean \"" + *hint + "\"?";
    ctx.error(ctx.markOf(node), path, message);
}

void readValue(const YAML::Node& node, bool& value, const FieldInfo& /*info*/,
               const std::string& path, ReadContext& ctx) {
    std::optional<bool> parsed;
    if (node.IsScalar()) parsed = parseBool(node.Scalar());
    if (!parsed) {
        ctx.error(ctx.markOf(node), path, "expected true or false, found " + describeFound(node));
        return;
    }
    value = *parsed;
}

void readValue(const YAML::Node& node, int& value, const FieldInfo& info, const std::string& path,
               ReadContext& ctx) {
    if (std::optional<long long> parsed =
            readInteger(node, info, path, ctx, std::numeric_limits<int>::min(),
                        std::numeric_limits<int>::max(), "32 bits"))
        value = static_cast<int>(*parsed);
}

void readValue(const YAML::Node& node, int64_t& value, const FieldInfo& info,
               const std::string& path, ReadContext& ctx) {
    if (std::optional<long long> parsed =
            readInteger(node, info, path, ctx, std::numeric_limits<int64_t>::min(),
                        std::numeric_limits<int64_t>::max(), "64 bits"))
        value = static_cast<int64_t>(*parsed);
}

void readValue(const YAML::Node& node, double& value, const FieldInfo& info,
               const std::string& path, ReadContext& ctx) {
    if (std::optional<double> parsed = readNumber(node, info, path, ctx)) value = *parsed;
}

void readValue(const YAML::Node& node, std::array<double, 2>& value, const FieldInfo& info,
               const std::string& path, ReadContext& ctx) {
    if (!node.IsSequence() || node.size() != 2) {
        std::string found = describeFound(node);
        if (node.IsSequence()) found = "a list of " + std::to_string(node.size());
        ctx.error(
            ctx.markOf(node), path,
            "expected a list of 2 numbers" + rangeText(info) + " like [0.9, 0.95], found " + found);
        return;
    }
    std::array<double, 2> result = value;
    bool ok = true;
    for (size_t i = 0; i < 2; ++i) {
        const std::optional<double> element = readNumber(node[i], info, indexPath(path, i), ctx);
        if (element)
            result[i] = *element;
        else
            ok = false;
    }
    if (ok) value = result;
}

void readValue(const YAML::Node& node, std::vector<std::string>& value, const FieldInfo& /*info*/,
               const std::string& path, ReadContext& ctx) {
    if (node.IsNull()) {
        value.clear();
        return;
    }
    if (node.IsScalar()) {
        value.clear();
        if (!node.Scalar().empty()) value.push_back(node.Scalar());
        return;
    }
    if (!node.IsSequence()) {
        ctx.error(ctx.markOf(node), path,
                  "expected a path or a list of paths, found " + describeFound(node));
        return;
    }
    std::vector<std::string> result;
    bool ok = true;
    for (size_t i = 0; i < node.size(); ++i) {
        const YAML::Node element = node[i];
        if (!element.IsScalar() || element.Scalar().empty()) {
            ctx.error(ctx.markOf(element), indexPath(path, i),
                      "expected a path, found " + describeFound(element));
            ok = false;
            continue;
        }
        result.push_back(element.Scalar());
    }
    if (ok) value = std::move(result);
}

void readValue(const YAML::Node& node, LearningRate& value, const FieldInfo& /*info*/,
               const std::string& path, ReadContext& ctx) {
    static const std::string kExpected =
        "expected a number >= 0 or a list of schedule pieces "
        "({scheduler: Linear|Cosine|Constant, ...})";
    if (node.IsScalar()) {
        const std::optional<double> parsed = parseDouble(node.Scalar());
        if (!parsed || *parsed < 0) {
            ctx.error(ctx.markOf(node), path, kExpected + ", found " + describeFound(node));
            return;
        }
        value.constant = *parsed;
        value.schedule.clear();
        return;
    }
    // A list replaces the whole schedule, so every piece must be complete even in an override.
    const bool wasMerging = std::exchange(ctx.merging, false);
    if (node.IsSequence() && node.size() > 0) {
        std::vector<SchedulerConfig> schedule(node.size());
        const size_t errorsBefore = ctx.errors.size();
        for (size_t i = 0; i < node.size(); ++i) {
            const YAML::Node element = node[i];
            if (!element.IsMap()) {
                ctx.error(ctx.markOf(element), indexPath(path, i),
                          "expected a schedule piece ({scheduler: ..., ...}), found " +
                              describeFound(element));
                continue;
            }
            readSection(element, schedule[i], indexPath(path, i), ctx);
        }
        if (ctx.errors.size() == errorsBefore) value.schedule = std::move(schedule);
    } else if (node.IsMap()) {
        // One piece written without the list dash.
        SchedulerConfig piece;
        const size_t errorsBefore = ctx.errors.size();
        readSection(node, piece, indexPath(path, 0), ctx);
        if (ctx.errors.size() == errorsBefore) value.schedule = {piece};
    } else {
        ctx.error(ctx.markOf(node), path,
                  kExpected + ", found " +
                      (node.IsSequence() ? std::string("an empty list") : describeFound(node)));
    }
    ctx.merging = wasMerging;
}

MapReader::MapReader(const YAML::Node& map, std::string path, ReadContext& ctx)
    : m_map(map), m_path(std::move(path)), m_ctx(ctx), m_errorsAtStart(ctx.errors.size()) {
    for (auto it = map.begin(); it != map.end(); ++it) {
        const YAML::Node keyNode = it->first;
        if (!keyNode.IsScalar()) {
            m_ctx.error(
                keyNode.Mark(), m_path,
                "keys must be plain names, found " + describeFound(keyNode) + " used as a key");
            continue;
        }
        const std::string key = keyNode.Scalar();
        bool duplicate = false;
        for (const Entry& entry : m_entries) {
            if (entry.key != key) continue;
            duplicate = true;
            // PyYAML, ModelZoo's loader, keeps the last value silently, and real ModelZoo files
            // repeat keys (gpt2/configs/params_gpt2_small_ws.yaml: `steps: 150000` twice). A
            // repeat that agrees changes nothing, so the file loads; one that disagrees would
            // make us pick a value the author may not have meant, so it stays an error.
            const std::string first = std::to_string(entry.keyNode.Mark().line + 1);
            const std::string second = std::to_string(keyNode.Mark().line + 1);
            if (sameValue(entry.value, it->second)) {
                m_ctx.warn(keyNode.Mark(), childPath(m_path, key),
                           "this key appears twice in the same section (lines " + first + " and " +
                               second + ") with the same value " + describeValue(it->second) +
                               "; read once, delete one of them");
            } else {
                m_ctx.error(keyNode.Mark(), childPath(m_path, key),
                            "this key appears twice in the same section with different values: " +
                                describeValue(entry.value) + " at line " + first + ", " +
                                describeValue(it->second) + " at line " + second +
                                "; keep the one you mean");
            }
            break;
        }
        if (!duplicate) m_entries.push_back({key, keyNode, it->second, false});
    }
}

std::optional<YAML::Node> MapReader::take(const FieldInfo& info) {
    m_knownKeys.emplace_back(info.key);
    m_hintKeys.emplace_back(info.key);
    m_hintKeys.insert(m_hintKeys.end(), info.aliases.begin(), info.aliases.end());
    std::vector<std::string_view> names = {info.key};
    names.insert(names.end(), info.aliases.begin(), info.aliases.end());
    Entry* found = nullptr;
    for (Entry& entry : m_entries) {
        for (std::string_view name : names) {
            if (entry.key != name) continue;
            entry.used = true;
            if (found) {
                m_ctx.error(entry.keyNode.Mark(), childPath(m_path, entry.key),
                            "`" + found->key + "` and `" + entry.key +
                                "` are two names of the same setting; keep only `" +
                                std::string(info.key) + "`");
            } else {
                found = &entry;
            }
        }
    }
    if (!found) return std::nullopt;
    m_ctx.keyMark = found->keyNode.Mark();
    return found->value;
}

std::optional<YAML::Node> MapReader::takeKey(std::string_view key) {
    for (Entry& entry : m_entries) {
        if (entry.key == key) {
            entry.used = true;
            m_ctx.keyMark = entry.keyNode.Mark();
            return entry.value;
        }
    }
    return std::nullopt;
}

bool MapReader::has(const FieldInfo& info) const {
    for (const Entry& entry : m_entries) {
        if (entry.key == info.key) return true;
        for (std::string_view alias : info.aliases)
            if (entry.key == alias) return true;
    }
    return false;
}

void MapReader::reportUnusedKeys() {
    const std::string kind = sectionKind(m_path);
    for (const Entry& entry : m_entries) {
        if (entry.used) continue;
        const std::string path = childPath(m_path, displayKey(entry.key));
        if (const IgnoredModelZooKey* ignored = findIgnoredModelZooKey(kind, entry.key)) {
            std::string message = "ModelZoo setting not implemented by Wafer Studio, ignored: " +
                                  std::string(ignored->behaviour);
            if (!ignored->implementedValue.empty() && entry.value.IsScalar() &&
                !sameSetting(entry.value.Scalar(), ignored->implementedValue))
                message += " (the file asks for " + describeFound(entry.value) +
                           "; Wafer Studio behaves as " + std::string(ignored->implementedValue) +
                           ")";
            m_ctx.warn(entry.keyNode.Mark(), path, message);
            continue;
        }
        std::string message = "unknown key";
        if (entry.key == "<<") {
            message = "YAML merge keys (<<) are not supported; write the keys out";
        } else if (std::optional<std::string> hint = closestMatch(entry.key, m_hintKeys)) {
            message += "; did you mean `" + *hint + "`?";
        } else if (std::vector<std::string> elsewhere = sectionsDeclaring(entry.key);
                   !elsewhere.empty()) {
            message += "; `" + entry.key + "` belongs in " + joinStrings(elsewhere, " or ") +
                       ", not in " + (m_path.empty() ? std::string("the top level") : m_path);
        } else {
            message += "; the keys allowed " +
                       (m_path.empty() ? std::string("at the top level") : "in " + m_path) +
                       " are " + joinStrings(m_knownKeys, ", ");
        }
        m_ctx.error(entry.keyNode.Mark(), path, message);
    }
}

namespace {

// An older muP key's number (> 0); overrides cannot give it, since the translation needs the
// whole file (an override of the current keys does the same job).
std::optional<ReadContext::LegacyMupKey> readLegacyMupKey(const YAML::Node& node,
                                                          const std::string& path,
                                                          ReadContext& ctx) {
    if (ctx.merging) {
        ctx.error(ctx.keyMark, path,
                  "ModelZoo's older muP key cannot be set by an override; set "
                  "model.mup_base_hidden_size, model.mup_base_filter_size and "
                  "model.output_logits_alpha instead");
        return std::nullopt;
    }
    const FieldInfo positive{.key = "", .help = {}, .min = 0};
    double value = 0.0;
    const size_t errorsBefore = ctx.errors.size();
    readValue(node, value, positive, path, ctx);
    if (ctx.errors.size() != errorsBefore) return std::nullopt;
    if (value <= 0) {
        ctx.error(ctx.markOf(node), path,
                  "expected a number > 0, found " + describeFound(node) +
                      " (a muP multiplier; 1 means the base width)");
        return std::nullopt;
    }
    return ReadContext::LegacyMupKey{value, ctx.keyMark};
}

}  // namespace

void beforeRead(ModelConfig& /*model*/, MapReader& reader) {
    ReadContext& ctx = reader.context();
    if (std::optional<YAML::Node> node = reader.takeKey("output_logits_scale"))
        ctx.outputLogitsScale =
            readLegacyMupKey(*node, childPath(reader.path(), "output_logits_scale"), ctx);
}

void beforeRead(OptimizerConfig& optimizer, MapReader& reader) {
    ReadContext& ctx = reader.context();
    if (std::optional<YAML::Node> adjust = reader.takeKey("adjust_learning_rate")) {
        const std::string path = childPath(reader.path(), "adjust_learning_rate");
        if (!adjust->IsMap()) {
            ctx.error(
                ctx.markOf(*adjust), path,
                "expected a section like {decoder_kernel: 0.333}, found " + describeFound(*adjust));
        } else {
            for (auto it = adjust->begin(); it != adjust->end(); ++it) {
                const std::string key = it->first.IsScalar() ? it->first.Scalar() : "";
                ctx.keyMark = it->first.Mark();
                if (key == "decoder_kernel") {
                    ctx.decoderKernel = readLegacyMupKey(it->second, childPath(path, key), ctx);
                    continue;
                }
                // Other layer types (ModelZoo knows "embedding") have no muP meaning here;
                // training without them would silently train a different model.
                ctx.error(it->first.Mark(), childPath(path, displayKey(key)),
                          "only decoder_kernel (muP's learning-rate factor for the hidden "
                          "layers, read as model.mup_base_hidden_size) can be translated; "
                          "delete this entry or describe the model with the mup_base_* keys");
            }
        }
    }
    const bool hasBeta1 = reader.has(FieldInfo{.key = "beta1", .help = {}});
    const bool hasBeta2 = reader.has(FieldInfo{.key = "beta2", .help = {}});
    if (!hasBeta1 && !hasBeta2) return;
    const FieldInfo range{.key = "betas", .help = {}, .min = 0, .max = 1};
    const bool conflict = reader.has(FieldInfo{.key = "betas", .help = {}});
    for (size_t i = 0; i < 2; ++i) {
        const std::string key = i == 0 ? "beta1" : "beta2";
        std::optional<YAML::Node> node = reader.takeKey(key);  // sets ctx.keyMark
        if (!node) continue;
        if (conflict)
            ctx.error(ctx.keyMark, childPath(reader.path(), key),
                      "betas is also given; write either betas: [beta1, beta2] or beta1 and beta2");
        else
            readValue(*node, optimizer.betas[i], range, childPath(reader.path(), key), ctx);
    }
}

void afterRead(SchedulerConfig& piece, MapReader& reader) {
    // After a bad `scheduler` value the piece's kind is unknown; one error is enough.
    if (reader.context().merging || reader.hadErrors()) return;
    std::vector<std::string> missing;
    auto require = [&](std::string_view key) {
        if (!reader.has(FieldInfo{.key = key, .help = {}})) missing.emplace_back(key);
    };
    if (piece.scheduler == "Constant") {
        require("learning_rate");
    } else {
        require("initial_learning_rate");
        require("end_learning_rate");
    }
    if (missing.empty()) return;
    reader.context().error(reader.node().Mark(), reader.path(),
                           "a " + piece.scheduler + " piece needs " +
                               joinStrings(missing, " and ") + " (missing here)");
}

}  // namespace ws::config
