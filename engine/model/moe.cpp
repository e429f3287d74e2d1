// SPDX-License-Identifier: GPL-3.0-or-later
// Mixture of experts: routing (moe.h) and Gpt<Real>'s MoE MLP branch, forward and backward (gpt.h).
#include "engine/model/moe.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <type_traits>

#include "engine/model/gpt.h"
#include "engine/model/ops.h"

namespace ws::model {
namespace moe {

template <typename Real>
void softmaxRows(Real* probs, int N, int E) {
    for (int n = 0; n < N; ++n) {
        Real* row = probs + size_t(n) * size_t(E);
        const Real max = *std::max_element(row, row + E);
        Real sum = 0;
        for (int e = 0; e < E; ++e) {
            row[e] = std::exp(row[e] - max);
            sum += row[e];
        }
        for (int e = 0; e < E; ++e) row[e] /= sum;
    }
}

template <typename Real>
void route(Routing& r, Real* gates, const Real* probs, int N, int E, int k, int capacity,
           bool normalize, double lbCoef) {
    r.N = N;
    r.E = E;
    r.k = k;
    r.choice.assign(size_t(N) * size_t(k), 0);
    r.row.assign(size_t(N) * size_t(k), -1);
    r.routed.assign(size_t(E), 0);
    r.counts.assign(size_t(E), 0);
    r.dropped = 0;
    std::vector<int32_t> order(static_cast<size_t>(E));
    for (int n = 0; n < N; ++n) {
        const Real* p = probs + size_t(n) * size_t(E);
        for (int e = 0; e < E; ++e) order[size_t(e)] = e;
        // Most probable first; equal probabilities: the lower expert first.
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [p](int32_t a, int32_t b) {
            return p[a] > p[b] || (p[a] == p[b] && a < b);
        });
        Real sum = 0;
        for (int j = 0; j < k; ++j) sum += p[order[size_t(j)]];
        for (int j = 0; j < k; ++j) {
            const int32_t e = order[size_t(j)];
            r.choice[size_t(n) * size_t(k) + size_t(j)] = e;
            gates[size_t(n) * size_t(k) + size_t(j)] = normalize ? p[e] / sum : p[e];
            ++r.routed[size_t(e)];
        }
    }
    // Capacity: first choices in token order, then second choices, ... (moe.h).
    std::vector<char> kept(size_t(N) * size_t(k), 0);
    for (int j = 0; j < k; ++j)
        for (int n = 0; n < N; ++n) {
            const size_t slot = size_t(n) * size_t(k) + size_t(j);
            int& count = r.counts[size_t(r.choice[slot])];
            if (count < capacity) {
                ++count;
                kept[slot] = 1;
            } else {
                ++r.dropped;
            }
        }
    // Rows grouped by expert, each expert's rows in token order.
    r.expertBegin.assign(size_t(E) + 1, 0);
    for (int e = 0; e < E; ++e)
        r.expertBegin[size_t(e) + 1] = r.expertBegin[size_t(e)] + r.counts[size_t(e)];
    std::vector<int32_t> fill(r.expertBegin.begin(), r.expertBegin.end() - 1);
    r.tokenOfRow.assign(size_t(r.rows()), 0);
    r.slotOfRow.assign(size_t(r.rows()), 0);
    for (int n = 0; n < N; ++n)
        for (int j = 0; j < k; ++j) {
            const size_t slot = size_t(n) * size_t(k) + size_t(j);
            if (!kept[slot]) continue;
            const int32_t row = fill[size_t(r.choice[slot])]++;
            r.row[slot] = row;
            r.tokenOfRow[size_t(row)] = n;
            r.slotOfRow[size_t(row)] = j;
        }
    // Load balancing: coef · E · sum_e f_e P_e, accumulated in double in a fixed order.
    double lb = 0.0;
    for (int e = 0; e < E; ++e) {
        double P = 0.0;
        for (int n = 0; n < N; ++n) P += double(probs[size_t(n) * size_t(E) + size_t(e)]);
        lb += double(r.routed[size_t(e)]) / (double(N) * k) * (P / N);
    }
    r.lbLoss = lbCoef * E * lb;
}

template <typename Real>
void routerBackward(Real* dlogits, const Routing& r, const Real* probs, const Real* gates,
                    const Real* dgates, bool normalize, double lbCoef) {
    const int N = r.N, E = r.E, k = r.k;
    for (int n = 0; n < N; ++n) {
        Real* dp = dlogits + size_t(n) * size_t(E);  // d loss / d probs first, then in place
        const Real* p = probs + size_t(n) * size_t(E);
        const Real* g = gates + size_t(n) * size_t(k);
        const Real* dg = dgates + size_t(n) * size_t(k);
        const int32_t* choice = r.choice.data() + size_t(n) * size_t(k);
        // Load balancing: d/dp[n,e] of coef · E · sum_e f_e · mean_n p[n,e].
        for (int e = 0; e < E; ++e)
            dp[e] = lbCoef > 0.0
                        ? Real(lbCoef * E * (double(r.routed[size_t(e)]) / (double(N) * k)) / N)
                        : Real(0);
        if (normalize) {
            // g_j = p_j / S, S = sum of the selected p: dp_j += dg_j / S - sum_i dg_i g_i / S.
            Real S = 0, dot = 0;
            for (int j = 0; j < k; ++j) {
                S += p[choice[j]];
                dot += dg[j] * g[j];
            }
            for (int j = 0; j < k; ++j) dp[choice[j]] += (dg[j] - dot) / S;
        } else {
            for (int j = 0; j < k; ++j) dp[choice[j]] += dg[j];
        }
        // Softmax: dlogit_e = p_e (dp_e - sum_e' p_e' dp_e').
        Real dot = 0;
        for (int e = 0; e < E; ++e) dot += p[e] * dp[e];
        for (int e = 0; e < E; ++e) dp[e] = p[e] * (dp[e] - dot);
    }
}

template void softmaxRows<float>(float*, int, int);
template void softmaxRows<double>(double*, int, int);
template void route<float>(Routing&, float*, const float*, int, int, int, int, bool, double);
template void route<double>(Routing&, double*, const double*, int, int, int, int, bool, double);
template void routerBackward<float>(float*, const Routing&, const float*, const float*,
                                    const float*, bool, double);
template void routerBackward<double>(double*, const Routing&, const double*, const double*,
                                     const double*, bool, double);

}  // namespace moe

