// SPDX-License-Identifier: GPL-3.0-or-later
// The YAML -> Config reader: one visitor (MapReader) over the field list each config struct
// declares in visit(), plus readValue() overloads per field type. Used for files, for text from
// the GUI and for --set overrides. Every problem becomes a message "file:line:col: key.path: what
// was found and what is allowed" in ReadContext; reading goes on after an error so one pass
// reports them all. Public API of wafer::config for any YAML file format that wants the config's
// messages (engine/lesson's lesson files); it exposes yaml-cpp, so a module that includes it links
// yaml-cpp privately itself, as config and lesson do.
// Thread-safe: no shared state; a ReadContext belongs to one read.
#pragma once

#include <yaml-cpp/yaml.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/config/config.h"

namespace ws::config {

struct ReadContext {
    std::string source;    // file name as the user gave it, or "--set key=value"
    bool useMarks = true;  // false when line/column would point into text the user never saw
    bool merging = false;  // overrides merge into existing values, so keys may be left out
    std::vector<std::string> errors;
    std::vector<std::string> warnings;
    // yaml-cpp marks an empty value ("hidden_size:") at the next token, often the next line;
    // messages about such values point at their key instead.
    YAML::Mark keyMark = YAML::Mark::null_mark();
    // ModelZoo's older muP keys, kept by the model/optimizer hooks until the whole file is read:
    // they span two sections and become mup_base_* keys (modelzoo_compat.h).
    struct LegacyMupKey {
        double value = 0.0;
        YAML::Mark mark = YAML::Mark::null_mark();
    };
    std::optional<LegacyMupKey> outputLogitsScale;  // model.output_logits_scale
    std::optional<LegacyMupKey> decoderKernel;      // optimizer.adjust_learning_rate.decoder_kernel

    std::string where(const YAML::Mark& mark) const;
    YAML::Mark markOf(const YAML::Node& node) const {
        return node.IsNull() ? keyMark : node.Mark();
    }
    void error(const YAML::Mark& mark, std::string_view path, std::string_view message);
    void warn(const YAML::Mark& mark, std::string_view path, std::string_view message);
};

// How a node looks in a message: "abc" in quotes for scalars, "a list", "a section", "nothing".
std::string describeFound(const YAML::Node& node);
std::string childPath(std::string_view parent, std::string_view key);
std::string indexPath(std::string_view parent, size_t index);

// One overload per field type. Each leaves `value` unchanged and reports to ctx on bad input.
void readValue(const YAML::Node& node, std::string& value, const FieldInfo& info,
               const std::string& path, ReadContext& ctx);
void readValue(const YAML::Node& node, bool& value, const FieldInfo& info, const std::string& path,
               ReadContext& ctx);
void readValue(const YAML::Node& node, int& value, const FieldInfo& info, const std::string& path,
               ReadContext& ctx);
void readValue(const YAML::Node& node, int64_t& value, const FieldInfo& info,
               const std::string& path, ReadContext& ctx);
void readValue(const YAML::Node& node, double& value, const FieldInfo& info,
               const std::string& path, ReadContext& ctx);
void readValue(const YAML::Node& node, std::array<double, 2>& value, const FieldInfo& info,
               const std::string& path, ReadContext& ctx);
void readValue(const YAML::Node& node, std::vector<std::string>& value, const FieldInfo& info,
               const std::string& path, ReadContext& ctx);
void readValue(const YAML::Node& node, LearningRate& value, const FieldInfo& info,
               const std::string& path, ReadContext& ctx);
// The sweep section's types (sweep_config.h); defined in yaml_reader_sweep.cpp.
void readValue(const YAML::Node& node, std::vector<int64_t>& value, const FieldInfo& info,
               const std::string& path, ReadContext& ctx);
void readValue(const YAML::Node& node, SweepParameters& value, const FieldInfo& info,
               const std::string& path, ReadContext& ctx);
void readValue(const YAML::Node& node, OverrideBundles& value, const FieldInfo& info,
               const std::string& path, ReadContext& ctx);

// Visitor over one YAML map: hands each declared field its node (by key or alias) and
// afterwards reports the keys nobody asked for (warning for known ModelZoo keys, else error).
class MapReader {
public:
    MapReader(const YAML::Node& map, std::string path, ReadContext& ctx);

