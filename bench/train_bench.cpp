// SPDX-License-Identifier: GPL-3.0-or-later
// wafer_train_bench: training-step throughput of Gpt<float> on two shapes (a 4-layer x 256 model
// with V = 8192, and GPT-2 small), B = 4, T = 256, on request (--shape smollm) on the Llama shape
// of SmolLM-135M read from presets/smollm-135m.yaml (rotary, RMSNorm, SwiGLU, 9 heads sharing 3
// KV heads) at the same B and T, and (--shape 111m) on Cerebras-GPT 111M read from
// presets/cerebras-gpt-111m.yaml at its own context, B = 1, T = 2048. Prints, for each shape and
// measured in the same run: tokens/s, achieved GFLOP/s (llm.c count), the GEMM throughput of the
// step's own products (q|k|v, output projection, MLP in and out, LM head; each forward, input
// gradient dX and weight gradient dW) through every backend, their best forward (the "peak") and
// their rate over one step's mix of them (each product's FLOPs at its own measured rate, timed
// before and after the steps, the mean used), the step's fraction of that rate, and then
// PyTorch's tokens/s on the same model (bench/pytorch_reference.py, run as a child process) and
// our speed-up over it, ours timed again after PyTorch and the two timings averaged (the machines
// are shared: A B A).
// The optimizer step is the engine's AdamW (engine/optim). --precision bf16 times the model's bf16
// mode (GptShape::bf16: oneDNN bf16 matmuls) right after the fp32 step in the same run and prints
// the ratio, plus the bf16 GEMM beside sgemm on the same shapes and the bf16 path oneDNN chose;
// PyTorch then runs under bf16 autocast. Each shape also prints each model's activation buffer
// (what a step keeps for backward) and the process's peak resident memory (getrusage), which is
// what long sequences make the limit. --lora R also times a LoRA fine-tune step (rank R adapters on
// all four linears of each block, the base frozen: issue 16; on a Llama block those are q|k|v, o,
// gate|up and down) interleaved with the full step, in fp32 and, with
// --precision bf16, in bf16 too, as training runs it (the backward skips the frozen base's weight
// gradients, Gpt::setFrozen; AdamW keeps state for the adapters only, GradientLayout::Trainable),
// and prints both step times, the LoRA step's rate for its FLOPs (4N per token plus attention: no
// weight gradients of the frozen base) against the GEMM mix rate, and the MemoryX bytes each needs
// (fp32 weights of every parameter, gradients and AdamW state of those that train). Not run by
// CTest; see --help.
#include <cblas.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench_machine.h"
#include "engine/config/config_yaml.h"
#include "engine/model/gpt.h"
#include "engine/model/parameters.h"
#include "engine/model/random.h"
#include "engine/optim/optimizer.h"
#include "engine/session/param_groups.h"
#include "engine/tensor/bf16.h"
#include "engine/tensor/matmul.h"
#include "engine/tensor/threads.h"

namespace {

using ws::Status;
namespace config = ws::config;
namespace optim = ws::optim;
namespace session = ws::session;
namespace model = ws::model;
namespace tensor = ws::tensor;
using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

struct BenchShape {
    std::string key, label;
    config::ModelConfig model;
    int batch = 4, seqLen = 256;  // unless --batch / --seq say otherwise
    int steps = 10;               // unless --steps says otherwise
    bool hasPytorchReference = true;
};

BenchShape smallShape() {
    BenchShape s{"small", "4 layers x 256 (V=8192, NH=4, F=1024)", {}};
    s.model.vocabSize = 8192;
    s.model.hiddenSize = 256;
    s.model.numHiddenLayers = 4;
    s.model.numHeads = 4;
    s.model.filterSize = 1024;
    s.model.maxPositionEmbeddings = 256;
    return s;
}

BenchShape gpt2Shape() {
    BenchShape s{"gpt2", "GPT-2 small (12 x 768, V=50257, NH=12, F=3072)", {}};
    s.steps = 3;
    return s;
}

// A preset's model, so the bench follows the preset.
std::optional<BenchShape> presetShape(const std::string& key, const std::string& file) {
    const auto loaded = config::loadConfigFile(std::string(WAFER_SOURCE_DIR) + "/presets/" + file);
    if (!loaded.ok()) {
        std::fprintf(stderr, "cannot read presets/%s: %s\n", file.c_str(),
                     loaded.error().message.c_str());
        return std::nullopt;
    }
    BenchShape s{key, "", loaded->config.model};
    const model::GptShape shape = model::GptShape::fromConfig(s.model);
    s.label =
        fmt::format("{} ({} x {}, V={}, NH={}, KV heads={}, F={})", s.model.name, shape.layers,
                    shape.channels, shape.vocab, shape.heads, shape.kvHeadCount(), shape.ffn);
    return s;
}

// SmolLM-135M's shape (Llama blocks) at the GPT-2 shapes' B = 4, T = 256.
std::optional<BenchShape> smollmShape() {
    auto s = presetShape("smollm", "smollm-135m.yaml");
    if (s) s->steps = 2;
    return s;
}

// One sequence of Cerebras-GPT 111M's full context (T = 2048), where attention memory, not the
// matmuls, decides whether a step fits.
std::optional<BenchShape> cerebras111mShape() {
    auto s = presetShape("111m", "cerebras-gpt-111m.yaml");
    if (!s) return s;
    s->batch = 1;
    s->seqLen = s->model.maxPositionEmbeddings;
    s->steps = 2;
    s->hasPytorchReference = false;  // bench/pytorch_reference.py knows small, gpt2 and smollm
    return s;
}

double peakRssMiB() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return double(usage.ru_maxrss) / 1024.0;  // Linux: KiB
}

