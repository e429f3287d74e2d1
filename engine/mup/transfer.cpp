// SPDX-License-Identifier: GPL-3.0-or-later
// μTransfer config generation: see transfer.h.
#include "engine/mup/transfer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "engine/config/config_yaml.h"
#include "engine/config/validate.h"

namespace ws::mup {
namespace {

void rescaleStd(config::InitializerConfig& init, double newStd) {
    // Keep the truncation bounds at the same multiple of σ (the preset's ±2σ stays ±2σ).
    if (init.std > 0.0) {
        init.a = init.mean + (init.a - init.mean) * newStd / init.std;
        init.b = init.mean + (init.b - init.mean) * newStd / init.std;
    }
    init.std = newStd;
}

}  // namespace

Result<config::Config> makeTransferConfig(const TransferRequest& r) {
    const config::ModelConfig& p = r.proxy.model;
    std::vector<std::string> errors;
    if (r.proxyHiddenSize <= 0) errors.push_back("the proxy width must be positive");
    if (r.targetHiddenSize < r.proxyHiddenSize)
        errors.push_back(fmt::format(
            "target hidden_size {} is narrower than the proxy's {}: μTransfer goes from a "
            "narrow proxy to a wider model",
            r.targetHiddenSize, r.proxyHiddenSize));
    if (!(r.baseLearningRate > 0.0) || !std::isfinite(r.baseLearningRate))
        errors.push_back(
            fmt::format("base learning rate {} must be a positive number", r.baseLearningRate));
    if (r.initStd && !(*r.initStd > 0.0))
        errors.push_back(fmt::format("init std {} must be positive", *r.initStd));
    if (r.targetLayers < 0) errors.push_back("target layers must be 0 (keep) or positive");
    if (p.numHeads <= 0 || p.hiddenSize % p.numHeads != 0)
        errors.push_back("the proxy's hidden_size is not a multiple of its num_heads");
    if (!errors.empty()) return Error{fmt::format("{}", fmt::join(errors, "\n"))};

    const int headSize = p.hiddenSize / p.numHeads;
    if (r.targetHiddenSize % headSize != 0)
        errors.push_back(fmt::format(
            "target hidden_size {} is not a multiple of the head size {} (hidden_size / "
            "num_heads of the proxy)",
            r.targetHiddenSize, headSize));
    if (r.proxyHiddenSize % headSize != 0)
        errors.push_back(fmt::format("proxy width {} is not a multiple of the head size {}",
                                     r.proxyHiddenSize, headSize));
    const double filterRatio = double(p.filterSize) / double(p.hiddenSize);
    const double targetFilter = filterRatio * r.targetHiddenSize;
    const double baseFilter = filterRatio * r.proxyHiddenSize;
    if (std::abs(targetFilter - std::round(targetFilter)) > 1e-9 ||
        std::abs(baseFilter - std::round(baseFilter)) > 1e-9)
        errors.push_back(fmt::format(
            "filter_size / hidden_size = {:g} of the proxy gives no whole filter_size at width "
            "{} or {}",
            filterRatio, r.proxyHiddenSize, r.targetHiddenSize));
    if (!errors.empty()) return Error{fmt::format("{}", fmt::join(errors, "\n"))};

    config::Config target = r.proxy;
    target.sweep.reset();
    config::ModelConfig& m = target.model;
    m.hiddenSize = r.targetHiddenSize;
    m.numHeads = r.targetHiddenSize / headSize;
    m.filterSize = int(std::lround(targetFilter));
    if (r.targetLayers > 0) m.numHiddenLayers = r.targetLayers;
    m.mupBaseHiddenSize = r.proxyHiddenSize;
    m.mupBaseFilterSize = int(std::lround(baseFilter));
    m.scaleQkDotByD = true;
    if (r.embeddingsScale) m.embeddingsScale = *r.embeddingsScale;
    const double sigma = r.initStd.value_or(m.initializer.std);
    rescaleStd(m.initializer, sigma);
    rescaleStd(m.embeddingInitializer, sigma);
    m.name = fmt::format("{}-mutransfer-w{}", p.name, r.targetHiddenSize);
    if (Status s = config::applyOverride(
            target, fmt::format("optimizer.learning_rate={:.17g}", r.baseLearningRate));
        !s.ok())
        return s.error();
    const std::vector<std::string> problems = config::validate(target);
    if (!problems.empty())
        return Error{
            fmt::format("the transferred config is not valid:\n{}", fmt::join(problems, "\n"))};
    return target;
}

}  // namespace ws::mup
