// SPDX-License-Identifier: GPL-3.0-or-later
// wafer_streaming_bench: what weight streaming costs on the CPU. For each shape it trains the
// same steps three ways, interleaved round by round so machine noise hits all alike:
//   plain     Gpt::forward/backward + AdamW on one buffer (the engine-core path, the reference)
//   streamed  the StreamingExecutor with RAM-backed MemoryX, 1 system, double buffering
//   2 systems the same global batch split over 2 emulated systems (parallel efficiency)
// and, with --file DIR, streamed with a file-backed MemoryX. Prints tokens/s and ratios, plus the
// share of stream-in time hidden behind compute (the prefetch overlap). Not run by CTest.
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_machine.h"
#include "engine/model/gpt.h"
#include "engine/optim/optimizer.h"
#include "engine/streaming/executor.h"
#include "engine/tensor/threads.h"

namespace {
using namespace ws;
using Clock = std::chrono::steady_clock;

struct Shape {
    std::string label;
    model::GptShape shape;
    int B, T;
};

model::GptShape makeShape(int V, int C, int L, int NH, int T) {
    model::GptShape s;
    s.vocab = V;
    s.channels = C;
    s.layers = L;
    s.heads = NH;
    s.ffn = 4 * C;
    s.maxPositions = T;
    s.tiedEmbedding = true;
    s.lnEps = 1e-5;
    return s;
}

config::OptimizerConfig adamw() {
    config::OptimizerConfig c;
    c.optimizerType = "adamw";
    c.betas = {0.9, 0.95};
    c.weightDecay = 0.1;
    return c;
}

std::vector<optim::ParamGroup> groupsOf(const model::ParameterTable& table) {
    std::vector<optim::ParamGroup> groups;
    for (const auto& t : table.tensors()) groups.push_back({t.offset, t.size, t.decay, t.lrScale});
    return groups;
}

void makeBatch(int B, int T, int V, int step, std::vector<int32_t>& in, std::vector<int32_t>& out) {
    in.resize(size_t(B) * T);
    out.resize(size_t(B) * T);
    for (int i = 0; i < B * T; ++i) {
        in[size_t(i)] = (i * 31 + step * 7) % V;
        out[size_t(i)] = (i * 31 + step * 7 + 1) % V;
    }
}

// A training setup that runs `steps` steps per call and reports the seconds they took.
class Runner {
public:
    virtual ~Runner() = default;
    virtual double run(int steps) = 0;
};

class PlainRunner : public Runner {
public:
    PlainRunner(const Shape& s)
        : m_s(s),
          m_table(s.shape),
          m_params(m_table.totalSize()),
          m_grads(m_table.totalSize()),
          m_opt(adamw(), groupsOf(m_table), m_table.totalSize()),
          m_gpt(s.shape, s.B, s.T) {
        config::ModelConfig mc;
        model::initParameters(m_table, mc, 1, m_params.data());
    }
    double run(int steps) override {
        const auto t0 = Clock::now();
        for (int i = 0; i < steps; ++i, ++m_step) {
            makeBatch(m_s.B, m_s.T, m_s.shape.vocab, int(m_step), m_in, m_out);
            std::fill(m_grads.begin(), m_grads.end(), 0.0f);
            m_gpt.forward(m_params.data(), m_in.data(), m_out.data(), true, 0);
            m_gpt.backward(m_params.data(), m_grads.data());
            const double norm = optim::globalNorm(m_grads.data(), m_grads.size());
            m_opt.update(m_params.data(), m_grads.data(), 1e-3, optim::clipFactor(norm, 1.0),
                         m_step + 1);
        }
        return std::chrono::duration<double>(Clock::now() - t0).count();
    }

private:
    Shape m_s;
    model::ParameterTable m_table;
    std::vector<float> m_params, m_grads;
    optim::Optimizer m_opt;
    model::Gpt<float> m_gpt;
    std::vector<int32_t> m_in, m_out;
    int64_t m_step = 0;
};

class StreamedRunner : public Runner {
public:
    StreamedRunner(const Shape& s, int systems, const config::MemoryXConfig& mxConfig)
        : m_s(s), m_table(s.shape) {
        auto mx = streaming::MemoryX::create(mxConfig, m_table.totalSize(), 2,
                                             streaming::largestLayerSize(m_table));
        if (!mx.ok()) {
            std::fprintf(stderr, "%s\n", mx.error().message.c_str());
            std::exit(1);
        }
        m_mx = std::move(mx).value();
        config::ModelConfig mc;
        model::initParameters(m_table, mc, 1, m_mx->weights());
        m_opt = std::make_unique<optim::Optimizer>(adamw(), groupsOf(m_table), m_table.totalSize(),
                                                   m_mx->optimizerState());
        streaming::StreamingOptions o;
        o.systems = systems;
        m_exec =
            std::make_unique<streaming::StreamingExecutor>(s.shape, s.B, s.T, o, *m_mx, *m_opt);
    }
    double run(int steps) override {
        const auto t0 = Clock::now();
        for (int i = 0; i < steps; ++i, ++m_step) {
            makeBatch(m_s.B, m_s.T, m_s.shape.vocab, int(m_step), m_in, m_out);
            m_exec->step(m_step, m_in.data(), m_out.data(), 1e-3, 1.0, m_step + 1, 0);
        }
        return std::chrono::duration<double>(Clock::now() - t0).count();
    }
    streaming::StreamingStats stats() const { return m_exec->stats(); }

private:
    Shape m_s;
    model::ParameterTable m_table;
    std::unique_ptr<streaming::MemoryX> m_mx;
    std::unique_ptr<optim::Optimizer> m_opt;
    std::unique_ptr<streaming::StreamingExecutor> m_exec;
    std::vector<int32_t> m_in, m_out;
    int64_t m_step = 0;
};

}  // namespace

