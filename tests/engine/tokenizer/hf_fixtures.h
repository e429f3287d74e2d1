// SPDX-License-Identifier: GPL-3.0-or-later
// The real Hugging Face tokenizer files under fixtures/hf (gzipped tokenizer.json, see
// LICENSES.md there) and their variants (variants.json), built exactly as
// scripts/make_tokenizer_fixtures.mjs builds them for the reference library.
#pragma once

#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>

namespace ws::tokenizer::testing {

inline const std::filesystem::path kHfFixtures =
    std::filesystem::path(WAFER_TOKENIZER_FIXTURES) / "hf";

inline std::string readText(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + file.string());
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

inline std::string gunzip(const std::filesystem::path& file) {
    gzFile f = gzopen(file.c_str(), "rb");
    if (f == nullptr) throw std::runtime_error("cannot open " + file.string());
    std::string out;
    char buffer[1 << 16];
    for (int n; (n = gzread(f, buffer, sizeof buffer)) > 0;) out.append(buffer, size_t(n));
    gzclose(f);
    return out;
}

// A base file's tokenizer.json text ("qwen2_5", "yi").
inline std::string baseTokenizerJson(const std::string& base) {
    return gunzip(kHfFixtures / base / "tokenizer.json.gz");
}

// variants.json entry -> the tokenizer.json text the reference library was given: top-level keys
// set, model keys set, merges as pairs, added tokens' flags patched (as the script does).
inline std::string variantTokenizerJson(const nlohmann::json& variant,
                                        const std::string& baseText) {
    nlohmann::json json = nlohmann::json::parse(baseText);
    if (variant.contains("set")) {
        for (const auto& [key, value] : variant.at("set").items()) json[key] = value;
    }
    if (variant.contains("model")) {
        for (const auto& [key, value] : variant.at("model").items()) json["model"][key] = value;
    }
    const auto pairsFlag = variant.find("merges_as_pairs");
    if (pairsFlag != variant.end() && pairsFlag->is_boolean() && pairsFlag->get<bool>()) {
        nlohmann::json pairs = nlohmann::json::array();
        for (const auto& m : json["model"]["merges"]) {
            const std::string s = m.get<std::string>();
            const size_t space = s.find(' ');
            pairs.push_back({s.substr(0, space), s.substr(space + 1)});
        }
        json["model"]["merges"] = std::move(pairs);
    }
    if (variant.contains("added_tokens_patch")) {
        for (const auto& [content, flags] : variant.at("added_tokens_patch").items()) {
            bool found = false;
            for (auto& token : json["added_tokens"]) {
                if (token["content"] != content) continue;
                for (const auto& [key, value] : flags.items()) token[key] = value;
                found = true;
            }
            if (!found) throw std::runtime_error("no added token " + content);
        }
    }
    return json.dump();
}

}  // namespace ws::tokenizer::testing
