// SPDX-License-Identifier: GPL-3.0-or-later
// LoRA adapter forward, backward and init (see lora.h).
#include "engine/model/lora.h"

#include <cmath>
#include <cstring>

#include "engine/model/ops.h"
#include "engine/model/precision_gemm.h"
#include "engine/model/random.h"
#include "engine/tensor/matmul.h"
#include "engine/tensor/threads.h"

namespace ws::model::lora {

using tensor::Trans;

namespace {
struct TargetNames {
    std::string_view name;    // config lora.targets
    std::string_view module;  // under "h.N." in the parameter table
    std::string_view llama;   // Llama's / PEFT's projection name, or empty
};
constexpr std::array<TargetNames, kTargetCount> kNames = {{
    {"c_attn", "attn.c_attn", ""},
    {"attn.c_proj", "attn.c_proj", "o_proj"},
    {"c_fc", "mlp.c_fc", ""},
    {"mlp.c_proj", "mlp.c_proj", "down_proj"},
    {"q_proj", "attn.q_proj", "q_proj"},
    {"k_proj", "attn.k_proj", "k_proj"},
    {"v_proj", "attn.v_proj", "v_proj"},
    {"gate_proj", "mlp.gate_proj", "gate_proj"},
    {"up_proj", "mlp.up_proj", "up_proj"},
}};
}  // namespace

std::optional<Target> targetFromName(std::string_view name) {
    for (size_t t = 0; t < kTargetCount; ++t)
        if (name == kNames[t].name || (!kNames[t].llama.empty() && name == kNames[t].llama))
            return Target(t);
    return std::nullopt;
}

std::string_view targetName(Target target) {
    return kNames[size_t(target)].name;
}

std::string_view tableModule(Target target) {
    return kNames[size_t(target)].module;
}

std::string_view llamaName(Target target) {
    return kNames[size_t(target)].llama;
}

bool isSlice(Target target) {
    return size_t(target) >= size_t(Target::QProj);
}

bool llamaNamed(const GptShape& shape) {
    return !shape.gpt2Blocks();
}

std::vector<std::string> allLinearTargets(const GptShape& shape) {
    if (!llamaNamed(shape)) return {"c_attn", "attn.c_proj", "c_fc", "mlp.c_proj"};
    if (shape.mlp != GptShape::Mlp::SwiGlu)
        return {"q_proj", "k_proj", "v_proj", "o_proj", "c_fc", "down_proj"};
    return {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
}

LinearShape linearShape(Target target, const GptShape& shape) {
    const int C = shape.channels, Q = shape.qWidth(), K = shape.kvWidth(), F = shape.ffn;
    auto whole = [](int in, int out) { return LinearShape{in, out, 0, out}; };
    switch (target) {
        case Target::CAttn:
            return whole(C, shape.qkvWidth());
        case Target::AttnCProj:
            return whole(Q, C);
        case Target::CFc:
            return whole(C, shape.mlpInWidth());
        case Target::MlpCProj:
            return whole(F, C);
        case Target::QProj:
            return {C, Q, 0, shape.qkvWidth()};
        case Target::KProj:
            return {C, K, Q, shape.qkvWidth()};
        case Target::VProj:
            return {C, K, Q + K, shape.qkvWidth()};
        case Target::GateProj:
            return {C, F, 0, shape.mlpInWidth()};
        case Target::UpProj:
            return {C, F, F, shape.mlpInWidth()};
    }
    return {};
}

std::string targetsProblem(const std::array<bool, kTargetCount>& targets, const GptShape& shape) {
    auto on = [&](Target t) { return targets[size_t(t)]; };
    auto listed = [&](std::initializer_list<Target> slices) {
        std::string names;
        for (Target t : slices)
            if (on(t)) names += (names.empty() ? "" : ", ") + std::string(targetName(t));
        return names;
    };
    const std::string qkv = listed({Target::QProj, Target::KProj, Target::VProj});
    if (on(Target::CAttn) && !qkv.empty())
        return "lora.targets lists c_attn and " + qkv +
               ": c_attn is the fused [q | k | v] linear, so both would adapt the same columns; "
               "keep c_attn (one adapter on all of q, k and v) or the separate q_proj / k_proj / "
               "v_proj (PEFT's Llama targets), not both";
    const std::string gateUp = listed({Target::GateProj, Target::UpProj});
    if (on(Target::CFc) && !gateUp.empty())
        return "lora.targets lists c_fc and " + gateUp +
               ": c_fc is the fused [gate | up] linear, so both would adapt the same columns; "
               "keep c_fc or the separate gate_proj / up_proj, not both";
    if (!gateUp.empty() && shape.mlp != GptShape::Mlp::SwiGlu)
        return "lora.targets lists " + gateUp +
               " but model.nonlinearity is gelu: only a SwiGLU MLP has gate and up projections; "
               "adapt c_fc (the GELU MLP's input linear) instead, or set model.nonlinearity: "
               "swiglu";
    return {};
}

namespace {

// dropout(inp) into `dropped` when dropout > 0; else inp itself.
template <typename Real>
const Real* adapterInput(Real* dropped, const Real* inp, size_t n, double dropout, uint64_t key) {
    if (dropout <= 0.0) return inp;
    ops::dropoutBackward(dropped, inp, n, dropout, key);  // the forward mask, applied out of place
    return dropped;
}

}  // namespace

template <typename Real>
void loraForward(Real* out, Real* u, Real* dropped, const Real* inp, const Real* A, const Real* B,
                 int N, int IN, int R, int OUT, Real scale, double dropout, uint64_t key, bool bf16,
                 int ldOut) {
    const int ld = ldOut > 0 ? ldOut : OUT;
    const Real* x = adapterInput(dropped, inp, size_t(N) * IN, dropout, key);
    precisionGemm<Real>(bf16, Trans::No, Trans::No, N, R, IN, Real(1), x, IN, A, R, Real(0), u, R);
    // out = scale * u · B + out: with B = 0 every element of out gets + 0 (unchanged).
    precisionGemm<Real>(bf16, Trans::No, Trans::No, N, OUT, R, scale, u, R, B, OUT, Real(1), out,
                        ld);
}

template <typename Real>
void loraBackward(Real* dinp, Real* dA, Real* dB, Real* du, Real* dropped, const Real* dout,
                  const Real* inp, const Real* u, const Real* A, const Real* B, int N, int IN,
                  int R, int OUT, Real scale, double dropout, uint64_t key, bool bf16, int ldOut) {
    const int ld = ldOut > 0 ? ldOut : OUT;
    // dB += scale * uᵀ · dout; du = scale * dout · Bᵀ. (dA, dB null: a frozen adapter.)
    if (dB)
        precisionGemm<Real>(bf16, Trans::Yes, Trans::No, R, OUT, N, scale, u, R, dout, ld, Real(1),
                            dB, OUT);
    precisionGemm<Real>(bf16, Trans::No, Trans::Yes, N, R, OUT, scale, dout, ld, B, OUT, Real(0),
                        du, R);
    // dA += dropout(inp)ᵀ · du (the mask recomputed from key).
    if (dA) {
        const Real* x = adapterInput(dropped, inp, size_t(N) * IN, dropout, key);
        precisionGemm<Real>(bf16, Trans::Yes, Trans::No, IN, R, N, Real(1), x, IN, du, R, Real(1),
                            dA, R);
    }
    if (dropout <= 0.0) {
        // dinp += du · Aᵀ.
        precisionGemm<Real>(bf16, Trans::No, Trans::Yes, N, IN, R, Real(1), du, R, A, R, Real(1),
                            dinp, IN);
        return;
    }
    // dinp += mask(du · Aᵀ): the product into the scratch (its dropped input is no longer
    // needed), the mask, then the add.
    precisionGemm<Real>(bf16, Trans::No, Trans::Yes, N, IN, R, Real(1), du, R, A, R, Real(0),
                        dropped, IN);
    const size_t n = size_t(N) * IN;
    ops::dropoutBackward(dropped, dropped, n, dropout, key);
    ops::residualForward(dinp, dinp, dropped, n);
}

void initA(float* A, int IN, int R, uint64_t key) {
    const double bound = 1.0 / std::sqrt(double(IN));
    const size_t n = size_t(IN) * R;
    for (size_t i = 0; i < n; ++i)
        A[i] = static_cast<float>((2.0 * rng::uniform(key, i) - 1.0) * bound);
}

#define WAFER_INSTANTIATE_LORA(Real)                                                              \
    template void loraForward<Real>(Real*, Real*, Real*, const Real*, const Real*, const Real*,   \
                                    int, int, int, int, Real, double, uint64_t, bool, int);       \
    template void loraBackward<Real>(Real*, Real*, Real*, Real*, Real*, const Real*, const Real*, \
                                     const Real*, const Real*, const Real*, int, int, int, int,   \
                                     Real, double, uint64_t, bool, int);

WAFER_INSTANTIATE_LORA(float)
WAFER_INSTANTIATE_LORA(double)
#undef WAFER_INSTANTIATE_LORA

}  // namespace ws::model::lora
