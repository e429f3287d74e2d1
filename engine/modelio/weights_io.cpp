// SPDX-License-Identifier: GPL-3.0-or-later
// saveWeights / loadWeights (see weights_io.h).
#include "engine/modelio/weights_io.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "engine/config/config_yaml.h"
#include "engine/modelio/hf_llama_weights.h"
#include "engine/modelio/hf_weights.h"
#include "engine/modelio/torch_checkpoint.h"

namespace ws::modelio {

Status saveWeights(const std::filesystem::path& file, const model::ParameterTable& table,
                   const float* params, const config::Config& config, int64_t step,
                   std::string* sha256Out) {
    return saveWeights(
        file, table, [&](int, size_t t) { return params + table.tensors()[t].offset; }, config,
        step, sha256Out);
}

Status saveWeights(const std::filesystem::path& file, const model::ParameterTable& table,
                   const TensorReader& read, const config::Config& config, int64_t step,
                   std::string* sha256Out) {
    std::vector<fileio::TensorView> views;
    views.reserve(table.tensors().size());
    for (size_t i = 0; i < table.tensors().size(); ++i) {
        const auto& t = table.tensors()[i];
        views.push_back({t.name, fileio::DType::F32, t.shape, nullptr, t.size * sizeof(float)});
    }
    const std::map<std::string, std::string> metadata = {
        {"format", "pt"},
        {"producer", "wafer-studio"},
        {"step", std::to_string(step)},
        {"config_yaml", config::saveConfigYaml(config)},
    };
    return fileio::writeSafetensors(file, views, metadata, sha256Out, [&read](size_t t) {
        return static_cast<const void*>(read(0, t));
    });
}

namespace {

// A Llama-family model in Hugging Face's names (model.embed_tokens.weight, q/k/v/o_proj, ...)
// rather than the table's own (wte.weight, h.N.attn.c_attn.weight: what Wafer Studio writes).
template <typename WeightsFile>
bool holdsHfLlamaNames(const WeightsFile& st, const model::ParameterTable& table) {
    return usesHfLlamaNames(table.shape()) && !st.find("wte.weight") &&
           st.find("model.embed_tokens.weight");
}

template <typename WeightsFile>
Result<std::vector<std::string>> matchNames(const WeightsFile& st,
                                            const model::ParameterTable& table) {
    const std::filesystem::path& file = st.path();
    std::vector<std::string> names;
    names.reserve(table.tensors().size());
    if (holdsHfLlamaNames(st, table)) {
        if (Status ok = matchHfLlamaWeights(st, table); !ok.ok()) return ok.error();
        for (const auto& t : table.tensors()) names.push_back(t.name);
        return names;
    }
    for (const auto& t : table.tensors()) {
        std::string name = t.name;
        if (!st.find(name) && st.find("transformer." + name)) name = "transformer." + name;
        const auto* info = st.find(name);
        if (!info) {
            return Error{
                fmt::format("{}: tensor {} is missing; the file does not hold a model of "
                            "this config's shape (check model.* against the file)",
                            file.string(), t.name)};
        }
        if (info->shape != t.shape) {
            return Error{fmt::format(
                "{}: tensor {} has shape [{}] but the config needs [{}]; "
                "set model.* to the checkpoint's shape",
                file.string(), t.name, fmt::join(info->shape, ", "), fmt::join(t.shape, ", "))};
        }
        names.push_back(std::move(name));
    }
    return names;
}

template <typename WeightsFile>
Status readNamed(const WeightsFile& st, const model::ParameterTable& table, float* params) {
    if (holdsHfLlamaNames(st, table)) return readHfLlamaWeights(st, table, params);
    auto names = matchNames(st, table);
    if (!names.ok()) return names.error();
    for (size_t i = 0; i < table.tensors().size(); ++i) {
        auto values = st.readAsFloat((*names)[i]);
        if (!values.ok()) return values.error();
        std::copy(values->begin(), values->end(), params + table.tensors()[i].offset);
    }
    return Status::success();
}

}  // namespace

Result<std::vector<std::string>> matchWeights(const fileio::SafetensorsFile& st,
                                              const model::ParameterTable& table) {
    return matchNames(st, table);
}

Status readWeights(const fileio::SafetensorsFile& st, const model::ParameterTable& table,
                   float* params) {
    return readNamed(st, table, params);
}

Status readWeights(const HfWeights& weights, const model::ParameterTable& table, float* params) {
    return readNamed(weights, table, params);
}

Result<std::vector<std::string>> matchWeights(const HfWeights& weights,
                                              const model::ParameterTable& table) {
    return matchNames(weights, table);
}

Status loadWeights(const std::filesystem::path& file, const model::ParameterTable& table,
                   float* params) {
    // A fine-tune may start from a Hugging Face folder whose weights are sharded (the file is
    // then the shard index) or that holds only pytorch_model.bin.
    if (isHfWeightsIndex(file)) {
        auto sharded = HfWeights::open(file);
        if (!sharded.ok()) return sharded.error();
        return readNamed(*sharded, table, params);
    }
    if (file.extension() == ".bin" ||
        (file.extension() != ".safetensors" && looksLikeTorchCheckpoint(file))) {
        auto torch = TorchCheckpoint::open(file);
        if (!torch.ok()) return torch.error();
        return readNamed(*torch, table, params);
    }
    auto opened = fileio::SafetensorsFile::open(file);
    if (!opened.ok()) return opened.error();
    return readWeights(*opened, table, params);
}

}  // namespace ws::modelio
