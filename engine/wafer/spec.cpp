// SPDX-License-Identifier: GPL-3.0-or-later
// Loading and checking wafer/cluster specs (spec.h). One field table per section drives reading,
// overrides and the unknown-key check, so a figure is named once.
#include "engine/wafer/spec.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>
#include <variant>
#include <vector>

#include "engine/config/text_format.h"
#include "engine/core/paths.h"

namespace ws::wafer {

namespace {

using Target = std::variant<int*, int64_t*, double*, std::string*>;

struct Field {
    const char* key;
    Target target;
    double min;  // smallest allowed value (exclusive when `positive`)
    bool positive;
};

std::vector<Field> waferFields(WaferSpec& s) {
    return {{"name", &s.name, 0, false},
            {"grid_rows", &s.gridRows, 0, true},
            {"grid_cols", &s.gridCols, 0, true},
            {"clock_ghz", &s.clockGhz, 0, true},
            {"fmacs_per_core_per_cycle", &s.fmacsPerCycle, 0, true},
            {"sram_bytes_per_core", &s.sramBytesPerCore, 0, true},
            {"fabric_bytes_per_link_per_cycle", &s.fabricBytesPerCycle, 0, true},
            {"hop_latency_cycles", &s.hopLatencyCycles, 0, false},
            {"io_gb_per_s", &s.ioGbPerS, 0, true},
            {"stream_bytes_per_value", &s.streamBytesPerValue, 0, true},
            {"compute_efficiency", &s.computeEfficiency, 0, true}};
}

std::vector<Field> clusterFields(ClusterSpec& c) {
    return {{"max_systems", &c.maxSystems, 0, true},
            {"swarmx_fan_out", &c.swarmxFanOut, 1, true},
            {"swarmx_hop_latency_us", &c.swarmxHopLatencyUs, 0, false},
            {"memoryx_update_gparams_per_s", &c.memoryxUpdateGparamsPerS, 0, true},
            {"memoryx_bytes", &c.memoryxBytes, 0, true},
            {"link_gbit_per_s", &c.linkGbitPerS, 0, true},
            {"links_per_system", &c.linksPerSystem, 0, true},
            {"fabric_aggregate_tbit_per_s", &c.aggregateTbitPerS, 0, true},
            {"memoryx_gb_per_s", &c.memoryxGbPerS, 0, true},
            {"host_input_gb_per_s", &c.hostInputGbPerS, 0, true},
            {"swarmx_port_jitter", &c.swarmxPortJitter, 0, false}};
}

std::string where(std::string_view source, const YAML::Mark& mark) {
    if (mark.is_null()) return std::string(source);
    return fmt::format("{}:{}:{}", source, mark.line + 1, mark.column + 1);
}

std::string allowedText(const Field& f) {
    return f.positive ? fmt::format("a number > {}", f.min) : fmt::format("a number >= {}", f.min);
}

// Parses `text` into the field; returns an error message (without location) or "".
std::string assign(const Field& f, const std::string& text) {
    if (auto* str = std::get_if<std::string*>(&f.target)) {
        **str = text;
        return "";
    }
    double v = 0;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, v);
    if (ec != std::errc() || ptr != end || !std::isfinite(v))
        return fmt::format("expected {}, found \"{}\"", allowedText(f), text);
    if (f.positive ? !(v > f.min) : !(v >= f.min))
        return fmt::format("expected {}, found {}", allowedText(f), text);
    const bool integral = !std::holds_alternative<double*>(f.target);
    if (integral && (v != std::floor(v) || v > 9.0e15))
        return fmt::format("expected a whole number, found {}", text);
    std::visit(
        [&](auto* p) {
            using T = std::remove_pointer_t<decltype(p)>;
            if constexpr (!std::is_same_v<T, std::string>) *p = static_cast<T>(v);
        },
        f.target);
    return "";
}

void readSection(const YAML::Node& root, const char* section, std::vector<Field> fields,
                 std::string_view source, std::vector<std::string>& errors) {
    const YAML::Node node = root[section];
    if (!node || !node.IsMap()) {
        errors.push_back(fmt::format("{}: missing section `{}:` (a map of its figures)",
                                     where(source, root.Mark()), section));
        return;
    }
    std::set<std::string> seen;
    for (const auto& kv : node) {
        const std::string key = kv.first.as<std::string>();
        auto it = std::find_if(fields.begin(), fields.end(),
                               [&](const Field& f) { return key == f.key; });
        if (it == fields.end()) {
            std::string known;
            for (const auto& f : fields) known += (known.empty() ? "" : ", ") + std::string(f.key);
            errors.push_back(fmt::format("{}: {}.{}: unknown key; allowed: {}",
                                         where(source, kv.first.Mark()), section, key, known));
            continue;
        }
        seen.insert(key);
        if (!kv.second.IsScalar()) {
            errors.push_back(fmt::format("{}: {}.{}: expected a single value",
                                         where(source, kv.second.Mark()), section, key));
            continue;
        }
        if (std::string msg = assign(*it, kv.second.Scalar()); !msg.empty())
            errors.push_back(
                fmt::format("{}: {}.{}: {}", where(source, kv.second.Mark()), section, key, msg));
    }
    for (const auto& f : fields)
        if (!seen.count(f.key))
            errors.push_back(fmt::format("{}: {}.{}: missing; every figure must be stated",
                                         where(source, node.Mark()), section, f.key));
}

std::string joinLines(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& l : lines) out += (out.empty() ? "" : "\n") + l;
    return out;
}

}  // namespace