    template <class T>
    void field(T& member, const FieldInfo& info) {
        if (std::optional<YAML::Node> node = take(info))
            readValue(*node, member, info, childPath(m_path, info.key), m_ctx);
    }
    template <class S>
    void section(S& member, const FieldInfo& info);
    template <class S>
    void optionalSection(std::optional<S>& member, const FieldInfo& info);

    // For the per-struct hooks: a key's node, marking it as used.
    std::optional<YAML::Node> takeKey(std::string_view key);
    // Whether the map has this field under its key or an alias (used or not).
    bool has(const FieldInfo& info) const;
    const std::string& path() const { return m_path; }
    const YAML::Node& node() const { return m_map; }
    ReadContext& context() { return m_ctx; }
    bool hadErrors() const { return m_ctx.errors.size() > m_errorsAtStart; }
    // Errors or warnings for every key no field took; call once after visit().
    void reportUnusedKeys();

private:
    struct Entry {
        std::string key;
        YAML::Node keyNode;
        YAML::Node value;
        bool used = false;
    };
    std::optional<YAML::Node> take(const FieldInfo& info);

    YAML::Node m_map;
    std::string m_path;
    ReadContext& m_ctx;
    std::vector<Entry> m_entries;
    std::vector<std::string> m_knownKeys;  // declared keys seen so far, listed in messages
    std::vector<std::string> m_hintKeys;   // the same plus aliases, for "did you mean"
    size_t m_errorsAtStart;
};

// Per-struct extras around the generic field loop (non-template overloads win over these).
template <class S>
void beforeRead(S&, MapReader&) {}
template <class S>
void afterRead(S&, MapReader&) {}
// ModelZoo's Cerebras-GPT files spell betas as beta1/beta2, and their older muP files carry
// adjust_learning_rate: {decoder_kernel: ...} (kept in ReadContext::decoderKernel).
void beforeRead(OptimizerConfig& optimizer, MapReader& reader);
// The older muP files' model.output_logits_scale (kept in ReadContext::outputLogitsScale).
void beforeRead(ModelConfig& model, MapReader& reader);
// A Linear/Cosine piece without initial/end learning rate is a typo, not a zero.
void afterRead(SchedulerConfig& piece, MapReader& reader);
// The sparsity section (yaml_reader_sparsity.cpp): ModelZoo 2.2+'s glob param_filter gets the
// regex to write instead; every param_name_patterns entry must compile as a regex.
void beforeRead(SparsitySectionConfig& sparsity, MapReader& reader);
void afterRead(SparsitySectionConfig& sparsity, MapReader& reader);

// Reads a map into `value`, field by field; keys the map leaves out keep their current value
// (defaults when loading a file, the old value when merging an override). Null keeps all.
template <class S>
void readSection(const YAML::Node& node, S& value, const std::string& path, ReadContext& ctx) {
    if (!node || node.IsNull()) return;
    if (!node.IsMap()) {
        ctx.error(node.Mark(), path,
                  "expected a section (indented `key: value` lines), found " + describeFound(node));
        return;
    }
    MapReader reader(node, path, ctx);
    beforeRead(value, reader);
    value.visit(reader);
    reader.reportUnusedKeys();  // first: a misspelt key explains what afterRead finds missing
    afterRead(value, reader);
}

template <class S>
void MapReader::section(S& member, const FieldInfo& info) {
    if (std::optional<YAML::Node> node = take(info))
        readSection(*node, member, childPath(m_path, info.key), m_ctx);
}

template <class S>
void MapReader::optionalSection(std::optional<S>& member, const FieldInfo& info) {
    std::optional<YAML::Node> node = take(info);
    if (!node) return;
    if (node->IsNull()) {
        member.reset();
        return;
    }
    if (!member) member.emplace();
    readSection(*node, *member, childPath(m_path, info.key), m_ctx);
}

}  // namespace ws::config
