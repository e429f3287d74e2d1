// SPDX-License-Identifier: GPL-3.0-or-later
// Weight-sparsity masks and the methods that change them during training: static, SET, RigL and
// gradual magnitude pruning (config: the top-level sparsity section, sparsity_config.h).
//
// The mask is engine data kept beside the weights in MemoryX: one byte per parameter, 1 = pruned
// (held at zero), 0 = live; bytes of tensors that are not masked stay 0. After every optimizer
// step the pruned weights are zeroed again (reapply); every schedule.freq steps (from
// schedule.start, before schedule.stop) `update` changes the masks:
//   set   drop the round(f x live) smallest-magnitude live weights of each matrix (ties: lower
//         position first) and regrow as many at random among the positions pruned before this
//         update (Mocanu et al. 2018, SET);
//   rigl  the same drop; regrow where the dense gradient of this step is largest in magnitude
//         (ties: lower position) (Evci et al. 2020, RigL);
//   gmp   prune by magnitude among the live weights up to the level of Zhu & Gupta's cubic
//         schedule s_t = s_f + (s_i - s_f) (1 - (t - start) / (stop - start))^3, reached at
//         `stop` (inclusive); pruned weights never come back.
// f, the drop fraction, anneals as drop_fraction says: cosine f(t) = min + (init - min) (1 +
// cos(pi t / half_period)) / 2 (half_period 0: schedule.stop), or constant. A regrown weight starts
// at zero and its optimizer state (Adam's moments, SGD's momentum) is reset to zero, so it learns
// from scratch; a pruned weight's state is left alone (it is reset if the weight regrows).
// Random choices (the random initial mask, SET's regrowth) draw from counter-based streams keyed
// by (runconfig.seed, step, tensor), so a resumed run makes the same choices bit for bit.
//
// Names: param_name_patterns may name matrices as Cerebras ModelZoo's GPT-2/3 does or as we do
// (Hugging Face GPT-2). The mapping, per block N:
//   h.N.attn.c_attn.weight   transformer_decoder.layers.N.self_attn.proj_{q,k,v}_dense_layer.weight
//                            (fused here: selected when a pattern matches all three, an error
//                            when patterns match only some of them)
//   h.N.attn.c_proj.weight   transformer_decoder.layers.N.self_attn.proj_output_dense_layer.weight
//   h.N.mlp.c_fc.weight      transformer_decoder.layers.N.ffn.ffn.0.linear_layer.weight
//   h.N.mlp.c_proj.weight    transformer_decoder.layers.N.ffn.ffn.1.linear_layer.weight
//   h.N.mlp.experts.E.<m>    transformer_decoder.layers.N.ffn.experts.E.ffn.{0,1}.linear_layer
//                            .weight (mixture-of-experts matrices, when a model has them)
// Only 2-D weights inside the transformer blocks can be masked (the cycle model knows how a block
// matrix maps onto the wafer; embeddings and norms stay dense). A pattern matches a name as
// Python's re.match does (anchored at the start); no patterns: every block matrix.
// Thread-safety: a SparseMasks is immutable after create(); its methods take the buffers they
// change and must not run concurrently with anything touching those buffers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/config/sparsity_config.h"
#include "engine/core/result.h"
#include "engine/model/parameters.h"

namespace ws::optim {

struct MaskedMatrix {
    size_t tensor = 0;  // index into ParameterTable::tensors()
    std::string name;   // ours, e.g. "h.3.mlp.c_fc.weight"
    int block = -1;     // N of h.N
    size_t offset = 0;  // first element in the parameter buffer
    int64_t rows = 0;   // K (row-major [K, N]: output column j holds elements i with i % N == j)
    int64_t cols = 0;   // N
    size_t size() const { return size_t(rows * cols); }
};

// ModelZoo's names of one of our tensors (c_attn: its three projections; empty: none known).
std::vector<std::string> modelZooNames(const std::string& ours);

// The masked matrices `patterns` select (see the header comment). Errors name the pattern that
// matches no block matrix (listing what there is) or the c_attn that patterns cut in parts.
Result<std::vector<MaskedMatrix>> selectMaskedMatrices(const model::ParameterTable& table,
                                                       const std::vector<std::string>& patterns);

// Zhu & Gupta's cubic level at `step` (before start: init; at and after stop: final).
double gmpLevel(double init, double final, int64_t start, int64_t stop, int64_t step);
// The drop fraction at `step` (halfPeriod 0 takes `stop`).
double dropFractionAt(const config::DropFractionConfig& drop, int64_t stop, int64_t step);

struct MaskUpdate {
    int64_t dropped = 0;  // weights newly pruned
    int64_t regrown = 0;  // weights made live again
};

// Where update() finds a tensor's dense gradient of this step (null: none, e.g. frozen) and how it
// resets the optimizer state of regrown elements (element indices within the tensor).
struct MaskUpdateAccess {
    std::function<const float*(size_t tensor)> gradient;
    std::function<void(size_t tensor, const std::vector<int64_t>& elements)> resetState;
};

class SparseMasks {
public:
    // `stopDefault`: schedule.stop 0 means this (runconfig.max_steps).
    static Result<SparseMasks> create(const config::SparsitySectionConfig& config,
                                      const model::ParameterTable& table, uint64_t seed,
                                      int64_t stopDefault);

    // A fresh run: each matrix's initial mask at the starting level (gmp: init_sparsity) into
    // `pruned` (table.totalSize() bytes), chosen by init_method, and those weights zeroed.
    void initialise(float* weights, uint8_t* pruned) const;
    // Zeroes the pruned weights (after an optimizer step moved them).
    void reapply(float* weights, const uint8_t* pruned) const;
    // Whether the masks change after `stepsDone` steps (the update runs after that step).
    bool updatesAfter(int64_t stepsDone) const;
    // The level the masks hold after `stepsDone` steps (gmp's schedule; else `sparsity`).
    double levelAfter(int64_t stepsDone) const;
    MaskUpdate update(int64_t stepsDone, float* weights, uint8_t* pruned,
                      const MaskUpdateAccess& access) const;

    const std::vector<MaskedMatrix>& matrices() const { return m_matrices; }
    const config::SparsitySectionConfig& config() const { return m_config; }
    int64_t stop() const { return m_stop; }
    // Pruned elements of one matrix, and its per-column nonzero prefix sums (cols + 1 entries).
    static int64_t prunedIn(const MaskedMatrix& m, const uint8_t* pruned);
    static std::vector<int64_t> columnNonzeros(const MaskedMatrix& m, const uint8_t* pruned);

private:
    config::SparsitySectionConfig m_config;
    std::vector<MaskedMatrix> m_matrices;
    uint64_t m_seed = 0;
    int64_t m_stop = 0;
};

}  // namespace ws::optim
