// SPDX-License-Identifier: GPL-3.0-or-later
// LoRA on Llama's projections (issue 33, model/lora.h): the slice targets q_proj, k_proj, v_proj,
// gate_proj and up_proj add scale·x·A·B to exactly their columns of the fused c_attn / c_fc
// output and leave every other column bit for bit (fp32 and double, against a plain triple
// loop); their table names, sizes and offsets on a grouped-query model; the whole adapted
// Llama's gradient against finite differences (all seven targets, with and without adapter
// dropout); q/k/v adapters on a GQA model lowering the loss with the base frozen; merging into the
// fused weights' columns computes the adapted logits; and the refusals (overlapping targets,
// gate/up_proj on a GELU MLP).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <vector>

#include "engine/model/gpt.h"
#include "engine/model/lora.h"
#include "engine/model/lora_merge.h"
#include "engine/model/random.h"
#include "gradcheck.h"
#include "support/test_shapes.h"

namespace ws::model {
namespace {

using testing::expectGradientMatches;
using ws::testing::modelConfigOf;

const std::vector<std::string> kAllLlama = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                            "gate_proj", "up_proj", "down_proj"};

// V 11, C 16, 2 blocks, 4 query heads of 4 sharing 2 KV heads (Q 16, K 8), SwiGLU of 24,
// RMSNorm, rotary, no biases, untied head.
GptShape tinyLlama() {
    GptShape s = ws::testing::gptShape(11, 16, 2, 4, 24, 8, /*tied=*/false);
    s.position = GptShape::Position::Rotary;
    s.norm = GptShape::Norm::RmsNorm;
    s.mlp = GptShape::Mlp::SwiGlu;
    s.kvHeads = 2;
    s.qkvBias = s.attnProjBias = s.mlpBias = false;
    s.ropeTheta = 100.0;
    return s;
}

GptShape withLora(GptShape s, int rank, std::vector<std::string> targets, double dropout = 0.0) {
    s.applyLora(config::LoraConfig{
        .rank = rank, .alpha = 3.0 * rank, .dropout = dropout, .targets = std::move(targets)});
    return s;
}

std::vector<int32_t> tokens(int n, int vocab, uint64_t seed) {
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) ids[size_t(i)] = int32_t(rng::bits(seed, uint64_t(i)) % vocab);
    return ids;
}

// Random values everywhere (norm gains near 1), so every adapter is non-zero.
std::vector<float> randomParams(const GptShape& s, uint64_t seed, double stdev = 0.2) {
    const ParameterTable table(s);
    std::vector<float> p(table.totalSize());
    for (size_t i = 0; i < p.size(); ++i) p[i] = float(stdev * rng::standardNormal(seed, i));
    for (const auto& t : table.tensors())
        if (t.name.find("ln_") != std::string::npos && t.name.ends_with(".weight"))
            for (size_t i = 0; i < t.size; ++i) p[t.offset + i] += 1.0f;
    return p;
}

TEST(LoraLlama, TargetNamesAliasesAndSlices) {
    EXPECT_EQ(lora::targetFromName("o_proj"), lora::Target::AttnCProj);
    EXPECT_EQ(lora::targetFromName("down_proj"), lora::Target::MlpCProj);
    EXPECT_EQ(lora::targetFromName("q_proj"), lora::Target::QProj);
    EXPECT_EQ(lora::targetFromName("up_proj"), lora::Target::UpProj);
    EXPECT_FALSE(lora::targetFromName("self_attn.q_proj").has_value());
    const GptShape s = tinyLlama();  // Q 16, K 8, F 24
    const lora::LinearShape q = lora::linearShape(lora::Target::QProj, s);
    const lora::LinearShape k = lora::linearShape(lora::Target::KProj, s);
    const lora::LinearShape v = lora::linearShape(lora::Target::VProj, s);
    const lora::LinearShape up = lora::linearShape(lora::Target::UpProj, s);
    EXPECT_EQ((std::vector<int>{q.in, q.out, q.column, q.ld}), (std::vector<int>{16, 16, 0, 32}));
    EXPECT_EQ((std::vector<int>{k.in, k.out, k.column, k.ld}), (std::vector<int>{16, 8, 16, 32}));
    EXPECT_EQ((std::vector<int>{v.in, v.out, v.column, v.ld}), (std::vector<int>{16, 8, 24, 32}));
    EXPECT_EQ((std::vector<int>{up.in, up.out, up.column, up.ld}),
              (std::vector<int>{16, 24, 24, 48}));
    EXPECT_EQ(lora::allLinearTargets(s), kAllLlama);
    EXPECT_EQ(lora::allLinearTargets(ws::testing::gradcheckShape()),
              (std::vector<std::string>{"c_attn", "attn.c_proj", "c_fc", "mlp.c_proj"}));
}

