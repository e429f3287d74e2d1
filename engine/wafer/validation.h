// SPDX-License-Identifier: GPL-3.0-or-later
// Validation of the cycle model against what the Cerebras-GPT paper (Dey et al. 2023,
// arXiv:2304.03208) reports for its CS-2 runs: weak scaling linear within 9% from 1 to 16
// systems for every model size, FLOP utilization within 8% across sizes relative to 111M on one
// CS-2, and weight streaming hidden behind compute at the published batch sizes. Nothing is
// tuned per case: the spec's one compute_efficiency applies to every row, and the contention
// model's one constant (cluster.swarmx_port_jitter, cluster_links.h) to every row and system
// count. Weak scaling must be linear within 9% and, as on a real cluster, not ideal: every
// model loses more than 1% at 16 systems.
// Every row runs the activation planner's choice for its per-system batch (activation_plan.h:
// micro-batching, recompute, offload to MemoryX or a mix, whichever is fastest and fits the
// SRAM by activation_memory.h's accounting), chosen for each system count as `wafer predict
// --weak-scaling` does (SwarmX's rate falls with N, so the fastest plan may change), except that
// where that plan would expose weight streaming the fastest timed plan that hides it runs (the
// paper's runs hid it). None of the published batches fits whole on a CS-2, and
// micro-batching alone makes weight streaming binding from 1.3B up, so the planner recomputes
// for the larger sizes: their hardware FLOPs (HFU, recomputed forward ops included) exceed the
// model FLOPs (MFU). The utilization claim is checked on HFU - what the hardware's utilization
// counts - and MFU is reported beside it.
// A second check holds an absolute figure: a 70B-class GPT on one CS-3 (wse3) against the AI Day
// deck's "fine-tune LLaMA 70B on 1B tokens in a day on a single chip" (~11,600 tokens/s), with
// the batch and sequence length assumed stated (presets/llama-70b-class.yaml has the same shape),
// once with a GPT-block stand-in of its size and once with Llama-2 70B's own blocks.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "engine/core/result.h"
#include "engine/model/parameters.h"
#include "engine/wafer/spec.h"

namespace ws::wafer {

struct CerebrasGptModel {
    std::string name;  // "111M"
    int layers, dModel, heads, ffn, batch;
};
// The seven published shapes (sequence 2048, vocab 50257, tied embeddings).
const std::vector<CerebrasGptModel>& cerebrasGptModels();

struct ValidationRow {
    std::string model;
    int batch = 0;  // per system, as published for one system (weak scaling keeps it)
    double stepS1 = 0;
    double mfu1 = 0;                 // on one system
    double mfuDeviation = 0;         // |mfu1 / mfu1(111M) - 1|
    std::vector<double> efficiency;  // speedup(N) / N for each system count
    double worstEfficiency = 1;
    bool streamingHidden = false;  // on every system count
    bool activationsFit = false;   // on one system, without recompute
    // The activation plan (activation_plan.h) and what it costs.
    std::string strategy;  // shortStrategy(): "micro-batch 60", "recompute mb 66", ...
    std::string planNote;
    int microBatch = 0;
    double hfu1 = 0;          // hardware FLOP utilization on one system (recompute included)
    double hfuDeviation = 0;  // |hfu1 / hfu1(111M) - 1|
};

struct ValidationReport {
    std::string waferName;
    double computeEfficiency = 0;
    std::vector<int> systems;  // 1, 2, 4, 8, 16
    std::vector<ValidationRow> rows;
    double portJitter = 0;         // cluster.swarmx_port_jitter (the contention model's constant)
    double worstScaling = 1;       // smallest speedup(N)/N anywhere
    double bestScalingAtMost = 0;  // largest efficiency at the largest N (16) over the rows
    double worstMfuDeviation = 0;  // largest relative MFU deviation from 111M (reported)
    double worstHfuDeviation = 0;  // largest relative HFU deviation from 111M (checked)
    // worstScaling >= 0.91 (published: within 9%) and bestScalingAtMost < 0.99 (not ideal:
    // every model deviates by more than 1% at 16 systems).
    bool scalingOk = false;
    bool hfuOk = false;        // worstHfuDeviation < 0.08 (published: FLOP utilization within 8%)
    bool streamingOk = false;  // hidden everywhere (published)
};

Result<ValidationReport> validateCerebrasGpt(const WaferSpec& spec);

// The 70B-class GPT on one system: hidden 8192, 80 blocks, 64 heads, filter 43008 (so the MLP's
// FLOPs match LLaMA's three-matrix 28672 one), vocabulary 32000, learned positions, bf16
// weights streamed (2 bytes), global-norm clipping; batch 256 sequences of 4096 tokens (LLaMA 2's
// 4M-token batch and context: ASSUMED, the deck states neither).
struct AbsoluteCheck {
    std::string model;  // "70B-class GPT"
    std::string waferName;
    int batch = 0, seqLen = 0;
    double parameters = 0;
    std::string strategy, planNote;
    double stepS = 0, tokensPerS = 0, mfu = 0, hfu = 0;
    double publishedTokensPerS = 0;  // 1e9 tokens / 86400 s
    double ratio = 0;                // tokensPerS / publishedTokensPerS
    bool withinBound = false;        // ratio >= 1 / 1.5 (and <= 1.5)
};
model::GptShape llama70bClassShape();
inline constexpr int kLlama70bBatch = 256;
inline constexpr int kLlama70bSeqLen = 4096;
Result<AbsoluteCheck> validateLlama70bClass(const WaferSpec& spec);

// The same claim with the real Llama-2 70B (presets/llama-2-70b.yaml): hidden 8192, 80 blocks,
// 64 heads of 128 with 8 KV heads (grouped-query attention), SwiGLU MLP of 28672, RMSNorm,
// rotary positions, no biases, untied head, vocabulary 32000 (69.0 B parameters); the same
// batch, precision and clipping as the 70B-class check.
model::GptShape llama2_70bShape();
Result<AbsoluteCheck> validateLlama2_70b(const WaferSpec& spec);

}  // namespace ws::wafer
