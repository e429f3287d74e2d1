// SPDX-License-Identifier: GPL-3.0-or-later
// Sparsity masks: selection by name, the schedules and the mask updates (sparse_masks.h).
#include "engine/optim/sparse_masks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <regex>

#include "engine/model/random.h"

namespace ws::optim {

namespace {

constexpr uint64_t kInitStream = 0x5BA45E1A17ull;  // labels of the mask's random streams
constexpr uint64_t kRegrowStream = 0x5E7C0FFEEull;

// "h.12.mlp.c_fc.weight" -> block 12 and the rest "mlp.c_fc.weight"; -1 outside blocks.
int blockOf(const std::string& name, std::string* rest) {
    if (name.rfind("h.", 0) != 0) return -1;
    const size_t dot = name.find('.', 2);
    if (dot == std::string::npos) return -1;
    int block = 0;
    for (size_t i = 2; i < dot; ++i) {
        if (name[i] < '0' || name[i] > '9') return -1;
        block = block * 10 + (name[i] - '0');
    }
    if (rest) *rest = name.substr(dot + 1);
    return block;
}

bool isBlockMatrix(const model::TensorSlice& t) {
    std::string rest;
    if (blockOf(t.name, &rest) < 0 || t.shape.size() != 2) return false;
    if (rest.size() < 7 || rest.compare(rest.size() - 7, 7, ".weight") != 0) return false;
    return rest.find("lora_") == std::string::npos && rest.find("ln_") == std::string::npos;
}

bool matches(const std::regex& re, const std::string& name) {
    return std::regex_search(name, re, std::regex_constants::match_continuous);
}

// The k positions of `candidates` with the smallest key (ties: lower position), ascending.
template <class Key>
std::vector<int64_t> smallestK(std::vector<int64_t> candidates, int64_t k, Key key) {
    k = std::clamp<int64_t>(k, 0, int64_t(candidates.size()));
    auto less = [&](int64_t a, int64_t b) {
        const auto ka = key(a), kb = key(b);
        return ka < kb || (ka == kb && a < b);
    };
    if (k > 0 && k < int64_t(candidates.size()))
        std::nth_element(candidates.begin(), candidates.begin() + k, candidates.end(), less);
    candidates.resize(size_t(k));
    std::sort(candidates.begin(), candidates.end());
    return candidates;
}

}  // namespace

std::vector<std::string> modelZooNames(const std::string& ours) {
    std::string rest;
    const int block = blockOf(ours, &rest);
    if (block < 0) return {};
    const std::string layer = fmt::format("transformer_decoder.layers.{}.", block);
    if (rest == "attn.c_attn.weight")
        return {layer + "self_attn.proj_q_dense_layer.weight",
                layer + "self_attn.proj_k_dense_layer.weight",
                layer + "self_attn.proj_v_dense_layer.weight"};
    if (rest == "attn.c_proj.weight") return {layer + "self_attn.proj_output_dense_layer.weight"};
    // Dense MLP and mixture-of-experts matrices (mlp.experts.E.c_fc.weight and the like).
    std::string prefix = "ffn.";
    std::string module = rest;
    if (rest.rfind("mlp.", 0) == 0) module = rest.substr(4);
    if (module.rfind("experts.", 0) == 0) {
        const size_t dot = module.find('.', 8);
        if (dot == std::string::npos) return {};
        prefix += module.substr(0, dot + 1);
        module = module.substr(dot + 1);
    }
    if (module == "c_fc.weight") return {layer + prefix + "ffn.0.linear_layer.weight"};
    if (module == "c_proj.weight") return {layer + prefix + "ffn.1.linear_layer.weight"};
    return {};
}

Result<std::vector<MaskedMatrix>> selectMaskedMatrices(const model::ParameterTable& table,
                                                       const std::vector<std::string>& patterns) {
    std::vector<std::regex> compiled;
    for (const std::string& p : patterns) {
        try {
            compiled.emplace_back(p, std::regex::ECMAScript);
        } catch (const std::regex_error& e) {
            return Error{fmt::format(
                "sparsity.param_name_patterns: \"{}\" is not a valid regex ({})", p, e.what())};
        }
    }
    std::vector<bool> used(compiled.size(), false);
    std::vector<MaskedMatrix> out;
    std::vector<std::string> candidates;
    for (size_t t = 0; t < table.tensors().size(); ++t) {
        const model::TensorSlice& slice = table.tensors()[t];
        if (!isBlockMatrix(slice)) continue;
        candidates.push_back(slice.name);
        bool selected = compiled.empty();
        const std::vector<std::string> zooNames = modelZooNames(slice.name);
        for (size_t p = 0; p < compiled.size(); ++p) {
            size_t zooMatched = 0;
            for (const std::string& z : zooNames) zooMatched += matches(compiled[p], z) ? 1 : 0;
            const bool ours = matches(compiled[p], slice.name);
            if (zooMatched > 0 && zooMatched < zooNames.size() && !ours)
                return Error{fmt::format(
                    "sparsity.param_name_patterns: \"{}\" matches only some of {} ({} of {}), "
                    "but {} holds them fused in one matrix that is masked whole; match all "
                    "three (e.g. '.*proj_[qkv]_dense_layer.weight') or none",
                    patterns[p], fmt::join(zooNames, ", "), zooMatched, zooNames.size(),
                    slice.name)};
            if (ours || (zooMatched == zooNames.size() && zooMatched > 0)) {
                used[p] = true;
                selected = true;
            }
        }
        if (!selected) continue;
        MaskedMatrix m;
        m.tensor = t;
        m.name = slice.name;
        m.block = blockOf(slice.name, nullptr);
        m.offset = slice.offset;
        m.rows = slice.shape[0];
        m.cols = slice.shape[1];
        out.push_back(std::move(m));
    }
    for (size_t p = 0; p < compiled.size(); ++p) {
        if (used[p]) continue;
        const std::string example = candidates.empty() ? std::string() : candidates.front();
        return Error{fmt::format(
            "sparsity.param_name_patterns: \"{}\" matches none of the model's block matrices; "
            "they are named like {} (ModelZoo: {}); only 2-D weights inside the transformer "
            "blocks can be sparse",
            patterns[p], example, fmt::join(modelZooNames(example), ", "))};
    }
    return out;
}

double gmpLevel(double init, double final, int64_t start, int64_t stop, int64_t step) {
    if (step <= start) return init;
    if (step >= stop) return final;
    const double progress = double(step - start) / double(stop - start);
    const double remaining = 1.0 - progress;
    return final + (init - final) * remaining * remaining * remaining;
}

double dropFractionAt(const config::DropFractionConfig& drop, int64_t stop, int64_t step) {
    if (drop.type == "constant") return drop.init;
    const int64_t half = drop.halfPeriod > 0 ? drop.halfPeriod : std::max<int64_t>(stop, 1);
    return drop.minimum + (drop.init - drop.minimum) * 0.5 *
                              (1.0 + std::cos(std::numbers::pi * double(step) / double(half)));
}

Result<SparseMasks> SparseMasks::create(const config::SparsitySectionConfig& config,
                                        const model::ParameterTable& table, uint64_t seed,
                                        int64_t stopDefault) {
    auto matrices = selectMaskedMatrices(table, config.paramNamePatterns);
    if (!matrices.ok()) return matrices.error();
    SparseMasks out;
    out.m_config = config;
    out.m_matrices = std::move(matrices).value();
    out.m_seed = seed;
    out.m_stop = config.schedule.stop > 0 ? config.schedule.stop : stopDefault;
    return out;
}

void SparseMasks::initialise(float* weights, uint8_t* pruned) const {
    const double level = m_config.type == "gmp" ? m_config.initSparsity : m_config.sparsity;
    for (const MaskedMatrix& m : m_matrices) {
        const int64_t n = int64_t(m.size());
        const int64_t k = std::llround(level * double(n));
        std::vector<int64_t> all(static_cast<size_t>(n));
        std::iota(all.begin(), all.end(), 0);
        const float* w = weights + m.offset;
        std::vector<int64_t> chosen;
        if (m_config.initMethod == "topk") {
            chosen = smallestK(std::move(all), k, [&](int64_t i) { return std::fabs(w[i]); });
        } else {
            const uint64_t key = model::rng::deriveKey(model::rng::deriveKey(m_seed, kInitStream),
                                                       uint64_t(m.tensor));
            chosen = smallestK(std::move(all), k,
                               [&](int64_t i) { return model::rng::bits(key, uint64_t(i)); });
        }
        uint8_t* mask = pruned + m.offset;
        std::fill_n(mask, m.size(), uint8_t(0));
        for (int64_t i : chosen) mask[i] = 1;
    }
    reapply(weights, pruned);
}

void SparseMasks::reapply(float* weights, const uint8_t* pruned) const {
    for (const MaskedMatrix& m : m_matrices) {
        float* w = weights + m.offset;
        const uint8_t* mask = pruned + m.offset;
        for (size_t i = 0; i < m.size(); ++i)
            if (mask[i]) w[i] = 0.0f;
    }
}

bool SparseMasks::updatesAfter(int64_t stepsDone) const {
    if (!m_config.dynamic() || m_config.sparsity <= 0) return false;
    const int64_t start = m_config.schedule.start;
    if (stepsDone <= start) return false;
    const bool onSchedule = (stepsDone - start) % m_config.schedule.freq == 0;
    // gmp reaches its final level at stop, also when stop is not on the freq grid (a last update
    // there); set and rigl stop before it (ModelZoo: not inclusive).
    if (m_config.type == "gmp") return (onSchedule && stepsDone <= m_stop) || stepsDone == m_stop;
    return onSchedule && stepsDone < m_stop;
}

double SparseMasks::levelAfter(int64_t stepsDone) const {
    if (m_config.type != "gmp") return m_config.sparsity;
    // The level of the last update at or before stepsDone.
    const int64_t start = m_config.schedule.start;
    const int64_t freq = m_config.schedule.freq;
    int64_t last = stepsDone <= start ? start : start + (stepsDone - start) / freq * freq;
    if (stepsDone >= m_stop) last = m_stop;  // the last update is at stop itself
    last = std::min(last, m_stop);
    return gmpLevel(m_config.initSparsity, m_config.sparsity, start, m_stop, last);
}

int64_t SparseMasks::prunedIn(const MaskedMatrix& m, const uint8_t* pruned) {
    const uint8_t* mask = pruned + m.offset;
    return std::count(mask, mask + m.size(), uint8_t(1));
}

std::vector<int64_t> SparseMasks::columnNonzeros(const MaskedMatrix& m, const uint8_t* pruned) {
    std::vector<int64_t> perColumn(size_t(m.cols), m.rows);
    const uint8_t* mask = pruned + m.offset;
    for (size_t i = 0; i < m.size(); ++i)
        if (mask[i]) --perColumn[i % size_t(m.cols)];
    std::vector<int64_t> prefix(size_t(m.cols) + 1, 0);
    for (size_t j = 0; j < size_t(m.cols); ++j) prefix[j + 1] = prefix[j] + perColumn[j];
    return prefix;
}

MaskUpdate SparseMasks::update(int64_t stepsDone, float* weights, uint8_t* pruned,
                               const MaskUpdateAccess& access) const {
    MaskUpdate total;
    if (!updatesAfter(stepsDone)) return total;
    const bool gmp = m_config.type == "gmp";
    const double fraction = dropFractionAt(m_config.dropFraction, m_stop, stepsDone);
    const double level = gmp ? levelAfter(stepsDone) : m_config.sparsity;
    for (const MaskedMatrix& m : m_matrices) {
        const int64_t n = int64_t(m.size());
        float* w = weights + m.offset;
        uint8_t* mask = pruned + m.offset;
        std::vector<int64_t> live, dead;
        for (int64_t i = 0; i < n; ++i) (mask[i] ? dead : live).push_back(i);
        auto magnitude = [&](int64_t i) { return std::fabs(w[i]); };
        if (gmp) {
            const int64_t target = std::llround(level * double(n));
            const int64_t more = target - int64_t(dead.size());
            for (int64_t i : smallestK(std::move(live), more, magnitude)) {
                mask[i] = 1;
                w[i] = 0.0f;
                ++total.dropped;
            }
            continue;
        }
        // set / rigl: the level stays exact (as many regrown as dropped).
        const int64_t k =
            std::min<int64_t>(std::llround(fraction * double(live.size())), int64_t(dead.size()));
        if (k <= 0) continue;
        const std::vector<int64_t> dropped = smallestK(std::move(live), k, magnitude);
        std::vector<int64_t> grown;
        const float* grad =
            m_config.type == "rigl" && access.gradient ? access.gradient(m.tensor) : nullptr;
        if (grad) {
            // The largest |gradient| first: smallest of its negation.
            grown = smallestK(std::move(dead), k, [&](int64_t i) { return -std::fabs(grad[i]); });
        } else {
            const uint64_t key = model::rng::deriveKey(
                model::rng::deriveKey(model::rng::deriveKey(m_seed, kRegrowStream),
                                      uint64_t(stepsDone)),
                uint64_t(m.tensor));
            grown = smallestK(std::move(dead), k,
                              [&](int64_t i) { return model::rng::bits(key, uint64_t(i)); });
        }
        for (int64_t i : dropped) {
            mask[i] = 1;
            w[i] = 0.0f;
        }
        for (int64_t i : grown) {
            mask[i] = 0;
            w[i] = 0.0f;
        }
        if (access.resetState) access.resetState(m.tensor, grown);
        total.dropped += int64_t(dropped.size());
        total.regrown += int64_t(grown.size());
    }
    return total;
}

}  // namespace ws::optim