TEST(LoraLlama, SliceAdaptersHaveTheirOwnTensorsInTargetOrder) {
    const GptShape s = withLora(tinyLlama(), 3, {"v_proj", "down_proj", "q_proj", "up_proj"});
    EXPECT_TRUE(s.validate().ok());
    const ParameterTable table(s), base(tinyLlama());
    const LayerSlice& h1 = table.layers()[size_t(ParameterTable::blockLayer(1))];
    const LayerSlice& b1 = base.layers()[size_t(ParameterTable::blockLayer(1))];
    std::vector<std::string> names;
    for (size_t t = h1.firstTensor + b1.tensorCount; t < h1.firstTensor + h1.tensorCount; ++t)
        names.push_back(table.tensors()[t].name);
    EXPECT_EQ(names, (std::vector<std::string>{
                         "h.1.mlp.c_proj.lora_A.weight", "h.1.mlp.c_proj.lora_B.weight",
                         "h.1.attn.q_proj.lora_A.weight", "h.1.attn.q_proj.lora_B.weight",
                         "h.1.attn.v_proj.lora_A.weight", "h.1.attn.v_proj.lora_B.weight",
                         "h.1.mlp.up_proj.lora_A.weight", "h.1.mlp.up_proj.lora_B.weight"}));
    EXPECT_EQ(table.find("h.0.attn.v_proj.lora_B.weight")->shape, (std::vector<int64_t>{3, 8}));
    EXPECT_EQ(table.find("h.0.attn.q_proj.lora_A.weight")->shape, (std::vector<int64_t>{16, 3}));
    EXPECT_EQ(table.find("h.0.mlp.up_proj.lora_B.weight")->shape, (std::vector<int64_t>{3, 24}));
    const int R = 3;
    EXPECT_EQ(table.totalSize(),
              base.totalSize() + 2 * R * ((24 + 16) + (16 + 16) + (16 + 8) + (16 + 24)));
    const BlockOffsets o = blockOffsets(s);
    EXPECT_EQ(h1.offset + o.loraB[size_t(lora::Target::UpProj)],
              table.find("h.1.mlp.up_proj.lora_B.weight")->offset);
    EXPECT_EQ(o.loraA[size_t(lora::Target::KProj)], 0u);  // not adapted
    // o_proj is attn.c_proj's adapter: the same tensors under either spelling.
    const ParameterTable oProj(withLora(tinyLlama(), 2, {"o_proj"}));
    const ParameterTable cProj(withLora(tinyLlama(), 2, {"attn.c_proj"}));
    ASSERT_EQ(oProj.tensors().size(), cProj.tensors().size());
    EXPECT_NE(oProj.find("h.0.attn.c_proj.lora_A.weight"), nullptr);
}

