// SPDX-License-Identifier: GPL-3.0-or-later
// patchConfigYaml(): both configs are flattened into one entry per field (a visitor over the
// same field list as the reader and writer); each entry whose YAML text differs is written into
// the text at the place yaml-cpp's marks (byte offset, line, column) give for it. Every edit
// reloads the text, so later edits see fresh marks. See yaml_patch.h.
#include "engine/config/yaml_patch.h"

#include <yaml-cpp/yaml.h>

#include <optional>

#include "engine/config/config_yaml.h"
#include "engine/config/text_format.h"
#include "engine/config/yaml_flow.h"

namespace ws::config {
namespace {

struct Segment {
    std::string key;                   // empty for a list index
    std::vector<std::string> aliases;  // older spellings the reader accepts for `key`
    std::optional<size_t> index;       // learning_rate[i]
};
using KeyPath = std::vector<Segment>;

std::string pathName(const KeyPath& path) {
    std::string out;
    for (const Segment& s : path) {
        if (s.index) {
            // Appended piece by piece: GCC 12's -Wrestrict misfires on "[" + std::string&& here
            // (GCC bug 105329) once the config visitor grows.
            out += '[';
            out += std::to_string(*s.index);
            out += ']';
        } else {
            if (!out.empty()) out += ".";
            out += s.key;
        }
    }
    return out;
}

// One field of a config as YAML: its one-line form and, for lists that the writer puts in
// block style, its block lines (unindented).
struct FlatField {
    KeyPath path;
    std::string flow;
    std::vector<std::string> block;
    std::vector<FlatField> pieces;  // a learning-rate schedule's keys, path [..][i].key
    size_t pieceCount = 0;
    bool isSection = false;  // an optional section's presence (flow "present"/"absent")
};

Segment segmentOf(const FieldInfo& info) {
    Segment s;
    s.key = std::string(info.key);
    for (std::string_view alias : info.aliases) s.aliases.emplace_back(alias);
    return s;
}

std::vector<std::string> blockLines(const std::vector<std::string>& value) {
    if (value.size() <= 1) return {};
    std::vector<std::string> lines;
    for (const std::string& item : value) lines.push_back("- " + quoteYaml(item));
    return lines;
}

// "key: value" lines of one schedule piece.
class PieceLines {
public:
    template <class T>
    void field(T& member, const FieldInfo& info) {
        lines.push_back(std::string(info.key) + ": " + formatFlow(member));
        keys.push_back(segmentOf(info));
        flows.push_back(formatFlow(member));
    }
    std::vector<std::string> lines;
    std::vector<Segment> keys;
    std::vector<std::string> flows;
};

class Flattener {
public:
    explicit Flattener(std::vector<FlatField>& out, KeyPath prefix = {})
        : m_out(out), m_prefix(std::move(prefix)) {}

    template <class T>
    void field(T& member, const FieldInfo& info) {
        m_out.push_back({child(info), formatFlow(member), {}, {}, 0, false});
    }
    void field(std::vector<std::string>& member, const FieldInfo& info) {
        m_out.push_back({child(info), formatFlow(member), blockLines(member), {}, 0, false});
    }
    void field(LearningRate& member, const FieldInfo& info) {
        FlatField flat{child(info), formatFlow(member), {}, {}, member.schedule.size(), false};
        for (size_t i = 0; i < member.schedule.size(); ++i) {
            PieceLines piece;
            SchedulerConfig copy = member.schedule[i];
            copy.visit(piece);
            for (size_t k = 0; k < piece.lines.size(); ++k) {
                flat.block.push_back((k == 0 ? "- " : "  ") + piece.lines[k]);
                KeyPath path = flat.path;
                path.push_back({{}, {}, i});
                path.push_back(piece.keys[k]);
                flat.pieces.push_back({std::move(path), piece.flows[k], {}, {}, 0, false});
            }
        }
        m_out.push_back(std::move(flat));
    }
    template <class S>
    void section(S& member, const FieldInfo& info) {
        Flattener inner(m_out, child(info));
        member.visit(inner);
    }
    template <class S>
    void optionalSection(std::optional<S>& member, const FieldInfo& info) {
        m_out.push_back({child(info), member ? "present" : "absent", {}, {}, 0, true});
        if (member) section(*member, info);
    }

private:
    KeyPath child(const FieldInfo& info) const {
        KeyPath path = m_prefix;
        path.push_back(segmentOf(info));
        return path;
    }

