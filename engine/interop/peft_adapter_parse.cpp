// parsePeftAdapter (see peft_adapter.h): adapter_config.json and the safetensors image, checked
// against the base's sizes. No I/O and no dependency beyond the safetensors parser, so the fuzz
// target (tests/fuzz/peft_adapter_fuzz.cpp) compiles it alone.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "engine/fileio/safetensors.h"
#include "engine/interop/peft_adapter.h"

namespace ws::interop {

std::vector<std::string> PeftAdapter::targetNames() const {
    std::vector<std::string> names;
    for (size_t t = 0; t < 4; ++t)
        if (targets[t]) names.emplace_back(kPeftTargetNames[t]);
    return names;
}

namespace {

using nlohmann::json;

// The (IN, OUT) of target t on this base.
std::pair<int64_t, int64_t> linearSize(size_t t, const PeftBaseShape& b) {
    const int64_t C = b.channels, F = b.ffn;
    switch (t) {
        case 0:
            return {C, 3 * C};
        case 1:
            return {C, C};
        case 2:
            return {C, F};
        default:
            return {F, C};
    }
}

// PEFT matches a target_modules entry against a module's full name by suffix (".c_proj" matches
// both attn.c_proj and mlp.c_proj). The GPT-2 modules each spelling selects, or none.
std::optional<std::array<bool, 4>> modulesMatching(std::string_view name) {
    std::array<bool, 4> hit = {false, false, false, false};
    bool any = false;
    for (size_t t = 0; t < 4; ++t) {
        const std::string full = "transformer.h.0." + std::string(kPeftModules[t]);
        if (name.empty() || name.size() > full.size()) continue;
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

// target_modules: which of GPT-2's four linears the adapter adapts, into a.targets.
Status readTargets(const json& cfg, PeftAdapter& a, std::string_view source) {
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
        return Error{
            fmt::format("{}: {}: target_modules must list the adapted modules (for "
                        "GPT-2: c_attn, attn.c_proj, c_fc, mlp.c_proj)",
                        source, kPeftConfigFile)};
    }
    for (const std::string& name : names) {
        // PEFT's shorthand for every linear but the output layer: GPT-2's four Conv1D.
        const auto hit = name == "all-linear" ? std::optional(std::array{true, true, true, true})
                                              : modulesMatching(name);
        if (!hit) {
            return Error{fmt::format(
                "{}: {}: target module \"{}\" is not a GPT-2 linear this engine adapts (c_attn, "
                "attn.c_proj, c_fc, mlp.c_proj; c_proj means both projections); was the adapter "
                "made for another architecture?",
                source, kPeftConfigFile, name)};
        }
        for (size_t t = 0; t < 4; ++t) a.targets[t] = a.targets[t] || (*hit)[t];
    }
    if (a.targetNames().empty()) {
        return Error{fmt::format("{}: {}: target_modules is empty: the adapter adapts nothing",
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

    if (Status st = readTargets(cfg, a, source); !st.ok()) return st.error();
    return a;
}

// adapter_model.safetensors: every A and B the config promises, shaped for this base, and
// nothing else; into a.tensors in our layout.
Status readAdapterTensors(const fileio::ParsedSafetensors& parsedFile, const PeftBaseShape& base,
                          std::string_view source, PeftAdapter& a) {
    const fileio::ParsedSafetensors* parsed = &parsedFile;
    // Every tensor must be one we expect; report the first stranger by name.
    size_t expected = 0;
    for (int l = 0; l < base.layers; ++l) {
        for (size_t t = 0; t < 4; ++t) {
            if (!a.targets[t]) continue;
            const auto [IN, OUT] = linearSize(t, base);
            const std::string module = fmt::format("h.{}.{}", l, kPeftModules[t]);
            for (const bool isA : {true, false}) {
                const std::string ours = module + (isA ? ".lora_A.weight" : ".lora_B.weight");
                const std::string key = std::string(kPeftPrefix) + ours;
                ++expected;
                const auto it = parsed->tensors.find(key);
                if (it == parsed->tensors.end()) {
                    return Error{fmt::format(
                        "{}: {}: tensor {} is missing: the adapter config targets {} on every "
                        "block and the base has {} blocks; is the adapter for a shallower base?",
                        source, kPeftWeightsFile, key, kPeftTargetNames[t], base.layers)};
                }
                const fileio::TensorInfo& info = it->second;
                const std::vector<int64_t> want =
                    isA ? std::vector<int64_t>{a.rank, IN} : std::vector<int64_t>{OUT, a.rank};
                if (info.shape != want) {
                    const bool rankWrong = info.shape.size() == 2 &&
                                           (isA ? info.shape[0] : info.shape[1]) != a.rank &&
                                           (isA ? info.shape[1] == IN : info.shape[0] == OUT);
                    const std::string why =
                        rankWrong ? fmt::format("the adapter's rank does not match r = {} in {}",
                                                a.rank, kPeftConfigFile)
                                  : fmt::format(
                                        "the adapter was trained for a different base (hidden "
                                        "size {}, ffn {} here); import it onto the base it was "
                                        "made for{}",
                                        base.channels, base.ffn,
                                        a.baseModel ? " (" + *a.baseModel + ")" : "");
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
    if (parsed->tensors.size() != expected) {
        for (const auto& [name, info] : parsed->tensors) {
            const std::string_view n = name;
            if (n.starts_with(kPeftPrefix) &&
                a.tensors.count(std::string(n.substr(kPeftPrefix.size()))))
                continue;
            return Error{fmt::format(
                "{}: {}: tensor {} is not an adapter of this base: a LoRA adapter for GPT-2 holds "
                "only {}h.N.<module>.lora_A/lora_B.weight for the target_modules of {} and N "
                "below the base's {} blocks",
                source, kPeftWeightsFile, name, kPeftPrefix, kPeftConfigFile, base.layers)};
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