// The slice kernel: loraForward with ldOut into a fused (N, LD) buffer at column c changes
// columns [c, c + OUT) by scale·x·A·B and no other value; loraBackward reads only those columns
// of dout. Checked against a plain double triple loop.
template <typename Real>
void checkSliceKernel(double tolerance) {
    const int N = 7, IN = 6, R = 2, OUT = 5, LD = 17, column = 9;
    const Real scale = Real(1.5);
    std::vector<Real> fused(size_t(N) * LD), x(size_t(N) * IN), A(size_t(IN) * R),
        B(size_t(R) * OUT);
    auto fill = [](std::vector<Real>& v, uint64_t seed) {
        for (size_t i = 0; i < v.size(); ++i) v[i] = Real(rng::standardNormal(seed, i));
    };
    fill(fused, 1);
    fill(x, 2);
    fill(A, 3);
    fill(B, 4);
    const std::vector<Real> before = fused;
    std::vector<Real> u(size_t(N) * R);
    lora::loraForward<Real>(fused.data() + column, u.data(), nullptr, x.data(), A.data(), B.data(),
                            N, IN, R, OUT, scale, 0.0, 0, false, LD);
    for (int n = 0; n < N; ++n)
        for (int j = 0; j < LD; ++j) {
            const size_t at = size_t(n) * LD + size_t(j);
            if (j < column || j >= column + OUT) {
                EXPECT_EQ(std::memcmp(&fused[at], &before[at], sizeof(Real)), 0)
                    << "column " << j << " outside the slice changed";
                continue;
            }
            double sum = 0;
            for (int r = 0; r < R; ++r) {
                double xa = 0;
                for (int i = 0; i < IN; ++i)
                    xa += double(x[size_t(n) * IN + size_t(i)]) *
                          double(A[size_t(i) * R + size_t(r)]);
                sum += xa * double(B[size_t(r) * OUT + size_t(j - column)]);
            }
            EXPECT_NEAR(double(fused[at]), double(before[at]) + double(scale) * sum, tolerance)
                << n << "," << j;
        }
    // Backward: dout outside the slice is poisoned with NaN, so reading it would show.
    std::vector<Real> dout(size_t(N) * LD, Real(NAN));
    for (int n = 0; n < N; ++n)
        for (int j = 0; j < OUT; ++j)
            dout[size_t(n) * LD + size_t(column + j)] =
                Real(rng::standardNormal(5, size_t(n * OUT + j)));
    std::vector<Real> dx(size_t(N) * IN, 0), dA(size_t(IN) * R, 0), dB(size_t(R) * OUT, 0),
        du(size_t(N) * R);
    lora::loraBackward<Real>(dx.data(), dA.data(), dB.data(), du.data(), nullptr,
                             dout.data() + column, x.data(), u.data(), A.data(), B.data(), N, IN, R,
                             OUT, scale, 0.0, 0, false, LD);
    // dB = scale·uᵀ·dY_slice; dx = scale·dY_slice·Bᵀ·Aᵀ.
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < OUT; ++j) {
            double want = 0;
            for (int n = 0; n < N; ++n)
                want += double(u[size_t(n) * R + size_t(r)]) *
                        double(dout[size_t(n) * LD + size_t(column + j)]);
            EXPECT_NEAR(double(dB[size_t(r) * OUT + size_t(j)]), double(scale) * want, tolerance);
        }
    for (int n = 0; n < N; ++n)
        for (int i = 0; i < IN; ++i) {
            double want = 0;
            for (int r = 0; r < R; ++r) {
                double dun = 0;
                for (int j = 0; j < OUT; ++j)
                    dun += double(dout[size_t(n) * LD + size_t(column + j)]) *
                           double(B[size_t(r) * OUT + size_t(j)]);
                want += double(scale) * dun * double(A[size_t(i) * R + size_t(r)]);
            }
            EXPECT_NEAR(double(dx[size_t(n) * IN + size_t(i)]), want, tolerance);
        }
    for (Real g : dA) EXPECT_TRUE(std::isfinite(double(g)));
}

TEST(LoraLlama, SliceKernelWritesOnlyItsColumnsFp32) {
    checkSliceKernel<float>(1e-4);
}

TEST(LoraLlama, SliceKernelWritesOnlyItsColumnsDouble) {
    checkSliceKernel<double>(1e-12);
}