int main(int argc, char** argv) {
    ws::bench::printMachine();
    int rounds = 5, stepsPerRound = 4;
    std::string fileDir;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--steps") && i + 1 < argc)
            stepsPerRound = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--file") && i + 1 < argc)
            fileDir = argv[++i];
        else {
            std::printf("usage: wafer_streaming_bench [--rounds N] [--steps N] [--file DIR]\n");
            return 2;
        }
    }
    tensor::setComputeThreads(0);
    const std::vector<Shape> shapes = {
        {"nano preset (4 x 128, V=256), B=16 T=128", makeShape(256, 128, 4, 4, 128), 16, 128},
        {"4 x 256 (V=8192), B=4 T=256", makeShape(8192, 256, 4, 4, 256), 4, 256},
    };
    for (const auto& s : shapes) {
        std::printf("\n== %s, %d threads, %d rounds x %d steps\n", s.label.c_str(),
                    tensor::computeThreads(), rounds, stepsPerRound);
        PlainRunner plain(s);
        StreamedRunner streamed(s, 1, {});
        StreamedRunner two(s, 2, {});
        std::unique_ptr<StreamedRunner> file;
        std::filesystem::path filePath;
        if (!fileDir.empty()) {
            filePath = std::filesystem::path(fileDir) / "bench.memoryx";
            config::MemoryXConfig fc;
            fc.backing = "file";
            fc.path = filePath.string();
            file = std::make_unique<StreamedRunner>(s, 1, fc);
        }
        double tPlain = 0, tStreamed = 0, tTwo = 0, tFile = 0;
        plain.run(1), streamed.run(1), two.run(1);  // warm-up
        if (file) file->run(1);
        for (int r = 0; r < rounds; ++r) {
            tPlain += plain.run(stepsPerRound);
            tStreamed += streamed.run(stepsPerRound);
            tTwo += two.run(stepsPerRound);
            if (file) tFile += file->run(stepsPerRound);
        }
        const double tokens = double(rounds) * stepsPerRound * s.B * s.T;
        const auto st = streamed.stats();
        std::printf("  plain (reference)        %9.0f tokens/s\n", tokens / tPlain);
        std::printf(
            "  streamed, RAM MemoryX    %9.0f tokens/s = %.1f%% of plain  (stream-in "
            "%.1f%% hidden behind compute; at most %d layers on the wafer)\n",
            tokens / tStreamed, 100.0 * tPlain / tStreamed,
            st.streamInSec > 0 ? 100.0 * st.streamInHiddenSec / st.streamInSec : 0.0,
            st.maxResidentLayers);
        std::printf("  streamed, 2 systems      %9.0f tokens/s = %.2fx one system\n", tokens / tTwo,
                    tStreamed / tTwo);
        if (file) {
            std::printf("  streamed, file MemoryX   %9.0f tokens/s = %.1f%% of RAM MemoryX\n",
                        tokens / tFile, 100.0 * tStreamed / tFile);
            file.reset();
            std::filesystem::remove(filePath);
        }
    }
    return 0;
}
