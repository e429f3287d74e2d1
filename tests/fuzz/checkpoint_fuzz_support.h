// SPDX-License-Identifier: GPL-3.0-or-later
// Shared by the checkpoint fuzz targets (trainer_state_fuzz.cpp, checkpoint_folder_fuzz.cpp):
// what a resume does with a checkpoint folder (modelio/checkpoints.h, as session/resume.cpp
// calls it): open and verify it, then, for a model small enough, copy its tensors and masks out
// through the same checks a resume makes. Every step must succeed or return an Error.
// Thread-safety: none needed; one input at a time.
#pragma once

#include <cstddef>
#include <filesystem>
#include <vector>

#include "engine/model/parameters.h"
#include "engine/modelio/checkpoints.h"
#include "engine/optim/optimizer.h"
#include "fuzz_support.h"

namespace ws::fuzz {

// A model this small is loaded in full; a larger one (a config the fuzzer made up) only opened.
inline constexpr size_t kMaxLoadedParameters = size_t(1) << 20;

inline void exerciseCheckpoint(const std::filesystem::path& folder) {
    auto contents = modelio::openCheckpoint(folder);
    if (!contents.ok()) {
        note("refused: " + contents.error().message);
        return;
    }
    (void)modelio::configDifferences(contents->config, contents->config);
    const model::ParameterTable table(model::GptShape::fromConfig(contents->config.model));
    if (table.totalSize() > kMaxLoadedParameters) return;
    const int copies = optim::Optimizer::stateCopies(contents->config.optimizer);
    std::vector<float> buffers(table.totalSize() * size_t(1 + copies));
    const Status loaded = modelio::loadCheckpointTensors(
        *contents, table,
        [&](int buffer, size_t tensor, const void* data, size_t bytes) {
            // Touch every byte the loader hands out, so ASan sees a read past the mapping.
            const auto* p = static_cast<const unsigned char*>(data);
            unsigned sum = 0;
            for (size_t i = 0; i < bytes; ++i) sum += p[i];
            buffers[size_t(buffer) * table.totalSize() + tensor % table.totalSize()] = float(sum);
        },
        copies);
    note(loaded.ok() ? "opened and loaded" : "opened, not loaded: " + loaded.error().message);
    (void)modelio::loadCheckpointMasks(*contents, table,
                                       [](size_t, const uint8_t* mask, size_t bytes) {
                                           unsigned sum = 0;
                                           for (size_t i = 0; i < bytes; ++i) sum += mask[i];
                                           (void)sum;
                                       });
}

}  // namespace ws::fuzz