// In the model: the fused qkv / c_fc activations of an adapted Llama equal the base's plus
// scale·ln(x)·A·B in each slice's columns (the model's own first block, fp32 and double).
template <typename Real>
void checkModelSlices(double tolerance) {
    const GptShape s = withLora(tinyLlama(), 2, {"k_proj", "v_proj", "up_proj"});
    const std::vector<float> p = randomParams(s, 11);
    const std::vector<float> baseP = lora::baseWeights(s, p.data());
    const int B = 1, T = 6, C = s.channels, QKV = s.qkvWidth(), M = s.mlpInWidth();
    const auto in = tokens(B * T, s.vocab, 3);
    Gpt<Real> adapted(s, B, T), base(lora::baseShape(s), B, T);
    const std::vector<Real> pa(p.begin(), p.end()), pb(baseP.begin(), baseP.end());
    adapted.forward(pa.data(), in.data(), nullptr, false, 0);
    base.forward(pb.data(), in.data(), nullptr, false, 0);
    // Block 0's input is the same embedding, so ln_1, q/k/v and the attention before c_proj
    // agree; the adapters change k and v, so only block 0's qkv is compared before the change
    // propagates. q (columns [0, Q)) is untouched bit for bit.
    const ParameterTable table(s);
    const LayerSlice& h0 = table.layers()[size_t(ParameterTable::blockLayer(0))];
    const Real* qkvA = adapted.activation("h.0.attn.qkv");
    const Real* qkvB = base.activation("h.0.attn.qkv");
    const Real* ln1 = adapted.activation("h.0.ln_1");
    ASSERT_TRUE(qkvA && qkvB && ln1);
    const BlockOffsets o = blockOffsets(s);
    const int Q = s.qWidth();
    // The rotary rotation acts on q and k after the adapters; compare v (no rotation) exactly
    // as base + update and q bit for bit.
    for (int n = 0; n < B * T; ++n) {
        for (int j = 0; j < Q; ++j)
            EXPECT_EQ(qkvA[size_t(n) * QKV + size_t(j)], qkvB[size_t(n) * QKV + size_t(j)]);
        const lora::LinearShape v = lora::linearShape(lora::Target::VProj, s);
        const float* A = p.data() + h0.offset + o.loraA[size_t(lora::Target::VProj)];
        const float* Bm = p.data() + h0.offset + o.loraB[size_t(lora::Target::VProj)];
        for (int j = 0; j < v.out; ++j) {
            double sum = 0;
            for (int r = 0; r < 2; ++r) {
                double xa = 0;
                for (int i = 0; i < C; ++i)
                    xa += double(ln1[size_t(n) * C + size_t(i)]) * double(A[i * 2 + r]);
                sum += xa * double(Bm[size_t(r) * size_t(v.out) + size_t(j)]);
            }
            const size_t at = size_t(n) * QKV + size_t(v.column + j);
            EXPECT_NEAR(double(qkvA[at]), double(qkvB[at]) + s.loraScale * sum, tolerance);
        }
    }
    // c_fc's gate half is block 0's base value plus nothing: recompute it from ln_2 directly.
    const Real* fc = adapted.activation("h.0.mlp.c_fc");
    const Real* ln2 = adapted.activation("h.0.ln_2");
    ASSERT_TRUE(fc && ln2);
    const float* W = p.data() + h0.offset + o.fcw;
    const lora::LinearShape up = lora::linearShape(lora::Target::UpProj, s);
    const float* A = p.data() + h0.offset + o.loraA[size_t(lora::Target::UpProj)];
    const float* Bm = p.data() + h0.offset + o.loraB[size_t(lora::Target::UpProj)];
    for (int n = 0; n < B * T; ++n)
        for (int j = 0; j < M; ++j) {
            double want = 0;
            for (int i = 0; i < C; ++i)
                want +=
                    double(ln2[size_t(n) * C + size_t(i)]) * double(W[size_t(i) * M + size_t(j)]);
            if (j >= up.column) {
                for (int r = 0; r < 2; ++r) {
                    double xa = 0;
                    for (int i = 0; i < C; ++i)
                        xa += double(ln2[size_t(n) * C + size_t(i)]) * double(A[i * 2 + r]);
                    want += s.loraScale * xa *
                            double(Bm[size_t(r) * size_t(up.out) + size_t(j - up.column)]);
                }
            }
            EXPECT_NEAR(double(fc[size_t(n) * M + size_t(j)]), want, tolerance) << n << "," << j;
        }
}

TEST(LoraLlama, ModelSlicesAddToTheirColumnsFp32) {
    checkModelSlices<float>(1e-4);
}

TEST(LoraLlama, ModelSlicesAddToTheirColumnsDouble) {
    checkModelSlices<double>(1e-10);
}

