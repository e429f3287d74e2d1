// SPDX-License-Identifier: GPL-3.0-or-later
// Importing a Hugging Face GPT-2-family folder (GPT-2, Cerebras-GPT): model.safetensors +
// config.json + vocab.json + merges.txt, as save_pretrained writes them. The weights may also be
// sharded (model.safetensors.index.json + model-0000N-of-0000M.safetensors), or in
// pytorch_model.bin (torch.save's zip format, single or sharded with pytorch_model.bin.index.json),
// all read through modelio/hf_weights.h: a torch pickle is checked, never executed.
//
// inspectHfFolder() checks everything before any data is read: the four files exist, config.json
// is a GPT-2 config the engine computes (modelio/hf_config.h), the tokenizer loads and fits the
// vocabulary, and the safetensors header holds exactly the tensors of that shape (names with or
// without "transformer.", Conv1D weights (in, out); a tied lm_head.weight may be absent; the
// attention buffers attn.bias / attn.masked_bias are ignored with a note; any other tensor is
// refused, as it means another head or architecture). fp32, fp16, bf16 (and f64) are accepted.
// A Llama-family folder (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM config.json) holds
// HF's q/k/v/o and gate/up/down names instead, read into the fused layout as they are (no rotary
// permutation: HF files are already in the half-rotation layout), rotary_emb.inv_freq buffers
// ignored with a note (modelio/hf_llama_weights.h); its tokenizer must be vocab.json + merges.txt
// here too (Qwen2 ships them; tokenizer.json-only folders need the tokenizer.json reader).
// importHuggingFace() then writes our run-style model folder (model.safetensors in our names,
// fp32, config in the metadata; config.yaml; the tokenizer) atomically: it is built in a
// temporary sibling folder and renamed into place, and an existing non-empty folder is refused.
// Every error names the file and what is wrong. Thread-safety: free functions over their args.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "engine/config/config.h"
#include "engine/core/result.h"
#include "engine/model/parameters.h"

namespace ws::interop {

struct HfFolder {
    std::filesystem::path folder, weightsFile, configFile, vocabFile, mergesFile;
    // A fast tokenizer's tokenizer.json, when the folder has no vocab.json + merges.txt (Llama,
    // Mistral, Qwen2 and SmolLM folders); empty otherwise.
    std::filesystem::path tokenizerJson;
    config::ModelConfig model;
    // vocab.json is exactly the 256 byte symbols (id = byte value) with no merges: that is our
    // byte tokenizer (an exported byte model comes back as one).
    bool byteTokenizer = false;
    int tokenizerVocab = 0;
    std::map<std::string, int> dtypeCounts;  // "F16" -> tensors stored in it
    std::vector<std::string> notes;          // approximations, ignored tensors, defaults
};

// True when `folder` looks like a Hugging Face folder: config.json and no Wafer Studio
// config.yaml.
bool looksLikeHfFolder(const std::filesystem::path& folder);

// `folder` is the Hugging Face folder, or the weights file in one (model.safetensors,
// pytorch_model.bin or a shard index). In a folder, the first of modelio::kHfWeightsFiles present
// is read (model.safetensors, its index, pytorch_model.bin, its index).
Result<HfFolder> inspectHfFolder(const std::filesystem::path& folder);

// The weights in ParameterTable(fromConfig(hf.model)) layout, converted to fp32.
Result<std::vector<float>> readHfWeights(const HfFolder& hf, const model::ParameterTable& table);

// The run config an imported model carries: the model section from config.json, the tokenizer
// (byte, or bpe with vocab.json + merges.txt relative to the model folder), and GPT-2 /
// Cerebras-GPT's pretraining optimizer (AdamW 0.9/0.95, weight decay 0.1, peak LR 6e-4) since
// config.json records none; sequence length min(128, n_positions), batch 8.
config::Config importedRunConfig(const HfFolder& hf);

struct ImportResult {
    std::filesystem::path outDir;
    HfFolder source;
    size_t parameters = 0;
};

// `hfFolder` as for inspectHfFolder.
Result<ImportResult> importHuggingFace(const std::filesystem::path& hfFolder,
                                       const std::filesystem::path& outDir);

}  // namespace ws::interop
