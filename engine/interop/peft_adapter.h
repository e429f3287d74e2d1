// SPDX-License-Identifier: GPL-3.0-or-later
// LoRA adapters in Hugging Face PEFT's layout (issue 16; Llama layout issue 33):
//   adapter_config.json        LoraConfig as PEFT's save_pretrained writes it: peft_type "LORA",
//                              r, lora_alpha, lora_dropout, target_modules, fan_in_fan_out, bias
//                              "none", task_type "CAUSAL_LM", base_model_name_or_path, ...
//   adapter_model.safetensors  the adapters, in the base's layout:
//   - a GPT-2 base (GPT2LMHeadModel, fan_in_fan_out true: GPT-2's linears are Conv1D):
//     base_model.model.transformer.h.N.<module>.lora_A.weight (R, IN) and .lora_B.weight (OUT, R)
//     for module attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj: the transposes of our A (IN, R),
//     B (R, OUT) (model/lora.h), so PEFT's delta (B·A)ᵀ (fan_in_fan_out) is our A·B.
//   - a Llama-family base (LlamaForCausalLM & co., modelio::usesHfLlamaNames; fan_in_fan_out
//     false: nn.Linear): base_model.model.model.layers.N.self_attn.{q,k,v,o}_proj.lora_{A,B}
//     .weight and base_model.model.model.layers.N.mlp.{gate,up,down}_proj.lora_{A,B}.weight,
//     A (R, IN), B (OUT, R), target_modules in PEFT's names (q_proj ... down_proj). q/k/v_proj
//     and gate/up_proj are our slice targets on the fused c_attn / c_fc (lora.h), o_proj and
//     down_proj our attn.c_proj and mlp.c_proj; an adapter on the fused c_attn or c_fc has no
//     Llama module and is refused on export.
//
// parsePeftAdapter reads such a pair from bytes (no I/O, so it can be fuzzed) and checks it against
// the base it is to adapt: LoRA only (no DoRA, rsLoRA, per-layer rank or alpha patterns, trained
// biases, modules_to_save or layer subsets: each refused naming the key), target modules the
// base's layout has (GPT-2's names on a GPT-2 base, Llama's on a Llama one; the other family's
// names are refused saying so), every block's A and B present with the config's rank and the base's
// sizes, no other tensor. An adapter trained for a different base (another hidden size, ffn width
// or depth) is refused naming the tensor and both sizes. Values (F32, F16, BF16, F64) come back as
// fp32 in our layout. readPeftAdapter does the same for a folder; writePeftAdapter writes one
// (atomically, through output_folder.h: a failure leaves nothing under the target name).
// Thread-safety: free functions over their arguments.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/core/result.h"