// ---- Gpt<Real>'s MoE MLP branch.

template <typename Real>
void Gpt<Real>::moeForward(int layer, const Real* w) {
    const GptShape& s = shape();
    const int N = m_N, C = s.channels, F = s.ffn, E = s.numExperts, k = s.topK;
    const BlockOffsets& o = m_moeOff;
    const ActivationLayout::Block& a = m_layout.blocks[size_t(layer)];
    const Real* x = act(a.ln2);
    Real* probs = act(a.routerProbs);
    Real* gates = act(a.gates);
    // Router in fp32 (Real) whatever the mode: its product is not a bf16 matmul, its output not
    // rounded.
    ops::linearForward(probs, x, w + o.router, static_cast<const Real*>(nullptr), N, C, E);
    moe::softmaxRows(probs, N, E);
    moe::Routing& r = m_routing[size_t(layer)];
    // Capacity limits training only: evaluation and sampling (KvDecoder, one token at a time)
    // compute every assignment, so a token's output never depends on the rest of the batch.
    const int capacity = m_training ? s.expertCapacity(N) : N;
    moe::route(r, gates, probs, N, E, k, capacity, s.expertNormalize, s.lbCoef);

    Real* fch = act(a.expertFch);
    Real* gelu = act(a.expertGelu);
    Real* out = act(a.expertOut);
    for (int e = 0; e < E; ++e) {
        const int begin = r.expertBegin[size_t(e)], rows = r.counts[size_t(e)];
        if (rows == 0) continue;
        const size_t ex = o.expert(e);
        const Real* in = x;  // an expert that took every token reads ln_2's output as it is
        if (!r.allTokens(e)) {
            Real* gathered = m_moeX.data() + size_t(begin) * size_t(C);
            for (int i = 0; i < rows; ++i) {
                const Real* src = x + size_t(r.tokenOfRow[size_t(begin + i)]) * size_t(C);
                std::copy(src, src + C, gathered + size_t(i) * size_t(C));
            }
            in = gathered;
        }
        Real* h = fch + size_t(begin) * size_t(F);
        Real* g = gelu + size_t(begin) * size_t(F);
        Real* y = out + size_t(begin) * size_t(C);
        ops::linearForward(h, in, w + o.fcw + ex, w + o.fcb + ex, rows, C, F,
                           linearMode(w + o.fcw + ex));
        roundActivation(h, size_t(rows) * size_t(F));
        ops::geluForward(g, h, size_t(rows) * size_t(F));
        roundActivation(g, size_t(rows) * size_t(F));
        ops::linearForward(y, g, w + o.fcprojw + ex, w + o.fcprojb + ex, rows, F, C,
                           linearMode(w + o.fcprojw + ex));
        roundActivation(y, size_t(rows) * size_t(C));
    }
    // The gated sum per token, slots in order; the first kept slot assigns (so one expert with
    // gate 1 gives its output's exact bits), a token with none kept gets 0.
    for (int n = 0; n < N; ++n) {
        Real* b = m_branch.data() + size_t(n) * size_t(C);
        bool first = true;
        for (int j = 0; j < k; ++j) {
            const int32_t row = r.row[size_t(n) * size_t(k) + size_t(j)];
            if (row < 0) continue;
            const Real gate = gates[size_t(n) * size_t(k) + size_t(j)];
            const Real* y = out + size_t(row) * size_t(C);
            if (first) {
                for (int c = 0; c < C; ++c) b[c] = gate * y[c];
            } else {
                for (int c = 0; c < C; ++c) b[c] += gate * y[c];
            }
            first = false;
        }
        if (first) std::fill(b, b + C, Real(0));
    }
}

