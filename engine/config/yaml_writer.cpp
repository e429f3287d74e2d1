// SPDX-License-Identifier: GPL-3.0-or-later
// Config -> YAML text: formatFlow() per field type and the block-style writer behind
// saveConfigYaml() (a visitor over the same field list the reader uses), plus hashConfig().
#include "engine/config/yaml_flow.h"

#include <cmath>
#include <type_traits>

#include "engine/config/config_yaml.h"
#include "engine/config/text_format.h"
#include "engine/core/hash.h"

namespace ws::config {

// Spelled out because GCC 12 at -O3 reports a false -Wrestrict for "[" + std::string(...)
// (GCC bug 105329).
std::string enclose(char open, const std::string& body, char close) {
    std::string out(1, open);
    out += body;
    out += close;
    return out;
}

std::string formatFlow(const std::string& value) {
    return quoteYaml(value);
}
std::string formatFlow(bool value) {
    return value ? "true" : "false";
}
std::string formatFlow(int value) {
    return std::to_string(value);
}
std::string formatFlow(int64_t value) {
    return std::to_string(value);
}
std::string formatFlow(double value) {
    return formatDouble(value);
}

std::string formatFlow(const std::array<double, 2>& value) {
    std::string out = "[";
    out += formatDouble(value[0]);
    out += ", ";
    out += formatDouble(value[1]);
    out += "]";
    return out;
}

std::string formatFlow(const std::vector<std::string>& value) {
    if (value.size() == 1) return quoteYaml(value[0]);
    std::vector<std::string> quoted;
    for (const std::string& item : value) quoted.push_back(quoteYaml(item));
    return enclose('[', joinStrings(quoted, ", "), ']');
}

namespace {

// Writes "key: value" pairs of one piece on one line: {scheduler: "Linear", ...}.
class FlowWriter {
public:
    template <class T>
    void field(T& member, const FieldInfo& info) {
        m_parts.push_back(std::string(info.key) + ": " + formatFlow(member));
    }
    std::string text() const { return enclose('{', joinStrings(m_parts, ", "), '}'); }

private:
    std::vector<std::string> m_parts;
};

}  // namespace

std::string formatFlow(const LearningRate& value) {
    if (value.schedule.empty()) return formatDouble(value.constant);
    std::vector<std::string> pieces;
    for (SchedulerConfig piece : value.schedule) {
        FlowWriter writer;
        piece.visit(writer);
        pieces.push_back(writer.text());
    }
    return enclose('[', joinStrings(pieces, ", "), ']');
}

namespace {

constexpr int kIndentStep = 4;  // ModelZoo's params files indent by four spaces

std::string commentFor(const FieldInfo& info) {
    std::vector<std::string> details;
    if (!info.unit.empty()) details.emplace_back(info.unit);
    const bool lo = std::isfinite(info.min);
    const bool hi = std::isfinite(info.max);
    if (lo && hi)
        details.push_back(formatNumberShort(info.min) + " to " + formatNumberShort(info.max));
    else if (lo)
        details.push_back(">= " + formatNumberShort(info.min));
    else if (hi)
        details.push_back("<= " + formatNumberShort(info.max));
    if (!info.choices.empty()) {
        std::vector<std::string> choices(info.choices.begin(), info.choices.end());
        details.push_back("one of: " + joinStrings(choices, ", "));
    }
    std::string text(info.help);
    if (!details.empty()) text += " (" + joinStrings(details, "; ") + ")";
    return text;
}

// Block-style writer: sections as indented maps, schedules and multi-path data_dir as lists.
class BlockWriter {
public:
    BlockWriter(std::string& out, int indent, bool comments)
        : m_out(out), m_indent(indent), m_comments(comments) {}

    template <class T>
    void field(T& member, const FieldInfo& info) {
        comment(info);
        line(std::string(info.key) + ": " + formatFlow(member));
    }
    void field(std::vector<std::string>& member, const FieldInfo& info) {
        comment(info);
        if (member.size() <= 1) {
            line(std::string(info.key) + ": " + formatFlow(member));
            return;
        }
        line(std::string(info.key) + ":");
        for (const std::string& item : member)
            line(std::string(kIndentStep, ' ') + "- " + quoteYaml(item));
    }
    void field(LearningRate& member, const FieldInfo& info) {
        comment(info);
        if (member.schedule.empty()) {
            line(std::string(info.key) + ": " + formatFlow(member.constant));
            return;
        }
        line(std::string(info.key) + ":");
        for (SchedulerConfig& piece : member.schedule) {
            // Each piece is a map under a list dash; its keys line up after "- ".
            std::string body;
            BlockWriter inner(body, 0, false);
            piece.visit(inner);
            const std::string dashIndent(static_cast<size_t>(m_indent + kIndentStep), ' ');
            bool first = true;
            size_t start = 0;
            while (start < body.size()) {
                const size_t end = body.find('\n', start);
                m_out +=
                    dashIndent + (first ? "- " : "  ") + body.substr(start, end - start) + "\n";
                first = false;
                start = end + 1;
            }
        }
    }
    template <class S>
    void section(S& member, const FieldInfo& info) {
        if (m_indent == 0 && m_comments && !m_out.empty()) m_out += "\n";
        comment(info);
        line(std::string(info.key) + ":");
        BlockWriter inner(m_out, m_indent + kIndentStep, m_comments);
        member.visit(inner);
    }
    template <class S>
    void optionalSection(std::optional<S>& member, const FieldInfo& info) {
        if (member) {
            section(*member, info);
        } else if (m_comments) {
            line("# " + std::string(info.key) + ": not set. " + std::string(info.help));
        }
    }

private:
    void comment(const FieldInfo& info) {
        if (m_comments) line("# " + commentFor(info));
    }
    void line(const std::string& text) {
        m_out += std::string(static_cast<size_t>(m_indent), ' ') + text + "\n";
    }

    std::string& m_out;
    int m_indent;
    bool m_comments;
};

}  // namespace

std::string saveConfigYaml(const Config& config, YamlStyle style) {
    const bool comments = style == YamlStyle::Commented;
    std::string out;
    if (comments)
        out +=
            "# Wafer Studio run configuration (Cerebras ModelZoo legacy layout), every key with "
            "its value.\n# Check it with `wafer validate FILE`; override a value with `--set "
            "key.path=value`.\n";
    Config copy = config;  // visit() is non-const so that readers can share it
    BlockWriter writer(out, 0, comments);
    copy.visit(writer);
    return out;
}

std::string hashConfig(const Config& config) {
    return sha256Hex(saveConfigYaml(config, YamlStyle::Plain));
}

std::string hashOfWrittenConfig(std::string_view commentedYaml) {
    // Values are written on their key's line (strings quoted), so a line whose first
    // non-blank character is '#' is a comment, and the Plain style has no blank lines.
    std::string plain;
    size_t start = 0;
    while (start < commentedYaml.size()) {
        size_t end = commentedYaml.find('\n', start);
        if (end == std::string_view::npos) end = commentedYaml.size();
        const std::string_view line = commentedYaml.substr(start, end - start);
        const size_t first = line.find_first_not_of(" \t\r");
        if (first != std::string_view::npos && line[first] != '#') {
            plain.append(line);
            plain += '\n';
        }
        start = end + 1;
    }
    return sha256Hex(plain);
}

}  // namespace ws::config