struct Options {
    std::string shape = "all";
    int batch = 0, seqLen = 0, steps = 0, warmup = 1, threads = 0;  // 0: the shape's default
    bool pytorch = true;
    std::string backend = "openblas";
    std::string precision = "fp32";  // fp32, or bf16 (timed beside fp32)
    int loraRank = 0;                // > 0: a LoRA fine-tune step timed beside the full one
    bool gemmsOnly = false;          // time the shape's GEMMs, not the steps
    std::string script = std::string(WAFER_BENCH_DIR) + "/pytorch_reference.py";
};

void usage() {
    std::printf(
        "usage: wafer_train_bench [--shape small|gpt2|all|smollm|111m] [--steps N] [--warmup N]\n"
        "                         [--threads N] [--backend openblas|eigen] [--batch B] [--seq T]\n"
        "                         [--precision fp32|bf16] [--lora R] [--no-pytorch]\n"
        "                         [--pytorch-script FILE] [--gemms-only]\n"
        "Times training steps (forward, backward, AdamW) and compares with sgemm and PyTorch.\n"
        "--precision bf16 also times bf16 mode in the same run and prints bf16 / fp32.\n"
        "--lora R also times a LoRA fine-tune step (rank R, base frozen) beside the full one.\n"
        "--gemms-only times the shape's GEMMs (forward, dX, dW) and no training step.\n"
        "all = small and gpt2 (B=4, T=256); smollm = SmolLM-135M's Llama shape (B=4, T=256);\n"
        "111m = Cerebras-GPT 111M at B=1, T=2048.\n"
        "Default steps: 10 for small, 3 for gpt2, 2 for smollm and 111m.\n");
}

// Time one GEMM of the model's shapes: C[M,N] = A[M,K] · B[K,N]; best of `reps` after warm-up.
double gemmGflops(int M, int N, int K,
                  const std::function<void(const float*, const float*, float*)>& run) {
    std::vector<float> A(size_t(M) * K), B(size_t(K) * N), C(size_t(M) * N);
    for (size_t i = 0; i < A.size(); ++i) A[i] = float(model::rng::uniform(1, i) - 0.5);
    for (size_t i = 0; i < B.size(); ++i) B[i] = float(model::rng::uniform(2, i) - 0.5);
    run(A.data(), B.data(), C.data());
    double best = 1e30;
    for (int r = 0; r < 3; ++r) {
        const auto t0 = Clock::now();
        run(A.data(), B.data(), C.data());
        best = std::min(best, seconds(t0, Clock::now()));
    }
    return 2.0 * M * N * K / best / 1e9;
}

struct GemmPeak {
    double best = 0;  // the fastest fp32 backend on the fastest forward product
    std::string where;
    // The step's products at each one's measured rate, weighted by their FLOPs in a step (every
    // block's four linears, the LM head once; forward, input gradient and weight gradient): total
    // FLOPs / total time. The LoRA mix leaves out the weight gradients (the base is frozen).
    double mixFp32 = 0, mixBf16 = 0, loraMixFp32 = 0, loraMixBf16 = 0;
};

