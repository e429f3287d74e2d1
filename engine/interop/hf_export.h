// SPDX-License-Identifier: GPL-3.0-or-later
// Exporting one of our models as a Hugging Face GPT-2 folder that transformers'
// GPT2LMHeadModel.from_pretrained and GPT2Tokenizer.from_pretrained load:
//   model.safetensors      fp32, GPT2LMHeadModel names (transformer.h.0.attn.c_attn.weight as
//                          (in, out), ...; lm_head.weight only when untied), metadata format "pt"
//   config.json            GPT2Config, architectures ["GPT2LMHeadModel"], activation gelu_new
//   vocab.json, merges.txt the tokenizer in GPT-2's format, and tokenizer_config.json
// The byte tokenizer exports exactly: a vocab.json of the 256 byte symbols with id = byte value
// and no merges makes GPT-2's byte-level BPE produce one token per byte, the same ids ours does.
// Such a vocabulary has no "<|endoftext|>", so bos/eos/unk are null there (as they are for a BPE
// trained here); generation then stops at max_new_tokens, not at an end-of-text token.
// A Llama-family model (rotary, RMSNorm, SwiGLU, GQA: modelio/hf_config.h picks Llama, Mistral or
// Qwen2 from its options) is written in that architecture's names instead: config.json with
// architectures ["LlamaForCausalLM"] (or Mistral/Qwen2) and model.safetensors in
// model.layers.N.self_attn.{q,k,v,o}_proj / mlp.{gate,up,down}_proj names, (out, in), split from
// the fused columns (modelio/hf_llama_weights.h).
// Models GPT2Config cannot express (μP) are refused (modelio/hf_config.h). A model with LoRA
// adapters is refused unless `mergeAdapters` is set: then each adapted weight is written as
// W + (alpha / rank) · A · B (model/lora_merge.h), a plain GPT-2 that computes the adapted model
// (transformers' GPT-2 has no adapters; --format peft exports them separately). The folder is built
// beside its final place and renamed in whole; an existing non-empty folder is refused.
// Thread-safety: a free function over its arguments.
#pragma once

#include <filesystem>
#include <string>

#include "engine/core/result.h"

namespace ws::interop {

struct ExportResult {
    std::filesystem::path outDir;
    std::filesystem::path source;  // the model.safetensors exported
    size_t parameters = 0;
    int mergedAdapterRank = 0;  // > 0: LoRA adapters of this rank were merged in
    std::string tokenizerKind;  // "byte" | "bpe"
    std::string tokenizerNote;  // what the exported tokenizer files are
    std::string architecture;   // config.json's: GPT2LMHeadModel, LlamaForCausalLM, ...
};

// modelPath: a run folder, a checkpoint-<step> folder or a model.safetensors (modelio::loadModel).
Result<ExportResult> exportHuggingFace(const std::filesystem::path& modelPath,
                                       const std::filesystem::path& outDir,
                                       bool mergeAdapters = false);

}  // namespace ws::interop