template <typename Real>
void Gpt<Real>::moeBackward(int layer, const Real* w, Real* blockGrads, const Real* dout) {
    const GptShape& s = shape();
    const int N = m_N, C = s.channels, F = s.ffn, E = s.numExperts, k = s.topK;
    const BlockOffsets& o = m_moeOff;
    const ActivationLayout::Block& a = m_layout.blocks[size_t(layer)];
    const int layerIndex = ParameterTable::blockLayer(layer);
    auto dW = [&](size_t offset) { return gradOf(layerIndex, blockGrads, offset); };
    const moe::Routing& r = m_routing[size_t(layer)];
    const Real* x = act(a.ln2);
    const Real* gates = act(a.gates);
    const Real* out = act(a.expertOut);
    Real* dgates = m_moeDgates.data();
    std::fill(m_moeDgates.begin(), m_moeDgates.end(), Real(0));

    bool dlnWritten = false;
    for (int e = 0; e < E; ++e) {
        const int begin = r.expertBegin[size_t(e)], rows = r.counts[size_t(e)];
        if (rows == 0) continue;
        const size_t ex = o.expert(e);
        // Each row's gradient: gate × dout of its token; the gate's: dout · the expert's output.
        Real* dy = m_moeDy.data() + size_t(begin) * size_t(C);
        for (int i = 0; i < rows; ++i) {
            const int row = begin + i;
            const int32_t n = r.tokenOfRow[size_t(row)], j = r.slotOfRow[size_t(row)];
            const size_t slot = size_t(n) * size_t(k) + size_t(j);
            const Real gate = gates[slot];
            const Real* d = dout + size_t(n) * size_t(C);
            const Real* y = out + size_t(row) * size_t(C);
            Real* dyi = dy + size_t(i) * size_t(C);
            Real dot = 0;
            for (int c = 0; c < C; ++c) {
                dyi[c] = gate * d[c];
                dot += d[c] * y[c];
            }
            dgates[slot] = dot;
        }
        Real* dh = m_dfch.data() + size_t(begin) * size_t(F);
        ops::linearBackward(dh, false, dW(o.fcprojw + ex), dW(o.fcprojb + ex), dy,
                            act(a.expertGelu) + size_t(begin) * size_t(F), w + o.fcprojw + ex, rows,
                            F, C, linearMode(w + o.fcprojw + ex));
        ops::geluBackward(dh, act(a.expertFch) + size_t(begin) * size_t(F), dh,
                          size_t(rows) * size_t(F));
        if (r.allTokens(e)) {
            ops::linearBackward(m_dln.data(), dlnWritten, dW(o.fcw + ex), dW(o.fcb + ex), dh, x,
                                w + o.fcw + ex, rows, C, F, linearMode(w + o.fcw + ex));
            dlnWritten = true;
            continue;
        }
        Real* in = m_moeX.data() + size_t(begin) * size_t(C);
        for (int i = 0; i < rows; ++i) {
            const Real* src = x + size_t(r.tokenOfRow[size_t(begin + i)]) * size_t(C);
            std::copy(src, src + C, in + size_t(i) * size_t(C));
        }
        Real* dx = m_moeDx.data() + size_t(begin) * size_t(C);
        ops::linearBackward(dx, false, dW(o.fcw + ex), dW(o.fcb + ex), dh, in, w + o.fcw + ex, rows,
                            C, F, linearMode(w + o.fcw + ex));
        if (!dlnWritten) std::fill(m_dln.begin(), m_dln.end(), Real(0));
        dlnWritten = true;
        for (int i = 0; i < rows; ++i) {
            Real* d = m_dln.data() + size_t(r.tokenOfRow[size_t(begin + i)]) * size_t(C);
            const Real* src = dx + size_t(i) * size_t(C);
            for (int c = 0; c < C; ++c) d[c] += src[c];
        }
    }
    if (!dlnWritten) std::fill(m_dln.begin(), m_dln.end(), Real(0));
    // Router: the gates' gradient and (training) the load-balancing loss's, through the softmax
    // into the fp32 router product.
    const double lb = m_training ? s.lbCoef : 0.0;
    moe::routerBackward(m_moeDlogits.data(), r, act(a.routerProbs), gates, dgates,
                        s.expertNormalize, lb);
    ops::linearBackward(m_dln.data(), true, dW(o.router), static_cast<Real*>(nullptr),
                        m_moeDlogits.data(), x, w + o.router, N, C, E);
}