    std::vector<FlatField>& m_out;
    KeyPath m_prefix;
};

std::vector<FlatField> flatten(const Config& config) {
    std::vector<FlatField> out;
    Config copy = config;  // visit() is non-const so that readers can share it
    Flattener flattener(out);
    copy.visit(flattener);
    return out;
}

// ---- the text side ----

class TextPatcher {
public:
    explicit TextPatcher(std::string text) : m_text(std::move(text)) {
        if (!m_text.empty() && m_text.back() != '\n') m_text += '\n';
    }
    // Not copyable: assigning a yaml-cpp Node would overwrite the node it refers to.
    TextPatcher(const TextPatcher&) = delete;
    TextPatcher& operator=(const TextPatcher&) = delete;

    const std::string& text() const { return m_text; }
    void setText(std::string text) { m_text = std::move(text); }

    // Writes `field`'s value over the one in the text, or inserts its key; false when the
    // layout is one this patcher does not handle.
    bool setValue(const FlatField& field, bool preferBlock) {
        if (!load()) return false;
        const Found found = find(field.path);
        if (!found.complete) return insertMissing(field, found, preferBlock);
        return replaceValue(found, field);
    }
    // Removes a key and its whole value (an optional section that is now unset).
    bool removeKey(const KeyPath& path) {
        if (!load()) return false;
        const Found found = find(path);
        if (!found.complete) return true;  // already absent
        if (!found.hasKey) return false;
        const size_t from = lineStart(size_t(found.key.Mark().pos));
        const size_t to = valueEnd(found);
        if (to == std::string::npos) return false;
        m_text.erase(from, lineEnd(to) - from);
        return true;
    }

private:
    struct Found {
        bool complete = false;
        size_t depth = 0;     // segments found
        bool hasKey = false;  // `key` is the key of `value` (not so at the root or a list item)
        bool inFlow = false;  // inside a flow collection: a plain scalar also ends at , ] }
        YAML::Node key;
        YAML::Node value;  // the node at `depth`
    };

    bool load() {
        try {
            m_root = YAML::Load(m_text);
        } catch (const YAML::Exception&) {
            return false;
        }
        return m_root.IsMap();
    }

    static bool keyMatches(const YAML::Node& key, const Segment& segment) {
        if (!key.IsScalar()) return false;
        if (key.Scalar() == segment.key) return true;
        for (const std::string& alias : segment.aliases)
            if (key.Scalar() == alias) return true;
        return false;
    }

    // Nodes are re-pointed with reset(): assigning a yaml-cpp Node overwrites the node it
    // refers to, which would edit the tree being walked.
    Found find(const KeyPath& path) const {
        Found found;
        found.value.reset(m_root);
        for (const Segment& segment : path) {
            found.inFlow = found.inFlow || found.value.Style() == YAML::EmitterStyle::Flow;
            if (segment.index) {
                if (!found.value.IsSequence() || *segment.index >= found.value.size()) return found;
                const YAML::Node& list = found.value;  // const: [] must not add anything
                const YAML::Node item = list[*segment.index];
                found.value.reset(item);
                found.hasKey = false;
            } else {
                if (!found.value.IsMap()) return found;
                std::optional<std::pair<YAML::Node, YAML::Node>> hit;
                // The last spelling wins, as in PyYAML (ModelZoo's loader).
                for (const auto& kv : found.value)
                    if (keyMatches(kv.first, segment)) hit.emplace(kv.first, kv.second);
                if (!hit) return found;
                found.key.reset(hit->first);
                found.value.reset(hit->second);
                found.hasKey = !found.key.Mark().is_null();
            }
            ++found.depth;
        }
        found.complete = true;
        return found;
    }

    size_t lineStart(size_t pos) const {
        const size_t nl = m_text.rfind('\n', pos == 0 ? 0 : pos - 1);
        return pos == 0 || nl == std::string::npos ? 0 : nl + 1;
    }
    // Offset just after the '\n' ending the line that holds `pos`.
    size_t lineEnd(size_t pos) const {
        const size_t nl = m_text.find('\n', pos);
        return nl == std::string::npos ? m_text.size() : nl + 1;
    }
    static int indentOf(std::string_view line) {
        const size_t first = line.find_first_not_of(' ');
        return first == std::string_view::npos ? -1 : int(first);
    }
    // A blank or comment-only line never ends a block.
    static bool isContent(std::string_view line) {
        const size_t first = line.find_first_not_of(" \t\r");
        return first != std::string_view::npos && line[first] != '#';
    }