int ClusterSpec::treeDepth(int systems) const {
    int depth = 0;
    for (int64_t reach = 1; reach < systems; reach *= std::max(2, swarmxFanOut)) ++depth;
    return depth;
}

int ClusterSpec::treeLinks(int systems) const {
    if (systems <= 1) return 1;
    const int fan = std::max(2, swarmxFanOut);
    int links = 0;
    for (int64_t level = systems; level > 1; level = (level + fan - 1) / fan) links += int(level);
    return links + 1;  // the root's link to MemoryX
}

Status WaferSpec::validate() const {
    std::vector<std::string> problems;
    auto positive = [&](double v, const char* key) {
        if (!(v > 0)) problems.push_back(fmt::format("{} is {}; it must be > 0", key, v));
    };
    positive(gridRows, "wafer.grid_rows");
    positive(gridCols, "wafer.grid_cols");
    positive(clockGhz, "wafer.clock_ghz");
    positive(fmacsPerCycle, "wafer.fmacs_per_core_per_cycle");
    positive(double(sramBytesPerCore), "wafer.sram_bytes_per_core");
    positive(fabricBytesPerCycle, "wafer.fabric_bytes_per_link_per_cycle");
    positive(ioGbPerS, "wafer.io_gb_per_s");
    positive(streamBytesPerValue, "wafer.stream_bytes_per_value");
    positive(cluster.maxSystems, "cluster.max_systems");
    positive(cluster.memoryxUpdateGparamsPerS, "cluster.memoryx_update_gparams_per_s");
    positive(cluster.memoryxBytes, "cluster.memoryx_bytes");
    positive(cluster.linkGbitPerS, "cluster.link_gbit_per_s");
    positive(cluster.linksPerSystem, "cluster.links_per_system");
    positive(cluster.aggregateTbitPerS, "cluster.fabric_aggregate_tbit_per_s");
    positive(cluster.memoryxGbPerS, "cluster.memoryx_gb_per_s");
    positive(cluster.hostInputGbPerS, "cluster.host_input_gb_per_s");
    if (!(cluster.swarmxPortJitter >= 0 && cluster.swarmxPortJitter <= 1))
        problems.push_back(
            fmt::format("cluster.swarmx_port_jitter is {}; it must be in [0, 1] (a chunk's time is "
                        "mean x (1 + jitter x (Exp(1) - 1)), which stays positive only up to 1)",
                        cluster.swarmxPortJitter));
    if (hopLatencyCycles < 0)
        problems.push_back(
            fmt::format("wafer.hop_latency_cycles is {}; it must be >= 0", hopLatencyCycles));
    if (!(computeEfficiency > 0 && computeEfficiency <= 1))
        problems.push_back(
            fmt::format("wafer.compute_efficiency is {}; it must be in (0, 1]", computeEfficiency));
    if (cluster.swarmxFanOut < 2)
        problems.push_back(
            fmt::format("cluster.swarmx_fan_out is {}; it must be >= 2", cluster.swarmxFanOut));
    if (cluster.swarmxHopLatencyUs < 0)
        problems.push_back("cluster.swarmx_hop_latency_us must be >= 0");
    if (problems.empty()) return Status::success();
    return Error{fmt::format("wafer spec \"{}\": {}", name, joinLines(problems))};
}

