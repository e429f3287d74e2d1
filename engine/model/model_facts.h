// SPDX-License-Identifier: GPL-3.0-or-later
// Facts derived from a config before anything runs: parameter count, training FLOPs per token,
// and the memory the weights and optimizer state need (what MemoryX will hold). Shared by
// `wafer validate`, the GUI's config facts, the fine-tune plan and modelio's ModelInfo; and the
// sizes weight streaming moves (what the wafer buffer holds and a pass streams in).
// Pure functions (precisionDescription also reads the CPU's bf16 path, probed once).
#pragma once

#include <cstdint>
#include <string>

#include "engine/config/config.h"
#include "engine/model/parameters.h"

namespace ws::model {

struct ModelFacts {
    int64_t parameters = 0;            // every trained scalar, position embeddings included
    int64_t embeddingParameters = 0;   // wte + wpe (+ untied lm_head)
    double trainingFlopsPerToken = 0;  // llm.c's count: 6*N + 6*L*Q*T (Q: query width, GPT-2's C)
    // Generation's key/value cache (engine/sample's KvDecoder, fp32): K and V of the KV heads
    // only (grouped-query attention caches KV x hs per token, not C), every layer.
    int64_t kvCacheBytesPerToken = 0;  // 2 * L * KV * hs * 4
    int64_t kvCacheBytes = 0;          // at max_position_embeddings tokens
    // What MemoryX holds: fp32 master weights of every tensor (LoRA adapters included), and
    // gradients and optimizer state of the parameters that train only (frozen tensors, every
    // base tensor under LoRA, have none).
    int64_t trainableParameters = 0;  // not frozen (model::isFrozenTensor)
    int64_t weightBytes = 0;          // fp32 master weights
    int64_t gradientBytes = 0;        // fp32 gradients of the trainable parameters
    int64_t optimizerBytes = 0;       // their Adam moments / SGD momentum
    int64_t tokensPerStep = 0;        // batch_size * max_sequence_length
    // LoRA (config lora:): rank * (in + out) per targeted linear per block; 0 without adapters.
    int64_t adapterParameters = 0;
    // Weight streaming (per system): each weight crosses as fp32 (4 bytes) or, in bf16 mode, as
    // bf16 (2 bytes), converted once from MemoryX's fp32 masters; the wafer's weight buffer is
    // wafer.weight_buffer_layers slots of the largest visit; a forward + backward pass streams
    // every layer in twice (per micro-batch; gradients, fp32, are not counted here).
    int streamBytesPerWeight = 4;
    int64_t waferBufferBytes = 0;
    int64_t streamedBytesPerPass = 0;
};

// Weight streaming's sizes, shared by the streaming executor's buffer, the wafer fit and the
// facts. Bytes per weight on the wafer: 2 in bf16 mode (shape.bf16), else 4.
int streamedBytesPerWeight(const GptShape& shape);
// The most weights one visit brings onto the wafer: the largest layer, or the tied head with its
// copy of wte.
size_t largestStreamedVisit(const ParameterTable& table);
// Weights one forward + backward pass streams onto one system: every layer twice, the tied
// head's wte twice more, and not the embeddings' backward (it needs no weights).
int64_t streamedWeightsPerPass(const ParameterTable& table);

ModelFacts deriveFacts(const config::Config& config);

// The LoRA adapters' trained scalars over every block: A (rank x in) and B (out x rank) for each
// of lora.targets (lora::linearShape: c_attn C -> Q+2K, attn.c_proj / o_proj Q -> C, c_fc C -> F
// (2F SwiGLU), mlp.c_proj / down_proj F -> C; the slices q_proj C -> Q, k_proj and v_proj C -> K,
// gate_proj and up_proj C -> F).
int64_t loraAdapterParameters(const config::LoraConfig& lora, const GptShape& shape);

// Training FLOPs per token of one step of `shape` (with its LoRA fields) at sequence length
// `seqLen`, counting what the step computes. Without LoRA: llm.c's 6 N + 6 L Q T (as
// trainingFlopsPerStep). With LoRA the base is frozen, so its weight gradients are not formed:
// the base's matmuls cost forward (2 N_base) + input gradient (2 N_base), about 2/3 of a full
// step's, plus the adapters' 6 N_adapters (x·A and u·B forward, four products backward) and
// the attention's 6 L Q T (Q = heads x head size, C for GPT-2), which has no weights and runs
// whole. N_base counts the embeddings as
// llm.c does.
double stepTrainingFlopsPerToken(const GptShape& shape, int seqLen);

// The bf16 path this machine runs (tensor::bf16PathDescription()) in bf16 mode; "" for fp32.
std::string precisionPath(const config::Config& config);
// How the model computes: "" for fp32; in bf16 mode (mixed_precision with fp16_type bfloat16) the
// bf16 path this machine runs (tensor::bf16PathDescription()) and what stays fp32.
std::string precisionDescription(const config::Config& config);

}  // namespace ws::model