// The rate of a mix of products: sum of FLOPs over the sum of their times.
struct RateMix {
    double flops = 0, seconds = 0;
    void add(double f, double gflops) {
        flops += f;
        seconds += f / (gflops * 1e9);
    }
    double gflops() const { return seconds > 0 ? flops / seconds / 1e9 : 0.0; }
};

// The three products of a linear out (BT,OUT) = inp (BT,IN) · W (IN,OUT) in a training step.
enum class Form { Forward, InputGrad, WeightGrad };

// Times one form of a linear's product through the fp32 engine backend or the bf16 backend, with
// operands laid out (and, for bf16, pre-packed) as ops.cpp hands them over: forward inp · W (W
// packed); input gradient dout · Wᵀ (both packed); weight gradient inpᵀ · dout (dout packed).
double formGflops(Form form, int BT, int IN, int OUT, bool bf16) {
    using tensor::Trans;
    int M = BT, N = OUT, K = IN;
    Trans ta = Trans::No, tb = Trans::No;
    int lda = IN, ldb = OUT;
    if (form == Form::InputGrad) {
        N = IN, K = OUT, tb = Trans::Yes, lda = OUT, ldb = OUT;
    } else if (form == Form::WeightGrad) {
        M = IN, K = BT, ta = Trans::Yes, lda = IN, ldb = OUT;
    }
    std::vector<uint16_t> packedA, packedB;
    return gemmGflops(M, N, K, [&](const float* A, const float* B, float* C) {
        if (!bf16) {
            tensor::matmul<float>(tensor::MatmulBackend::OpenBlas, ta, tb, M, N, K, 1.0f, A, lda, B,
                                  ldb, 0.0f, C, N);
            return;
        }
        if (packedB.empty()) {
            packedB.resize(size_t(K) * N);
            tensor::floatToBf16(B, packedB.data(), packedB.size());
            if (form == Form::InputGrad) {
                packedA.resize(size_t(M) * K);
                tensor::floatToBf16(A, packedA.data(), packedA.size());
            }
        }
        tensor::matmulBf16(ta, tb, M, N, K, 1.0f, A, packedA.empty() ? nullptr : packedA.data(),
                           lda, nullptr, packedB.data(), ldb, 0.0f, C, N);
    });
}

