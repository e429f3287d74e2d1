// SPDX-License-Identifier: GPL-3.0-or-later
// Loading a config file or text (parse, read with MapReader, resolve relative paths, apply
// overrides) and applyOverride()'s path walker (see config_yaml.h).
#include "engine/config/config_yaml.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <type_traits>

#include "engine/config/describe.h"
#include "engine/config/modelzoo_compat.h"
#include "engine/config/modelzoo_keys.h"
#include "engine/config/text_format.h"
#include "engine/config/yaml_reader.h"

namespace ws::config {

namespace {

// Many errors at once help fixing a file in one go; hundreds only bury the first.
constexpr size_t kMaxReportedErrors = 30;

Error joinErrors(const std::vector<std::string>& errors) {
    std::string message;
    const size_t shown = std::min(errors.size(), kMaxReportedErrors);
    for (size_t i = 0; i < shown; ++i) {
        if (i > 0) message += "\n";
        message += errors[i];
    }
    if (errors.size() > shown)
        message += "\n(" + std::to_string(errors.size() - shown) + " more errors not shown)";
    return Error{message};
}

void resolvePath(std::string& path, const std::filesystem::path& baseDir) {
    if (path.empty() || baseDir.empty()) return;
    const std::filesystem::path p(path);
    if (p.is_absolute()) return;
    path = (baseDir / p).lexically_normal().string();
}

void resolveInputPaths(InputConfig& input, const std::filesystem::path& baseDir) {
    for (std::string& dir : input.dataDir) resolvePath(dir, baseDir);
    resolvePath(input.tokenizer.vocabFile, baseDir);
    resolvePath(input.tokenizer.mergesFile, baseDir);
    resolvePath(input.tokenizer.tokenizerFile, baseDir);
}

// ---- applyOverride's path walker ----

struct PathSegment {
    std::string key;
    std::optional<size_t> index;  // "learning_rate[1]"
};

// "optimizer.learning_rate[1].total_iters" -> segments; nullopt + message on bad syntax.
std::optional<std::vector<PathSegment>> splitPath(std::string_view path, std::string& problem) {
    std::vector<PathSegment> segments;
    size_t start = 0;
    while (true) {
        const size_t dot = path.find('.', start);
        std::string_view part = path.substr(
            start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
        PathSegment segment;
        const size_t bracket = part.find('[');
        segment.key = std::string(part.substr(0, bracket));
        if (segment.key.empty()) {
            problem = "an empty name in the key path";
            return std::nullopt;
        }
        if (bracket != std::string_view::npos) {
            const std::string_view rest = part.substr(bracket);
            bool isNumber = false;
            std::optional<long long> index;
            if (rest.size() >= 3 && rest.back() == ']' &&
                rest.find_first_not_of("0123456789", 1) == rest.size() - 1)
                index = parseInteger(rest.substr(1, rest.size() - 2), &isNumber);
            if (!index) {
                problem = "\"" + std::string(part) +
                          "\" is not a key with a list index like learning_rate[0]";
                return std::nullopt;
            }
            segment.index = static_cast<size_t>(*index);
        }
        segments.push_back(std::move(segment));
        if (dot == std::string_view::npos) break;
        start = dot + 1;
    }
    return segments;
}

// Visitor that walks the config along the override's key path and reads the value into the
// field at its end with the same readValue()/readSection() as file loading.
class PathSetter {
public:
    PathSetter(const std::vector<PathSegment>& segments, size_t depth, const YAML::Node& value,
               std::string parentPath, ReadContext& ctx)
        : m_segments(segments),
          m_depth(depth),
          m_value(value),
          m_parentPath(std::move(parentPath)),
          m_ctx(ctx) {}

    template <class T>
    void field(T& member, const FieldInfo& info) {
        if (!matches(info)) return;
        const std::string path = childPath(m_parentPath, info.key);
        if (!segment().index && isLast()) {
            readValue(m_value, member, info, path, m_ctx);
            return;
        }
        if (!segment().index) {
            fail(path + " is a single value; it has no keys inside");
            return;
        }
        setElement(member, info, path, *segment().index);
    }
    template <class S>
    void section(S& member, const FieldInfo& info) {
        if (!matches(info)) return;
        const std::string path = childPath(m_parentPath, info.key);
        if (segment().index) {
            fail(path + " is a section, not a list; drop the [" + std::to_string(*segment().index) +
                 "]");
            return;
        }
        if (isLast()) {
            if (!m_value.IsMap()) {
                fail(path + " is a section: give a map like {key: value} or set one key, e.g. " +
                     path + ".<key>=<value>");
                return;
            }
            readSection(m_value, member, path, m_ctx);
            return;
        }
        descend(member, path);
    }
    template <class S>
    void optionalSection(std::optional<S>& member, const FieldInfo& info) {
        if (!matches(info)) return;
        const std::string path = childPath(m_parentPath, info.key);
        if (segment().index) {
            fail(path + " is a section, not a list; drop the [" + std::to_string(*segment().index) +
                 "]");
            return;
        }
        if (isLast() && m_value.IsNull()) {
            member.reset();
            return;
        }
        if (!member) member.emplace();  // setting a key inside creates it with defaults
        if (isLast()) {
            if (!m_value.IsMap()) {
                fail(path +
                     " is a section: give a map like {key: value}, null to remove it, or "
                     "set one key, e.g. " +
                     path + ".<key>=<value>");
                return;
            }
            readSection(m_value, *member, path, m_ctx);
            return;
        }
        descend(*member, path);
    }

    // After visit(): errors for a key this level does not have.
    void reportIfNotFound() {
        if (m_found) return;
        const std::string& key = segment().key;
        const std::string path = childPath(m_parentPath, key);
        if (detail::findIgnoredModelZooKey(detail::sectionKind(m_parentPath), key)) {
            fail(path +
                 " is a ModelZoo setting Wafer Studio does not implement (files may "
                 "contain it; it is ignored there), so it cannot be set");
            return;
        }
        std::string message = "unknown key " + path;
        if (std::optional<std::string> hint = closestMatch(key, m_keys))
            message += "; did you mean " + childPath(m_parentPath, *hint) + "?";
        else
            message +=
                "; the keys allowed " +
                (m_parentPath.empty() ? std::string("at the top level") : "in " + m_parentPath) +
                " are " + joinStrings(m_keys, ", ");
        fail(message);
    }

private:
    const PathSegment& segment() const { return m_segments[m_depth]; }
    bool isLast() const { return m_depth + 1 == m_segments.size(); }
    void fail(const std::string& message) { m_ctx.errors.push_back(m_ctx.source + ": " + message); }

    bool matches(const FieldInfo& info) {
        m_keys.emplace_back(info.key);
        if (m_found) return false;
        bool hit = segment().key == info.key;
        for (std::string_view alias : info.aliases) hit = hit || segment().key == alias;
        m_found = hit;
        return hit;
    }

    template <class S>
    void descend(S& member, const std::string& path) {
        PathSetter inner(m_segments, m_depth + 1, m_value, path, m_ctx);
        member.visit(inner);
        inner.reportIfNotFound();
    }

    template <class T>
    void setElement(T& member, const FieldInfo& info, const std::string& path, size_t index) {
        const std::string element = indexPath(path, index);
        if constexpr (std::is_same_v<T, std::array<double, 2>>) {
            if (index >= 2) return fail(path + " has 2 entries, [0] and [1]");
            if (!isLast()) return fail(element + " is a number; it has no keys inside");
            readValue(m_value, member[index], info, element, m_ctx);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            if (index >= member.size())
                return fail(path + " has " + std::to_string(member.size()) +
                            " entries; set the whole list instead, e.g. " + path + "=[a, b]");
            if (!isLast()) return fail(element + " is a path; it has no keys inside");
            if (!m_value.IsScalar() || m_value.Scalar().empty())
                return fail(element + ": expected a path, found " + describeFound(m_value));
            member[index] = m_value.Scalar();
        } else if constexpr (std::is_same_v<T, LearningRate>) {
            if (member.schedule.empty())
                return fail(path + " is a single number (" + formatDouble(member.constant) +
                            "), not a schedule; set the whole schedule, e.g. " + path +
                            "=[{scheduler: Constant, learning_rate: 0.001}]");
            if (index >= member.schedule.size())
                return fail(path + " has " + std::to_string(member.schedule.size()) +
                            " pieces, [0] to [" + std::to_string(member.schedule.size() - 1) +
                            "]; to add pieces set the whole list");
            if (isLast()) {
                if (!m_value.IsMap())
                    return fail(element +
                                " is a schedule piece: give a map like {total_iters: "
                                "100} or set one key, e.g. " +
                                element + ".total_iters=100");
                readSection(m_value, member.schedule[index], element, m_ctx);
                return;
            }
            descend(member.schedule[index], element);
        } else {
            (void)member;
            (void)info;
            fail(path + " is a single value, not a list; drop the [" + std::to_string(index) + "]");
        }
    }

    const std::vector<PathSegment>& m_segments;
    size_t m_depth;
    const YAML::Node& m_value;
    std::string m_parentPath;
    ReadContext& m_ctx;
    bool m_found = false;
    std::vector<std::string> m_keys;  // keys at this level, for hints
};

// Parses and applies one override into `config`, reporting into ctx.errors.
void applyOverrideInto(Config& config, std::string_view keyEqualsValue, ReadContext& ctx) {
    ctx.source = "--set " + std::string(keyEqualsValue);
    ctx.useMarks = false;
    ctx.merging = true;
    const size_t equals = keyEqualsValue.find('=');
    if (equals == std::string_view::npos) {
        ctx.errors.push_back(ctx.source +
                             ": expected key.path=value, e.g. model.hidden_size=128 or "
                             "optimizer.betas=[0.9, 0.95]");
        return;
    }
    std::string key(keyEqualsValue.substr(0, equals));
    while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
    while (!key.empty() && std::isspace(static_cast<unsigned char>(key.front())))
        key.erase(key.begin());
    const std::string valueText(keyEqualsValue.substr(equals + 1));
    if (key.empty()) {
        ctx.errors.push_back(ctx.source +
                             ": the key before '=' is empty; expected key.path=value, "
                             "e.g. model.hidden_size=128");
        return;
    }
    std::string problem;
    const std::optional<std::vector<PathSegment>> segments = splitPath(key, problem);
    if (!segments) {
        ctx.errors.push_back(
            ctx.source + ": " + problem +
            "; expected key.path=value, e.g. optimizer.learning_rate[0].total_iters=100");
        return;
    }
    YAML::Node value;
    try {
        value = YAML::Load(valueText);
    } catch (const YAML::Exception& e) {
        ctx.errors.push_back(ctx.source + ": the value is not valid YAML (column " +
                             std::to_string(e.mark.column + 1) + " of \"" + valueText +
                             "\": " + e.msg + "); quote text that contains ':', '#', '[' or '{'");
        return;
    }
    PathSetter setter(*segments, 0, value, "", ctx);
    config.visit(setter);
    setter.reportIfNotFound();
}

bool isLegacySection(std::string_view key) {
    return key == "model" || key == "optimizer" || key == "train_input" || key == "eval_input" ||
           key == "runconfig";
}

}  // namespace

Status applyOverride(Config& config, std::string_view keyEqualsValue) {
    ReadContext ctx;
    Config updated = config;
    applyOverrideInto(updated, keyEqualsValue, ctx);
    if (!ctx.errors.empty()) return joinErrors(ctx.errors);
    config = std::move(updated);
    return Status::success();
}

Result<LoadedConfig> parseConfig(std::string_view yamlText, std::string_view sourceName,
                                 const std::filesystem::path& baseDir,
                                 const std::vector<std::string>& overrides) {
    ReadContext ctx;
    ctx.source = std::string(sourceName);
    YAML::Node root;
    try {
        root = YAML::Load(std::string(yamlText));
    } catch (const YAML::Exception& e) {
        return Error{ctx.where(e.mark) + ": malformed YAML: " + e.msg};
    }
    if (!root || root.IsNull())
        return Error{ctx.source +
                     ": the file is empty; expected sections model, optimizer, train_input, "
                     "eval_input, runconfig (see presets/gpt-nano.yaml)"};
    if (!root.IsMap())
        return Error{ctx.where(root.Mark()) +
                     ": expected sections (model:, optimizer:, train_input:, ...), found " +
                     describeFound(root)};
    if (root["trainer"]) {
        bool hasLegacy = false;
        for (auto it = root.begin(); it != root.end(); ++it)
            hasLegacy = hasLegacy || (it->first.IsScalar() && isLegacySection(it->first.Scalar()));
        if (!hasLegacy)
            return Error{
                ctx.where(root["trainer"].Mark()) +
                ": trainer: this is ModelZoo 2.x's trainer layout, which Wafer Studio does "
                "not read; use the legacy layout with top-level sections model, "
                "optimizer, train_input, eval_input, runconfig"};
    }

    LoadedConfig loaded;
    detail::markSequenceLengthUnset(loaded.config);
    readSection(root, loaded.config, "", ctx);
    if (ctx.errors.empty()) detail::translateLegacyMup(loaded.config, ctx);
    if (!ctx.errors.empty()) return joinErrors(ctx.errors);

    resolveInputPaths(loaded.config.trainInput, baseDir);
    resolveInputPaths(loaded.config.evalInput, baseDir);
    resolvePath(loaded.config.runconfig.checkpointPath, baseDir);

    for (const std::string& override : overrides) {
        ReadContext overrideCtx;
        applyOverrideInto(loaded.config, override, overrideCtx);
        ctx.errors.insert(ctx.errors.end(), overrideCtx.errors.begin(), overrideCtx.errors.end());
        ctx.warnings.insert(ctx.warnings.end(), overrideCtx.warnings.begin(),
                            overrideCtx.warnings.end());
    }
    if (!ctx.errors.empty()) return joinErrors(ctx.errors);
    detail::resolveSequenceLength(loaded.config, ctx);
    // ModelZoo warns the same way: these two only shape μP's logit multiplier.
    const ModelConfig& model = loaded.config.model;
    if (!model.mupEnabled() && (model.outputLogitsAlpha != 1.0 || !model.scaleOutputLogitsByD))
        ctx.warnings.push_back(ctx.source +
                               ": model.output_logits_alpha and model.scale_output_logits_by_d "
                               "only act under muP, which is off (model.mup_base_hidden_size is "
                               "0); they are ignored");
    loaded.warnings = std::move(ctx.warnings);
    return loaded;
}

Result<LoadedConfig> loadConfigFile(const std::filesystem::path& yamlPath,
                                    const std::vector<std::string>& overrides) {
    std::ifstream file(yamlPath, std::ios::binary);
    if (!file)
        return Error{"cannot open config file " + yamlPath.string() + ": " + std::strerror(errno) +
                     "; check the path (presets live in presets/)"};
    std::ostringstream text;
    text << file.rdbuf();
    if (file.bad())
        return Error{"cannot read config file " + yamlPath.string() + ": " + std::strerror(errno)};
    std::error_code ec;
    std::filesystem::path absolute = std::filesystem::absolute(yamlPath, ec);
    if (ec) absolute = yamlPath;
    absolute = absolute.lexically_normal();
    Result<LoadedConfig> loaded =
        parseConfig(text.str(), yamlPath.string(), absolute.parent_path(), overrides);
    if (loaded) loaded->sourceFile = absolute;
    return loaded;
}

}  // namespace ws::config
