// SPDX-License-Identifier: GPL-3.0-or-later
// The μP coord check (see coord_check.h): the width sweep of short real training runs, the
// activation statistics per layer type, and the slope verdict.
#include "engine/mup/coord_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "engine/config/validate.h"
#include "engine/core/paths.h"
#include "engine/data/corpus.h"
#include "engine/data/dataset.h"
#include "engine/data/token_cache.h"
#include "engine/model/gpt.h"
#include "engine/model/random.h"
#include "engine/optim/optimizer.h"
#include "engine/optim/schedule.h"
#include "engine/tensor/threads.h"
#include "engine/tokenizer/tokenizer.h"

namespace ws::mup {

namespace {

double meanAbs(const float* x, size_t n) {
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i) sum += std::abs(double(x[i]));
    return n > 0 ? sum / double(n) : 0.0;
}

// mean |scale · q·kᵀ| over the causal (visible) entries of every head of one block, recomputed
// from the block's saved qkv (B,T,3C): the scores the softmax saw.
double meanAbsAttentionLogits(const float* qkv, int B, int T, int C, int NH, double scale) {
    const int hs = C / NH, ld = 3 * C;
    double sum = 0.0;
    int64_t count = 0;
    for (int b = 0; b < B; ++b) {
        for (int h = 0; h < NH; ++h) {
            for (int t = 0; t < T; ++t) {
                const float* q = qkv + (size_t(b) * T + t) * ld + size_t(h) * hs;
                for (int j = 0; j <= t; ++j) {
                    const float* k = qkv + (size_t(b) * T + j) * ld + C + size_t(h) * hs;
                    double dot = 0.0;
                    for (int i = 0; i < hs; ++i) dot += double(q[i]) * double(k[i]);
                    sum += std::abs(scale * dot);
                    ++count;
                }
            }
        }
    }
    return count > 0 ? sum / double(count) : 0.0;
}

std::string joined(const std::vector<std::string>& errors) {
    std::string text;
    for (const std::string& e : errors) text += (text.empty() ? "" : "; ") + e;
    return text;
}

}  // namespace

std::string_view parametrizationName(Parametrization p) {
    return p == Parametrization::Mup ? "mup" : "sp";
}

Result<config::Config> configForWidth(const config::Config& base, int width, Parametrization p) {
    const config::ModelConfig& m = base.model;
    if (m.numHeads <= 0 || m.hiddenSize <= 0 || m.hiddenSize % m.numHeads != 0)
        return Error{fmt::format(
            "model.hidden_size ({}) is not divisible by model.num_heads ({}); fix the config "
            "first (wafer validate)",
            m.hiddenSize, m.numHeads)};
    const int headSize = m.hiddenSize / m.numHeads;
    if (width <= 0 || width % headSize != 0)
        return Error{fmt::format(
            "width {} is not a multiple of the head size {} (model.hidden_size / "
            "model.num_heads); the coord check keeps the head size and grows the number of "
            "heads, so use multiples of {} such as {} or {}",
            width, headSize, headSize, std::max(1, width / headSize) * headSize,
            (std::max(0, width / headSize) + 1) * headSize)};
    if ((int64_t(m.filterSize) * width) % m.hiddenSize != 0)
        return Error{fmt::format(
            "width {} gives a fractional MLP width: filter_size keeps the config's ratio "
            "{}/{} to hidden_size; use widths that make {} * width / {} whole",
            width, m.filterSize, m.hiddenSize, m.filterSize, m.hiddenSize)};
    config::Config cfg = base;
    cfg.model.hiddenSize = width;
    cfg.model.numHeads = width / headSize;
    cfg.model.filterSize = int(int64_t(m.filterSize) * width / m.hiddenSize);
    if (p == Parametrization::Standard) {
        const config::ModelConfig defaults;
        cfg.model.mupBaseHiddenSize = 0;
        cfg.model.mupBaseFilterSize = 0;
        cfg.model.embeddingsScale = defaults.embeddingsScale;
        cfg.model.outputLogitsAlpha = defaults.outputLogitsAlpha;
        cfg.model.scaleOutputLogitsByD = defaults.scaleOutputLogitsByD;
        cfg.model.scaleQkDotByD = defaults.scaleQkDotByD;
        cfg.model.attentionLogitsAlpha = defaults.attentionLogitsAlpha;
    } else {
        if (!m.mupEnabled())
            return Error{
                "the coord check compares SP with muP, but the config has muP off: set "
                "model.mup_base_hidden_size and model.mup_base_filter_size to the base model's "
                "widths (e.g. the narrowest width checked), as presets/mup-base.yaml does"};
        if (width < m.mupBaseHiddenSize)
            return Error{fmt::format(
                "width {} is below model.mup_base_hidden_size ({}): muP widens a base model, "
                "so every width must be at least {}; drop the width or lower the base",
                width, m.mupBaseHiddenSize, m.mupBaseHiddenSize)};
    }
    const std::vector<std::string> errors = config::validate(cfg);
    if (!errors.empty())
        return Error{
            fmt::format("at width {} ({}): {}", width, parametrizationName(p), joined(errors))};
    return cfg;
}