// Times the step's products; `print` false: only the mix line.
GemmPeak measureGemms(const model::GptShape& s, int tokens, int threads, bool bf16,
                      bool print = true) {
    struct Case {
        const char* name;
        int IN, OUT;
        int count;  // how many a forward pass runs
    };
    const Case cases[] = {{"q|k|v     (BT,C)x(C,Q+2KV)", s.channels, s.qkvWidth(), s.layers},
                          {"attn out  (BT,Q)x(Q,C)    ", s.qWidth(), s.channels, s.layers},
                          {"mlp in    (BT,C)x(C,F')   ", s.channels, s.mlpInWidth(), s.layers},
                          {"mlp out   (BT,F)x(F,C)    ", s.ffn, s.channels, s.layers},
                          {"lm head   (BT,C)x(C,V)    ", s.channels, s.vocab, 1}};
    GemmPeak peak;
    RateMix fp32Mix, bf16Mix, fp32Lora, bf16Lora;
    if (print)
        std::printf(
            "  GEMMs of this shape's step (GFLOP/s, %d threads; F' = 2F with SwiGLU; forward, "
            "input gradient dX = dY·Wᵀ, weight gradient dW = Xᵀ·dY):\n",
            threads);
    for (const Case& c : cases) {
        const int M = tokens, N = c.OUT, K = c.IN;
        const double blasPartitioned = formGflops(Form::Forward, M, K, N, false);
        const double eigen = gemmGflops(M, N, K, [&](const float* A, const float* B, float* C) {
            tensor::matmul<float>(tensor::MatmulBackend::Eigen, tensor::Trans::No,
                                  tensor::Trans::No, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
        });
        // OpenBLAS threading itself (its own pthread pool), for reference only: the engine pins
        // it to one thread and partitions on its own compute pool instead (tensor/threads.h).
        openblas_set_num_threads(threads);
        const double blasOwnPool =
            gemmGflops(M, N, K, [&](const float* A, const float* B, float* C) {
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, A, K, B, N,
                            0.0f, C, N);
            });
        openblas_set_num_threads(1);
        const double fp32dX = formGflops(Form::InputGrad, M, K, N, false);
        const double fp32dW = formGflops(Form::WeightGrad, M, K, N, false);
        if (print)
            std::printf(
                "    %s  openblas (engine) %6.1f dX %6.1f dW %6.1f   (own pool) %6.1f   eigen "
                "%6.1f\n",
                c.name, blasPartitioned, fp32dX, fp32dW, blasOwnPool, eigen);
        const double flops = 2.0 * M * N * K * c.count;
        fp32Mix.add(flops, blasPartitioned);
        fp32Mix.add(flops, fp32dX);
        fp32Mix.add(flops, fp32dW);
        fp32Lora.add(flops, blasPartitioned);
        fp32Lora.add(flops, fp32dX);
        if (bf16) {
            const double fwd = formGflops(Form::Forward, M, K, N, true);
            const double dX = formGflops(Form::InputGrad, M, K, N, true);
            const double dW = formGflops(Form::WeightGrad, M, K, N, true);
            if (print)
                std::printf(
                    "    %s  bf16 (engine)     %6.1f dX %6.1f dW %6.1f   (forward %.2fx "
                    "openblas)\n",
                    "", fwd, dX, dW, fwd / blasPartitioned);
            bf16Mix.add(flops, fwd);
            bf16Mix.add(flops, dX);
            bf16Mix.add(flops, dW);
            bf16Lora.add(flops, fwd);
            bf16Lora.add(flops, dX);
        }
        for (auto [v, w] : {std::pair{blasPartitioned, "openblas (engine)"},
                            {blasOwnPool, "openblas (own pool)"},
                            {eigen, "eigen"}}) {
            if (v > peak.best) peak = {v, std::string(w) + ", " + c.name};
        }
    }
    peak.mixFp32 = fp32Mix.gflops();
    peak.mixBf16 = bf16Mix.gflops();
    peak.loraMixFp32 = fp32Lora.gflops();
    peak.loraMixBf16 = bf16Lora.gflops();
    std::printf("    %s: openblas (engine) %.1f",
                print ? "one step's mix of them" : "again after the steps", peak.mixFp32);
    if (bf16) std::printf(", bf16 (engine) %.1f", peak.mixBf16);
    std::printf(" GFLOP/s (without dW, as LoRA: %.1f", peak.loraMixFp32);
    if (bf16) std::printf(", %.1f", peak.loraMixBf16);
    std::printf(")\n");
    return peak;
}

// The engine's own AdamW (engine/optim: Highway kernel, decay on 2-D tensors only), as a session
// runs it, minus gradient clipping (the PyTorch reference does not clip either).
config::OptimizerConfig adamwConfig() {
    config::OptimizerConfig c;
    c.optimizerType = "adamw";
    c.betas = {0.9, 0.95};
    c.eps = 1e-8;
    c.weightDecay = 0.1;
    return c;
}

struct StepResult {
    double tokensPerSecond = 0, gflops = 0;
};

// One model in one precision with its own weights, gradients and AdamW state, stepped on fixed
// random tokens; the step's phases are summed after the warm-up steps.
class Trainer {
public:
    Trainer(const BenchShape& bs, const Options& opt, bool bf16, int loraRank = 0)
        : m_bf16(bf16),
          m_lora(loraRank),
          m_shape(shapeOf(bs, bf16, loraRank)),
          m_B(opt.batch),
          m_T(opt.seqLen),
          m_gpt(m_shape, m_B, m_T),
          m_params(m_gpt.table().totalSize()),
          m_groups(session::parameterGroups(m_gpt.table(), adamwConfig())),
          m_adam(adamwConfig(), m_groups, m_gpt.table().totalSize(),
                 optim::GradientLayout::Trainable) {
        model::initParameters(m_gpt.table(), bs.model, 1, m_params.data());
        // As a training run: frozen tensors get no gradient (never computed, their part of the
        // gradient buffer never touched), the optimizer reads the trainable ones packed.
        m_gpt.setFrozen(session::frozenTensors(m_groups));
        m_pieces = optim::trainablePieces(m_groups, 0, m_params.size());
        m_grads.reset(new float[m_params.size()]);
        m_packed.resize(m_adam.stateSize());
        m_inputs.resize(size_t(m_B) * m_T);
        m_targets.resize(m_inputs.size());
        for (size_t i = 0; i < m_inputs.size(); ++i) {
            m_inputs[i] = int32_t(model::rng::bits(3, i) % uint64_t(m_shape.vocab));
            m_targets[i] = int32_t(model::rng::bits(4, i) % uint64_t(m_shape.vocab));
        }
    }

