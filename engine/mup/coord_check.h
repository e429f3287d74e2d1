// SPDX-License-Identifier: GPL-3.0-or-later
// The μP coord check (Yang et al. 2022, arXiv 2203.03466, §D.1; Cerebras μP practitioner's
// guide): train the same config at several widths for a few steps, under the standard
// parameterization (SP) and under μP, and record the mean |activation| of each layer type per
// step. Under μP these stay flat as the model widens; under SP some of them grow. The verdict fits
// the slope of log2(mean |activation|) against log2(width) per layer type and step (slope s means
// "grows like width^s") and passes when every μP slope stays within ±threshold, with one
// exception that μP itself prescribes: the output logits only must not GROW. At initialization
// μP's logits shrink like width^-1/2 (Θ(1) readout weights times the α/m multiplier; the μP
// paper's Table 3 readout gives o(1) logits at init, and it even suggests zero-initializing the
// readout) and become width-independent once training has moved the readout; measured here
// (presets/mup-base.yaml, widths 32..256): slope -0.48 at step 1, ~0 from about step 13 on.
//
// The default threshold 0.3 sits between μP's measured worst (|slope| <= 0.26 over 40 steps and
// 3 seeds, a transient in the attention logits at the end of warmup) and SP's smallest growth
// in theory (0.5: output logits ∝ sqrt(width) at init; attention logits and block outputs reach
// ~1 once Adam's updates align with the inputs).
//
// The runs are real training: the engine's Gpt<float> forward and backward with the configured
// optimizer, data and seed, and the first `steps` learning rates of the config's schedule (as in
// a run of runconfig.max_steps; plain, not streamed: streamed training is bit-identical, see
// tests/engine/streaming). Only the width changes between runs: hidden_size = width,
// filter_size keeps the config's ratio to hidden_size, and the head SIZE stays the config's
// (num_heads grows with width), so attention at every width sees heads as wide as the base's.
//
// Thread-safety: runCoordCheck() uses the compute threads; one call at a time per process
// (it sets the compute thread count from runconfig.num_threads, like a session).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/config/config.h"
#include "engine/core/result.h"

namespace ws::mup {

enum class Parametrization { Standard, Mup };
std::string_view parametrizationName(Parametrization p);  // "sp", "mup"

// The layer types measured, in table order.
inline constexpr std::string_view kLayerTypes[] = {"embedding", "attn_logits", "block_output",
                                                   "output_logits"};

struct CoordCheckOptions {
    std::vector<int> widths = {32, 64, 128, 256};
    int steps = 10;          // training steps; activations are recorded in each step's forward
    double threshold = 0.3;  // μP passes when every |slope| is below this (see above)
    std::filesystem::path cacheDir;  // tokenizer/token cache; empty = the user cache folder
};

// mean |activation| of one layer type at one width and step (step 1 = the forward of the first
// training step, at initialization).
struct CoordPoint {
    Parametrization parametrization;
    int width = 0;
    int step = 0;
    std::string_view layer;
    double meanAbs = 0.0;
};

struct CoordSlope {
    Parametrization parametrization;
    int step = 0;
    std::string_view layer;
    double slope = 0.0;  // least-squares slope of log2(mean |act|) vs log2(width)
};

struct CoordCheckResult {
    std::vector<CoordPoint> points;
    std::vector<CoordSlope> slopes;
    double threshold = 0.0;
    double worstMupSlope = 0.0;  // the slope judged worst under μP (see top), and where
    int worstMupStep = 0;
    std::string_view worstMupLayer;
    double worstSpSlope = 0.0;  // the same under SP, for contrast
    int worstSpStep = 0;
    std::string_view worstSpLayer;
    bool pass = false;  // every μP slope judged below the threshold
};

// The config trained at `width` under `p`: SP drops every μP key (ModelZoo's μP -> SP config
// converter does the same), so both train with the same base init std and learning rate.
// Fails with a message naming the width and what to change (not a multiple of the head size,
// below the μP base width, filter ratio not integral).
Result<config::Config> configForWidth(const config::Config& base, int width, Parametrization p);

// Checks the options against the config without training (the CLI reports these as usage errors).
Status checkCoordCheck(const config::Config& base, const CoordCheckOptions& options);

// progress(done, total, what) after each run.
using CoordProgress = std::function<void(int, int, const std::string&)>;
Result<CoordCheckResult> runCoordCheck(const config::Config& base, const CoordCheckOptions& options,
                                       const CoordProgress& progress = {});

// How far a slope is from flat for the verdict: |slope|, but only growth (max(slope, 0)) for the
// output logits (see top).
double judgedSlope(std::string_view layer, double slope);

// The verdict from points (exposed for tests): slopes per (parametrization, step, layer).
CoordCheckResult judge(std::vector<CoordPoint> points, double threshold);

}  // namespace ws::mup
