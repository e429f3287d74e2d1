// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to modelio: reading a config.json's keys with the checks and messages every key shares
// ("<file>: "key" ..."), used by the GPT-2 mapping (hf_config.cpp) and the Llama-family one
// (hf_llama_config.cpp). Not a public header.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "engine/core/result.h"
#include "engine/modelio/hf_config.h"

namespace ws::modelio::detail {

class HfKeys {
public:
    HfKeys(const nlohmann::json& j, std::string where) : m_j(j), m_where(std::move(where)) {}

    const nlohmann::json& json() const { return m_j; }
    const std::string& where() const { return m_where; }

    Error error(std::string_view key, std::string_view what) const {
        return Error{fmt::format("{}: \"{}\" {}", m_where, key, what)};
    }
    Result<bool> boolean(const char* key, bool fallback) const {
        const auto it = m_j.find(key);
        if (it == m_j.end() || it->is_null()) return fallback;
        if (!it->is_boolean()) return error(key, "must be true or false");
        return it->get<bool>();
    }
    Result<int> positive(const char* key, int fallback) const {
        const auto it = m_j.find(key);
        if (it == m_j.end() || it->is_null()) return fallback;
        if (!it->is_number_integer() || it->get<int64_t>() < 1 ||
            it->get<int64_t>() > (int64_t(1) << 30)) {
            return error(key, fmt::format("is {}; it must be a positive integer", it->dump()));
        }
        return it->get<int>();
    }
    Result<double> number(const char* key, double fallback, double lo, double hi) const {
        const auto it = m_j.find(key);
        if (it == m_j.end() || it->is_null()) return fallback;
        if (!it->is_number() || it->get<double>() < lo || it->get<double>() > hi) {
            return error(key,
                         fmt::format("is {}; it must be a number in [{}, {}]", it->dump(), lo, hi));
        }
        return it->get<double>();
    }

private:
    const nlohmann::json& m_j;
    std::string m_where;
};

// The Llama-family reader and writer (hf_llama_config.cpp), which hf_config.cpp dispatches to.
// modelType: "llama", "mistral" or "qwen2" (from model_type or architectures).
Result<HfModelConfig> parseHfLlamaConfig(const HfKeys& keys, const std::string& modelType);
Status checkHfLlamaExportable(const config::ModelConfig& model);
std::string hfLlamaConfigJson(const config::ModelConfig& model, std::optional<int> eosTokenId);

}  // namespace ws::modelio::detail