    // End (offset after its '\n') of the last content line of the block collection whose first
    // item or key starts at `pos` in column `column`. A sequence written at its key's column
    // ("key:\n- a") stops at the next line of that column that is not an item.
    size_t blockEnd(size_t pos, int column, bool sequence) const {
        size_t end = lineEnd(pos);
        for (size_t at = end; at < m_text.size();) {
            const size_t next = lineEnd(at);
            const std::string_view line(m_text.data() + at, next - at);
            if (isContent(line)) {
                const int indent = indentOf(line);
                const bool inside = indent > column ||
                                    (indent == column &&
                                     (!sequence || line.substr(size_t(indent)).starts_with("-")));
                if (!inside) break;
                end = next;
            }
            at = next;
        }
        return end;
    }

    // End offset of a scalar or flow collection starting at `pos`; npos if it is not one.
    size_t inlineEnd(size_t pos, bool inFlow = false) const {
        const char c = m_text[pos];
        if (c == '"') {
            for (size_t i = pos + 1; i < m_text.size(); ++i) {
                if (m_text[i] == '\\')
                    ++i;
                else if (m_text[i] == '"')
                    return i + 1;
            }
            return std::string::npos;
        }
        if (c == '\'') {
            for (size_t i = pos + 1; i < m_text.size(); ++i) {
                if (m_text[i] != '\'') continue;
                if (i + 1 < m_text.size() && m_text[i + 1] == '\'')
                    ++i;
                else
                    return i + 1;
            }
            return std::string::npos;
        }
        if (c == '[' || c == '{') {
            int depth = 0;
            for (size_t i = pos; i < m_text.size(); ++i) {
                const char d = m_text[i];
                if (d == '"' || d == '\'') {
                    const size_t end = inlineEnd(i);
                    if (end == std::string::npos) return end;
                    i = end - 1;
                } else if (d == '[' || d == '{') {
                    ++depth;
                } else if ((d == ']' || d == '}') && --depth == 0) {
                    return i + 1;
                }
            }
            return std::string::npos;
        }
        if (c == '|' || c == '>' || c == '&' || c == '*' || c == '!') return std::string::npos;
        // A plain scalar: to the end of the line or the start of a comment, blanks trimmed.
        size_t end = m_text.find('\n', pos);
        if (end == std::string::npos) end = m_text.size();
        for (size_t i = pos; i < end; ++i) {
            if (inFlow && (m_text[i] == ',' || m_text[i] == ']' || m_text[i] == '}')) {
                end = i;
                break;
            }
            if (m_text[i] == '#' && i > pos && (m_text[i - 1] == ' ' || m_text[i - 1] == '\t')) {
                end = i;
                break;
            }
        }
        while (end > pos &&
               (m_text[end - 1] == ' ' || m_text[end - 1] == '\t' || m_text[end - 1] == '\r'))
            --end;
        return end;
    }

    // Offset just after the ':' that ends the key node `key`.
    size_t afterColon(const YAML::Node& key) const {
        size_t pos = size_t(key.Mark().pos);
        if (m_text[pos] == '"' || m_text[pos] == '\'') pos = inlineEnd(pos);
        if (pos == std::string::npos) return pos;
        const size_t colon = m_text.find(':', pos);
        return colon == std::string::npos || colon >= lineEnd(pos) ? std::string::npos : colon + 1;
    }

    // An empty value ("key:") is marked at the next token; an explicit null ("~") on its key's
    // line is a scalar like any other.
    bool isEmptyValue(const Found& found) const {
        if (!found.value.IsNull()) return false;
        const YAML::Mark mark = found.value.Mark();
        if (mark.is_null() || !found.hasKey) return true;
        return lineStart(size_t(mark.pos)) != lineStart(size_t(found.key.Mark().pos));
    }