    // Forget the timed steps (to time the same model again later in the run).
    void resetTiming() {
        m_forward = m_backward = m_optim = 0;
        m_timed = 0;
    }

    void step(int index, bool timed) {
        const auto t0 = Clock::now();
        for (const auto& piece : m_pieces)
            std::fill_n(m_grads.get() + piece.offset, piece.size, 0.0f);
        m_loss = m_gpt.forward(m_params.data(), m_inputs.data(), m_targets.data(), true,
                               uint64_t(index));
        const auto t1 = Clock::now();
        m_gpt.backward(m_params.data(), m_grads.get());
        const auto t2 = Clock::now();
        // The trainable gradients packed (one piece, no copy, when nothing is frozen).
        const float* grads = m_grads.get();
        if (m_pieces.size() != 1 || m_pieces[0].size != m_params.size()) {
            for (const auto& piece : m_pieces)
                std::copy_n(m_grads.get() + piece.offset, piece.size,
                            m_packed.data() + piece.stateOffset);
            grads = m_packed.data();
        }
        m_adam.update(m_params.data(), grads, 1e-4, 1.0, ++m_adamSteps);
        const auto t3 = Clock::now();
        if (!timed) return;
        m_forward += seconds(t0, t1);
        m_backward += seconds(t1, t2);
        m_optim += seconds(t2, t3);
        ++m_timed;
    }

    // FLOPs of one step (llm.c's count); a LoRA step computes no weight gradient of the frozen
    // base: 2N per token less (about 4N plus attention, the adapters' own products included).
    double stepFlops() const {
        const double full = model::trainingFlopsPerStep(m_shape, m_B, m_T);
        if (m_lora == 0) return full;
        const double frozen = double(parameterCount()) - double(trainedCount());
        return full - 2.0 * frozen * double(m_B) * m_T;
    }

    StepResult report(const Options& opt, const GemmPeak& peak) const {
        const double n = std::max(1, m_timed);
        const double perStep = (m_forward + m_backward + m_optim) / n;
        const double flops = stepFlops();
        const StepResult r{m_B * m_T / perStep, flops / perStep / 1e9};
        const std::string what = std::string(m_bf16 ? "bf16" : "fp32") +
                                 (m_lora > 0 ? fmt::format(" LoRA rank {}", m_lora) : "");
        std::printf("  -- %s: %s\n", what.c_str(),
                    m_bf16 ? tensor::bf16PathDescription().c_str()
                           : ("matmul backend " + opt.backend).c_str());
        std::printf(
            "  parameters %zu (%zu train), FLOPs/step %.1f G (llm.c count: (6N + 6LQT) BT%s), "
            "last loss %.3f\n",
            m_params.size(), trainedCount(), flops / 1e9, m_lora > 0 ? " - 2 N_frozen BT" : "",
            double(m_loss));
        std::printf(
            "  step %.1f ms = forward %.1f + backward %.1f + AdamW %.1f  (mean of %d after %d "
            "warm-up)\n",
            perStep * 1e3, m_forward / n * 1e3, m_backward / n * 1e3, m_optim / n * 1e3, m_timed,
            opt.warmup);
        std::printf(
            "  ours (%s): %.0f tokens/s, %.1f GFLOP/s = %.0f%% of the sgemm peak %.1f (%s)\n",
            what.c_str(), r.tokensPerSecond, r.gflops, 100.0 * r.gflops / peak.best, peak.best,
            peak.where.c_str());
        const double mix = m_lora > 0 ? (m_bf16 ? peak.loraMixBf16 : peak.loraMixFp32)
                                      : (m_bf16 ? peak.mixBf16 : peak.mixFp32);
        std::printf(
            "  => whole step at %.0f%% of the %s GEMM rate on this step's own products (%.1f of "
            "%.1f GFLOP/s)\n",
            100.0 * r.gflops / mix, m_bf16 ? "bf16" : "fp32 (engine)", r.gflops, mix);
        if (m_lora == 0) printActivations();
        return r;
    }

private:
    // The activation buffer a step keeps for backward, and the attention part of it beyond q, k,
    // v and the heads' output (what grows with T per head).
    void printActivations() const {
        const auto& slices = m_gpt.activationSlices();
        const size_t total = slices.back().offset + slices.back().size;
        size_t attention = 0;
        for (const auto& a : slices) {
            const bool inAttention = a.name.find(".attn.") != std::string::npos;
            if (inAttention && !a.name.ends_with(".qkv") && !a.name.ends_with(".out"))
                attention += a.size;
        }
        std::printf(
            "  activations kept for backward: %.1f MiB, of which attention softmax %.1f MiB "
            "(%.1f KiB per layer and head)\n",
            double(total * sizeof(float)) / (1 << 20),
            double(attention * sizeof(float)) / (1 << 20),
            double(attention * sizeof(float)) / 1024.0 / (double(m_shape.layers) * m_shape.heads));
    }

public:
    // Seconds per timed step, and the parameters the optimizer updates (LoRA: the adapters).
    double secondsPerStep() const {
        return (m_forward + m_backward + m_optim) / std::max(1, m_timed);
    }
    // "forward 2012.4 + backward 3905.6 + AdamW 1251.0" ms per timed step.
    std::string phases() const {
        const double n = std::max(1, m_timed);
        return fmt::format("forward {:.1f} + backward {:.1f} + AdamW {:.1f}", m_forward / n * 1e3,
                           m_backward / n * 1e3, m_optim / n * 1e3);
    }
    size_t parameterCount() const { return m_params.size(); }
    bool bf16() const { return m_bf16; }
    size_t trainedCount() const { return optim::trainableSize(m_groups); }

private:
    static model::GptShape shapeOf(const BenchShape& bs, bool bf16, int loraRank) {
        model::GptShape shape = model::GptShape::fromConfig(bs.model);
        shape.bf16 = bf16;
        if (loraRank > 0)
            shape.applyLora(
                config::LoraConfig{.rank = loraRank,
                                   .alpha = 2.0 * loraRank,
                                   .dropout = 0.0,
                                   .targets = {"c_attn", "attn.c_proj", "c_fc", "mlp.c_proj"}});
        return shape;
    }

