// SPDX-License-Identifier: GPL-3.0-or-later
// `wafer fields`: every config key with its type, default, allowed values and help, from the one
// field declaration the YAML loader uses. `--markdown` prints the guide's config reference
// (docs/config-reference.md).
#include <fmt/format.h>

#include <cmath>
#include <iostream>

#include "app/cli/commands.h"
#include "app/cli/output.h"
#include "engine/config/config_yaml.h"

namespace ws::cli {
namespace {

std::string allowed(const config::FieldDescription& f) {
    if (!f.choices.empty()) {
        std::string text;
        for (const auto& c : f.choices) text += (text.empty() ? "" : ", ") + ("`" + c + "`");
        return text;
    }
    const bool lo = std::isfinite(f.min), hi = std::isfinite(f.max);
    if (lo && hi) return fmt::format("{:g} … {:g}", f.min, f.max);
    if (lo) return fmt::format("≥ {:g}", f.min);
    if (hi) return fmt::format("≤ {:g}", f.max);
    return "";
}

int printFields(bool markdown, const CommonOptions& common) {
    const auto fields = config::describeFields();
    if (common.json) {
        for (const auto& f : fields) {
            std::cout << nlohmann::json{{"key", f.path},
                                        {"type", f.type},
                                        {"default", f.defaultValue},
                                        {"unit", f.unit},
                                        {"min", number(f.min)},
                                        {"max", number(f.max)},
                                        {"choices", f.choices},
                                        {"help", f.help}}
                             .dump()
                      << "\n";
        }
        return 0;
    }
    if (markdown) {
        std::cout << "| key | type | default | allowed | meaning |\n|---|---|---|---|---|\n";
        for (const auto& f : fields) {
            std::string help;
            for (char c : f.help) help += c == '|' ? std::string("\\|") : std::string(1, c);
            if (!f.unit.empty()) help += " (" + f.unit + ")";
            if (f.defaultValue.empty()) {  // a section or list heading
                std::cout << fmt::format("| **`{}`** | {} | | | {} |\n", f.path, f.type, help);
                continue;
            }
            std::cout << fmt::format("| `{}` | {} | `{}` | {} | {} |\n", f.path, f.type,
                                     f.defaultValue, allowed(f), help);
        }
        return 0;
    }
    for (const auto& f : fields) {
        std::cout << fmt::format("{:<44} {:<10} default {}\n    {}{}\n", f.path, f.type,
                                 f.defaultValue.empty() ? "(empty)" : f.defaultValue, f.help,
                                 allowed(f).empty() ? "" : " [" + allowed(f) + "]");
    }
    return 0;
}

}  // namespace

void addFieldsCommand(CLI::App& app, CommonOptions& common, int& exitCode) {
    auto markdown = std::make_shared<bool>(false);
    CLI::App* cmd = app.add_subcommand("fields", "List every config key with its help text");
    cmd->add_flag("--markdown", *markdown, "Print a Markdown table (the guide's config reference)");
    cmd->add_flag("--json", common.json, "One JSON object per key");
    cmd->callback([markdown, &common, &exitCode] { exitCode = printFields(*markdown, common); });
}

}  // namespace ws::cli
