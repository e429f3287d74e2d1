// SPDX-License-Identifier: GPL-3.0-or-later
// bf16 mode against the fp32 reference, a whole step at a time (ggml's backend-consistency test,
// for the model): a gpt-nano-sized training step in bf16 (oneDNN bf16 matmuls) against fp32, the
// oneDNN path against the emulated one, bit-identical repeats, and a tiny model still learning.
//
// Tolerance for a whole step, derived from bf16's unit roundoff u = 2^-8:
// bf16 mode rounds S tensors on the way from the weights to the loss (per block: ln_1, qkv,
// probabilities, attention output, attention projection, ln_2, c_fc, GELU, MLP projection, plus the
// weights = 9 + 1; then ln_f, logits and the head weights), so S = 10·L + 3. RNE leaves each
// element a relative error of at most u, roughly uniform in [-u, u], so of RMS u/√3. Errors from
// different sites are independent and at initialisation the network passes relative
// perturbations through with gain about 1 (pre-LN blocks, residual stream kept fp32), so the
// loss and the activations move by about u·√(S/3) relative. The backward rounds the gradient
// operands of its matmuls too (as autocast does), about as many sites again: gradients move by
// about u·√(2S/3). Each check allows 4x that expected size.
//
// This is an upper estimate: LayerNorm renormalises and the fp32 residual stream dilutes each
// branch's rounding, so a gpt-nano step at initialisation shows about 5e-3 relative on the
// gradients (bound 8e-2) and 4e-6 on the loss (bound 6e-2).
//
// The oneDNN and emulated bf16 paths round at the same points and differ only in the fp32
// summation order inside the matmuls (γ_K-sized, see bf16_matmul_test.cpp). That flips a
// downstream bf16 rounding by one ulp now and then, and every flip perturbs all later rounding
// sites, so the two paths decorrelate to a good fraction of the bf16 noise (about 0.4 of the
// bf16-to-fp32 distance here): each must be within the tolerance of fp32, and they must be no
// further from each other than bf16 is from fp32.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "engine/model/gpt.h"
#include "engine/model/random.h"
#include "engine/tensor/matmul.h"
#include "engine/tensor/threads.h"
#include "repeated_sequence.h"
#include "support/test_shapes.h"

namespace ws::model {
namespace {

std::vector<int32_t> tokens(int n, int vocab, uint64_t seed) {
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) ids[size_t(i)] = int32_t(rng::bits(seed, uint64_t(i)) % vocab);
    return ids;
}

std::vector<float> weightsFor(const GptShape& s, uint64_t seed) {
    const ParameterTable table(s);
    std::vector<float> p(table.totalSize());
    initParameters(table, ws::testing::modelConfigOf(s), seed, p.data());
    return p;
}

struct Step {
    float loss = 0;
    std::vector<float> grads;
};

Step runStep(const GptShape& s, int B, int T, const std::vector<float>& params, bool bf16,
             uint64_t dropoutSeed = 0) {
    GptShape shape = s;
    shape.bf16 = bf16;
    Gpt<float> gpt(shape, B, T);
    const auto in = tokens(B * T, s.vocab, 21), tg = tokens(B * T, s.vocab, 22);
    Step r;
    r.grads.assign(params.size(), 0.0f);
    r.loss = gpt.forward(params.data(), in.data(), tg.data(), true, dropoutSeed);
    gpt.backward(params.data(), r.grads.data());
    return r;
}

double relativeL2(const std::vector<float>& a, const std::vector<float>& ref) {
    double diff = 0, norm = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        diff += (double(a[i]) - ref[i]) * (double(a[i]) - ref[i]);
        norm += double(ref[i]) * ref[i];
    }
    return std::sqrt(diff / norm);
}

