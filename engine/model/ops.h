// SPDX-License-Identifier: GPL-3.0-or-later
// The GPT-2 ops, forward and backward, one function each, in the style of llm.c's train_gpt2.c;
// llama_ops.h (included here) adds the Llama-family ones under the same contracts.
// Shapes: B batch, T sequence, C channels, NH heads, hs = C / NH, F ffn width, V vocabulary,
// N = B*T rows. Every buffer is row-major and dense unless a leading dimension is given.
//
// Contracts shared by all ops:
// - Backward functions ACCUMULATE into parameter gradients (dweight, dbias, dwte, ...) and into
//   dinp unless the comment says "overwrites".
// - Deterministic: work is split in static partitions over independent outputs (rows, or column
//   blocks that each loop over all rows in order), so results depend only on the inputs and the
//   thread count; most are even independent of the thread count.
// - Called outside a parallel region they use tensor::computeThreads(); inside one, the caller's
//   thread alone.
// - Real is float or double (both instantiated).
// - Precision: the linear and attention ops take a MatmulMode / bf16 flag; bf16 (float only, the
//   model's bf16 mode) runs their products on tensor::MatmulBackend::OneDnnBf16 (bf16 operands,
//   fp32 accumulation and output); the default is the fp32 backend.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/model/attention_shape.h"
#include "engine/model/llama_ops.h"

namespace ws::model::ops {

// How a linear op's products run: fp32 (default), or bf16 with the weight optionally already
// packed to bf16 bits (weightBf16: same layout as weight) so it is not converted per product.
struct MatmulMode {
    bool bf16 = false;
    const uint16_t* weightBf16 = nullptr;
};

// out (N,C) = (inp - mean) * rstd * weight + bias; mean, rstd (N) are saved for backward.
template <typename Real>
void layerNormForward(Real* out, Real* mean, Real* rstd, const Real* inp, const Real* weight,
                      const Real* bias, int N, int C, double eps);
// dinp (N,C), dweight (C), dbias (C) accumulate; dweight and dbias may be null (frozen: skipped).
template <typename Real>
void layerNormBackward(Real* dinp, Real* dweight, Real* dbias, const Real* dout, const Real* inp,
                       const Real* weight, const Real* mean, const Real* rstd, int N, int C);

// out (N,OUT) = inp (N,IN) · weight (IN,OUT) + bias (OUT); bias may be null.
template <typename Real>
void linearForward(Real* out, const Real* inp, const Real* weight, const Real* bias, int N, int IN,
                   int OUT, MatmulMode mode = {});
// dinp (N,IN) = dout · weightᵀ (overwrites, or accumulates when accumulateDinp; may be null to
// skip); dweight (IN,OUT) += inpᵀ · dout (may be null: a frozen weight, its product skipped);
// dbias (OUT) += column sums of dout (may be null).
template <typename Real>
void linearBackward(Real* dinp, bool accumulateDinp, Real* dweight, Real* dbias, const Real* dout,
                    const Real* inp, const Real* weight, int N, int IN, int OUT,
                    MatmulMode mode = {});

// GPT-2's tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
template <typename Real>
void geluForward(Real* out, const Real* inp, size_t n);
// dinp = dout * gelu'(inp); overwrites; dinp may alias dout.
template <typename Real>
void geluBackward(Real* dinp, const Real* inp, const Real* dout, size_t n);

// out (B,T,C) = wte[tokens[b,t]] + wpe[t]; tokens in [0, V); wpe null: wte rows alone (rotary
// and ALiBi models have no position table).
template <typename Real>
void embeddingForward(Real* out, const int32_t* tokens, const Real* wte, const Real* wpe, int B,
                      int T, int C);
// dwte (V,C), dwpe (maxT,C) accumulate; either may be null (frozen: skipped).
template <typename Real>
void embeddingBackward(Real* dwte, Real* dwpe, const Real* dout, const int32_t* tokens, int B,
                       int T, int C);

// Per row n: lse[n] = log sum_v exp(logits[n,v]); losses[n] = lse[n] - logits[n, targets[n]].
// A target < 0 marks a position not trained on (a prompt token, padding): its loss is 0.
template <typename Real>
void crossEntropyForward(Real* losses, Real* lse, const Real* logits, const int32_t* targets, int N,
                         int V);
// dlogits (N,V) = (softmax(logits) - onehot(targets)) * dlossPerRow, a zero row where the target
// is < 0; overwrites; may alias logits.
template <typename Real>
void crossEntropyBackward(Real* dlogits, const Real* logits, const Real* lse,
                          const int32_t* targets, Real dlossPerRow, int N, int V);

// out = a + b (n elements; out may alias a or b).
template <typename Real>
void residualForward(Real* out, const Real* a, const Real* b, size_t n);

// Inverted dropout with rate p and the counter-based mask of stream `key` (random.h): x[i] is
// zeroed or scaled by 1 / (1 - p). dropoutBackward applies the same mask to a gradient (dx may
// alias dy). p == 0 does nothing (no random numbers drawn).
template <typename Real>
void dropoutForward(Real* x, size_t n, double p, uint64_t key);
template <typename Real>
void dropoutBackward(Real* dx, const Real* dy, size_t n, double p, uint64_t key);
// The exact scale kept elements get for rate p (p is quantized to 24 bits for the mask).
double dropoutScale(double p);

// Causal self-attention with grouped-query heads (attention_shape.h) on qkv (B,T,qkvWidth) = [q
// (NH·hs) | k (KV·hs) | v (KV·hs)]; query head h reads KV head h / (NH/KV). GPT-2 passes
// AttentionShape{NH, NH, C/NH}, rows [q | k | v] of width 3C. Scores = scale · q·kᵀ (GPT-2:
// scale = 1/sqrt(hs); μP: attention_logits_alpha / hs, see GptShape::attentionScale), plus
// ALiBi's slope_h · (j - i) for key j of query i when alibiSlopes (NH) is given (BLOOM, BTLM; null:
// none). probs = softmax over keys <= query, out (B,T,NH·hs) = dropout(probs) · v, heads side by
// side. Dropout uses stream `key` indexed by the position in the (B,NH,T,T) probabilities. The
// probabilities are never stored: the forward keeps each query row's softmax statistics, rowMax
// and rowSum (B,NH,T): the max of its scores and the sum of exp(score - max) (so logsumexp = max +
// log(sum)), and the backward recomputes the probabilities from q, k and the saved max with the
// same products and the same softmax arithmetic, bit for bit (memory per head linear in T).
// bf16 (float only): every product on the bf16 backend; the backward uses the probabilities
// rounded to bf16 (as gpt.h describes, before dropout scales them), while the forward hands its
// product with v the (dropped-out) probabilities unrounded, and that product rounds them.
template <typename Real>
void attentionForward(Real* out, Real* rowMax, Real* rowSum, const Real* qkv, int B, int T,
                      const AttentionShape& shape, Real scale, double dropout, uint64_t key,
                      bool bf16 = false, const Real* alibiSlopes = nullptr);
// dqkv (B,T,qkvWidth): overwrites. rowMax and rowSum: what attentionForward saved for this qkv. A
// KV head's gradient sums its query heads' in head order (deterministic).
template <typename Real>
void attentionBackward(Real* dqkv, const Real* dout, const Real* qkv, const Real* rowMax,
                       const Real* rowSum, int B, int T, const AttentionShape& shape, Real scale,
                       double dropout, uint64_t key, bool bf16 = false,
                       const Real* alibiSlopes = nullptr);

}  // namespace ws::model::ops