    bool m_bf16;
    int m_lora;
    model::GptShape m_shape;
    int m_B, m_T;
    model::Gpt<float> m_gpt;
    std::vector<float> m_params;
    std::vector<optim::ParamGroup> m_groups;
    optim::Optimizer m_adam;
    std::vector<optim::TrainablePiece> m_pieces;
    std::unique_ptr<float[]> m_grads;  // (P) only the trainable pieces are ever touched
    std::vector<float> m_packed;       // (trainable) when something is frozen
    int64_t m_adamSteps = 0;
    std::vector<int32_t> m_inputs, m_targets;
    double m_forward = 0, m_backward = 0, m_optim = 0;
    int m_timed = 0;
    float m_loss = 0;
};

// A LoRA step against the full fine-tune step of the same precision, timed interleaved.
void compareLora(const Trainer& full, const Trainer& lora, int rank) {
    // MemoryX keeps fp32 masters for every parameter, gradients and (AdamW) two moments for those
    // that train (what MemoryX::bytes() and `wafer validate` count).
    auto memoryxBytes = [](const Trainer& t) {
        return 4.0 * double(t.parameterCount()) + 4.0 * (1 + 2) * double(t.trainedCount());
    };
    const double fullBytes = memoryxBytes(full), loraBytes = memoryxBytes(lora);
    // What the first LoRA step kept: gradients and moments for the frozen base too.
    const double before = double(lora.parameterCount()) * 4.0 * (2 + 2);
    std::printf(
        "  => %s LoRA rank %d (all four linears, %zu adapter parameters train, the base frozen): "
        "step %.1f ms vs full fine-tune %.1f ms (same run, steps interleaved): %.2fx\n",
        lora.bf16() ? "bf16" : "fp32", rank, lora.trainedCount(), lora.secondsPerStep() * 1e3,
        full.secondsPerStep() * 1e3, full.secondsPerStep() / lora.secondsPerStep());
    std::printf("     LoRA step = %s ms (no weight gradient of the frozen base)\n",
                lora.phases().c_str());
    std::printf(
        "  => MemoryX: LoRA %.1f MiB vs full fine-tune %.1f MiB (fp32 weights of every "
        "parameter; gradients and AdamW state of the trainable ones only: %.2fx less; with them "
        "for the frozen base too it was %.1f MiB)\n",
        loraBytes / (1 << 20), fullBytes / (1 << 20), fullBytes / loraBytes, before / (1 << 20));
}

