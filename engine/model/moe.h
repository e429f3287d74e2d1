// SPDX-License-Identifier: GPL-3.0-or-later
// Mixture-of-experts routing (model.moe; the MLP of an MoE block, see gpt.h): the router's softmax,
// each token's top-k experts, expert capacity, the Switch load-balancing loss and the router's
// backward. Gpt<Real> runs the experts' MLPs with these (moe.cpp); the functions here are plain
// and deterministic so they can be tested alone.
//
// Shapes: N tokens (B*T rows), E experts, k = top_k, C channels, F ffn width.
//   probs (N,E)   = softmax over experts of ln_2(x) · W_router (C,E), computed in fp32 (Real) and
//                   never rounded to bf16 (ModelZoo's router_fp32).
//   choice (N,k)  = each token's k most probable experts, most probable first; ties go to the
//                   lower expert index.
//   gates (N,k)   = probs[n, choice[n,j]]: the un-renormalised softmax probability (Switch). With
//                   expert_weighting_normalization (top_k >= 2 only) divided by the k selected
//                   probabilities' sum. Renormalising one selected probability would make every
//                   gate 1 and give the router no gradient from the loss (the trap in Cerebras'
//                   MoE write-up); config validation refuses that combination.
//   output[n]     = sum over slots j whose assignment was kept of gates[n,j] · expert_j(ln_2 x)[n].
// Capacity (training only; evaluation and sampling keep every assignment, so a token's output
// never depends on the rest of its batch): an expert takes at most capacity =
// ceil(capacity_factor · N · k / E) tokens (all of them without a capacity factor). Assignments are
// kept in this order: all first choices in token order (b, then t), then all second choices in
// token order, and so on; an assignment finding its expert full is DROPPED: that expert contributes
// nothing for that token (with every choice dropped, the MLP branch is 0 and the residual passes
// through). So the dropped tokens of an over-full expert are its latest tokens in the batch, and a
// token's first choice beats any other token's second choice. Load balancing (Switch Transformer,
// Fedus et al. 2021, eq. 4, for top-k): per MoE block
//   lb = coef · E · sum_e f_e · P_e, f_e = (assignments to e before capacity) / (N k),
//   P_e = mean over tokens of probs[n,e]; f is a constant for the gradient. Balanced routing gives
//   lb = coef. Gpt adds every MoE block's lb to the training loss (not to evaluation losses).
//
// Thread-safety: plain functions on caller-owned data; Routing is owned by one Gpt.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ws::model::moe {

// How the last forward routed the N tokens of one MoE block.
struct Routing {
    int N = 0, E = 0, k = 0;
    std::vector<int32_t> choice;       // (N,k) expert per slot
    std::vector<int32_t> row;          // (N,k) row in the expert-grouped buffers; -1: dropped
    std::vector<int32_t> tokenOfRow;   // (rows) the token of each kept assignment
    std::vector<int32_t> slotOfRow;    // (rows) its slot j
    std::vector<int32_t> expertBegin;  // (E+1) expert e's rows are [expertBegin[e], [e+1])
    std::vector<int> routed;           // (E) assignments per expert before capacity
    std::vector<int> counts;           // (E) tokens each expert computed (after capacity)
    int dropped = 0;                   // assignments dropped by capacity
    double lbLoss = 0.0;               // coef · E · sum_e f_e P_e (computed in every forward)

    int rows() const { return expertBegin.empty() ? 0 : expertBegin.back(); }
    // Whether expert e computed every token in token order (its rows are the input's rows).
    bool allTokens(int e) const { return counts[size_t(e)] == N; }
};

// probs (N,E): logits (N,E) turned into per-row softmax probabilities, in place.
template <typename Real>
void softmaxRows(Real* probs, int N, int E);

// Fills routing (choice, capacity, rows, counts, lbLoss) and gates (N,k) from probs (N,E).
template <typename Real>
void route(Routing& routing, Real* gates, const Real* probs, int N, int E, int k, int capacity,
           bool normalize, double lbCoef);

// dlogits (N,E), overwritten: the router logits' gradient from dgates (N,k) (the loss's gradient
// with respect to each slot's gate; 0 for dropped slots) plus, when lbCoef > 0, the
// load-balancing loss's own gradient.
template <typename Real>
void routerBackward(Real* dlogits, const Routing& routing, const Real* probs, const Real* gates,
                    const Real* dgates, bool normalize, double lbCoef);

}  // namespace ws::model::moe