Status WaferSpec::checkSystems(int numSystems) const {
    if (numSystems < 1)
        return Error{fmt::format("num_csx is {}; it must be at least 1", numSystems)};
    if (numSystems > cluster.maxSystems)
        return Error{fmt::format(
            "num_csx {} is beyond the SwarmX limit of the \"{}\" spec ({} systems); use at most "
            "{} or raise cluster.max_systems",
            numSystems, name, cluster.maxSystems, cluster.maxSystems)};
    return Status::success();
}

Result<WaferSpec> parseWaferSpec(std::string_view yamlText, std::string_view sourceName) {
    YAML::Node root;
    try {
        root = YAML::Load(std::string(yamlText));
    } catch (const YAML::Exception& e) {
        return Error{fmt::format("{}: not valid YAML: {}", where(sourceName, e.mark), e.msg)};
    }
    if (!root.IsMap())
        return Error{fmt::format("{}: expected sections `wafer:` and `cluster:`", sourceName)};
    WaferSpec spec;
    std::vector<std::string> errors;
    for (const auto& kv : root) {
        const std::string key = kv.first.as<std::string>();
        if (key != "wafer" && key != "cluster")
            errors.push_back(fmt::format("{}: {}: unknown section; allowed: wafer, cluster",
                                         where(sourceName, kv.first.Mark()), key));
    }
    readSection(root, "wafer", waferFields(spec), sourceName, errors);
    readSection(root, "cluster", clusterFields(spec.cluster), sourceName, errors);
    if (!errors.empty()) return Error{joinLines(errors)};
    if (Status s = spec.validate(); !s.ok())
        return Error{fmt::format("{}: {}", sourceName, s.error().message)};
    return spec;
}

Result<WaferSpec> loadWaferSpecFile(const std::filesystem::path& path) {
    std::string text;
    {
        FILE* f = std::fopen(path.c_str(), "rb");
        if (!f)
            return Error{fmt::format(
                "cannot read wafer spec {}: {}; give a spec name ({}) or the path of a spec file",
                path.string(), std::strerror(errno), "teaching-16x16, wse2, wse3")};
        char buf[4096];
        size_t n = 0;
        while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
        std::fclose(f);
    }
    return parseWaferSpec(text, path.string());
}

namespace {

// Letters and digits only, lower case: "teaching-16x16" -> "teaching16x16".
std::string alphanumeric(std::string_view text) {
    std::string out;
    for (char c : text)
        if (std::isalnum(static_cast<unsigned char>(c)))
            out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// The spec a misspelt name most likely meant: a near typo ("wse22"), or the same name without
// its punctuation or its tail ("teaching16", "WSE-3").
std::optional<std::string> closestSpecName(const std::string& name,
                                           const std::vector<std::string>& names) {
    if (auto closest = config::closestMatch(name, names)) return closest;
    const std::string typed = alphanumeric(name);
    if (typed.size() < 3) return std::nullopt;
    for (const std::string& candidate : names)
        if (alphanumeric(candidate).starts_with(typed)) return candidate;
    return std::nullopt;
}

}  // namespace

std::vector<std::string> knownSpecNames() {
    namespace fs = std::filesystem;
    const fs::path dir = appDataDir() / "presets" / "wafers";
    std::vector<std::string> names;
    std::error_code ec;
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
         it.increment(ec))
        if (it->path().extension() == ".yaml") names.push_back(it->path().stem().string());
    std::sort(names.begin(), names.end());
    return names;
}

