// SPDX-License-Identifier: GPL-3.0-or-later
// parsePeftAdapter (see peft_adapter.h): adapter_config.json and the safetensors image, checked
// against the base's sizes. No I/O and no dependency beyond the safetensors parser, so the fuzz
// target (tests/fuzz/peft_adapter_fuzz.cpp) compiles it alone.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/fileio/safetensors.h"
#include "engine/interop/peft_adapter.h"

namespace ws::interop {

std::vector<std::string> PeftAdapter::targetNames(bool llama) const {
    std::vector<std::string> names;
    for (size_t t = 0; t < kPeftTargetCount; ++t)
        if (targets[t])
            names.emplace_back(llama && !kPeftLlamaNames[t].empty() ? kPeftLlamaNames[t]
                                                                    : kPeftTargetNames[t]);
    return names;
}

std::pair<int64_t, int64_t> peftLinearSize(size_t target, const PeftBaseShape& b) {
    const int64_t C = b.channels, F = b.ffn;
    const int64_t Q = b.llama ? b.qWidth : C, K = b.llama ? b.kvWidth : C;
    switch (target) {
        case 0:
            return {C, Q + 2 * K};  // c_attn: [q | k | v]
        case 1:
            return {Q, C};  // attn.c_proj / o_proj
        case 2:
            return {C, F};  // c_fc
        case 3:
            return {F, C};  // mlp.c_proj / down_proj
        case 4:
            return {C, Q};  // q_proj
        case 5:
        case 6:
            return {C, K};  // k_proj, v_proj
        default:
            return {C, F};  // gate_proj, up_proj
    }
}

namespace {

using nlohmann::json;

// The module a target is in PEFT's layout of this base ("transformer.h.0.attn.c_attn",
// "model.layers.0.self_attn.q_proj"), or empty when the layout has none.
std::string fullModule(size_t t, bool llama) {
    if (llama)
        return kPeftLlamaModules[t].empty() ? std::string()
                                            : "model.layers.0." + std::string(kPeftLlamaModules[t]);
    return t < 4 ? "transformer.h.0." + std::string(kPeftModules[t]) : std::string();
}

// PEFT matches a target_modules entry against a module's full name by suffix (".c_proj" matches
// both attn.c_proj and mlp.c_proj). The modules each spelling selects in the layout (GPT-2's or
// Llama's), or none.
std::optional<std::array<bool, kPeftTargetCount>> modulesMatching(std::string_view name,
                                                                  bool llama) {
    std::array<bool, kPeftTargetCount> hit{};
    bool any = false;
    for (size_t t = 0; t < kPeftTargetCount; ++t) {
        const std::string full = fullModule(t, llama);
        if (full.empty() || name.empty() || name.size() > full.size()) continue;
        if (full == name || (full.ends_with(name) && full[full.size() - name.size() - 1] == '.')) {
            // A spelling with a block number ("h.0.attn.c_attn") names some layers only.
            if (name.find_first_of("0123456789") != std::string_view::npos) continue;
            hit[t] = any = true;
        }
    }
    if (!any) return std::nullopt;
    return hit;
}

// PEFT's keys the adapter must not set to anything but their inert default.
Status checkInert(const json& cfg, std::string_view source) {
    auto set = [&](const char* key) {
        const auto it = cfg.find(key);
        if (it == cfg.end() || it->is_null()) return false;
        if (it->is_boolean()) return it->get<bool>();
        if (it->is_object() || it->is_array()) return !it->empty();
        return true;
    };
    struct Refusal {
        const char* key;
        const char* why;
    };
    static constexpr Refusal kRefused[] = {
        {"use_dora", "DoRA adapters carry a magnitude vector this engine does not compute"},
        {"use_rslora", "rsLoRA scales by alpha / sqrt(r), not alpha / r"},
        {"rank_pattern", "per-module ranks are not supported (one rank for every adapter)"},
        {"alpha_pattern", "per-module alphas are not supported (one alpha for every adapter)"},
        {"layers_to_transform", "adapters on a subset of blocks are not supported"},
        {"layers_pattern", "adapters on a subset of blocks are not supported"},
        {"modules_to_save", "fully trained extra modules are not supported"},
        {"exclude_modules", "excluded modules are not supported"},
        {"layer_replication", "layer replication is not supported"},
    };
    for (const Refusal& r : kRefused) {
        if (set(r.key)) {
            return Error{fmt::format(
                "{}: {}: {} is set ({}); only plain LoRA adapters import. Save the adapter "
                "without it, or merge it into the base in PEFT (merge_and_unload) and import "
                "that model with wafer import",
                source, kPeftConfigFile, r.key, r.why)};
        }
    }
    return Status::success();
}

Result<std::vector<float>> toFloat(const fileio::TensorInfo& t, std::string_view source) {
    const size_t n = size_t(t.elementCount());
    std::vector<float> out(n);
    const auto* bytes = static_cast<const unsigned char*>(t.data);
    switch (t.dtype) {
        case fileio::DType::F32:
            if (n) std::memcpy(out.data(), bytes, n * 4);
            return out;
        case fileio::DType::F64:
            for (size_t i = 0; i < n; ++i) {
                double v;
                std::memcpy(&v, bytes + 8 * i, 8);
                out[i] = float(v);
            }
            return out;
        case fileio::DType::F16:
        case fileio::DType::BF16:
            for (size_t i = 0; i < n; ++i) {
                uint16_t v;
                std::memcpy(&v, bytes + 2 * i, 2);
                out[i] =
                    t.dtype == fileio::DType::F16 ? fileio::halfToFloat(v) : fileio::bf16ToFloat(v);
            }
            return out;
        default:
            return Error{
                fmt::format("{}: {}: tensor {} is {}; adapters must be F32, F16, BF16 "
                            "or F64",
                            source, kPeftWeightsFile, t.name, dtypeName(t.dtype))};
    }
}

}  // namespace

namespace {

// target_modules: which linears of the base's layout (GPT-2's four, or Llama's seven
// projections) the adapter adapts, into a.targets.
Status readTargets(const json& cfg, const PeftBaseShape& base, PeftAdapter& a,
                   std::string_view source) {
    // target_modules: a list of names (a single string is a regex in PEFT: only a plain name is
    // taken).
    const auto targets = cfg.find("target_modules");
    std::vector<std::string> names;
    if (targets != cfg.end() && targets->is_string()) {
        names.push_back(targets->get<std::string>());
    } else if (targets != cfg.end() && targets->is_array()) {
        for (const auto& t : *targets) {
            if (!t.is_string())
                return Error{fmt::format("{}: {}: target_modules holds {}, not a module name",
                                         source, kPeftConfigFile, t.dump())};
            names.push_back(t.get<std::string>());
        }
    } else {
        return Error{fmt::format(
            "{}: {}: target_modules must list the adapted modules ({})", source, kPeftConfigFile,
            base.llama ? "for Llama: q_proj, k_proj, v_proj, o_proj, gate_proj, "
                         "up_proj, down_proj"
                       : "for GPT-2: c_attn, attn.c_proj, c_fc, mlp.c_proj")};
    }
    for (const std::string& name : names) {
        // PEFT's shorthand for every linear but the output layer.
        std::optional<std::array<bool, kPeftTargetCount>> hit;
        if (name == "all-linear") {
            hit.emplace();
            for (size_t t = 0; t < kPeftTargetCount; ++t)
                (*hit)[t] = !fullModule(t, base.llama).empty();
            if (base.llama && !base.swiglu) (*hit)[7] = (*hit)[8] = false;
        } else {
            hit = modulesMatching(name, base.llama);
        }
        if (!hit) {
            // The other family's module is the likely mistake: say so.
            const bool otherFamily = modulesMatching(name, !base.llama).has_value();
            return Error{fmt::format(
                "{}: {}: target module \"{}\" is not a {} linear this engine adapts ({}); {}",
                source, kPeftConfigFile, name, base.llama ? "Llama" : "GPT-2",
                base.llama ? "q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj"
                           : "c_attn, attn.c_proj, c_fc, mlp.c_proj; c_proj means both "
                             "projections",
                otherFamily
                    ? fmt::format("it is a {} module, so the adapter was made for a {}-shaped "
                                  "model: import it onto the base it was trained for",
                                  base.llama ? "GPT-2" : "Llama", base.llama ? "GPT-2" : "Llama")
                    : std::string("was the adapter made for another architecture?"))};
        }
        for (size_t t = 0; t < kPeftTargetCount; ++t) a.targets[t] = a.targets[t] || (*hit)[t];
    }
    if (a.targetNames().empty()) {
        return Error{fmt::format("{}: {}: target_modules is empty: the adapter adapts nothing",
                                 source, kPeftConfigFile)};
    }
    if (base.llama && !base.swiglu && (a.targets[7] || a.targets[8])) {
        return Error{fmt::format(
            "{}: {}: target_modules has gate_proj / up_proj but the base's MLP is GELU (no gate "
            "or up projection); import the adapter onto a SwiGLU base",
            source, kPeftConfigFile)};
    }
    return Status::success();
}

// adapter_config.json: a LoRA adapter of a causal LM, its rank, alpha, dropout and targets.
Result<PeftAdapter> readAdapterConfig(std::string_view configJson, const PeftBaseShape& base,
                                      std::string_view source) {
    const json cfg = json::parse(configJson, nullptr, false);
    if (cfg.is_discarded() || !cfg.is_object())
        return Error{fmt::format("{}: {} is not a JSON object", source, kPeftConfigFile)};
    auto str = [&](const char* key) -> std::optional<std::string> {
        const auto it = cfg.find(key);
        if (it == cfg.end() || !it->is_string()) return std::nullopt;
        return it->get<std::string>();
    };
    const std::optional<std::string> type = str("peft_type");
    if (type != "LORA") {
        return Error{fmt::format(
            "{}: {}: peft_type is {}; only LoRA adapters (peft_type \"LORA\") import", source,
            kPeftConfigFile,
            cfg.contains("peft_type") ? cfg["peft_type"].dump() : std::string("missing"))};
    }
    if (Status st = checkInert(cfg, source); !st.ok()) return st.error();

    PeftAdapter a;
    const auto r = cfg.find("r");
    if (r == cfg.end() || !r->is_number_integer() || r->get<int64_t>() < 1 ||
        r->get<int64_t>() > std::max(base.channels, 1)) {
        return Error{
            fmt::format("{}: {}: r must be an integer from 1 to the base's hidden size "
                        "{}, found {}",
                        source, kPeftConfigFile, base.channels,
                        r == cfg.end() ? std::string("nothing") : r->dump())};
    }
    a.rank = int(r->get<int64_t>());
    const auto alpha = cfg.find("lora_alpha");
    if (alpha != cfg.end() && !(alpha->is_number() && std::isfinite(alpha->get<double>()) &&
                                alpha->get<double>() >= 0.0)) {
        return Error{fmt::format("{}: {}: lora_alpha must be a number >= 0, found {}", source,
                                 kPeftConfigFile, alpha->dump())};
    }
    a.alpha = alpha == cfg.end() ? 8.0 : alpha->get<double>();  // PEFT's default
    const auto dropout = cfg.find("lora_dropout");
    if (dropout != cfg.end() && !dropout->is_null()) {
        if (!dropout->is_number() || !(dropout->get<double>() >= 0.0) ||
            !(dropout->get<double>() < 1.0)) {
            return Error{fmt::format("{}: {}: lora_dropout must be in [0, 1), found {}", source,
                                     kPeftConfigFile, dropout->dump())};
        }
        a.dropout = dropout->get<double>();
    }
    const std::optional<std::string> bias = str("bias");
    if (cfg.contains("bias") && bias != "none") {
        return Error{fmt::format(
            "{}: {}: bias is {}; only adapters without trained biases (bias \"none\") import",
            source, kPeftConfigFile, cfg["bias"].dump())};
    }
    if (const auto task = cfg.find("task_type");
        task != cfg.end() && !task->is_null() && *task != "CAUSAL_LM") {
        return Error{fmt::format(
            "{}: {}: task_type is {}; only CAUSAL_LM adapters (GPT2LMHeadModel) import, other "
            "tasks have heads this model lacks",
            source, kPeftConfigFile, task->dump())};
    }
    a.baseModel = str("base_model_name_or_path");

    if (Status st = readTargets(cfg, base, a, source); !st.ok()) return st.error();
    return a;
}

// adapter_model.safetensors: every A and B the config promises, shaped for this base, and
// nothing else; into a.tensors in our layout.
Status readAdapterTensors(const fileio::ParsedSafetensors& parsedFile, const PeftBaseShape& base,
                          std::string_view source, PeftAdapter& a) {
    const fileio::ParsedSafetensors* parsed = &parsedFile;
    const std::string_view prefix = base.llama ? kPeftLlamaPrefix : kPeftPrefix;
    // Every tensor must be one we expect; report the first stranger by name.
    std::set<std::string> expected;
    for (int l = 0; l < base.layers; ++l) {
        for (size_t t = 0; t < kPeftTargetCount; ++t) {
            if (!a.targets[t]) continue;
            const auto [IN, OUT] = peftLinearSize(t, base);
            const std::string module = fmt::format("h.{}.{}", l, kPeftModules[t]);
            const std::string theirs = base.llama
                                           ? fmt::format("{}{}.{}", prefix, l, kPeftLlamaModules[t])
                                           : std::string(prefix) + module;
            for (const bool isA : {true, false}) {
                const std::string suffix = isA ? ".lora_A.weight" : ".lora_B.weight";
                const std::string ours = module + suffix;
                const std::string key = theirs + suffix;
                expected.insert(key);
                const auto it = parsed->tensors.find(key);
                if (it == parsed->tensors.end()) {
                    return Error{fmt::format(
                        "{}: {}: tensor {} is missing: the adapter config targets {} on every "
                        "block and the base has {} blocks; is the adapter for a shallower base?",
                        source, kPeftWeightsFile, key,
                        base.llama ? kPeftLlamaNames[t] : kPeftTargetNames[t], base.layers)};
                }
                const fileio::TensorInfo& info = it->second;
                const std::vector<int64_t> want =
                    isA ? std::vector<int64_t>{a.rank, IN} : std::vector<int64_t>{OUT, a.rank};
                if (info.shape != want) {
                    const bool rankWrong = info.shape.size() == 2 &&
                                           (isA ? info.shape[0] : info.shape[1]) != a.rank &&
                                           (isA ? info.shape[1] == IN : info.shape[0] == OUT);
                    const std::string sizes =
                        base.llama
                            ? fmt::format("hidden size {}, ffn {}, q width {}, k/v width {} here",
                                          base.channels, base.ffn, base.qWidth, base.kvWidth)
                            : fmt::format("hidden size {}, ffn {} here", base.channels, base.ffn);
                    const std::string why =
                        rankWrong ? fmt::format("the adapter's rank does not match r = {} in {}",
                                                a.rank, kPeftConfigFile)
                                  : fmt::format(
                                        "the adapter was trained for a different base ({}); "
                                        "import it onto the base it was made for{}",
                                        sizes, a.baseModel ? " (" + *a.baseModel + ")" : "");
                    return Error{
                        fmt::format("{}: {}: tensor {} has shape [{}] but this base needs "
                                    "[{}] ({}); {}",
                                    source, kPeftWeightsFile, key, fmt::join(info.shape, ", "),
                                    fmt::join(want, ", "), isA ? "r x in" : "out x r", why)};
                }
                auto values = toFloat(info, source);
                if (!values.ok()) return values.error();
                // PEFT's (R, IN) / (OUT, R) -> ours (IN, R) / (R, OUT): a transpose.
                const size_t rows = size_t(info.shape[0]), cols = size_t(info.shape[1]);
                std::vector<float> transposed(values->size());
                for (size_t i = 0; i < rows; ++i)
                    for (size_t j = 0; j < cols; ++j)
                        transposed[j * rows + i] = (*values)[i * cols + j];
                a.tensors.emplace(ours, std::move(transposed));
            }
        }
    }
    if (parsed->tensors.size() != expected.size()) {
        for (const auto& [name, info] : parsed->tensors) {
            if (expected.count(name)) continue;
            return Error{fmt::format(
                "{}: {}: tensor {} is not an adapter of this base: a LoRA adapter for {} holds "
                "only {}{}.lora_A/lora_B.weight for the target_modules of {} and N below the "
                "base's {} blocks",
                source, kPeftWeightsFile, name, base.llama ? "Llama" : "GPT-2", prefix,
                base.llama ? "N.<self_attn|mlp>.<module>" : "h.N.<module>", kPeftConfigFile,
                base.layers)};
        }
    }
    return Status::success();
}

}  // namespace

Result<PeftAdapter> parsePeftAdapter(std::string_view configJson,
                                     std::span<const std::byte> safetensors,
                                     const PeftBaseShape& base, std::string_view source) {
    auto a = readAdapterConfig(configJson, base, source);
    if (!a.ok()) return a.error();
    auto parsed =
        fileio::parseSafetensors(safetensors, fmt::format("{}/{}", source, kPeftWeightsFile));
    if (!parsed.ok()) return parsed.error();
    if (Status st = readAdapterTensors(*parsed, base, source, *a); !st.ok()) return st.error();
    return a;
}

}  // namespace ws::interop
