// Facts derived from a config before anything runs: parameter count, training FLOPs per token,
// and the memory the weights and optimizer state need (what MemoryX will hold). Shared by
// `wafer validate`, the GUI's config facts, the fine-tune plan and modelio's ModelInfo.
// Pure functions (precisionDescription also reads the CPU's bf16 path, probed once).
#pragma once

#include <cstdint>
#include <string>

#include "engine/config/config.h"

namespace ws::model {

struct ModelFacts {
    int64_t parameters = 0;            // every trained scalar, position embeddings included
    int64_t embeddingParameters = 0;   // wte + wpe (+ untied lm_head)
    double trainingFlopsPerToken = 0;  // llm.c's count: 6*N + 6*L*C*T
    int64_t weightBytes = 0;           // fp32 master weights
    int64_t gradientBytes = 0;         // fp32 gradients
    int64_t optimizerBytes = 0;        // Adam moments / SGD momentum
    int64_t tokensPerStep = 0;         // batch_size * max_sequence_length
};

ModelFacts deriveFacts(const config::Config& config);

// The bf16 path this machine runs (tensor::bf16PathDescription()) in bf16 mode; "" for fp32.
std::string precisionPath(const config::Config& config);
// How the model computes: "" for fp32; in bf16 mode (mixed_precision with fp16_type bfloat16) the
// bf16 path this machine runs (tensor::bf16PathDescription()) and what stays fp32.
std::string precisionDescription(const config::Config& config);

}  // namespace ws::model
