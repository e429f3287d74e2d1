// SPDX-License-Identifier: GPL-3.0-or-later
// The per-layer op lists and per-core costs (layer_ops.h).
//
// Vector-op costs (arithmetic per element, ASSUMED from the textbook kernels; they are a few
// percent of a block's time): LayerNorm 8 forward / 16 backward (mean, variance, normalize,
// scale, shift), tanh-GELU 10 / 14, residual add 1, softmax 5 / 4, cross-entropy 6 / 2,
// embedding lookup + position add 2 (lookup alone 1). Llama-family ops: RMSNorm 5 / 10 (sum of
// squares, rsqrt, scale, gain: no mean, no shift), RoPE 3 / 3 per rotated element of q and k
// (x·cos + rotate(x)·sin), SwiGLU 5 / 9 per hidden unit (sigmoid 3, ×gate, ×up; backward both
// products and the sigmoid's derivative), ALiBi 2 / 2 per score (slope × distance, add; the
// backward recomputes the scores). A matmul without bias does no bias add.
#include "engine/wafer/layer_ops.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "engine/model/lora.h"

namespace ws::wafer {

namespace {

constexpr double kHalf = 2;     // bytes of a 16-bit value on the fabric
constexpr double kFloat32 = 4;  // bytes of a partial sum

WaferOp denseOp(std::string name, int64_t m, int64_t n, double fmacs, double vectorOps,
                double rowBytes, double colBytes, const WaferSpec& spec) {
    WaferOp op;
    op.name = std::move(name);
    op.m = m;
    op.n = n;
    op.fmacsPerElement = fmacs;
    op.vectorOpsPerElement = vectorOps;
    op.rowBytesPerRow = rowBytes;
    op.colBytesPerCol = colBytes;
    (void)spec;
    return op;
}

// Y[M, N] = X[M, K] W[K, N] + b: X panels along rows, W panels down columns.
WaferOp matmulForward(std::string name, int64_t M, int64_t K, int64_t N,
                      const std::vector<int64_t>* nnz, const WaferSpec& spec) {
    WaferOp op = denseOp(std::move(name), M, N, double(K), 1, K * kHalf, K * kHalf, spec);
    if (nnz && !nnz->empty()) op.columnNonzerosPrefix = *nnz;
    return op;
}

// dX[M, K] = dY[M, N] W^T: dY panels along rows, W^T panels down columns.
WaferOp matmulInputGrad(std::string name, int64_t M, int64_t K, int64_t N, const WaferSpec& spec) {
    return denseOp(std::move(name), M, K, double(N), 0, N * kHalf, N * kHalf, spec);
}

// dW[K, N] = X^T dY, token-stationary: each core multiplies the X rows it already holds by its
// dY tile into a partial dW[K, cols_j], reduced down its column in fp32; bias grad alongside.
WaferOp matmulWeightGrad(std::string name, int64_t M, int64_t K, int64_t N,
                         const std::vector<int64_t>* nnz, const WaferSpec& spec, bool bias = true) {
    WaferOp op =
        denseOp(std::move(name), M, N, double(K), bias ? 1 : 0, K * kHalf, K * kFloat32, spec);
    if (nnz && !nnz->empty()) op.columnNonzerosPrefix = *nnz;
    return op;
}

// Fused causal attention over the (B*NH*T) x T score tiles: scores, softmax and the partial
// P.V of the tile, O partials reduced along the row. Backward recomputes the scores and forms
// dP, dV, dQ, dK (5 products of hs per pair instead of 2).
WaferOp attentionOp(const model::GptShape& s, int batch, int T, Pass pass, const WaferSpec& spec) {
    const double hs = s.headSize();
    WaferOp op;
    op.layout = TileLayout::Causal;
    op.m = int64_t(batch) * s.heads * T;
    op.n = T;
    op.period = T;
    op.colBytesPerProblem = true;
    op.problemsPerColumnPanel = s.heads / s.kvHeadCount();
    op.accumulatorBytesPerRow = hs * kFloat32;
    const double alibi = s.position == model::GptShape::Position::Alibi ? 2 : 0;
    if (pass == Pass::Forward) {
        op.name = "attention";
        op.fmacsPerElement = 2 * hs;
        op.vectorOpsPerElement = 5 + alibi;
        op.rowBytesPerRow = hs * kHalf + hs * kFloat32;  // Q in, O partials out
        op.colBytesPerCol = 2 * hs * kHalf;              // K and V
    } else {
        op.name = "attention.backward";
        op.fmacsPerElement = 5 * hs;
        op.vectorOpsPerElement = 4 + alibi;
        op.rowBytesPerRow = 2 * hs * kHalf + hs * kFloat32;      // Q, dO in; dQ partials
        op.colBytesPerCol = 2 * hs * kHalf + 2 * hs * kFloat32;  // K, V in; dK, dV partials
    }
    (void)spec;
    return op;
}

// The adapter products of one targeted linear IN -> OUT of rank R (layer_ops.h), named after the
// base op `base` ("qkv", ...). Vector ops: lora_B adds scale·u·B into the base output (2 per
// element), lora_B.dX scales du (1), lora_A.dX accumulates into dX (1); adapter dropout applies a
// mask to each of the M x IN inputs (forward, and again in lora_A.dW, which recomputes it from
// its counter-based key), counted on the op's M x R outputs as IN / R per element.
struct AdapterShape {
    std::string base;  // the base op whose output the adapter adds into
    std::string name;  // its ops' prefix: the base op's name, or "qkv.q_proj" for a slice
    int64_t in = 0, out = 0;
};

// In lora::Target order; a slice target (q_proj, ...) rides on its fused linear's op and writes
// only its columns, so its B product is (R, width).
std::vector<AdapterShape> adapterShapes(const model::GptShape& s) {
    static const std::string kBase[] = {"qkv", "attn_proj", "fc", "fc_proj", "qkv",
                                        "qkv", "qkv",       "fc", "fc"};
    std::vector<AdapterShape> shapes;
    if (!s.hasLora()) return shapes;
    for (size_t t = 0; t < model::kLoraTargetCount; ++t) {
        if (!s.loraTargets[t]) continue;
        const auto target = model::lora::Target(t);
        const auto linear = model::lora::linearShape(target, s);
        const std::string name = model::lora::isSlice(target)
                                     ? kBase[t] + "." + std::string(model::lora::targetName(target))
                                     : kBase[t];
        shapes.push_back({kBase[t], name, linear.in, linear.out});
    }
    return shapes;
}

WaferOp adapterOp(WaferOp op, double vectorOps) {
    op.vectorOpsPerElement = vectorOps;
    op.adapter = true;
    return op;
}

void addAdapterForward(std::vector<WaferOp>& ops, const AdapterShape& a, int64_t M, int64_t R,
                       double dropout, const WaferSpec& spec) {
    const double mask = dropout > 0 ? double(a.in) / double(R) : 0.0;
    ops.push_back(adapterOp(matmulForward(a.name + ".lora_A", M, a.in, R, nullptr, spec), mask));
    ops.push_back(adapterOp(matmulForward(a.name + ".lora_B", M, R, a.out, nullptr, spec), 2));
}

void addAdapterBackward(std::vector<WaferOp>& ops, const AdapterShape& a, int64_t M, int64_t R,
                        double dropout, const WaferSpec& spec) {
    const double mask = dropout > 0 ? double(a.in) / double(R) : 0.0;
    ops.push_back(
        adapterOp(matmulWeightGrad(a.name + ".lora_B.dW", M, R, a.out, nullptr, spec), 0));
    ops.push_back(adapterOp(matmulInputGrad(a.name + ".lora_B.dX", M, R, a.out, spec), 1));
    ops.push_back(
        adapterOp(matmulWeightGrad(a.name + ".lora_A.dW", M, a.in, R, nullptr, spec), mask));
    ops.push_back(adapterOp(matmulInputGrad(a.name + ".lora_A.dX", M, a.in, R, spec), 1));
}

// Row reductions (LayerNorm statistics, softmax sums) move two fp32 partials per row.
constexpr double kRowStats = 2 * kFloat32;

WaferOp withParts(WaferOp op, const std::vector<int64_t>& parts) {
    op.columnParts = parts;
    return op;
}

// A block's or the head's norm `which` ("1", "2", "f"): LayerNorm ("ln_*", two statistics per
// row) or RMSNorm ("rmsnorm_*", one), see the costs at the top.
WaferOp normOp(const model::GptShape& s, const std::string& which, int64_t M, Pass pass,
               const WaferSpec& spec) {
    const int64_t C = s.channels;
    const bool back = pass == Pass::Backward;
    const std::string suffix = back ? ".backward" : "";
    if (s.layerNorm())
        return back ? denseOp("ln_" + which + suffix, M, C, 0, 16, 2 * kRowStats, 0, spec)
                    : denseOp("ln_" + which, M, C, 0, 8, kRowStats, 0, spec);
    return denseOp("rmsnorm_" + which + suffix, M, C, 0, back ? 10 : 5,
                   back ? 2 * kFloat32 : kFloat32, 0, spec);
}

// Rotary embeddings on the rotated dims of every query and key head (M, (NH + KV)·rd).
WaferOp ropeOp(const model::GptShape& s, int64_t M, Pass pass, const WaferSpec& spec) {
    const int64_t width = int64_t(s.heads + s.kvHeadCount()) * s.rotaryDims();
    return denseOp(pass == Pass::Forward ? "rope" : "rope.backward", M, width, 0, 3, 0, 0, spec);
}

// The MLP's activation: tanh-GELU on (M, F), or SwiGLU's silu(gate)·up on (M, F) from (M, 2F).
WaferOp activationOp(const model::GptShape& s, int64_t M, Pass pass, const WaferSpec& spec) {
    const bool back = pass == Pass::Backward;
    if (s.mlp == model::GptShape::Mlp::SwiGlu)
        return denseOp(back ? "swiglu.backward" : "swiglu", M, s.ffn, 0, back ? 9 : 5, 0, 0, spec);
    return denseOp(back ? "gelu.backward" : "gelu", M, s.ffn, 0, back ? 14 : 10, 0, 0, spec);
}

// Sum over t in [0, x) of clamp(t + 1 - c0, 0, c1 - c0): the causal pairs of one problem's
// first x rows inside columns [c0, c1).
double causalPrefix(int64_t x, int64_t c0, int64_t c1) {
    const int64_t w = c1 - c0;
    const int64_t u = std::clamp<int64_t>(x - c0, 0, w);
    return double(u) * double(u + 1) / 2 + double(std::max<int64_t>(0, x - c1)) * double(w);
}

// Causal pairs of the first r rows of the Causal layout. Rows are laid out zig-zag inside each
// problem - positions 0, 1, 2, 3, ... hold t = 0, T-1, 1, T-2, ... - so any run of rows pairs a
// short row t with its long mirror T-1-t and row blocks carry equal work (see opMapping).
double causalRows(int64_t r, int64_t period, int64_t c0, int64_t c1) {
    const int64_t p = r % period;
    const double full = causalPrefix(period, c0, c1);
    const double head = causalPrefix((p + 1) / 2, c0, c1);            // t = 0 .. ceil(p/2) - 1
    const double tail = full - causalPrefix(period - p / 2, c0, c1);  // the last floor(p/2) t
    return double(r / period) * full + head + tail;
}

}  // namespace

LayerOps embeddingOps(const model::GptShape& s, int batch, int seqLen, Pass pass,
                      const WaferSpec& spec) {
    const int64_t M = int64_t(batch) * seqLen;
    LayerOps l;
    l.layer = "embeddings";
    l.pass = pass;
    // wte, and wpe only with learned positions (rotary and ALiBi have no position weights).
    const bool wpe = s.learnedPositions();
    const double values =
        double(s.vocab) * s.channels + (wpe ? double(s.maxPositions) * s.channels : 0.0);
    const double lookupOps = wpe ? 2 : 1;
    if (pass == Pass::Forward) {
        l.weightValues = values;
        l.ops.push_back(denseOp("lookup", M, s.channels, 0, lookupOps, 0, 0, spec));
    } else if (!s.hasLora()) {  // LoRA: wte and wpe are frozen, nothing to scatter
        l.gradientValues = values;
        l.ops.push_back(denseOp("lookup.backward", M, s.channels, 0, lookupOps, 0, 0, spec));
    }
    return l;
}

std::vector<CoreRegion> expertRegions(int experts, const WaferSpec& spec) {
    const int R = spec.gridRows, C = spec.gridCols;
    if (int64_t(experts) > int64_t(R) * C) {
        // More experts than cores (predictStep refuses such a model): one core each, shared.
        std::vector<CoreRegion> regions;
        for (int e = 0; e < experts; ++e) regions.push_back({(e / C) % R, e % C, 1, 1});
        return regions;
    }
    int bestEr = 1, bestEc = std::min(experts, C);
    double bestScore = 1e300;
    for (int er = 1; er <= std::min(experts, R); ++er) {
        const int ec = (experts + er - 1) / er;
        if (ec > C) continue;
        const double waste = double(er * ec - experts);
        const double aspect = std::abs(std::log((double(R) / er) / (double(C) / ec)));
        const double score = waste * 100 + aspect;
        if (score < bestScore) {
            bestScore = score;
            bestEr = er;
            bestEc = ec;
        }
    }
    // Balanced cuts (part i starts at i * total / parts): with parts <= total every part keeps
    // at least one row and column. Split's equal blocks rounded up would leave the last parts
    // empty (5 experts on 16 columns: blocks of 4, the fifth at column 16, no core).
    auto cut = [](int total, int parts, int i) { return int(int64_t(i) * total / parts); };
    std::vector<CoreRegion> regions;
    for (int e = 0; e < experts; ++e) {
        const int i = e / bestEc, j = e % bestEc;
        CoreRegion g;
        g.row0 = cut(R, bestEr, i);
        g.rows = cut(R, bestEr, i + 1) - g.row0;
        g.col0 = cut(C, bestEc, j);
        g.cols = cut(C, bestEc, j + 1) - g.col0;
        regions.push_back(g);
    }
    return regions;
}

ExpertLoad uniformExpertLoad(int experts, int topK, int64_t tokens) {
    ExpertLoad load;
    load.topK = topK;
    const int64_t total = tokens * topK;
    for (int e = 0; e < experts; ++e)
        load.tokens.push_back(total / experts + (e < total % experts ? 1 : 0));
    return load;
}

double moeBlockValues(const model::GptShape& s, int experts) {
    const double C = s.channels, F = s.ffn;
    const double mlp = C * F + F + F * C + C;
    return double(model::blockOffsets(s).size) - mlp + C * experts + experts * mlp;
}

LayerOps blockOps(const model::GptShape& s, int batch, int seqLen, Pass pass, const WaferSpec& spec,
                  const BlockSparsity* sp, const ExpertLoad* moe) {
    const int64_t M = int64_t(batch) * seqLen;
    const int64_t C = s.channels, F = s.ffn;
    // The block options' widths (GPT-2: Q = C, QKV = 3C, FI = F) and biases.
    const int64_t Q = s.qWidth(), QKV = s.qkvWidth(), FI = s.mlpInWidth();
    const bool rope = s.position == model::GptShape::Position::Rotary;
    const std::vector<int64_t> qkvParts = {Q, s.kvWidth(), s.kvWidth()};
    const std::vector<int64_t> fcParts =
        FI == F ? std::vector<int64_t>{} : std::vector<int64_t>{F, F};  // SwiGLU: gate | up
    LayerOps l;
    static const std::string kBlockName = "h";  // (a literal here trips GCC 12's -Wrestrict)
    l.layer = kBlockName;
    l.pass = pass;
    auto& ops = l.ops;
    const int E = moe ? int(moe->tokens.size()) : 0;
    const double values = moe ? moeBlockValues(s, E) : double(model::blockOffsets(s).size);
    const std::vector<CoreRegion> regions =
        moe ? expertRegions(E, spec) : std::vector<CoreRegion>{};
    // An MoE block's expert ops: on expert e's cores, with the rows it got (none: left out).
    auto expertOps = [&](const std::function<void(int64_t, std::vector<WaferOp>&)>& make) {
        for (int e = 0; e < E; ++e) {
            const int64_t tokens = moe->tokens[size_t(e)];
            if (tokens <= 0) continue;
            std::vector<WaferOp> chain;
            make(tokens, chain);
            for (auto& op : chain) {
                op.name = fmt::format("expert.{}.{}", e, op.name);
                op.expert = e;
                op.region = regions[size_t(e)];
                ops.push_back(std::move(op));
            }
        }
    };
    const int k = moe ? moe->topK : 0;
    const double routed = double(k) * C * kHalf;  // a token's activation to / from its k experts
    auto nnz = [&](const std::vector<int64_t> BlockSparsity::*member) {
        return sp ? &(sp->*member) : nullptr;
    };
    // LoRA: the adapters of each targeted base op, and whether the base's weights are frozen.
    const std::vector<AdapterShape> adapters = adapterShapes(s);
    const bool frozenBase = s.hasLora();
    const int64_t R = s.loraRank;
    double adapterValues = 0;
    for (const auto& a : adapters) adapterValues += double(R) * double(a.in + a.out);
    // The adapters on base op `base`, in target order (a fused op may carry several slices).
    auto adaptersOf = [&](const std::string& base) {
        std::vector<const AdapterShape*> on;
        for (const auto& a : adapters)
            if (a.base == base) on.push_back(&a);
        return on;
    };
    auto forward = [&](WaferOp op, bool bias) {
        if (!bias) op.vectorOpsPerElement = 0;  // no bias add
        const std::string base = op.name;
        ops.push_back(std::move(op));
        for (const AdapterShape* a : adaptersOf(base))
            addAdapterForward(ops, *a, M, R, s.loraDropout, spec);
    };
    // A base op's input gradient, then (trained base only) its weight gradient, then its
    // adapter's backward.
    auto backward = [&](const std::string& base, int64_t K, int64_t N,
                        const std::vector<int64_t>* columnNnz, bool bias,
                        const std::vector<int64_t>& parts = {}) {
        ops.push_back(matmulInputGrad(base + ".dX", M, K, N, spec));
        if (!frozenBase)
            ops.push_back(
                withParts(matmulWeightGrad(base + ".dW", M, K, N, columnNnz, spec, bias), parts));
        for (const AdapterShape* a : adaptersOf(base))
            addAdapterBackward(ops, *a, M, R, s.loraDropout, spec);
    };
    if (pass == Pass::Forward) {
        l.weightValues = values;
        ops.push_back(normOp(s, "1", M, pass, spec));
        forward(
            withParts(matmulForward("qkv", M, C, QKV, nnz(&BlockSparsity::qkv), spec), qkvParts),
            s.qkvBias);
        if (rope) ops.push_back(ropeOp(s, M, pass, spec));
        ops.push_back(attentionOp(s, batch, seqLen, pass, spec));
        forward(matmulForward("attn_proj", M, Q, C, nnz(&BlockSparsity::attnProj), spec),
                s.attnProjBias);
        ops.push_back(denseOp("residual_1", M, C, 0, 1, 0, 0, spec));
        ops.push_back(normOp(s, "2", M, pass, spec));
        if (moe) {
            // Router logits, softmax and top-k selection (5 + k vector ops per logit), dispatch.
            ops.push_back(matmulForward("router", M, C, E, nullptr, spec));
            ops.push_back(denseOp("router.top_k", M, E, 0, 5.0 + k, kRowStats, 0, spec));
            ops.push_back(denseOp("dispatch", M, C, 0, 0, routed, 0, spec));
            expertOps([&](int64_t t, std::vector<WaferOp>& chain) {
                chain.push_back(matmulForward("fc", t, C, F, nullptr, spec));
                chain.push_back(denseOp("gelu", t, F, 0, 10, 0, 0, spec));
                chain.push_back(matmulForward("fc_proj", t, F, C, nullptr, spec));
            });
            // The k outputs weighted by their router probabilities and summed.
            ops.push_back(denseOp("combine", M, C, 0, 2.0 * k, routed, 0, spec));
        } else {
            forward(
                withParts(matmulForward("fc", M, C, FI, nnz(&BlockSparsity::fc), spec), fcParts),
                s.mlpBias);
            ops.push_back(activationOp(s, M, pass, spec));
            forward(matmulForward("fc_proj", M, F, C, nnz(&BlockSparsity::fcProj), spec),
                    s.mlpBias);
        }
        ops.push_back(denseOp("residual_2", M, C, 0, 1, 0, 0, spec));
    } else {
        l.weightValues = values;  // weights stream in again for the backward pass
        l.gradientValues = frozenBase ? adapterValues : values;
        if (moe) {
            // dY to the k experts; each expert's dgate (a C-long dot product) comes back with
            // its dX (2 ops per element and expert).
            ops.push_back(denseOp("combine.backward", M, C, 0, 2.0 * k, routed, 0, spec));
            expertOps([&](int64_t t, std::vector<WaferOp>& chain) {
                chain.push_back(matmulInputGrad("fc_proj.dX", t, F, C, spec));
                chain.push_back(matmulWeightGrad("fc_proj.dW", t, F, C, nullptr, spec));
                chain.push_back(denseOp("gelu.backward", t, F, 0, 14, 0, 0, spec));
                chain.push_back(matmulInputGrad("fc.dX", t, C, F, spec));
                chain.push_back(matmulWeightGrad("fc.dW", t, C, F, nullptr, spec));
            });
            ops.push_back(denseOp("dispatch.backward", M, C, 0, double(k), routed, 0, spec));
            ops.push_back(denseOp("router.softmax.backward", M, E, 0, 4, kRowStats, 0, spec));
            ops.push_back(matmulInputGrad("router.dX", M, C, E, spec));
            ops.push_back(matmulWeightGrad("router.dW", M, C, E, nullptr, spec));
        } else {
            backward("fc_proj", F, C, nnz(&BlockSparsity::fcProj), s.mlpBias);
            ops.push_back(activationOp(s, M, pass, spec));
            backward("fc", C, FI, nnz(&BlockSparsity::fc), s.mlpBias, fcParts);
        }
        ops.push_back(normOp(s, "2", M, pass, spec));
        backward("attn_proj", Q, C, nnz(&BlockSparsity::attnProj), s.attnProjBias);
        ops.push_back(attentionOp(s, batch, seqLen, pass, spec));
        if (rope) ops.push_back(ropeOp(s, M, pass, spec));
        backward("qkv", C, QKV, nnz(&BlockSparsity::qkv), s.qkvBias, qkvParts);
        ops.push_back(normOp(s, "1", M, pass, spec));
    }
    return l;
}

LayerOps headOps(const model::GptShape& s, int batch, int seqLen, Pass pass,
                 const WaferSpec& spec) {
    const int64_t M = int64_t(batch) * seqLen;
    const int64_t C = s.channels, V = s.vocab;
    LayerOps l;
    l.layer = "head";
    l.pass = pass;
    // Tied or not, the (V, C) output matrix streams in: from wte or from lm_head; ln_f's gain
    // (and LayerNorm's shift).
    const double values = (s.layerNorm() ? 2.0 : 1.0) * C + double(V) * C;
    if (pass == Pass::Forward) {
        l.weightValues = values;
        l.ops.push_back(normOp(s, "f", M, pass, spec));
        l.ops.push_back(matmulForward("logits", M, C, V, nullptr, spec));
        l.ops.push_back(denseOp("cross_entropy", M, V, 0, 6, kRowStats, 0, spec));
    } else {
        const bool frozen = s.hasLora();  // LoRA: ln_f and the output matrix are frozen
        l.weightValues = values;
        l.gradientValues = frozen ? 0 : values;
        l.ops.push_back(denseOp("cross_entropy.backward", M, V, 0, 2, 0, 0, spec));
        l.ops.push_back(matmulInputGrad("logits.dX", M, C, V, spec));
        if (!frozen) l.ops.push_back(matmulWeightGrad("logits.dW", M, C, V, nullptr, spec));
        l.ops.push_back(normOp(s, "f", M, pass, spec));
    }
    return l;
}

double opFmacs(const WaferOp& op) {
    return double(op.m) * double(op.n) * op.fmacsPerElement;
}

double tileElements(const WaferOp& op, const GridMapping& g, int64_t vRow, int64_t vCol) {
    if (op.layout == TileLayout::Dense) return double(g.m.size(vRow)) * double(g.n.size(vCol));
    // Causal: the core owns two column blocks, vCol and its mirror (see opMapping).
    double total = 0;
    for (int64_t block : {vCol, 2 * int64_t(g.groupCols) - 1 - vCol}) {
        const int64_t c0 = g.n.begin(block), c1 = g.n.end(block);
        if (c1 > c0)
            total += causalRows(g.m.end(vRow), op.period, c0, c1) -
                     causalRows(g.m.begin(vRow), op.period, c0, c1);
    }
    return total;
}

namespace {

double virtualCycles(const WaferOp& op, const GridMapping& g, int64_t vRow, int64_t vCol,
                     const WaferSpec& spec) {
    const double elements = tileElements(op, g, vRow, vCol);
    double fmacs = elements * op.fmacsPerElement;
    if (!op.columnNonzerosPrefix.empty()) {
        const double nnz = double(op.columnNonzerosPrefix[size_t(g.n.end(vCol))] -
                                  op.columnNonzerosPrefix[size_t(g.n.begin(vCol))]);
        fmacs = double(g.m.size(vRow)) * nnz;
    }
    const double work = fmacs + elements * op.vectorOpsPerElement;
    return work / (spec.fmacsPerCycle * spec.computeEfficiency);
}

double mappingMaxCycles(const WaferOp& op, const GridMapping& g, const WaferSpec& spec) {
    if (op.layout == TileLayout::Dense) {
        if (op.columnNonzerosPrefix.empty()) return virtualCycles(op, g, 0, 0, spec);
        double best = 0;
        for (int64_t c = 0; c < g.groupCols; ++c)
            best = std::max(best, virtualCycles(op, g, 0, c, spec));
        return best;
    }
    double best = 0;
    for (int64_t r = 0; r < g.virtualRows(); ++r) {
        if (g.m.size(r) == 0) break;
        for (int64_t c = 0; c < g.groupCols; ++c)
            best = std::max(best, virtualCycles(op, g, r, c, spec));
    }
    return best;
}

double mappingRowBytes(const WaferOp& op, const GridMapping& g) {
    return double(g.m.block) * op.rowBytesPerRow;
}

// Columns a core owns at most: one block, or two (a block and its mirror) for Causal.
double ownedCols(const WaferOp& op, const GridMapping& g) {
    return double(g.n.block) * (op.layout == TileLayout::Causal ? 2 : 1);
}

double mappingColBytes(const WaferOp& op, const GridMapping& g) {
    double bytes = ownedCols(op, g) * op.colBytesPerCol;
    if (op.colBytesPerProblem && op.period > 0) {
        // One physical column holds `rows` consecutive virtual rows: the problems they touch,
        // or with grouped-query attention the K/V panels of those problems' KV heads.
        const int64_t spanRows = int64_t(g.rows) * g.m.block;
        const int64_t span = op.period * op.problemsPerColumnPanel;
        const int64_t problems =
            std::min<int64_t>((g.m.total + span - 1) / span, spanRows / span + 2);
        bytes *= double(std::max<int64_t>(1, problems));
    }
    return bytes;
}

GridMapping opMapping(const WaferOp& op, int64_t rows, const WaferSpec& spec) {
    // Causal tiles: a column block near s = 0 meets every row t of a problem, one near s = T
    // only the last rows, so a plain split leaves the first columns twice as busy as the mean.
    // Cutting the columns into 2 x groupCols blocks and giving each core block j and its mirror
    // 2 x groupCols - 1 - j (the zig-zag of causal ring attention) evens the work out; rows are
    // zig-zagged likewise (causalRows).
    auto shape = [&](GridMapping g) {
        if (op.layout == TileLayout::Causal) g.n = Split::of(op.n, 2 * int64_t(g.groupCols));
        return g;
    };
    // A compiler picks the fold that makes the op fastest: its estimated busiest-core work or
    // its busiest link, whichever binds (causal tiles count about half their pairs).
    auto cost = [&](const GridMapping& raw) {
        const GridMapping g = shape(raw);
        const bool causal = op.layout == TileLayout::Causal;
        const double cols = double(g.n.block) * (causal ? 2 : 1);
        const double elements = double(g.m.block) * cols * (causal ? 0.5 : 1.0);
        const double compute = elements * (op.fmacsPerElement + op.vectorOpsPerElement) /
                               (spec.fmacsPerCycle * spec.computeEfficiency);
        return std::max(compute, std::max(mappingRowBytes(op, g), mappingColBytes(op, g)) /
                                     spec.fabricBytesPerCycle);
    };
    const int R = op.region.whole() ? spec.gridRows : op.region.rows;
    const int C = op.region.whole() ? spec.gridCols : op.region.cols;
    return shape(mapOutputStationary(rows, op.n, R, C, cost));
}

int64_t lastChunkRows(const WaferOp& op) {
    return op.m - (op.chunks - 1) * op.chunkRows;
}

}  // namespace

Status planOp(WaferOp& op, const WaferSpec& spec, const std::string& layer) {
    const double budget = kTileSramShare * double(spec.sramBytesPerCore);
    // Chunks hold whole attention problems so every chunk starts at t = 0.
    const int64_t unit = op.layout == TileLayout::Causal ? op.period : 1;
    const int64_t units = (op.m + unit - 1) / unit;
    auto mapFor = [&](int64_t chunkUnits) {
        return opMapping(op, std::min(op.m, chunkUnits * unit), spec);
    };
    auto fits = [&](int64_t chunkUnits) { return tileSramBytes(op, mapFor(chunkUnits)) <= budget; };
    if (!fits(1))
        return Error{fmt::format(
            "layer {}: op {} cannot fit its tile in a core's SRAM even at the smallest tile "
            "({} row(s) x {} columns need {:.0f} bytes, {:.0f} of the {} bytes per core are for "
            "tiles); use a wafer with more SRAM per core or a smaller {}",
            layer, op.name, unit, op.n, tileSramBytes(op, mapFor(1)), budget, spec.sramBytesPerCore,
            op.n == op.period ? "sequence length" : "model width")};
    int64_t hi = units, lo = 1;  // find the largest chunk (in units) that fits
    if (!fits(hi)) {
        while (lo + 1 < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            (fits(mid) ? lo : hi) = mid;
        }
        hi = lo;
    }
    op.chunkRows = std::min(op.m, hi * unit);
    op.chunks = (op.m + op.chunkRows - 1) / op.chunkRows;
    op.mapping = opMapping(op, op.chunkRows, spec);
    op.lastMapping = opMapping(op, lastChunkRows(op), spec);
    return Status::success();
}

Status planLayer(LayerOps& layer, const WaferSpec& spec) {
    for (auto& op : layer.ops)
        if (Status s = planOp(op, spec, layer.layer); !s.ok()) return s;
    return Status::success();
}

double coreCycles(const WaferOp& op, int r, int c, const WaferSpec& spec) {
    double total = 0;
    if (!op.region.contains(r, c)) return 0;
    r -= op.region.row0;
    c -= op.region.col0;
    int64_t vr = 0, vc = 0;
    if (op.chunks > 1 && op.mapping.toVirtual(r, c, vr, vc))
        total += double(op.chunks - 1) * virtualCycles(op, op.mapping, vr, vc, spec);
    if (op.lastMapping.toVirtual(r, c, vr, vc))
        total += virtualCycles(op, op.lastMapping, vr, vc, spec);
    return total;
}

namespace {

void addMappingCycles(const WaferOp& op, const GridMapping& g, double times, const WaferSpec& spec,
                      std::vector<float>& busy) {
    if (times <= 0) return;
    const int R = g.rows, C = g.cols;
    // The op's region of the grid (the whole wafer but for MoE experts): busy is gridCols wide.
    const size_t pitch = size_t(spec.gridCols);
    float* const origin = busy.data() + size_t(op.region.row0) * pitch + size_t(op.region.col0);
    const double rate = times / (spec.fmacsPerCycle * spec.computeEfficiency);
    if (op.layout == TileLayout::Causal) {
        // virtualCycles() per core with the divisions hoisted: per virtual column its two
        // column blocks, per virtual row the period split of its row range.
        const int64_t T = op.period;
        const double perPair = op.fmacsPerElement + op.vectorOpsPerElement;
        struct Cols {
            int64_t c0[2], c1[2];
            double full[2];
        };
        std::vector<Cols> cols(static_cast<size_t>(g.groupCols));
        for (int64_t vc = 0; vc < g.groupCols; ++vc) {
            const int64_t blocks[2] = {vc, 2 * int64_t(g.groupCols) - 1 - vc};
            for (int b = 0; b < 2; ++b) {
                auto& k = cols[size_t(vc)];
                k.c0[b] = g.n.begin(blocks[b]);
                k.c1[b] = std::max(k.c0[b], g.n.end(blocks[b]));
                k.full[b] = causalPrefix(T, k.c0[b], k.c1[b]);
            }
        }
        auto pairsBefore = [&](int64_t q, int64_t p, const Cols& k, int b) {
            if (k.c1[b] <= k.c0[b]) return 0.0;
            return double(q) * k.full[b] + causalPrefix((p + 1) / 2, k.c0[b], k.c1[b]) + k.full[b] -
                   causalPrefix(T - p / 2, k.c0[b], k.c1[b]);
        };
        for (int r = 0; r < R; ++r)
            for (int group = 0; group < g.folds; ++group) {
                const int64_t vr = int64_t(group) * R + r;
                const int64_t e = g.m.end(vr), s = g.m.begin(vr);
                if (e <= s) continue;
                const int64_t qe = e / T, pe = e % T, qs = s / T, ps = s % T;
                float* row = origin + size_t(r) * pitch + size_t(group) * g.groupCols;
                for (int64_t vc = 0; vc < g.groupCols; ++vc) {
                    const Cols& k = cols[size_t(vc)];
                    double pairs = 0;
                    for (int b = 0; b < 2; ++b)
                        pairs += pairsBefore(qe, pe, k, b) - pairsBefore(qs, ps, k, b);
                    row[vc] += float(pairs * perPair * rate);
                }
            }
        return;
    }
    // Dense: cycles = rows(vr) x colFactor(vc) x rate, with colFactor the column block's
    // multiply-adds plus vector ops per row.
    const bool sparse = !op.columnNonzerosPrefix.empty();
    std::vector<double> colFactor(static_cast<size_t>(C), 0.0);
    std::vector<int> groupOf(static_cast<size_t>(C), 0);
    for (int c = 0; c < C; ++c) {
        const int group = c / g.groupCols;
        if (group >= g.folds) continue;  // idle leftover column
        const int64_t vc = c % g.groupCols;
        groupOf[size_t(c)] = group;
        const double cols = double(g.n.size(vc));
        const double fmacs = sparse ? double(op.columnNonzerosPrefix[size_t(g.n.end(vc))] -
                                             op.columnNonzerosPrefix[size_t(g.n.begin(vc))])
                                    : cols * op.fmacsPerElement;
        colFactor[size_t(c)] = fmacs + cols * op.vectorOpsPerElement;
    }
    std::vector<double> rowFactor(static_cast<size_t>(g.folds));
    for (int r = 0; r < R; ++r) {
        for (int group = 0; group < g.folds; ++group)
            rowFactor[size_t(group)] = double(g.m.size(int64_t(group) * R + r)) * rate;
        float* row = origin + size_t(r) * pitch;
        for (int c = 0; c < C; ++c)
            row[c] += float(rowFactor[size_t(groupOf[size_t(c)])] * colFactor[size_t(c)]);
    }
}

}  // namespace

void addCoreCycles(const WaferOp& op, const WaferSpec& spec, std::vector<float>& busy) {
    addMappingCycles(op, op.mapping, double(op.chunks - 1), spec, busy);
    addMappingCycles(op, op.lastMapping, 1, spec, busy);
}

double maxCoreCycles(const WaferOp& op, const WaferSpec& spec) {
    double total = mappingMaxCycles(op, op.lastMapping, spec);
    if (op.chunks > 1) total += double(op.chunks - 1) * mappingMaxCycles(op, op.mapping, spec);
    return total;
}

double fabricCycles(const WaferOp& op, const WaferSpec& spec) {
    auto one = [&](const GridMapping& g) {
        return std::max(mappingRowBytes(op, g), mappingColBytes(op, g)) / spec.fabricBytesPerCycle;
    };
    return one(op.lastMapping) + double(op.chunks - 1) * one(op.mapping);
}

void addLinkBytes(const WaferOp& op, std::vector<double>& rows, std::vector<double>& cols) {
    auto add = [&](const GridMapping& g, double times) {
        if (times <= 0) return;
        const int r0 = op.region.row0, c0 = op.region.col0;
        for (int r = 0; r < g.rows && r0 + r < int(rows.size()); ++r) {
            double bytes = 0;  // the row's busiest group segment
            for (int group = 0; group < g.folds; ++group)
                bytes = std::max(bytes,
                                 double(g.m.size(int64_t(group) * g.rows + r)) * op.rowBytesPerRow);
            rows[size_t(r0 + r)] += times * bytes;
        }
        const double perProblem =
            mappingColBytes(op, g) / std::max(1.0, double(g.n.block) * op.colBytesPerCol);
        for (int c = 0; c < g.cols && c0 + c < int(cols.size()); ++c) {
            const int group = c / g.groupCols;
            if (group >= g.folds) continue;
            const int64_t vc = c % g.groupCols;
            double owned = double(g.n.size(vc));
            if (op.layout == TileLayout::Causal)
                owned += double(g.n.size(2 * g.groupCols - 1 - vc));
            cols[size_t(c0 + c)] +=
                times * owned * op.colBytesPerCol * (op.colBytesPerProblem ? perProblem : 1.0);
        }
    };
    add(op.mapping, double(op.chunks - 1));
    add(op.lastMapping, 1);
}

double fillCycles(const WaferSpec& spec) {
    return double(spec.gridRows + spec.gridCols) * spec.hopLatencyCycles;
}

double opFillCycles(const WaferOp& op, const WaferSpec& spec) {
    return double(op.chunks) * fillCycles(spec);
}

double tileSramBytes(const WaferOp& op, const GridMapping& g) {
    const double rows = double(g.m.block);
    const double cols = double(g.n.block) * (op.layout == TileLayout::Causal ? 2 : 1);
    // Causal tiles are not stored: each score row is consumed as it is formed (flash-style),
    // leaving one row of scores plus the output accumulators.
    const double tile = op.layout == TileLayout::Causal ? cols * kFloat32 : rows * cols * kFloat32;
    return tile + 2 * (rows + cols) * kHalf * 2 + rows * op.accumulatorBytesPerRow;
}

}  // namespace ws::wafer
