// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for trainer_state.json (modelio/checkpoints.cpp's reader, what a resume reads
// first): the input replaces trainer_state.json in a genuine checkpoint folder of a tiny model,
// written once by the engine's writeCheckpoint at start-up, and the folder is opened and loaded
// as a resume does. Any input must be loaded or refused with an Error, never crash, hang or hit
// undefined behaviour (ASan + UBSan). WAFER_FUZZ_WRITE_SEED=<folder>: also copies the genuine
// trainer_state.json there (the seed corpus).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "checkpoint_fuzz_support.h"
#include "engine/config/config_yaml.h"
#include "fuzz_support.h"

namespace {

// A tiny model: 2 blocks of 16 channels over bytes, AdamW (two moments per weight).
constexpr const char* kTinyConfig = R"(model:
    vocab_size: 256
    hidden_size: 16
    num_hidden_layers: 2
    num_heads: 2
    filter_size: 32
    max_position_embeddings: 16
optimizer:
    optimizer_type: "AdamW"
    learning_rate: 1.0e-3
train_input:
    data_dir: corpus
    batch_size: 2
    max_sequence_length: 16
runconfig:
    max_steps: 8
)";

struct Fixture {
    ws::fuzz::ScratchDir dir{"trainer-state"};
    std::filesystem::path folder;

    Fixture() {
        auto loaded = ws::config::parseConfig(kTinyConfig, "tiny.yaml", {});
        if (!loaded.ok()) fail(loaded.error().message);
        const auto& config = loaded->config;
        const ws::model::ParameterTable table(ws::model::GptShape::fromConfig(config.model));
        std::vector<float> weights(table.totalSize()), moments(2 * table.totalSize());
        for (size_t i = 0; i < weights.size(); ++i) weights[i] = float(i % 17) * 0.01f;
        for (size_t i = 0; i < moments.size(); ++i) moments[i] = float(i % 5) * 0.001f;
        const ws::optim::OptimizerState state{moments.data(), moments.data() + table.totalSize()};
        auto written =
            ws::modelio::writeCheckpoint(dir.path(), table, weights.data(), state, 2, config,
                                         ws::modelio::TrainerState::forRun(config, 4, 7, 1.0e-3));
        if (!written.ok()) fail(written.error().message);
        folder = written->folder;
        if (const char* seedDir = std::getenv("WAFER_FUZZ_WRITE_SEED")) {
            std::filesystem::copy_file(folder / ws::modelio::kTrainerStateFile,
                                       std::filesystem::path(seedDir) / "tiny_step4.json",
                                       std::filesystem::copy_options::overwrite_existing);
        }
    }
    [[noreturn]] static void fail(const std::string& what) {
        std::fprintf(stderr, "trainer_state_fuzz: cannot write the fixture: %s\n", what.c_str());
        std::abort();
    }
};

const Fixture& fixture() {
    static const Fixture f;
    return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const Fixture& f = fixture();
    if (!ws::fuzz::writeFile(f.folder / ws::modelio::kTrainerStateFile,
                             ws::fuzz::asText(data, size))) {
        std::abort();
    }
    ws::fuzz::exerciseCheckpoint(f.folder);
    return 0;
}
