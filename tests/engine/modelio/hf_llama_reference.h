// SPDX-License-Identifier: GPL-3.0-or-later
// Test support: an independent float64 reference of Hugging Face's Llama forward (LlamaForCausalLM
// semantics, modeling_llama.py), written from those semantics with plain loops over
// std::vector<double> and sharing no engine code: embed; per layer RMSNorm -> q/k/v proj (+bias)
// -> rotary (rotate_half with cos/sin of cat(freqs, freqs), on the first R dims of each head,
// GPT-NeoX style when R < head size; linear and llama3 frequency scaling) -> repeat_kv ->
// softmax(q·kᵀ / sqrt(hs), causal) -> o_proj -> residual -> RMSNorm -> down(silu(gate)·up) ->
// residual; final RMSNorm; logits (lm_head, or embed_tokens when tied); mean cross-entropy.
// Gradients by central differences in float64 (the model is tiny), and SGD / AdamW (PyTorch's
// update rules) applied to the HF tensors.
#pragma once

#include <cmath>
#include <map>
#include <numbers>
#include <string>
#include <vector>

#include "hf_llama_files.h"

namespace ws::modelio::testing {

struct RefRope {
    std::string type = "none";  // none | linear | llama3
    double factor = 1.0, lowFreqFactor = 1.0, highFreqFactor = 4.0;
    int originalMax = 8192;
    std::string json() const {
        if (type == "linear")
            return fmt::format(R"({{"rope_type": "linear", "factor": {}}})", factor);
        if (type == "llama3")
            return fmt::format(
                R"({{"rope_type": "llama3", "factor": {}, "low_freq_factor": {},
                "high_freq_factor": {}, "original_max_position_embeddings": {}}})",
                factor, lowFreqFactor, highFreqFactor, originalMax);
        return "null";
    }
};

using RefWeights = std::map<std::string, std::vector<double>>;

inline RefWeights toDouble(const HfArrays& arrays) {
    RefWeights w;
    for (const auto& [name, a] : arrays)
        w[name] = std::vector<double>(a.values.begin(), a.values.end());
    return w;
}

class HfLlamaReference {
public:
    // rotaryDims: R (0 = the whole head).
    HfLlamaReference(const HfLlamaSpec& spec, const RefRope& rope, int rotaryDims = 0)
        : m_s(spec), m_rope(rope), m_R(rotaryDims > 0 ? rotaryDims : spec.headDim) {}

    // HF's _compute_default_rope_parameters, then linear or llama3 scaling
    // (_compute_linear_scaling_rope_parameters, _compute_llama3_parameters).
    std::vector<double> invFreq() const {
        std::vector<double> inv(size_t(m_R / 2));
        for (int i = 0; i < m_R / 2; ++i)
            inv[size_t(i)] = 1.0 / std::pow(m_s.ropeTheta, double(2 * i) / m_R);
        if (m_rope.type == "linear")
            for (double& f : inv) f /= m_rope.factor;
        if (m_rope.type == "llama3") {
            const double old = m_rope.originalMax;
            const double lowWavelen = old / m_rope.lowFreqFactor;
            const double highWavelen = old / m_rope.highFreqFactor;
            for (double& f : inv) {
                const double wavelen = 2 * std::numbers::pi / f;
                double scaled = wavelen > lowWavelen ? f / m_rope.factor : f;
                const double smooth = (old / wavelen - m_rope.lowFreqFactor) /
                                      (m_rope.highFreqFactor - m_rope.lowFreqFactor);
                const bool medium = !(wavelen < highWavelen) && !(wavelen > lowWavelen);
                if (medium) scaled = (1 - smooth) * scaled / m_rope.factor + smooth * scaled;
                f = scaled;
            }
        }
        return inv;
    }