void checkAdaptedGradient(std::vector<std::string> targets, double loraDropout) {
    GptShape s = withLora(tinyLlama(), 2, std::move(targets), loraDropout);
    s.dropout = 0.1;
    const int B = 2, T = 5;
    const ParameterTable table(s);
    const std::vector<float> init = randomParams(s, 5, 0.2);
    std::vector<double> params(init.begin(), init.end());
    Gpt<double> gpt(s, B, T);
    const auto in = tokens(B * T, s.vocab, 1), tg = tokens(B * T, s.vocab, 2);
    const std::function<double()> loss = [&] {
        return gpt.forward(params.data(), in.data(), tg.data(), true, 31);
    };
    loss();
    std::vector<double> grads(params.size(), 0.0);
    gpt.backward(params.data(), grads.data());
    for (const TensorSlice& t : table.tensors()) {
        if (t.name.find("lora_") == std::string::npos) continue;
        double norm = 0;
        for (size_t i = 0; i < t.size; ++i) norm += std::abs(grads[t.offset + i]);
        EXPECT_GT(norm, 0.0) << t.name;
    }
    std::vector<size_t> all(params.size());
    std::iota(all.begin(), all.end(), size_t{0});
    expectGradientMatches(params, grads, loss, "dparams", std::move(all));
}

TEST(LoraLlama, AllSevenTargetsGradientMatchesFiniteDifferences) {
    checkAdaptedGradient(kAllLlama, 0.0);
}

TEST(LoraLlama, QkvSlicesWithAdapterDropoutGradientMatches) {
    checkAdaptedGradient({"q_proj", "k_proj", "v_proj", "gate_proj"}, 0.25);
}

// q/k/v adapters on a GQA model (2 KV heads for 4 query heads), the base frozen as a LoRA run
// freezes it: SGD on the adapters alone lowers the loss of a repeated sequence; the base is
// untouched; fp32 and bf16.
TEST(LoraLlama, QkvAdaptersOnGqaTrainWithTheBaseFrozen) {
    for (const bool bf16 : {false, true}) {
        GptShape s = withLora(tinyLlama(), 4, {"q_proj", "k_proj", "v_proj"});
        s.bf16 = bf16;
        const ParameterTable table(s);
        std::vector<float> params(table.totalSize());
        // A base whose attention matters (weights of stdev 0.3), the adapters as a run starts
        // them (A kaiming-uniform, B = 0).
        config::ModelConfig model = modelConfigOf(s);
        model.initializer = {"normal", 0.0, 0.3, -1, 1};
        model.embeddingInitializer = {"normal", 0.0, 0.3, -1, 1};
        initParameters(table, model, 7, params.data());
        const std::vector<float> start = params;
        std::vector<bool> frozen(table.tensors().size());
        for (size_t t = 0; t < frozen.size(); ++t)
            frozen[t] = table.tensors()[t].name.find(".lora_") == std::string::npos;
        const int B = 2, T = 8;
        Gpt<float> gpt(s, B, T);
        gpt.setFrozen(frozen);
        std::vector<int32_t> in(size_t(B) * T), tg(size_t(B) * T);
        const int pattern[] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
        for (int b = 0; b < B; ++b)
            for (int t = 0; t < T; ++t) {
                in[size_t(b * T + t)] = pattern[(t + b) % 10];
                tg[size_t(b * T + t)] = pattern[(t + b + 1) % 10];
            }
        std::vector<float> g(params.size());
        float first = 0, last = 0;
        for (int step = 0; step < 60; ++step) {
            std::fill(g.begin(), g.end(), 0.0f);
            last = gpt.forward(params.data(), in.data(), tg.data(), true, uint64_t(step));
            if (step == 0) first = last;
            gpt.backward(params.data(), g.data());
            for (size_t i = 0; i < params.size(); ++i) params[i] -= 0.5f * g[i];
        }
        ::testing::Test::RecordProperty(bf16 ? "bf16_loss" : "fp32_loss",
                                        std::to_string(first) + " -> " + std::to_string(last));
        EXPECT_LT(last, 0.8f * first)
            << (bf16 ? "bf16" : "fp32") << ": " << first << " -> " << last;
        for (size_t t = 0; t < frozen.size(); ++t) {
            const TensorSlice& slice = table.tensors()[t];
            if (!frozen[t]) continue;
            EXPECT_EQ(std::memcmp(params.data() + slice.offset, start.data() + slice.offset,
                                  slice.size * sizeof(float)),
                      0)
                << slice.name << " is frozen";
        }
    }
}

