// SPDX-License-Identifier: GPL-3.0-or-later
// The engine tests' model shapes and config builders, named once: each test that needs "a tiny
// GPT" takes one of these instead of spelling out its own, so the same numbers mean the same
// model everywhere. Changing a value here changes every test that uses it: add a new name (or
// pass the parameter) rather than edit one. Header-only; pure functions, safe from any thread.
#pragma once

#include <filesystem>
#include <fstream>

#include "engine/config/config.h"
#include "engine/model/parameters.h"

namespace ws::testing {

// A GPT shape from its sizes: V, C, L, NH, F and the longest sequence T. Everything else is
// GptShape's default (tied head, LayerNorm eps 1e-5, no dropout, no μP).
inline model::GptShape gptShape(int vocab, int channels, int layers, int heads, int ffn,
                                int maxPositions, bool tied = true) {
    model::GptShape s;
    s.vocab = vocab;
    s.channels = channels;
    s.layers = layers;
    s.heads = heads;
    s.ffn = ffn;
    s.maxPositions = maxPositions;
    s.tiedEmbedding = tied;
    return s;
}

// Small enough for finite differences in double over every weight (V 11, C 8, L 2, NH 2, F 32,
// T 8): the model and μP gradient checks.
inline model::GptShape gradcheckShape(bool tied = true) {
    return gptShape(11, 8, 2, 2, 32, 8, tied);
}

// Three blocks, so weight buffers of 1, 2 and 3 layers differ (V 37, C 16, NH 2, F 32, T 16):
// the streaming executor, SwarmX and MemoryX tests.
inline model::GptShape streamingShape(bool tied = true) {
    return gptShape(37, 16, 3, 2, 32, 16, tied);
}

// A byte-level model for sampling and model files (V 256 unless a BPE vocabulary is given,
// C 32, L 2, NH 4, F 64, T 24 unless given).
inline model::GptShape samplingShape(int vocab = 256, int maxPositions = 24, bool tied = true) {
    return gptShape(vocab, 32, 2, 4, 64, maxPositions, tied);
}

// presets/gpt-nano.yaml's shape (V 256, C 128, L 4, NH 4, F 512, T 128).
inline model::GptShape nanoShape() {
    return gptShape(256, 128, 4, 4, 512, 128);
}

// A model config section from its sizes; the rest (initializers, eps, ...) ModelConfig's
// defaults, the head tied.
inline config::ModelConfig modelConfig(int vocab, int hidden, int layers, int heads, int filter,
                                       int maxPositions) {
    config::ModelConfig m;
    m.vocabSize = vocab;
    m.hiddenSize = hidden;
    m.numHiddenLayers = layers;
    m.numHeads = heads;
    m.filterSize = filter;
    m.maxPositionEmbeddings = maxPositions;
    return m;
}

// The config section of a shape's sizes and head tie (GptShape::fromConfig gives them back).
inline config::ModelConfig modelConfigOf(const model::GptShape& s) {
    config::ModelConfig m =
        modelConfig(s.vocab, s.channels, s.layers, s.heads, s.ffn, s.maxPositions);
    m.shareEmbeddingWeights = s.tiedEmbedding;
    if (s.hasMoe())
        m.moe = config::MoeConfig{.numExperts = s.numExperts,
                                  .topK = s.topK,
                                  .loadBalancingLossCoef = s.lbCoef,
                                  .moeLayerFrequency = s.moeEvery,
                                  .capacityFactor = s.capacityFactor,
                                  .expertWeightingNormalization = s.expertNormalize};
    return m;
}

// A few KB of repetitive English in dir/corpus/text.txt, so that a tiny model learns something
// in a few steps (the session, sweep and fine-tune tests' training data).
inline void writeTinyCorpus(const std::filesystem::path& dir) {
    std::filesystem::create_directories(dir / "corpus");
    std::ofstream out(dir / "corpus" / "text.txt");
    for (int i = 0; i < 200; ++i) {
        out << "the quick brown fox jumps over the lazy dog number " << (i % 7) << ".\n";
    }
}

}  // namespace ws::testing