    // Logits (B*T*V) for tokens (B*T).
    std::vector<double> logits(const RefWeights& w, const std::vector<int>& tokens, int B,
                               int T) const {
        const int C = m_s.hidden, NH = m_s.heads, KV = m_s.kvHeads, hs = m_s.headDim, F = m_s.ffn,
                  V = m_s.vocab, Q = NH * hs, K = KV * hs;
        const std::vector<double> inv = invFreq();
        std::vector<double> out(size_t(B) * T * V);
        for (int b = 0; b < B; ++b) {
            // x (T, C): the residual stream of one sequence.
            std::vector<double> x(size_t(T) * C);
            const auto& emb = w.at("model.embed_tokens.weight");
            for (int t = 0; t < T; ++t)
                for (int c = 0; c < C; ++c)
                    x[size_t(t * C + c)] = emb[size_t(tokens[size_t(b * T + t)]) * C + c];
            for (int l = 0; l < m_s.layers; ++l) {
                const std::string p = fmt::format("model.layers.{}.", l);
                std::vector<double> q(size_t(T) * Q), k(size_t(T) * K), v(size_t(T) * K),
                    h(static_cast<size_t>(C));
                for (int t = 0; t < T; ++t) {
                    rmsnorm(&x[size_t(t * C)], w.at(p + "input_layernorm.weight"), h.data());
                    linear(h.data(), w, p + "self_attn.q_proj", C, Q, &q[size_t(t * Q)]);
                    linear(h.data(), w, p + "self_attn.k_proj", C, K, &k[size_t(t * K)]);
                    linear(h.data(), w, p + "self_attn.v_proj", C, K, &v[size_t(t * K)]);
                    for (int n = 0; n < NH; ++n) rotate(&q[size_t(t * Q + n * hs)], t, inv);
                    for (int n = 0; n < KV; ++n) rotate(&k[size_t(t * K + n * hs)], t, inv);
                }
                // repeat_kv: query head n reads KV head n / (NH / KV).
                std::vector<double> att(size_t(T) * Q, 0.0);
                const double scale = 1.0 / std::sqrt(double(hs));
                for (int n = 0; n < NH; ++n) {
                    const int g = n / (NH / KV);
                    for (int t = 0; t < T; ++t) {
                        std::vector<double> sc(size_t(t + 1));
                        double mx = -INFINITY;
                        for (int s2 = 0; s2 <= t; ++s2) {
                            double d = 0;
                            for (int i = 0; i < hs; ++i)
                                d += q[size_t(t * Q + n * hs + i)] * k[size_t(s2 * K + g * hs + i)];
                            sc[size_t(s2)] = d * scale;
                            mx = std::max(mx, sc[size_t(s2)]);
                        }
                        double sum = 0;
                        for (double& e : sc) sum += (e = std::exp(e - mx));
                        for (int s2 = 0; s2 <= t; ++s2)
                            for (int i = 0; i < hs; ++i)
                                att[size_t(t * Q + n * hs + i)] +=
                                    sc[size_t(s2)] / sum * v[size_t(s2 * K + g * hs + i)];
                    }
                }
                std::vector<double> y(static_cast<size_t>(C)), gate(static_cast<size_t>(F)),
                    up(static_cast<size_t>(F));
                for (int t = 0; t < T; ++t) {
                    linear(&att[size_t(t * Q)], w, p + "self_attn.o_proj", Q, C, y.data());
                    for (int c = 0; c < C; ++c) x[size_t(t * C + c)] += y[size_t(c)];
                    rmsnorm(&x[size_t(t * C)], w.at(p + "post_attention_layernorm.weight"),
                            h.data());
                    linear(h.data(), w, p + "mlp.gate_proj", C, F, gate.data());
                    linear(h.data(), w, p + "mlp.up_proj", C, F, up.data());
                    for (int f = 0; f < F; ++f)
                        gate[size_t(f)] =
                            gate[size_t(f)] / (1 + std::exp(-gate[size_t(f)])) * up[size_t(f)];
                    linear(gate.data(), w, p + "mlp.down_proj", F, C, y.data());
                    for (int c = 0; c < C; ++c) x[size_t(t * C + c)] += y[size_t(c)];
                }
            }
            const auto& head =
                m_s.tied ? w.at("model.embed_tokens.weight") : w.at("lm_head.weight");
            std::vector<double> h(static_cast<size_t>(C));
            for (int t = 0; t < T; ++t) {
                rmsnorm(&x[size_t(t * C)], w.at("model.norm.weight"), h.data());
                for (int vv = 0; vv < V; ++vv) {
                    double d = 0;
                    for (int c = 0; c < C; ++c) d += head[size_t(vv) * C + c] * h[size_t(c)];
                    out[(size_t(b) * T + t) * V + vv] = d;
                }
            }
        }
        return out;
    }

    // Mean cross-entropy over the B*T positions.
    double loss(const RefWeights& w, const std::vector<int>& tokens,
                const std::vector<int>& targets, int B, int T) const {
        const std::vector<double> z = logits(w, tokens, B, T);
        const int V = m_s.vocab;
        double total = 0;
        for (int r = 0; r < B * T; ++r) {
            const double* row = &z[size_t(r) * V];
            double mx = -INFINITY;
            for (int vv = 0; vv < V; ++vv) mx = std::max(mx, row[vv]);
            double sum = 0;
            for (int vv = 0; vv < V; ++vv) sum += std::exp(row[vv] - mx);
            total += mx + std::log(sum) - row[targets[size_t(r)]];
        }
        return total / (B * T);
    }