template <typename Real>
const std::vector<int>& Gpt<Real>::expertTokenCounts(int block) const {
    static const std::vector<int> kNone;
    return shape().isMoeBlock(block) ? m_routing[size_t(block)].counts : kNone;
}

template <typename Real>
const std::vector<int>& Gpt<Real>::expertTokensRouted(int block) const {
    static const std::vector<int> kNone;
    return shape().isMoeBlock(block) ? m_routing[size_t(block)].routed : kNone;
}

template <typename Real>
int Gpt<Real>::droppedAssignments(int block) const {
    return shape().isMoeBlock(block) ? m_routing[size_t(block)].dropped : 0;
}

template <typename Real>
double Gpt<Real>::loadBalancingLoss(int block) const {
    return shape().isMoeBlock(block) ? m_routing[size_t(block)].lbLoss : 0.0;
}

template <typename Real>
double Gpt<Real>::loadBalancingLoss() const {
    double sum = 0.0;
    for (int l = 0; l < shape().layers; ++l) sum += loadBalancingLoss(l);
    return sum;
}

#define WS_MOE_INSTANTIATE(Real)                                                \
    template void Gpt<Real>::moeForward(int, const Real*);                      \
    template void Gpt<Real>::moeBackward(int, const Real*, Real*, const Real*); \
    template const std::vector<int>& Gpt<Real>::expertTokenCounts(int) const;   \
    template const std::vector<int>& Gpt<Real>::expertTokensRouted(int) const;  \
    template int Gpt<Real>::droppedAssignments(int) const;                      \
    template double Gpt<Real>::loadBalancingLoss(int) const;                    \
    template double Gpt<Real>::loadBalancingLoss() const;
WS_MOE_INSTANTIATE(float)
WS_MOE_INSTANTIATE(double)
#undef WS_MOE_INSTANTIATE

}  // namespace ws::model
