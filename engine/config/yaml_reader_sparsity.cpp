// SPDX-License-Identifier: GPL-3.0-or-later
// Reading hooks of the top-level sparsity section (yaml_reader.h): ModelZoo 2.2+'s glob
// param_filter read as regexes, and every param_name_patterns regex compiled where the file
// gives it, so a bad one is reported with its line and column.
#include <regex>

#include "engine/config/text_format.h"
#include "engine/config/yaml_reader.h"

namespace ws::config {

namespace {

// fnmatch's glob as an ECMAScript regex: * -> .*, ? -> ., [..] kept, the rest literal.
std::string globToRegex(const std::string& glob) {
    // fnmatch: the whole name matches ("$": param_name_patterns match from the start only), and
    // a class negates with '!' where a regex negates with '^'.
    std::string out;
    bool inClass = false, classStart = false;
    for (char c : glob) {
        if (inClass) {
            out += classStart && c == '!' ? '^' : c;
            inClass = classStart || c != ']';
            classStart = false;
            continue;
        }
        switch (c) {
            case '*':
                out += ".*";
                break;
            case '?':
                out += '.';
                break;
            case '[':
                out += c;
                inClass = classStart = true;
                break;
            case '.':
            case '\\':
            case '+':
            case '(':
            case ')':
            case '{':
            case '}':
            case '^':
            case '$':
            case '|':
                out += '\\';
                out += c;
                break;
            default:
                out += c;
        }
    }
    return out + '$';
}

}  // namespace

void beforeRead(SparsitySectionConfig& sparsity, MapReader& reader) {
    ReadContext& ctx = reader.context();
    std::optional<YAML::Node> node = reader.takeKey("param_filter");
    if (!node) return;
    const std::string path = childPath(reader.path(), "param_filter");
    if (reader.has(FieldInfo{.key = "param_name_patterns", .help = {}})) {
        ctx.error(ctx.keyMark, path,
                  "param_name_patterns is also given; keep one of them (param_name_patterns "
                  "takes regexes, param_filter globs)");
        return;
    }
    std::vector<std::string> globs;
    readValue(*node, globs, FieldInfo{.key = "param_filter", .help = {}}, path, ctx);
    std::vector<std::string> regexes;
    for (const std::string& glob : globs) regexes.push_back(globToRegex(glob));
    sparsity.paramNamePatterns = regexes;
    std::vector<std::string> quoted;
    for (const std::string& r : regexes) quoted.push_back(quoteYaml(r));
    ctx.warn(ctx.keyMark, path,
             "ModelZoo 2.2's glob filter read as param_name_patterns: [" +
                 joinStrings(quoted, ", ") + "]");
}

void afterRead(SparsitySectionConfig& /*sparsity*/, MapReader& reader) {
    ReadContext& ctx = reader.context();
    const YAML::Node patterns = reader.node()["param_name_patterns"];
    if (!patterns || !(patterns.IsSequence() || patterns.IsScalar())) return;
    const std::string path = childPath(reader.path(), "param_name_patterns");
    auto check = [&](const YAML::Node& element, const std::string& where) {
        if (!element.IsScalar()) return;
        try {
            std::regex compiled(element.Scalar(), std::regex::ECMAScript);
        } catch (const std::regex_error& e) {
            ctx.error(ctx.markOf(element), where,
                      quoteYaml(element.Scalar()) + " is not a valid regex (" + e.what() +
                          "); write a regex such as '.*c_fc\\.weight' or "
                          "'.*proj_[qkv]_dense_layer.weight'");
        }
    };
    if (patterns.IsScalar()) {
        check(patterns, path);
        return;
    }
    for (size_t i = 0; i < patterns.size(); ++i) check(patterns[i], indexPath(path, i));
}

}  // namespace ws::config