std::string pythonWithTorch() {
    for (const char* py : {"/usr/bin/python3", "python3"}) {
        const std::string cmd = std::string(py) + " -c 'import torch' >/dev/null 2>&1";
        if (std::system(cmd.c_str()) == 0) return py;
    }
    return {};
}

// PyTorch's tokens/s on the same model and precision (0 when it could not run).
double runPytorch(const std::string& python, const BenchShape& bs, const Options& opt,
                  int threads) {
    const int steps = opt.steps > 0 ? opt.steps : bs.steps;
    const std::string cmd =
        "OMP_WAIT_POLICY=PASSIVE " + python + " '" + opt.script + "' --shape " + bs.key +
        " --precision " + opt.precision + " --batch " + std::to_string(opt.batch) + " --seq " +
        std::to_string(opt.seqLen) + " --steps " + std::to_string(steps) + " --warmup " +
        std::to_string(opt.warmup) + " --threads " + std::to_string(threads) + " 2>&1";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
    if (!pipe) {
        std::printf("  pytorch: could not start %s\n", cmd.c_str());
        return 0;
    }
    char line[512];
    double theirs = 0;
    while (std::fgets(line, sizeof line, pipe.get())) {
        std::printf("  pytorch| %s", line);
        if (const char* at = std::strstr(line, "tokens_per_s=")) theirs = std::atof(at + 13);
    }
    if (theirs <= 0) std::printf("  pytorch: no tokens_per_s line in its output\n");
    return theirs;
}

}  // namespace