Result<WaferSpec> loadWaferSpec(std::string_view nameOrPath) {
    namespace fs = std::filesystem;
    const std::string s(nameOrPath);
    if (s.find('/') != std::string::npos || (s.size() > 5 && s.ends_with(".yaml")))
        return loadWaferSpecFile(s);
    const fs::path dir = appDataDir() / "presets" / "wafers";
    const fs::path file = dir / (s + ".yaml");
    std::error_code ec;
    if (fs::exists(file, ec)) return loadWaferSpecFile(file);
    const std::vector<std::string> names = knownSpecNames();
    std::string hint;
    if (auto closest = closestSpecName(s, names))
        hint = fmt::format("did you mean \"{}\"? ", *closest);
    return Error{fmt::format("no wafer spec named \"{}\" in {}; {}available: {}", s, dir.string(),
                             hint, names.empty() ? "none" : config::joinStrings(names, ", "))};
}

Status overrideField(WaferSpec& spec, std::string_view keyEqualsValue) {
    const size_t eq = keyEqualsValue.find('=');
    const size_t dot = keyEqualsValue.find('.');
    if (eq == std::string_view::npos || dot == std::string_view::npos || dot > eq)
        return Error{
            fmt::format("override \"{}\": expected section.key=value, e.g. wafer.grid_rows=64",
                        keyEqualsValue)};
    const std::string section(keyEqualsValue.substr(0, dot));
    const std::string key(keyEqualsValue.substr(dot + 1, eq - dot - 1));
    const std::string value(keyEqualsValue.substr(eq + 1));
    WaferSpec copy = spec;
    std::vector<Field> fields;
    if (section == "wafer")
        fields = waferFields(copy);
    else if (section == "cluster")
        fields = clusterFields(copy.cluster);
    else
        return Error{fmt::format("override \"{}\": unknown section \"{}\"; allowed: wafer, cluster",
                                 keyEqualsValue, section)};
    auto it =
        std::find_if(fields.begin(), fields.end(), [&](const Field& f) { return key == f.key; });
    if (it == fields.end()) {
        std::string known;
        for (const auto& f : fields) known += (known.empty() ? "" : ", ") + std::string(f.key);
        return Error{fmt::format("override \"{}\": unknown key {}.{}; allowed: {}", keyEqualsValue,
                                 section, key, known)};
    }
    if (std::string msg = assign(*it, value); !msg.empty())
        return Error{fmt::format("override \"{}\": {}", keyEqualsValue, msg)};
    if (Status s = copy.validate(); !s.ok()) return s;
    spec = std::move(copy);
    return Status::success();
}

Result<WaferSpec> specForConfig(const config::Config& cfg) {
    auto spec = loadWaferSpec(cfg.wafer.spec);
    if (!spec.ok()) return Error{"wafer.spec: " + spec.error().message};
    const std::pair<const char*, const std::vector<std::string>*> sections[] = {
        {"wafer", &cfg.wafer.overrides}, {"cluster", &cfg.cluster.overrides}};
    for (const auto& [section, overrides] : sections) {
        for (size_t i = 0; i < overrides->size(); ++i) {
            const std::string& o = (*overrides)[i];
            if (Status st = overrideField(*spec, fmt::format("{}.{}", section, o)); !st.ok())
                return Error{fmt::format("{}.overrides[{}] = \"{}\": {}", section, i, o,
                                         st.error().message)};
        }
    }
    if (Status st = spec->validate(); !st.ok()) return st.error();
    if (Status st = spec->checkSystems(cfg.runconfig.numCsx); !st.ok())
        return Error{"runconfig.num_csx: " + st.error().message};
    return spec;
}

}  // namespace ws::wafer
