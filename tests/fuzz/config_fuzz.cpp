// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for the run configuration reader (engine/config: yaml_reader*, the sweep
// section, `--set` overrides, yaml_patch): the input is the YAML text, then optionally one NUL
// byte and `key.path=value` override lines, as `wafer train CONFIG --set ...` would pass them.
// Any input must load or come back as an Error, never crash, hang or hit undefined behaviour
// (ASan + UBSan). What loads must also keep the loader's promises: validate() runs on it,
// saveConfigYaml() of it (both styles) loads back to the same config (same hashConfig), and
// patching the text from the config without the overrides to the one with them (what the GUI's
// form does) reads back as the config with them.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/config/config_yaml.h"
#include "engine/config/yaml_patch.h"
#include "fuzz_support.h"

namespace {

using namespace ws::config;

[[noreturn]] void fail(const char* what, const std::string& detail) {
    std::fprintf(stderr, "config_fuzz: %s\n%s\n", what, detail.c_str());
    std::abort();
}

void checkReadsBackAs(const std::string& text, const Config& expected, const char* what) {
    auto again = parseConfig(text, "fuzz-roundtrip.yaml", {});
    if (!again.ok()) fail(what, again.error().message + "\n--- text:\n" + text);
    if (hashConfig(again->config) != hashConfig(expected)) {
        fail(what, "reads back as a different config\n--- text:\n" + text + "\n--- expected:\n" +
                       saveConfigYaml(expected, YamlStyle::Plain) + "\n--- got:\n" +
                       saveConfigYaml(again->config, YamlStyle::Plain));
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto parts = ws::fuzz::splitInput(ws::fuzz::asText(data, size), {"\0", 1}, 2);
    const std::string_view yaml = parts[0];
    std::vector<std::string> overrides;
    if (parts.size() > 1) {
        for (const auto& line : ws::fuzz::splitInput(parts[1], "\n", 64)) {
            if (!line.empty()) overrides.emplace_back(line);
        }
    }
    (void)absolutizeConfigPaths(yaml, "/fuzz/base");
    auto base = parseConfig(yaml, "fuzz.yaml", {});
    if (!base.ok()) {
        ws::fuzz::note("refused: " + base.error().message.substr(0, 200));
        return 0;
    }
    ws::fuzz::note("loaded");
    (void)validate(base->config);
    checkReadsBackAs(saveConfigYaml(base->config, YamlStyle::Plain), base->config,
                     "saveConfigYaml(Plain) does not load back");
    checkReadsBackAs(saveConfigYaml(base->config, YamlStyle::Commented), base->config,
                     "saveConfigYaml(Commented) does not load back");
    if (overrides.empty()) return 0;

    auto withOverrides = parseConfig(yaml, "fuzz.yaml", {}, overrides);
    Config applied = base->config;
    bool allApplied = true;
    for (const auto& o : overrides) allApplied = allApplied && applyOverride(applied, o).ok();
    if (withOverrides.ok() != allApplied) {
        fail("parseConfig with overrides and applyOverride disagree",
             withOverrides.ok() ? "parseConfig accepted them" : withOverrides.error().message);
    }
    if (!withOverrides.ok()) return 0;
    (void)validate(withOverrides->config);
    const YamlPatch patch = patchConfigYaml(yaml, base->config, withOverrides->config, {});
    checkReadsBackAs(patch.text, withOverrides->config,
                     "patchConfigYaml's text does not load back");
    return 0;
}
