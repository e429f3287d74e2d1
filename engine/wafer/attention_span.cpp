// SPDX-License-Identifier: GPL-3.0-or-later
// withAttentionLength (attention_span.h).
#include "engine/wafer/attention_span.h"

#include <algorithm>

namespace ws::wafer {

LayerOps withAttentionLength(LayerOps layer, int length) {
    if (length <= 0) return layer;
    for (WaferOp& op : layer.ops) {
        if (op.layout != TileLayout::Causal || length >= op.period) continue;
        // The rows (queries) stay B*NH*T; each now meets only its own problem's keys.
        op.period = length;
        op.n = length;
    }
    return layer;
}

}  // namespace ws::wafer