    size_t valueEnd(const Found& found) const {
        if (isEmptyValue(found)) return afterColon(found.key);
        const YAML::Mark mark = found.value.Mark();
        if (mark.is_null()) return std::string::npos;
        const bool block = (found.value.IsSequence() || found.value.IsMap()) &&
                           found.value.Style() != YAML::EmitterStyle::Flow;
        if (block) return blockEnd(size_t(mark.pos), mark.column, found.value.IsSequence()) - 1;
        return inlineEnd(size_t(mark.pos), found.inFlow);
    }

    static std::string indented(const std::vector<std::string>& lines, int indent) {
        std::string out;
        for (const std::string& line : lines) out += std::string(size_t(indent), ' ') + line + "\n";
        return out;
    }

    bool replaceValue(const Found& found, const FlatField& field) {
        const YAML::Node& value = found.value;
        if (!found.hasKey) return false;
        if (isEmptyValue(found)) {
            const size_t at = afterColon(found.key);
            if (at == std::string::npos) return false;
            m_text.insert(at, " " + field.flow);
            return true;
        }
        const YAML::Mark mark = value.Mark();
        if (mark.is_null()) return false;
        const bool block =
            (value.IsSequence() || value.IsMap()) && value.Style() != YAML::EmitterStyle::Flow;
        if (!block) {
            const size_t end = inlineEnd(size_t(mark.pos), found.inFlow);
            if (end == std::string::npos || end <= size_t(mark.pos)) return false;
            m_text.replace(size_t(mark.pos), end - size_t(mark.pos), field.flow);
            return true;
        }
        // A block collection: lines from its first item to its last content line.
        const size_t from = lineStart(size_t(mark.pos));
        const size_t to = blockEnd(size_t(mark.pos), mark.column, value.IsSequence());
        if (!field.block.empty()) {
            m_text.replace(from, to - from, indented(field.block, mark.column));
            return true;
        }
        const size_t at = afterColon(found.key);
        if (at == std::string::npos || at > from) return false;
        m_text.erase(from, to - from);
        m_text.insert(at, " " + field.flow);
        return true;
    }

    // Column of a block map's keys and the end of its last content line.
    struct MapBlock {
        int column = 0;
        size_t end = 0;
        int step = 4;  // indentation added per level
    };

    std::optional<MapBlock> mapBlock(const Found& found) const {
        MapBlock block;
        if (found.depth == 0) {
            block.column = 0;
            block.end = m_text.size();
            for (const auto& kv : m_root) {
                if (kv.second.IsMap() && kv.second.Style() != YAML::EmitterStyle::Flow &&
                    kv.second.size() > 0 && kv.second.Mark().column > 0) {
                    block.step = kv.second.Mark().column;
                    break;
                }
            }
            return block;
        }
        const YAML::Node& map = found.value;
        if (map.IsNull() && found.hasKey && isEmptyValue(found)) {
            // "eval_input:" with nothing under it yet.
            const int keyColumn = found.key.Mark().column;
            block.column = keyColumn + 4;
            block.end = lineEnd(size_t(found.key.Mark().pos));
            return block;
        }
        if (!map.IsMap() || map.Style() == YAML::EmitterStyle::Flow || map.size() == 0)
            return std::nullopt;
        const YAML::Mark mark = map.Mark();
        if (mark.is_null()) return std::nullopt;
        block.column = mark.column;
        block.end = blockEnd(size_t(mark.pos), mark.column, false);
        if (found.hasKey && mark.column > found.key.Mark().column)
            block.step = mark.column - found.key.Mark().column;
        return block;
    }

    bool insertMissing(const FlatField& field, const Found& found, bool preferBlock) {
        for (size_t i = found.depth; i < field.path.size(); ++i)
            if (field.path[i].index) return false;  // a missing schedule piece
        if (found.depth > 0 && found.depth + 1 == field.path.size() && found.value.IsMap() &&
            found.value.Style() == YAML::EmitterStyle::Flow && !found.value.Mark().is_null()) {
            // "{name: normal, std: 0.02}": the new key goes before the closing brace.
            const size_t end = inlineEnd(size_t(found.value.Mark().pos));
            if (end == std::string::npos) return false;
            m_text.insert(end - 1, std::string(found.value.size() > 0 ? ", " : "") +
                                       field.path.back().key + ": " + field.flow);
            return true;
        }
        const std::optional<MapBlock> block = mapBlock(found);
        if (!block) return false;
        std::string lines;
        int indent = block->column;
        for (size_t i = found.depth; i + 1 < field.path.size(); ++i) {
            lines += std::string(size_t(indent), ' ') + field.path[i].key + ":\n";
            indent += block->step;
        }
        const std::string& key = field.path.back().key;
        if (preferBlock && !field.block.empty()) {
            lines += std::string(size_t(indent), ' ') + key + ":\n";
            lines += indented(field.block, indent + block->step);
        } else {
            lines += std::string(size_t(indent), ' ') + key + ": " + field.flow + "\n";
        }
        // A new top-level section is set apart from the one before it.
        if (found.depth == 0 && field.path.size() > 1 && !m_text.empty() &&
            !m_text.ends_with("\n\n"))
            lines = "\n" + lines;
        m_text.insert(block->end, lines);
        return true;
    }

