// SPDX-License-Identifier: GPL-3.0-or-later
// Variable sequence length on the emulated wafer: attention's cost follows the lengths of the
// documents (or short sequences) packed into each row, not the row length. A row of T tokens
// holding pieces of lengths l_i costs sum(l_i²)/2 causal score pairs per head instead of T²/2;
// the cycle model charges that as attention problems of the equivalent length
// L = sum(l_i²) / T (data/packing.h: attentionLength), so the score/value FMACs, the causal tile
// mapping and the per-core imbalance all follow the real lengths. Every other op (the linears,
// LayerNorms, the head) works per token and is unchanged.
// Thread-safety: pure functions.
#pragma once

#include "engine/wafer/layer_ops.h"

namespace ws::wafer {

// Sets every causal attention op of `layer` to problems of `length` tokens (1 <= length <= the
// op's current period; 0 or the current period leaves it as it is). Call before planLayer.
LayerOps withAttentionLength(LayerOps layer, int length);

}  // namespace ws::wafer