class ScopedEmulation {
public:
    ScopedEmulation() { tensor::detail::forceBf16Emulation(true); }
    ~ScopedEmulation() { tensor::detail::forceBf16Emulation(false); }
    ScopedEmulation(const ScopedEmulation&) = delete;
    ScopedEmulation& operator=(const ScopedEmulation&) = delete;
};

TEST(Bf16Step, NanoTrainingStepMatchesFp32WithinTheBf16Tolerance) {
    tensor::setComputeThreads(2);
    const GptShape s = ws::testing::nanoShape();
    const int B = 2, T = 64;
    const std::vector<float> p = weightsFor(s, 3);
    const Step fp32 = runStep(s, B, T, p, false);
    const Step bf16 = runStep(s, B, T, p, true);
    Step emulated;
    {
        const ScopedEmulation emulate;
        emulated = runStep(s, B, T, p, true);
    }

    const double u = std::ldexp(1.0, -8);
    const double sites = 10.0 * s.layers + 3;
    const double lossTol = 4 * u * std::sqrt(sites / 3);
    const double gradTol = 4 * u * std::sqrt(2 * sites / 3);
    const double lossDiff = std::abs(double(bf16.loss) - fp32.loss) / fp32.loss;
    const double gradDiff = relativeL2(bf16.grads, fp32.grads);
    EXPECT_LT(lossDiff, lossTol) << "bf16 loss " << bf16.loss << " fp32 " << fp32.loss;
    EXPECT_LT(gradDiff, gradTol);
    EXPECT_GT(gradDiff, 0.0) << "bf16 mode computed exactly what fp32 did";
    for (float g : bf16.grads) ASSERT_TRUE(std::isfinite(g));

    // Every tensor's gradient, not just the whole: none may be far off on its own.
    const ParameterTable table(s);
    for (const TensorSlice& t : table.tensors()) {
        const std::vector<float> a(bf16.grads.begin() + ptrdiff_t(t.offset),
                                   bf16.grads.begin() + ptrdiff_t(t.offset + t.size));
        const std::vector<float> r(fp32.grads.begin() + ptrdiff_t(t.offset),
                                   fp32.grads.begin() + ptrdiff_t(t.offset + t.size));
        EXPECT_LT(relativeL2(a, r), 2 * gradTol) << t.name;
    }

    // The emulated path is as close to fp32 as oneDNN's, and no further from it than fp32 is.
    EXPECT_LT(std::abs(double(emulated.loss) - fp32.loss) / fp32.loss, lossTol);
    EXPECT_LT(relativeL2(emulated.grads, fp32.grads), gradTol);
    EXPECT_LT(relativeL2(emulated.grads, bf16.grads), gradDiff);
}

TEST(Bf16Step, RepeatedStepsAreBitIdentical) {
    GptShape s = ws::testing::gptShape(97, 64, 2, 4, 256, 96);
    s.dropout = 0.1;
    s.attnDropout = 0.1;
    const std::vector<float> p = weightsFor(s, 5);
    for (const int threads : {1, 2}) {
        tensor::setComputeThreads(threads);
        const Step a = runStep(s, 4, 80, p, true, 9);
        const Step b = runStep(s, 4, 80, p, true, 9);
        EXPECT_EQ(std::memcmp(&a.loss, &b.loss, sizeof(float)), 0) << threads << " threads";
        EXPECT_EQ(std::memcmp(a.grads.data(), b.grads.data(), a.grads.size() * sizeof(float)), 0)
            << threads << " threads";
    }
    tensor::setComputeThreads(2);
}

TEST(Bf16Step, TinyModelStillOverfitsARepeatedSequence) {
    GptShape s = ws::testing::gptShape(16, 32, 2, 4, 128, 32);
    s.bf16 = true;
    std::vector<float> p = weightsFor(s, 3);
    const auto losses = testing::overfitRepeatedSequence(s, p, 80);
    EXPECT_LT(losses.last, 0.25f * losses.first)
        << "first " << losses.first << " last " << losses.last;
}

}  // namespace
}  // namespace ws::model