    std::string m_text;
    YAML::Node m_root;
};

const FlatField* findFlat(const std::vector<FlatField>& fields, const std::string& name) {
    for (const FlatField& f : fields)
        if (pathName(f.path) == name) return &f;
    return nullptr;
}

bool startsWithPath(const KeyPath& path, const KeyPath& prefix) {
    if (prefix.size() > path.size()) return false;
    for (size_t i = 0; i < prefix.size(); ++i)
        if (path[i].key != prefix[i].key || path[i].index != prefix[i].index) return false;
    return true;
}

// Applies every difference; false at the first the patcher cannot place.
bool applyDifferences(TextPatcher& patcher, const std::vector<FlatField>& before,
                      const std::vector<FlatField>& after, std::string& failedAt) {
    std::vector<KeyPath> removed;
    for (const FlatField& old : before) {
        if (!old.isSection || old.flow != "present") continue;
        const FlatField* now = findFlat(after, pathName(old.path));
        if (now && now->flow == "present") continue;
        if (!patcher.removeKey(old.path)) {
            failedAt = pathName(old.path);
            return false;
        }
        removed.push_back(old.path);
    }
    for (const FlatField& field : after) {
        if (field.isSection) continue;
        const FlatField* old = findFlat(before, pathName(field.path));
        if (old && old->flow == field.flow) continue;
        bool underRemoved = false;
        for (const KeyPath& gone : removed) underRemoved |= startsWithPath(field.path, gone);
        if (underRemoved) continue;
        // A schedule with as many pieces as before: only the keys that changed, so comments
        // inside the list stay; otherwise the list is replaced as a block.
        bool done = false;
        if (old && old->pieceCount > 0 && old->pieceCount == field.pieceCount) {
            const std::string saved = patcher.text();
            done = true;
            for (const FlatField& piece : field.pieces) {
                const FlatField* was = findFlat(old->pieces, pathName(piece.path));
                if (was && was->flow == piece.flow) continue;
                if (!patcher.setValue(piece, false)) {
                    done = false;
                    break;
                }
            }
            if (!done) patcher.setText(saved);
        }
        if (!done && !patcher.setValue(field, true)) {
            failedAt = pathName(field.path);
            return false;
        }
    }
    return true;
}

}  // namespace

YamlPatch patchConfigYaml(std::string_view text, const Config& before, const Config& after,
                          const std::filesystem::path& baseDir) {
    YamlPatch result;
    TextPatcher patcher{std::string(text)};
    std::string failedAt;
    std::string why;
    if (applyDifferences(patcher, flatten(before), flatten(after), failedAt)) {
        auto reread = parseConfig(patcher.text(), "patched config", baseDir);
        if (reread.ok() && reread->config == after) {
            result.text = patcher.text();
            return result;
        }
        why = reread.ok() ? "the edited text did not read back as the intended config"
                          : "the edited text did not read back: " + reread.error().message;
    } else {
        why = "could not place " + failedAt + " in the text's layout";
    }
    result.text = saveConfigYaml(after);
    result.regenerated = true;
    result.note =
        "the YAML was rewritten in full, so its comments and key order were lost (" + why + ")";
    return result;
}

std::string absolutizeConfigPaths(std::string_view text, const std::filesystem::path& fromDir) {
    auto asWritten = parseConfig(text, "config", {});
    auto resolved = parseConfig(text, "config", fromDir);
    if (!asWritten.ok() || !resolved.ok() || asWritten->config == resolved->config)
        return std::string(text);
    YamlPatch patch = patchConfigYaml(text, asWritten->config, resolved->config, {});
    return patch.text;
}

}  // namespace ws::config
