// SPDX-License-Identifier: GPL-3.0-or-later
// Llama-family HF tensor names <-> the parameter table (see hf_llama_weights.h).
#include "engine/modelio/hf_llama_weights.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>

#include "engine/fileio/safetensors.h"
#include "engine/modelio/hf_weights.h"
#include "engine/modelio/torch_checkpoint.h"

namespace ws::modelio {

bool usesHfLlamaNames(const model::GptShape& shape) {
    return !shape.gpt2Blocks();
}

namespace {

// The HF parts of one block tensor (name after "h.N."), or nothing for a name HF has no place for.
std::optional<HfTensorMap> blockMap(const model::GptShape& s, int layer, const std::string& rest) {
    const std::string p = fmt::format("model.layers.{}.", layer);
    const int64_t C = s.channels, Q = s.qWidth(), K = s.kvWidth(), F = s.ffn;
    HfTensorMap m;
    if (rest == "ln_1.weight") {
        m.parts = {{p + "input_layernorm.weight", {C}}};
    } else if (rest == "ln_2.weight") {
        m.parts = {{p + "post_attention_layernorm.weight", {C}}};
    } else if (rest == "attn.c_attn.weight") {
        m.parts = {{p + "self_attn.q_proj.weight", {Q, C}},
                   {p + "self_attn.k_proj.weight", {K, C}},
                   {p + "self_attn.v_proj.weight", {K, C}}};
        m.transposed = true;
    } else if (rest == "attn.c_attn.bias") {
        m.parts = {{p + "self_attn.q_proj.bias", {Q}},
                   {p + "self_attn.k_proj.bias", {K}},
                   {p + "self_attn.v_proj.bias", {K}}};
    } else if (rest == "attn.c_proj.weight") {
        m.parts = {{p + "self_attn.o_proj.weight", {C, Q}}};
        m.transposed = true;
    } else if (rest == "attn.c_proj.bias") {
        m.parts = {{p + "self_attn.o_proj.bias", {C}}};
    } else if (rest == "mlp.c_fc.weight") {
        m.parts = {{p + "mlp.gate_proj.weight", {F, C}}, {p + "mlp.up_proj.weight", {F, C}}};
        m.transposed = true;
    } else if (rest == "mlp.c_fc.bias") {
        m.parts = {{p + "mlp.gate_proj.bias", {F}}, {p + "mlp.up_proj.bias", {F}}};
    } else if (rest == "mlp.c_proj.weight") {
        m.parts = {{p + "mlp.down_proj.weight", {C, F}}};
        m.transposed = true;
    } else if (rest == "mlp.c_proj.bias") {
        m.parts = {{p + "mlp.down_proj.bias", {C}}};
    } else {
        return std::nullopt;
    }
    return m;
}

}  // namespace

Result<std::vector<HfTensorMap>> hfLlamaTensorMap(const model::ParameterTable& table) {
    const model::GptShape& s = table.shape();
    if (s.hasLora() || s.hasMoe())
        return Error{
            "LoRA adapters and mixture-of-experts blocks have no place in a Hugging Face "
            "Llama-family checkpoint (merge the adapters first)"};
    const int64_t V = s.vocab, C = s.channels;
    std::vector<HfTensorMap> maps;
    for (size_t i = 0; i < table.tensors().size(); ++i) {
        const std::string& name = table.tensors()[i].name;
        std::optional<HfTensorMap> m;
        if (name == "wte.weight") {
            m = HfTensorMap{i, {{"model.embed_tokens.weight", {V, C}}}, false};
        } else if (name == "ln_f.weight") {
            m = HfTensorMap{i, {{"model.norm.weight", {C}}}, false};
        } else if (name == "lm_head.weight") {
            m = HfTensorMap{i, {{"lm_head.weight", {V, C}}}, false};
        } else if (int layer = 0, used = 0;
                   std::sscanf(name.c_str(), "h.%d.%n", &layer, &used) == 1 && used > 0) {
            m = blockMap(s, layer, name.substr(size_t(used)));
            if (m) m->tensor = i;
        }
        if (!m)
            return Error{fmt::format(
                "tensor {} has no Hugging Face Llama-family counterpart (learned positions and "
                "LayerNorm biases are GPT-2's)",
                name)};
        maps.push_back(std::move(*m));
    }
    return maps;
}

void gatherHfTensor(const model::ParameterTable& table, const HfTensorMap& map,
                    const std::vector<std::vector<float>>& parts, float* dst) {
    const model::TensorSlice& t = table.tensors()[map.tensor];
    if (!map.transposed) {
        for (const auto& part : parts) dst = std::copy(part.begin(), part.end(), dst);
        return;
    }
    // Table tensor (in, cols); part p is (out_p, in) and fills columns [col, col + out_p).
    const size_t in = size_t(t.shape[0]), cols = size_t(t.shape[1]);
    size_t col = 0;
    for (size_t p = 0; p < parts.size(); ++p) {
        const size_t out = size_t(map.parts[p].shape[0]);
        for (size_t o = 0; o < out; ++o)
            for (size_t i = 0; i < in; ++i) dst[i * cols + col + o] = parts[p][o * in + i];
        col += out;
    }
}

Result<std::vector<HfTensor>> toHfLlamaTensors(const model::ParameterTable& table,
                                               const float* params) {
    auto maps = hfLlamaTensorMap(table);
    if (!maps.ok()) return maps.error();
    std::vector<HfTensor> out;
    for (const HfTensorMap& map : *maps) {
        const model::TensorSlice& t = table.tensors()[map.tensor];
        const float* src = params + t.offset;
        const size_t cols = t.shape.size() == 2 ? size_t(t.shape[1]) : 0;
        const size_t in = t.shape.size() == 2 ? size_t(t.shape[0]) : 0;
        size_t col = 0;
        for (const HfPart& part : map.parts) {
            HfTensor h{part.name, part.shape, {}};
            size_t n = 1;
            for (int64_t d : part.shape) n *= size_t(d);
            h.values.resize(n);
            if (!map.transposed) {
                std::copy(src, src + n, h.values.begin());
                src += n;
            } else {
                const size_t outRows = size_t(part.shape[0]);
                for (size_t o = 0; o < outRows; ++o)
                    for (size_t i = 0; i < in; ++i) h.values[o * in + i] = src[i * cols + col + o];
                col += outRows;
            }
            out.push_back(std::move(h));
        }
    }
    return out;
}

template <typename WeightsFile>
Status matchHfLlamaWeights(const WeightsFile& file, const model::ParameterTable& table) {
    auto maps = hfLlamaTensorMap(table);
    if (!maps.ok()) return Error{fmt::format("{}: {}", file.path().string(), maps.error().message)};
    for (const HfTensorMap& map : *maps) {
        for (const HfPart& part : map.parts) {
            const auto* info = file.find(part.name);
            if (!info)
                return Error{fmt::format(
                    "{}: tensor {} is missing; the config describes a model with it ({} layers, "
                    "{} KV heads, tied head {}, biases q/k/v {} o_proj {} mlp {})",
                    file.path().string(), part.name, table.shape().layers,
                    table.shape().kvHeadCount(), table.shape().tiedEmbedding, table.shape().qkvBias,
                    table.shape().attnProjBias, table.shape().mlpBias)};
            if (info->shape != part.shape)
                return Error{fmt::format(
                    "{}: tensor {} has shape [{}] but the config needs [{}]; the weights do not "
                    "belong to this config",
                    file.path().string(), part.name, fmt::join(info->shape, ", "),
                    fmt::join(part.shape, ", "))};
        }
    }
    return Status::success();
}

template <typename WeightsFile>
Status readHfLlamaWeights(const WeightsFile& file, const model::ParameterTable& table,
                          float* params) {
    if (Status st = matchHfLlamaWeights(file, table); !st.ok()) return st;
    auto maps = hfLlamaTensorMap(table);
    for (const HfTensorMap& map : *maps) {
        std::vector<std::vector<float>> parts;
        for (const HfPart& part : map.parts) {
            auto values = file.readAsFloat(part.name);
            if (!values.ok()) return values.error();
            parts.push_back(std::move(values).value());
        }
        gatherHfTensor(table, map, parts, params + table.tensors()[map.tensor].offset);
    }
    return Status::success();
}

template Status matchHfLlamaWeights(const fileio::SafetensorsFile&, const model::ParameterTable&);
template Status matchHfLlamaWeights(const TorchCheckpoint&, const model::ParameterTable&);
template Status readHfLlamaWeights(const fileio::SafetensorsFile&, const model::ParameterTable&,
                                   float*);
template Status readHfLlamaWeights(const TorchCheckpoint&, const model::ParameterTable&, float*);
template Status matchHfLlamaWeights(const HfWeights&, const model::ParameterTable&);
template Status readHfLlamaWeights(const HfWeights&, const model::ParameterTable&, float*);

}  // namespace ws::modelio