Status checkCoordCheck(const config::Config& base, const CoordCheckOptions& options) {
    if (options.widths.size() < 2)
        return Error{
            "the coord check needs at least two widths to fit a slope, e.g. --widths "
            "32,64,128,256"};
    std::vector<int> sorted = options.widths;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
        return Error{"a width is listed twice; give each width once"};
    if (options.steps < 1) return Error{"steps must be at least 1"};
    if (!(options.threshold > 0.0)) return Error{"the slope threshold must be above 0"};
    for (int width : options.widths) {
        for (Parametrization p : {Parametrization::Standard, Parametrization::Mup}) {
            auto cfg = configForWidth(base, width, p);
            if (!cfg.ok()) return cfg.error();
        }
    }
    return Status::success();
}

double judgedSlope(std::string_view layer, double slope) {
    if (std::isnan(slope)) return slope;
    return layer == "output_logits" ? std::max(slope, 0.0) : std::abs(slope);
}

CoordCheckResult judge(std::vector<CoordPoint> points, double threshold) {
    CoordCheckResult result;
    result.threshold = threshold;
    // (parametrization, step, layer index) -> (log2 width, log2 mean |act|) pairs.
    std::map<std::tuple<int, int, int>, std::vector<std::pair<double, double>>> series;
    for (const CoordPoint& p : points) {
        const auto layer = std::find(std::begin(kLayerTypes), std::end(kLayerTypes), p.layer) -
                           std::begin(kLayerTypes);
        series[{int(p.parametrization), p.step, int(layer)}].emplace_back(
            std::log2(double(p.width)), p.meanAbs > 0.0 ? std::log2(p.meanAbs) : NAN);
    }
    bool firstMup = true, firstSp = true;
    for (const auto& [key, xy] : series) {
        const auto [par, step, layer] = key;
        double mx = 0, my = 0;
        for (const auto& [x, y] : xy) {
            mx += x;
            my += y;
        }
        mx /= double(xy.size());
        my /= double(xy.size());
        double sxy = 0, sxx = 0;
        for (const auto& [x, y] : xy) {
            sxy += (x - mx) * (y - my);
            sxx += (x - mx) * (x - mx);
        }
        const double slope = sxx > 0 ? sxy / sxx : NAN;  // NaN: a diverged run or one width
        const auto parametrization = Parametrization(par);
        result.slopes.push_back({parametrization, step, kLayerTypes[layer], slope});
        // The worst slope per parametrization; a NaN one (a diverged run) stays the worst, so
        // it fails the check instead of being skipped.
        const bool mup = parametrization == Parametrization::Mup;
        double& worst = mup ? result.worstMupSlope : result.worstSpSlope;
        bool& first = mup ? firstMup : firstSp;
        const double judged = judgedSlope(kLayerTypes[layer], slope);
        const double judgedWorst =
            judgedSlope(mup ? result.worstMupLayer : result.worstSpLayer, worst);
        if (first || (!std::isnan(judgedWorst) && !(judged <= judgedWorst))) {
            first = false;
            worst = slope;
            (mup ? result.worstMupStep : result.worstSpStep) = step;
            (mup ? result.worstMupLayer : result.worstSpLayer) = kLayerTypes[layer];
        }
    }
    result.points = std::move(points);
    result.pass = !firstMup && judgedSlope(result.worstMupLayer, result.worstMupSlope) < threshold;
    return result;
}

