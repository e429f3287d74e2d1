// SPDX-License-Identifier: GPL-3.0-or-later
// The head layout of an attention layer: NH query heads, KV key/value heads (grouped-query
// attention; KV == NH is plain multi-head attention, KV == 1 multi-query) of hs channels each.
// qkv rows are [q (NH·hs) | k (KV·hs) | v (KV·hs)], and query head h reads KV head h / (NH/KV),
// the order of transformers' repeat_kv. GPT-2 is AttentionShape{NH, NH, C/NH}: the [q|k|v] rows of
// width 3C.
#pragma once

namespace ws::model::ops {

struct AttentionShape {
    int heads = 0;    // NH query heads
    int kvHeads = 0;  // KV heads; divides heads (== heads: plain multi-head attention)
    int headDim = 0;  // hs
    int qWidth() const { return heads * headDim; }
    int kvWidth() const { return kvHeads * headDim; }
    int qkvWidth() const { return qWidth() + 2 * kvWidth(); }
    // Query heads sharing one KV head.
    int groupSize() const { return heads / kvHeads; }
    bool valid() const { return heads > 0 && kvHeads > 0 && headDim > 0 && heads % kvHeads == 0; }
};

}  // namespace ws::model::ops
