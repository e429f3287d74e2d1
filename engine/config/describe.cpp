// SPDX-License-Identifier: GPL-3.0-or-later
// describeFields(): a visitor that records each declared field (see describe.h).
#include "engine/config/describe.h"

#include <limits>
#include <type_traits>

#include "engine/config/config.h"
#include "engine/config/yaml_flow.h"

namespace ws::config {

namespace {

template <class T>
constexpr const char* typeName() {
    if constexpr (std::is_same_v<T, std::string>)
        return "string";
    else if constexpr (std::is_same_v<T, bool>)
        return "bool";
    else if constexpr (std::is_same_v<T, int>)
        return "int";
    else if constexpr (std::is_same_v<T, int64_t>)
        return "int64";
    else if constexpr (std::is_same_v<T, double>)
        return "double";
    else if constexpr (std::is_same_v<T, std::array<double, 2>>)
        return "double[2]";
    else if constexpr (std::is_same_v<T, std::vector<std::string>>)
        return "string[]";
    else if constexpr (std::is_same_v<T, LearningRate>)
        return "learning_rate";
    else if constexpr (std::is_same_v<T, std::vector<int64_t>>)
        return "int64[]";
    else if constexpr (std::is_same_v<T, SweepParameters>)
        return "sweep_parameters";
    else if constexpr (std::is_same_v<T, OverrideBundles>)
        return "override_bundles";
    else
        return nullptr;
}

class Describer {
public:
    Describer(std::string prefix, std::vector<FieldDescription>& out)
        : m_prefix(std::move(prefix)), m_out(out) {}

    template <class T>
    void field(T& member, const FieldInfo& info) {
        static_assert(typeName<T>() != nullptr, "a config field type without a type name");
        add(info, typeName<T>(), formatFlow(member));
        if constexpr (std::is_same_v<T, LearningRate>) {
            SchedulerConfig piece;
            Describer pieces(path(info) + "[N]", m_out);
            piece.visit(pieces);
        }
        if constexpr (std::is_same_v<T, SweepParameters>) {
            // One swept key's forms, under a placeholder for the key path.
            const std::string axis = path(info) + ".<key>";
            m_out.push_back({.path = axis + ".values",
                             .type = "string[]",
                             .defaultValue = "[]",
                             .help = "The values to try, e.g. [32, 64, 128]",
                             .unit = "",
                             .min = -std::numeric_limits<double>::infinity(),
                             .max = std::numeric_limits<double>::infinity(),
                             .choices = {},
                             .aliases = {}});
            for (const char* form : {"range", "log2_range"}) {
                SweepRange range;
                Describer inner(axis + "." + form, m_out);
                add(FieldInfo{.key = form,
                              .help = std::string_view(form) == "range"
                                          ? "Values min, min + step, ... max"
                                          : "Values 2^min, 2^(min + step), ... 2^max"},
                    "optional_section", "", axis);
                range.visit(inner);
            }
        }
    }
    template <class S>
    void section(S& member, const FieldInfo& info) {
        add(info, "section", "");
        Describer inner(path(info), m_out);
        member.visit(inner);
    }
    template <class S>
    void optionalSection(std::optional<S>& /*member*/, const FieldInfo& info) {
        add(info, "optional_section", "");
        S defaults;
        Describer inner(path(info), m_out);
        defaults.visit(inner);
    }

private:
    std::string path(const FieldInfo& info) const {
        return m_prefix.empty() ? std::string(info.key) : m_prefix + "." + std::string(info.key);
    }
    void add(const FieldInfo& info, std::string type, std::string defaultValue,
             const std::string& prefix = {}) {
        FieldDescription d{
            .path = prefix.empty() ? path(info) : prefix + "." + std::string(info.key),
            .type = std::move(type),
            .defaultValue = std::move(defaultValue),
            .help = std::string(info.help),
            .unit = std::string(info.unit),
            .min = info.min,
            .max = info.max,
            .choices = {},
            .aliases = {}};
        for (std::string_view choice : info.choices) d.choices.emplace_back(choice);
        for (std::string_view alias : info.aliases) d.aliases.emplace_back(alias);
        m_out.push_back(std::move(d));
    }

    std::string m_prefix;
    std::vector<FieldDescription>& m_out;
};

}  // namespace

std::vector<FieldDescription> describeFields() {
    std::vector<FieldDescription> out;
    Config defaults;
    Describer describer("", out);
    defaults.visit(describer);
    return out;
}

}  // namespace ws::config