int main(int argc, char** argv) {
    ws::bench::printMachine();
    Options opt;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "%s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--shape")
            opt.shape = next();
        else if (a == "--steps")
            opt.steps = std::atoi(next().c_str());
        else if (a == "--warmup")
            opt.warmup = std::atoi(next().c_str());
        else if (a == "--threads")
            opt.threads = std::atoi(next().c_str());
        else if (a == "--batch")
            opt.batch = std::atoi(next().c_str());
        else if (a == "--seq")
            opt.seqLen = std::atoi(next().c_str());
        else if (a == "--backend")
            opt.backend = next();
        else if (a == "--precision")
            opt.precision = next();
        else if (a == "--lora")
            opt.loraRank = std::atoi(next().c_str());
        else if (a == "--gemms-only")
            opt.gemmsOnly = true;
        else if (a == "--no-pytorch")
            opt.pytorch = false;
        else if (a == "--pytorch-script")
            opt.script = next();
        else {
            usage();
            return a == "--help" || a == "-h" ? 0 : 2;
        }
    }
    const auto backend = tensor::parseMatmulBackend(opt.backend);
    if (!backend) {
        std::fprintf(stderr, "unknown --backend %s (openblas or eigen)\n", opt.backend.c_str());
        return 2;
    }
    if (opt.precision != "fp32" && opt.precision != "bf16") {
        std::fprintf(stderr, "unknown --precision %s (fp32 or bf16)\n", opt.precision.c_str());
        return 2;
    }
    const bool bf16 = opt.precision == "bf16";
    if (bf16) std::printf("bf16 matmuls: %s\n", tensor::bf16PathDescription().c_str());
    std::vector<BenchShape> shapes;
    if (opt.shape == "small" || opt.shape == "all") shapes.push_back(smallShape());
    if (opt.shape == "gpt2" || opt.shape == "all") shapes.push_back(gpt2Shape());
    if (opt.shape == "smollm") {
        auto s = smollmShape();
        if (!s) return 1;
        shapes.push_back(*s);
    }
    if (opt.shape == "111m") {
        auto s = cerebras111mShape();
        if (!s) return 1;
        shapes.push_back(*s);
    }
    if (shapes.empty()) {
        std::fprintf(stderr, "unknown --shape %s (small, gpt2, all, smollm or 111m)\n",
                     opt.shape.c_str());
        return 2;
    }
    tensor::setComputeThreads(opt.threads);
    tensor::setDefaultMatmulBackend(*backend);
    const int threads = tensor::computeThreads();
    const std::string python = opt.pytorch ? pythonWithTorch() : std::string();
    if (opt.pytorch && python.empty()) std::printf("PyTorch not importable: comparison skipped\n");
    for (const BenchShape& bs : shapes) {
        Options run = opt;
        if (run.batch <= 0) run.batch = bs.batch;
        if (run.seqLen <= 0) run.seqLen = bs.seqLen;
        const model::GptShape shape = model::GptShape::fromConfig(bs.model);
        std::printf("\n== %s, B=%d T=%d, %d threads\n", bs.label.c_str(), run.batch, run.seqLen,
                    threads);
        if (Status st = shape.validate(run.batch, run.seqLen); !st.ok()) {
            std::printf("  invalid shape: %s\n", st.error().message.c_str());
            continue;
        }
        const GemmPeak before = measureGemms(shape, run.batch * run.seqLen, threads, bf16);
        if (opt.gemmsOnly) continue;
        const double rssBefore = peakRssMiB();
        // With bf16 the two precisions take turns step by step, so a machine whose load changes
        // during the run slows both alike.
        const int steps = run.steps > 0 ? run.steps : bs.steps;
        // Trainers: fp32, then bf16 (--precision bf16), then the LoRA step of each (--lora R).
        std::vector<std::unique_ptr<Trainer>> trainers;
        trainers.push_back(std::make_unique<Trainer>(bs, run, false));
        if (bf16) trainers.push_back(std::make_unique<Trainer>(bs, run, true));
        const size_t fullCount = trainers.size();
        if (opt.loraRank > 0) {
            for (size_t i = 0; i < fullCount; ++i)
                trainers.push_back(std::make_unique<Trainer>(bs, run, i == 1, opt.loraRank));
        }
        for (int step = 0; step < run.warmup + steps; ++step) {
            for (auto& t : trainers) t->step(step, step >= run.warmup);
        }
        // The GEMMs timed again after the steps (A B A, the machine is shared): the step is
        // compared with the mean of the two rates.
        const GemmPeak after = measureGemms(shape, run.batch * run.seqLen, threads, bf16, false);
        GemmPeak peak = before;
        peak.mixFp32 = 0.5 * (before.mixFp32 + after.mixFp32);
        peak.mixBf16 = 0.5 * (before.mixBf16 + after.mixBf16);
        peak.loraMixFp32 = 0.5 * (before.loraMixFp32 + after.loraMixFp32);
        peak.loraMixBf16 = 0.5 * (before.loraMixBf16 + after.loraMixBf16);
        std::printf("    (the mean of the two: openblas (engine) %.1f", peak.mixFp32);
        if (bf16) std::printf(", bf16 (engine) %.1f", peak.mixBf16);
        std::printf(" GFLOP/s, what the steps below are compared with)\n");
        const StepResult fp32 = trainers.front()->report(run, peak);
        StepResult r = fp32;
        if (bf16) {
            r = trainers[1]->report(run, peak);
            std::printf(
                "  => bf16 %.0f vs fp32 %.0f tokens/s (same run, steps interleaved): %.2fx\n",
                r.tokensPerSecond, fp32.tokensPerSecond, r.tokensPerSecond / fp32.tokensPerSecond);
        }
        for (size_t i = fullCount; i < trainers.size(); ++i) {
            trainers[i]->report(run, peak);
            compareLora(*trainers[i - fullCount], *trainers[i], opt.loraRank);
        }
        std::printf(
            "  peak resident memory of the process: %.0f MiB (%.0f MiB before the %s model%s; "
            "getrusage ru_maxrss)\n",
            peakRssMiB(), rssBefore, trainers.size() > 1 ? "timed" : "fp32",
            trainers.size() > 1 ? "s" : "");
        if (!python.empty() && r.tokensPerSecond > 0 && bs.hasPytorchReference) {
            // Ours, PyTorch, ours again (A B A): the machine is shared, so the comparison uses
            // the mean of our two timings around PyTorch's.
            const double theirs = runPytorch(python, bs, run, threads);
            Trainer& again = *trainers[bf16 ? 1 : 0];
            again.resetTiming();
            for (int step = 0; step < steps; ++step) again.step(run.warmup + steps + step, true);
            const double oursAfter = double(run.batch) * run.seqLen / again.secondsPerStep();
            const double ours = 0.5 * (r.tokensPerSecond + oursAfter);
            if (theirs > 0) {
                std::printf(
                    "  => ours (%s) %.0f (%.0f before PyTorch, %.0f after) vs PyTorch (%s) %.0f "
                    "tokens/s: %.2fx\n",
                    opt.precision.c_str(), ours, r.tokensPerSecond, oursAfter,
                    bf16 ? "bf16 autocast" : "fp32", theirs, ours / theirs);
            }
        }
    }
    return 0;
}
