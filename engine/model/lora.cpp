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

std::optional<Target> targetFromName(std::string_view name) {
    if (name == "c_attn") return Target::CAttn;
    if (name == "attn.c_proj") return Target::AttnCProj;
    if (name == "c_fc") return Target::CFc;
    if (name == "mlp.c_proj") return Target::MlpCProj;
    return std::nullopt;
}

std::string_view targetName(Target target) {
    switch (target) {
        case Target::CAttn:
            return "c_attn";
        case Target::AttnCProj:
            return "attn.c_proj";
        case Target::CFc:
            return "c_fc";
        case Target::MlpCProj:
            return "mlp.c_proj";
    }
    return "";
}

LinearShape linearShape(Target target, const GptShape& shape) {
    switch (target) {
        case Target::CAttn:
            return {shape.channels, shape.qkvWidth()};
        case Target::AttnCProj:
            return {shape.qWidth(), shape.channels};
        case Target::CFc:
            return {shape.channels, shape.mlpInWidth()};
        case Target::MlpCProj:
            return {shape.ffn, shape.channels};
    }
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
                 int N, int IN, int R, int OUT, Real scale, double dropout, uint64_t key,
                 bool bf16) {
    const Real* x = adapterInput(dropped, inp, size_t(N) * IN, dropout, key);
    precisionGemm<Real>(bf16, Trans::No, Trans::No, N, R, IN, Real(1), x, IN, A, R, Real(0), u, R);
    // out = scale * u · B + out: with B = 0 every element of out gets + 0 (unchanged).
    precisionGemm<Real>(bf16, Trans::No, Trans::No, N, OUT, R, scale, u, R, B, OUT, Real(1), out,
                        OUT);
}

template <typename Real>
void loraBackward(Real* dinp, Real* dA, Real* dB, Real* du, Real* dropped, const Real* dout,
                  const Real* inp, const Real* u, const Real* A, const Real* B, int N, int IN,
                  int R, int OUT, Real scale, double dropout, uint64_t key, bool bf16) {
    // dB += scale * uᵀ · dout; du = scale * dout · Bᵀ. (dA, dB null: a frozen adapter.)
    if (dB)
        precisionGemm<Real>(bf16, Trans::Yes, Trans::No, R, OUT, N, scale, u, R, dout, OUT, Real(1),
                            dB, OUT);
    precisionGemm<Real>(bf16, Trans::No, Trans::Yes, N, R, OUT, scale, dout, OUT, B, OUT, Real(0),
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
                                    int, int, int, int, Real, double, uint64_t, bool);            \
    template void loraBackward<Real>(Real*, Real*, Real*, Real*, Real*, const Real*, const Real*, \
                                     const Real*, const Real*, const Real*, int, int, int, int,   \
                                     Real, double, uint64_t, bool);

WAFER_INSTANTIATE_LORA(float)
WAFER_INSTANTIATE_LORA(double)
#undef WAFER_INSTANTIATE_LORA

}  // namespace ws::model::lora