    // dLoss/dw for every tensor, by central differences with step h (error ~1e-9 here).
    RefWeights gradients(RefWeights w, const std::vector<int>& tokens,
                         const std::vector<int>& targets, int B, int T, double h = 2e-6) const {
        RefWeights g;
        for (auto& [name, values] : w) {
            std::vector<double> grad(values.size());
            for (size_t i = 0; i < values.size(); ++i) {
                const double keep = values[i];
                values[i] = keep + h;
                const double up = loss(w, tokens, targets, B, T);
                values[i] = keep - h;
                const double down = loss(w, tokens, targets, B, T);
                values[i] = keep;
                grad[i] = (up - down) / (2 * h);
            }
            g[name] = std::move(grad);
        }
        return g;
    }

private:
    // HF LlamaRMSNorm: x * rsqrt(mean(x²) + eps) * weight.
    void rmsnorm(const double* x, const std::vector<double>& weight, double* out) const {
        const int C = m_s.hidden;
        double ms = 0;
        for (int c = 0; c < C; ++c) ms += x[c] * x[c];
        const double r = 1.0 / std::sqrt(ms / C + m_s.rmsEps);
        for (int c = 0; c < C; ++c) out[c] = x[c] * r * weight[size_t(c)];
    }
    // nn.Linear: y (out) = W (out, in) · x + b, b when the file has "<name>.bias".
    static void linear(const double* x, const RefWeights& w, const std::string& name, int in,
                       int out, double* y) {
        const auto& W = w.at(name + ".weight");
        const auto bias = w.find(name + ".bias");
        for (int o = 0; o < out; ++o) {
            double d = bias != w.end() ? bias->second[size_t(o)] : 0.0;
            for (int i = 0; i < in; ++i) d += W[size_t(o) * in + i] * x[i];
            y[o] = d;
        }
    }
    // x·cos + rotate_half(x)·sin over the first R dims, cos/sin of cat(freqs, freqs) at `pos`.
    void rotate(double* x, int pos, const std::vector<double>& inv) const {
        const int half = m_R / 2;
        for (int i = 0; i < half; ++i) {
            const double angle = pos * inv[size_t(i)];
            const double c = std::cos(angle), s = std::sin(angle);
            const double a = x[i], b = x[i + half];
            x[i] = a * c - b * s;
            x[i + half] = b * c + a * s;
        }
    }

    HfLlamaSpec m_s;
    RefRope m_rope;
    int m_R;
};

// torch.optim.SGD: d = g + wd·w (decay on 2-D tensors, the engine's rule), buf = momentum·buf + d
// (buf = d at step 1), w -= lr·buf.
struct RefSgd {
    double lr = 0.1, momentum = 0.9, weightDecay = 0.01;
    RefWeights buf;
    void step(RefWeights& w, const RefWeights& g, const HfArrays& shapes, int t) {
        for (auto& [name, values] : w) {
            auto& b = buf[name];
            b.resize(values.size());
            const double wd = shapes.at(name).shape.size() == 2 ? weightDecay : 0.0;
            for (size_t i = 0; i < values.size(); ++i) {
                const double d = g.at(name)[i] + wd * values[i];
                b[i] = t == 1 ? d : momentum * b[i] + d;
                values[i] -= lr * b[i];
            }
        }
    }
};

// torch.optim.AdamW: decay on 2-D tensors (the engine's rule: every matrix, none of the vectors).
struct RefAdamW {
    double lr = 1e-2, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0.1;
    RefWeights m, v;
    void step(RefWeights& w, const RefWeights& g, const HfArrays& shapes, int t) {
        for (auto& [name, values] : w) {
            auto& mm = m[name];
            auto& vv = v[name];
            mm.resize(values.size());
            vv.resize(values.size());
            const bool decay = shapes.at(name).shape.size() == 2;
            const double bc1 = 1 - std::pow(beta1, t), bc2 = 1 - std::pow(beta2, t);
            for (size_t i = 0; i < values.size(); ++i) {
                if (decay) values[i] *= 1 - lr * weightDecay;
                const double gi = g.at(name)[i];
                mm[i] = beta1 * mm[i] + (1 - beta1) * gi;
                vv[i] = beta2 * vv[i] + (1 - beta2) * gi * gi;
                values[i] -= lr / bc1 * mm[i] / (std::sqrt(vv[i]) / std::sqrt(bc2) + eps);
            }
        }
    }
};

}  // namespace ws::modelio::testing
