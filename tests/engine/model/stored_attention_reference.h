// SPDX-License-Identifier: GPL-3.0-or-later
// Test-only reference: causal self-attention as the model computed it before its backward
// recomputed the probabilities, storing the full (B,NH,T,T) probability matrix in the forward and
// reading it in the backward (the code of engine/model/attention.cpp at that time, unchanged), plus
// the bf16 rounding Gpt then applied to the stored matrix between the two. The recomputing
// attention must match it bit for bit (attention_recompute_test.cpp).
//
// Thread-safety: as ops::attentionForward / attentionBackward.
#pragma once

#include <cstdint>

namespace ws::model::testing {

// probs (B,NH,T,T): written, zeros above the diagonal. bf16 (float only): products on the bf16
// backend, then the stored probabilities rounded to bf16 as Gpt's bf16 mode did after the forward.
template <typename Real>
void storedAttentionForward(Real* out, Real* probs, const Real* qkv, int B, int T, int C, int NH,
                            Real scale, double dropout, uint64_t key, bool bf16);
template <typename Real>
void storedAttentionBackward(Real* dqkv, const Real* dout, const Real* qkv, const Real* probs,
                             int B, int T, int C, int NH, Real scale, double dropout, uint64_t key,
                             bool bf16);

}  // namespace ws::model::testing
