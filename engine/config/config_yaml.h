// SPDX-License-Identifier: GPL-3.0-or-later
// Loading, saving and overriding a run configuration as YAML (Cerebras ModelZoo's legacy layout
// plus Wafer Studio's keys). Loading checks every value's type, range and allowed choices and
// reports each problem as "file:line:col: key.path: what was found and what is allowed"; keys
// from real ModelZoo files that Wafer Studio does not implement load with a warning, any other
// unknown key is an error with a "did you mean" hint. Cross-field rules (hidden_size divisible by
// num_heads, ...) are checked by validate() in validate.h; run it before training.
// Thread-safe: every function works on its arguments only.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "engine/config/config.h"
#include "engine/config/describe.h"  // this header is the module's umbrella: one include for all
#include "engine/config/validate.h"
#include "engine/core/result.h"

namespace ws::config {

struct LoadedConfig {
    Config config;
    // Keys skipped or values renamed on load ("file:line:col: model.use_ffn_bias: ModelZoo
    // setting not implemented by Wafer Studio, ignored: ..."); show them to the user.
    std::vector<std::string> warnings;
    std::filesystem::path sourceFile;  // absolute; empty for parseConfig()
};

// Reads a YAML file. Relative paths in train_input/eval_input data_dir, tokenizer vocab_file and
// merges_file, and runconfig.checkpoint_path are resolved against the file's folder (so a preset
// can say `data_dir: ../resources/corpus`); runconfig.model_dir stays as written. Then applies
// each "key.path=value" override in order (their paths are not resolved: they are relative to
// the current directory). On failure the error lists every problem found, one per line.
Result<LoadedConfig> loadConfigFile(const std::filesystem::path& yamlPath,
                                    const std::vector<std::string>& overrides = {});

// The same for YAML text already in memory (the GUI's editor). `sourceName` prefixes messages;
// relative paths resolve against `baseDir` (left as written when baseDir is empty).
Result<LoadedConfig> parseConfig(std::string_view yamlText, std::string_view sourceName,
                                 const std::filesystem::path& baseDir,
                                 const std::vector<std::string>& overrides = {});

enum class YamlStyle {
    Commented,  // help text above every key, for people (run folders, "Save as")
    Plain,      // keys and values only, for hashing
};

// Every key with its value, in declaration order; parseConfig() of the result gives back an
// equal Config (doubles are written in their shortest exact form).
std::string saveConfigYaml(const Config& config, YamlStyle style = YamlStyle::Commented);

// One override, "key.path=value". The value is YAML: a scalar ("128", "cosine"), a flow list
// ("[0.9, 0.95]") or a flow map. Paths may index lists: "optimizer.learning_rate[1].total_iters",
// "optimizer.betas[0]", "train_input.data_dir[0]". A map given for a section (or a schedule
// piece) changes only the keys it names; a list given for learning_rate replaces the schedule;
// "model.output_layer_initializer=null" removes an optional section. Aliases are accepted.
// On error `config` is left unchanged and the message names the override and the fix.
Status applyOverride(Config& config, std::string_view keyEqualsValue);

// SHA-256 (hex) of saveConfigYaml(config, YamlStyle::Plain): the run's configuration identity.
// Plain so that rewording help text does not change the identity of existing runs.
std::string hashConfig(const Config& config);

// The hashConfig that the build which wrote `commentedYaml` (saveConfigYaml's Commented style,
// as checkpoints store it) computed: the same text without its comment and blank lines. A
// checkpoint written before a config field was added still verifies by it, since re-parsing
// its YAML adds the new field and so changes hashConfig.
std::string hashOfWrittenConfig(std::string_view commentedYaml);

}  // namespace ws::config