Result<CoordCheckResult> runCoordCheck(const config::Config& base, const CoordCheckOptions& options,
                                       const CoordProgress& progress) {
    if (Status st = checkCoordCheck(base, options); !st.ok()) return st.error();
    tensor::setComputeThreads(base.runconfig.numThreads);

    // The data, once: every width trains on the same batches.
    const std::filesystem::path cacheDir =
        options.cacheDir.empty() ? userCacheDir() : options.cacheDir;
    auto corpus = data::readCorpus(base.trainInput.dataDir);
    if (!corpus.ok()) return Error{"train_input.data_dir: " + corpus.error().message};
    auto tokenizer = tokenizer::makeTokenizer(base.trainInput.tokenizer, *corpus, cacheDir);
    if (!tokenizer.ok()) return Error{"train_input.tokenizer: " + tokenizer.error().message};
    if (Status st = config::checkVocab(base, (*tokenizer)->vocabSize()); !st.ok())
        return st.error();
    auto cache = data::TokenCache::build(*corpus, **tokenizer, cacheDir, {});
    if (!cache.ok()) return cache.error();
    const int B = base.trainInput.batchSize, T = base.trainInput.maxSequenceLength;
    auto dataset = data::Dataset::create(*cache, base.trainInput.validationFraction, T);
    if (!dataset.ok()) return dataset.error();

    std::vector<CoordPoint> points;
    const int total = int(options.widths.size()) * 2;
    int done = 0;
    std::vector<int32_t> inputs(size_t(B) * T), targets(size_t(B) * T);
    for (Parametrization par : {Parametrization::Standard, Parametrization::Mup}) {
        for (int width : options.widths) {
            auto made = configForWidth(base, width, par);
            if (!made.ok()) return made.error();
            const config::Config& cfg = *made;
            const model::GptShape shape = model::GptShape::fromConfig(cfg.model);
            const model::ParameterTable table(shape);
            std::vector<float> params(table.totalSize()), grads(table.totalSize());
            const uint64_t seed = static_cast<uint64_t>(cfg.runconfig.seed);
            model::initParameters(table, cfg.model, seed, params.data());
            std::vector<optim::ParamGroup> groups;
            for (const auto& t : table.tensors())
                groups.push_back({t.offset, t.size, t.decay, t.lrScale});
            optim::Optimizer optimizer(cfg.optimizer, groups, table.totalSize());
            const optim::LearningRateSchedule schedule(cfg.optimizer.learningRate,
                                                       cfg.runconfig.maxSteps);
            model::Gpt<float> gpt(shape, B, T);
            const double attnScale = shape.attentionScale<double>();
            const bool dropout = shape.dropout > 0.0 || shape.attnDropout > 0.0;
            for (int step = 0; step < options.steps; ++step) {
                dataset->trainBatch(step, B, T, cfg.trainInput.shuffle,
                                    static_cast<uint64_t>(cfg.trainInput.shuffleSeed),
                                    inputs.data(), targets.data());
                gpt.forward(params.data(), inputs.data(), targets.data(), true,
                            dropout ? model::rng::dropoutSeedForStep(seed, uint64_t(step)) : 0);
                const size_t nc = size_t(B) * T * size_t(width);
                double attn = 0.0, block = 0.0;
                for (int l = 0; l < shape.layers; ++l) {
                    attn += meanAbsAttentionLogits(gpt.activation(fmt::format("h.{}.attn.qkv", l)),
                                                   B, T, width, shape.heads, attnScale);
                    block += meanAbs(gpt.activation(fmt::format("h.{}.residual_mlp", l)), nc);
                }
                const double values[] = {
                    meanAbs(gpt.activation("encoded"), nc), attn / shape.layers,
                    block / shape.layers,
                    meanAbs(gpt.activation("logits"), size_t(B) * T * size_t(shape.vocab))};
                for (size_t k = 0; k < std::size(kLayerTypes); ++k)
                    points.push_back({par, width, step + 1, kLayerTypes[k], values[k]});

                std::fill(grads.begin(), grads.end(), 0.0f);
                gpt.backward(params.data(), grads.data());
                const double norm = optim::globalNorm(grads.data(), grads.size());
                optimizer.update(params.data(), grads.data(), schedule.at(step),
                                 optim::clipFactor(norm, cfg.optimizer.maxGradientNorm), step + 1);
            }
            if (progress)
                progress(++done, total,
                         fmt::format("{} width {}", parametrizationName(par), width));
        }
    }
    return judge(std::move(points), options.threshold);
}

}  // namespace ws::mup
