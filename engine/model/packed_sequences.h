// SPDX-License-Identifier: GPL-3.0-or-later
// Packed sequences (variable sequence length, VSL): several documents share one row of T tokens,
// and each keeps to itself. The layout is ModelZoo's `position_ids` (B,T): each position's index
// inside its document, 0 at a document's first token and one more at every following token, so
// a row of documents of lengths 3 and 2 reads 0 1 2 0 1. From it the ops take
//   - the position embedding: wpe[position_ids[b][t]] instead of wpe[t] (positions restart), and
//   - the attention span: query t sees keys t - position_ids[b][t] .. t only (its own document,
//     causally), instead of 0 .. t.
// A row whose position_ids are 0 .. T-1 is one document: every op here then does exactly what its
// dense counterpart in ops.h does, bit for bit (same products on the same operands, the same
// softmax kernel), which tests/engine/model/packed_sequences_test.cpp checks.
//
// Attention keeps attention.cpp's memory contract (no (T,T) matrix, the backward recomputes the
// probabilities block by block from the saved row max, bit-identical to the forward): a block of
// query rows multiplies only against the keys from its first row's document start to its last
// row, so a short document costs its own length squared, not T².
//
// Thread-safety: pure functions; the work inside a call is split over tensor::computeThreads().
#pragma once

#include <cstdint>

#include "engine/core/result.h"
#include "engine/model/attention_shape.h"

namespace ws::model::ops {

// Checks a (B,T) position_ids array: every row starts at 0, and each later entry is 0 (a new
// document) or the previous entry + 1. Errors name the first row and position that break it.
Status checkPositionIds(const int32_t* positionIds, int B, int T);

// out (B,T,C) = wte[tokens] + wpe[positionIds] (ops::embeddingForward with restarting positions).
template <typename Real>
void packedEmbeddingForward(Real* out, const int32_t* tokens, const int32_t* positionIds,
                            const Real* wte, const Real* wpe, int B, int T, int C);
// Accumulates the position-embedding gradient: dwpe[positionIds[n]] += dout[n], rows in order
// (deterministic whatever the thread count). The token embedding's gradient does not depend on
// the positions: ops::embeddingBackward with dwpe = null computes it.
template <typename Real>
void packedPositionBackward(Real* dwpe, const Real* dout, const int32_t* positionIds, int B, int T,
                            int C);

// ops::attentionForward / attentionBackward (grouped-query heads, optional ALiBi slopes (NH)) with
// each query's keys limited to its document; ALiBi's distance j - i is within the document.
template <typename Real>
void packedAttentionForward(Real* out, Real* rowMax, Real* rowSum, const Real* qkv,
                            const int32_t* positionIds, int B, int T, const AttentionShape& shape,
                            Real scale, double dropout, uint64_t key, bool bf16 = false,
                            const Real* alibiSlopes = nullptr);
template <typename Real>
void packedAttentionBackward(Real* dqkv, const Real* dout, const Real* qkv, const Real* rowMax,
                             const Real* rowSum, const int32_t* positionIds, int B, int T,
                             const AttentionShape& shape, Real scale, double dropout, uint64_t key,
                             bool bf16 = false, const Real* alibiSlopes = nullptr);

}  // namespace ws::model::ops
