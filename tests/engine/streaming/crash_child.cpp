// SPDX-License-Identifier: GPL-3.0-or-later
// The process the crash tests kill. `crash_child train STORE` trains the crash test's model with
// a file-backed MemoryX forever, printing "step N" after each step; `crash_child half STORE`
// starts a layer update, overwrites half of that layer and kills itself with SIGKILL.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <vector>

#include "crash_model.h"
#include "engine/streaming/executor.h"

using namespace ws;
using namespace ws::streaming;

int main(int argc, char** argv) {
    if (argc != 3) return 2;
    const std::string mode = argv[1];
    config::MemoryXConfig mc;
    mc.backing = "file";
    mc.path = argv[2];
    const model::ParameterTable table(crash::shape());
    auto mx = MemoryX::create(mc, table.totalSize(), 2, largestLayerSize(table));
    if (!mx.ok()) {
        std::fprintf(stderr, "%s\n", mx.error().message.c_str());
        return 1;
    }
    crash::initialise(table, (*mx)->weights());
    if (mode == "half") {
        const auto& layer = table.layers()[1];
        (*mx)->beginUpdate(layer.offset, layer.size, layer.offset, layer.size);
        for (size_t i = 0; i < layer.size / 2; ++i) (*mx)->weights()[layer.offset + i] = 1e6f;
        std::raise(SIGKILL);
    }
    optim::Optimizer opt(crash::optimizer(), crash::groups(table), table.totalSize(),
                         (*mx)->optimizerState());
    StreamingExecutor exec(crash::shape(), crash::kBatch, crash::kSeq, {}, **mx, opt);
    std::vector<int32_t> in, out;
    for (int64_t step = 0;; ++step) {
        crash::batch(step, in, out);
        exec.step(step, in.data(), out.data(), 1e-2, 0.0, step + 1, 0);
        std::printf("step %lld\n", static_cast<long long>(step + 1));
        std::fflush(stdout);
    }
}