TEST(LoraLlama, MergeAddsEachSliceIntoItsColumnsAndComputesTheAdaptedLogits) {
    const GptShape s = withLora(tinyLlama(), 3, kAllLlama);
    const std::vector<float> p = randomParams(s, 9);
    const std::vector<float> merged = lora::mergeAdapters(s, p.data());
    const ParameterTable table(s), base(lora::baseShape(s));
    // The fused weights, element by element: W + Σ over the slices covering the column.
    const BlockOffsets ao = blockOffsets(s), bo = blockOffsets(base.shape());
    for (int l = 0; l < s.layers; ++l) {
        const size_t from = table.layers()[size_t(ParameterTable::blockLayer(l))].offset;
        const size_t into = base.layers()[size_t(ParameterTable::blockLayer(l))].offset;
        for (const lora::Target t : {lora::Target::QProj, lora::Target::KProj, lora::Target::VProj,
                                     lora::Target::GateProj, lora::Target::UpProj}) {
            const lora::LinearShape ls = lora::linearShape(t, s);
            const bool attn = t <= lora::Target::VProj;
            const size_t w = attn ? bo.qkvw : bo.fcw, aw = attn ? ao.qkvw : ao.fcw;
            const float* A = p.data() + from + ao.loraA[size_t(t)];
            const float* B = p.data() + from + ao.loraB[size_t(t)];
            for (int i = 0; i < ls.in; ++i)
                for (int j = 0; j < ls.out; ++j) {
                    double sum = 0;
                    for (int r = 0; r < 3; ++r)
                        sum += double(A[i * 3 + r]) * double(B[r * ls.out + j]);
                    const size_t at = size_t(i) * size_t(ls.ld) + size_t(ls.column + j);
                    EXPECT_EQ(merged[into + w + at],
                              float(double(p[from + aw + at]) + s.loraScale * sum))
                        << lora::targetName(t) << " [" << i << "," << j << "]";
                }
        }
    }
    std::vector<int32_t> ids = tokens(8, s.vocab, 4);
    Gpt<float> adapted(s, 1, 8), plain(base.shape(), 1, 8);
    adapted.forward(p.data(), ids.data(), nullptr, false, 0);
    plain.forward(merged.data(), ids.data(), nullptr, false, 0);
    double worst = 0.0;
    for (int t = 0; t < 8; ++t)
        for (int v = 0; v < s.vocab; ++v)
            worst = std::max(
                worst, std::abs(double(adapted.logits(0, t)[v]) - double(plain.logits(0, t)[v])));
    EXPECT_LT(worst, 1e-4);
}

TEST(LoraLlama, OverlappingTargetsAndGateUpOnGeluAreRefused) {
    auto problem = [](GptShape s, std::vector<std::string> targets) {
        const Status st = withLora(std::move(s), 2, std::move(targets)).validate();
        return st.ok() ? std::string() : st.error().message;
    };
    const std::string qkv = problem(tinyLlama(), {"c_attn", "v_proj", "q_proj"});
    EXPECT_NE(qkv.find("lora.targets lists c_attn and q_proj, v_proj"), std::string::npos) << qkv;
    EXPECT_NE(qkv.find("not both"), std::string::npos) << qkv;
    const std::string fc = problem(tinyLlama(), {"gate_proj", "c_fc"});
    EXPECT_NE(fc.find("c_fc and gate_proj"), std::string::npos) << fc;
    const std::string gelu = problem(ws::testing::gradcheckShape(), {"up_proj"});
    EXPECT_NE(gelu.find("model.nonlinearity is gelu"), std::string::npos) << gelu;
    EXPECT_NE(gelu.find("adapt c_fc"), std::string::npos) << gelu;
    // Slices without their fused linear, and GPT-2's targets on a Llama, are fine.
    EXPECT_EQ(problem(tinyLlama(), {"q_proj", "k_proj", "v_proj", "c_fc"}), "");
    EXPECT_EQ(problem(tinyLlama(), {"c_attn", "gate_proj", "up_proj"}), "");
    EXPECT_EQ(problem(ws::testing::gradcheckShape(), {"q_proj", "v_proj"}), "");
}

}  // namespace
}  // namespace ws::model