namespace ws::interop {

// The sizes of the base an adapter must fit (C channels, F ffn width, L blocks; a Llama base
// also its query and key/value widths, GQA's K < Q).
struct PeftBaseShape {
    int layers = 0;
    int channels = 0;
    int ffn = 0;
    bool llama = false;  // PEFT's Llama layout (modelio::usesHfLlamaNames)
    int qWidth = 0;      // heads x head_dim (Llama only)
    int kvWidth = 0;     // kv heads x head_dim (Llama only)
    bool swiglu = false;
};

// Our adapter targets in model/lora.h's Target order (= model::kLoraTargetCount), as config
// lora.targets names them.
inline constexpr size_t kPeftTargetCount = 9;
inline constexpr std::array<std::string_view, kPeftTargetCount> kPeftTargetNames = {
    "c_attn", "attn.c_proj", "c_fc",      "mlp.c_proj", "q_proj",
    "k_proj", "v_proj",      "gate_proj", "up_proj"};
// The module under "h.N." each target's tensors hang off in our table (and in PEFT's GPT-2
// layout, the first four).
inline constexpr std::array<std::string_view, kPeftTargetCount> kPeftModules = {
    "attn.c_attn", "attn.c_proj", "mlp.c_fc",      "mlp.c_proj", "attn.q_proj",
    "attn.k_proj", "attn.v_proj", "mlp.gate_proj", "mlp.up_proj"};
// PEFT's Llama name of each target (target_modules) and its module under "layers.N."; empty for
// the fused c_attn and c_fc.
inline constexpr std::array<std::string_view, kPeftTargetCount> kPeftLlamaNames = {
    "", "o_proj", "", "down_proj", "q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"};
inline constexpr std::array<std::string_view, kPeftTargetCount> kPeftLlamaModules = {
    "",
    "self_attn.o_proj",
    "",
    "mlp.down_proj",
    "self_attn.q_proj",
    "self_attn.k_proj",
    "self_attn.v_proj",
    "mlp.gate_proj",
    "mlp.up_proj"};

struct PeftAdapter {
    int rank = 0;
    double alpha = 0.0;
    double dropout = 0.0;
    std::array<bool, kPeftTargetCount> targets{};  // by kPeftTargetNames
    std::optional<std::string> baseModel;          // base_model_name_or_path
    // Our table names ("h.3.attn.c_attn.lora_A.weight", "h.3.attn.q_proj.lora_A.weight") ->
    // values in our layout: A (IN, R), B (R, OUT), row-major.
    std::map<std::string, std::vector<float>> tensors;
    // The targets set, in kPeftTargetNames order: our names, or with llama PEFT's Llama names
    // (o_proj for attn.c_proj, down_proj for mlp.c_proj).
    std::vector<std::string> targetNames(bool llama = false) const;
};

// The (IN, OUT) of target t (kPeftTargetNames order) on this base: the adapted module's sizes in
// PEFT (a slice's width for q/k/v/gate/up_proj).
std::pair<int64_t, int64_t> peftLinearSize(size_t target, const PeftBaseShape& base);

inline constexpr std::string_view kPeftConfigFile = "adapter_config.json";
inline constexpr std::string_view kPeftWeightsFile = "adapter_model.safetensors";
inline constexpr std::string_view kPeftPrefix = "base_model.model.transformer.";
inline constexpr std::string_view kPeftLlamaPrefix = "base_model.model.model.layers.";

// `source` names the pair in errors (usually the folder).
Result<PeftAdapter> parsePeftAdapter(std::string_view configJson,
                                     std::span<const std::byte> safetensors,
                                     const PeftBaseShape& base, std::string_view source);

// folder/adapter_config.json + folder/adapter_model.safetensors (a missing file is an error
// naming it; a folder with only adapter_model.bin is told to convert it).
Result<PeftAdapter> readPeftAdapter(const std::filesystem::path& folder, const PeftBaseShape& base);

// Writes adapter.tensors (our layout, every block and target) as a PEFT folder at outDir (must not
// exist or be empty). Returns the absolute folder.
Result<std::filesystem::path> writePeftAdapter(const PeftAdapter& adapter,
                                               const PeftBaseShape& base,
                                               const std::filesystem::path& outDir);

}  // namespace ws::interop

// --- Between our model folders and PEFT folders (these load models through modelio) ---

namespace ws::interop {

struct PeftExportResult {
    std::filesystem::path outDir;
    std::filesystem::path source;  // the model.safetensors the adapters came from
    PeftAdapter adapter;           // what was written (tensors in our layout)
    size_t adapterParameters = 0;
};

// `wafer export RUN --format peft`: the adapters of a LoRA run (a run or checkpoint folder or its
// model.safetensors) as a PEFT folder. baseModel becomes base_model_name_or_path (empty: the
// portable name of the run's base weights, runconfig.checkpoint_path, see portableBaseName; null
// when it has none), never a path of this machine, so the adapter can be shared. A model without
// adapters is refused.
Result<PeftExportResult> exportPeftAdapter(const std::filesystem::path& modelPath,
                                           const std::filesystem::path& outDir,
                                           const std::string& baseModel = {});

// What base_model_name_or_path records of a base at `base` (its folder or a weights file in it):
// its Hugging Face id when known (config.json's `_name_or_path` unless that is a path, or the
// id of a Hugging Face cache folder, models--org--name), else its folder's name.
std::string portableBaseName(const std::filesystem::path& base);

// The base an adapter names (base_model_name_or_path), found on this machine: an existing path;
// a folder of that name beside the adapter's folder; <data dir>/models/<name> (where `wafer
// import` puts models); the app's own resources/<name>; a Hugging Face id's newest snapshot in
// the Hugging Face cache ($HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub). Errors say
// where it looked and how to name the base instead.
Result<std::filesystem::path> findPeftBase(const std::filesystem::path& adapterDir);

struct PeftImportResult {
    std::filesystem::path outDir;
    std::filesystem::path base;  // the base's model.safetensors
    PeftAdapter adapter;
    size_t parameters = 0;  // of the adapted model, adapters included
    size_t adapterParameters = 0;
    std::vector<std::string> notes;
};

// `wafer import BASE --adapter PEFT_FOLDER`: the base (a run, checkpoint or Hugging Face folder,
// or its model.safetensors) with the PEFT adapters on it, written as a model folder like a LoRA
// run's (model.safetensors with the base's weights and the adapters, config.yaml with the lora:
// section, the base's tokenizer), which samples, exports and fine-tunes as one. Checked before
// anything is written; a base that already holds adapters is refused.
Result<PeftImportResult> importPeftAdapter(const std::filesystem::path& basePath,
                                           const std::filesystem::path& adapterDir,
                                           const std::filesystem::path& outDir);

}  // namespace ws::interop
