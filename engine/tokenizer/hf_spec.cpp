// SPDX-License-Identifier: GPL-3.0-or-later
// parseHfTokenizerJson: reads tokenizer.json (and tokenizer_config.json) into an HfSpec. Each
// key is checked where it is read, and anything the pipeline does not implement is refused with
// the key path, e.g. `normalizer.normalizers[0].type: "NFKC" is not supported`: a tokenizer that
// silently approximated the library would train models on token ids their own tokenizer never
// produces.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "engine/core/hash.h"
#include "engine/tokenizer/hf_spec.h"

namespace ws::tokenizer {

namespace {

using Json = nlohmann::json;

// Parsing stops at the first problem; the thrown Problem carries the key path and the reason.
struct Problem {
    std::string path;
    std::string message;
};

[[noreturn]] void fail(const std::string& path, std::string message) {
    throw Problem{path, std::move(message)};
}

std::string typeName(const Json& j) {
    return j.is_null() ? "null" : j.type_name();
}

const Json* find(const Json& object, const char* key) {
    const auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
}

std::string str(const Json& j, const std::string& path) {
    if (!j.is_string()) fail(path, fmt::format("expected a string, got {}", typeName(j)));
    return j.get<std::string>();
}

bool boolean(const Json& object, const char* key, const std::string& path, bool fallback) {
    const Json* j = find(object, key);
    if (j == nullptr || j->is_null()) return fallback;
    if (!j->is_boolean()) {
        fail(path + "." + key, fmt::format("expected true or false, got {}", typeName(*j)));
    }
    return j->get<bool>();
}

const Json& object(const Json& j, const std::string& path) {
    if (!j.is_object()) fail(path, fmt::format("expected an object, got {}", typeName(j)));
    return j;
}

const Json& array(const Json& j, const std::string& path) {
    if (!j.is_array()) fail(path, fmt::format("expected an array, got {}", typeName(j)));
    return j;
}

std::string typeOf(const Json& step, const std::string& path) {
    const Json* t = find(object(step, path), "type");
    if (t == nullptr) fail(path, "has no \"type\"");
    return str(*t, path + ".type");
}

[[noreturn]] void unsupported(const std::string& path, const std::string& what,
                              const std::string& supported) {
    fail(path, fmt::format("{} is not supported (supported: {}); this tokenizer cannot be used "
                           "exactly, so it is refused rather than approximated",
                           what, supported));
}

// A key that must hold one value (or be absent/null) for the pipeline to be exact.
void require(const Json& object, const char* key, const std::string& path, const Json& allowed) {
    const Json* j = find(object, key);
    if (j == nullptr || j->is_null() || *j == allowed) return;
    unsupported(path + "." + key, j->dump(), allowed.dump());
}

// Split/Replace patterns: {"String": "..."} or {"Regex": "..."}.
std::pair<bool, std::string> pattern(const Json& j, const std::string& path) {
    object(j, path);
    if (const Json* s = find(j, "String")) return {false, str(*s, path + ".String")};
    if (const Json* r = find(j, "Regex")) return {true, str(*r, path + ".Regex")};
    fail(path, "expected {\"String\": ...} or {\"Regex\": ...}");
}

void parseNormalizer(const Json& j, const std::string& path, std::vector<HfNormalizer>& out) {
    if (j.is_null()) return;
    const std::string type = typeOf(j, path);
    if (type == "Sequence") {
        const Json* list = find(j, "normalizers");
        if (list == nullptr) fail(path, "Sequence has no \"normalizers\"");
        const Json& a = array(*list, path + ".normalizers");
        for (size_t i = 0; i < a.size(); ++i) {
            parseNormalizer(a[i], fmt::format("{}.normalizers[{}]", path, i), out);
        }
        return;
    }
    HfNormalizer n;
    if (type == "Prepend") {
        n.kind = HfNormalizer::Kind::Prepend;
        n.pattern = str(j.value("prepend", Json()), path + ".prepend");
    } else if (type == "Replace") {
        n.kind = HfNormalizer::Kind::Replace;
        const auto [isRegex, p] = pattern(j.value("pattern", Json()), path + ".pattern");
        if (isRegex) unsupported(path + ".pattern", "a Regex pattern", "String patterns");
        if (p.empty()) fail(path + ".pattern", "an empty pattern replaces nothing useful");
        n.pattern = p;
        n.content = str(j.value("content", Json()), path + ".content");
    } else if (type == "NFC") {
        n.kind = HfNormalizer::Kind::Nfc;
    } else if (type == "NFD") {
        n.kind = HfNormalizer::Kind::Nfd;
    } else if (type == "NFKC") {
        n.kind = HfNormalizer::Kind::Nfkc;
    } else if (type == "NFKD") {
        n.kind = HfNormalizer::Kind::Nfkd;
    } else {
        unsupported(path + ".type", fmt::format("\"{}\"", type),
                    "Sequence, Prepend, Replace, NFC, NFD, NFKC, NFKD");
    }
    out.push_back(std::move(n));
}

HfSplitBehavior behavior(const Json& j, const std::string& path) {
    const std::string b = str(j, path);
    if (b == "Isolated") return HfSplitBehavior::Isolated;
    if (b == "Removed") return HfSplitBehavior::Removed;
    if (b == "MergedWithPrevious") return HfSplitBehavior::MergedWithPrevious;
    if (b == "MergedWithNext") return HfSplitBehavior::MergedWithNext;
    unsupported(path, fmt::format("\"{}\"", b),
                "Isolated, Removed, MergedWithPrevious, MergedWithNext");
}

HfPreTokenizer::Prepend prependScheme(const Json& j, const std::string& path) {
    if (const Json* s = find(j, "prepend_scheme"); s != nullptr && !s->is_null()) {
        const std::string v = str(*s, path + ".prepend_scheme");
        if (v == "always") return HfPreTokenizer::Prepend::Always;
        if (v == "first") return HfPreTokenizer::Prepend::First;
        if (v == "never") return HfPreTokenizer::Prepend::Never;
        unsupported(path + ".prepend_scheme", fmt::format("\"{}\"", v), "always, first, never");
    }
    // Files written before prepend_scheme existed say add_prefix_space.
    return boolean(j, "add_prefix_space", path, true) ? HfPreTokenizer::Prepend::Always
                                                      : HfPreTokenizer::Prepend::Never;
}

std::string singleChar(const Json& j, const std::string& path) {
    const std::string s = str(j, path);
    size_t chars = 0;
    for (const char c : s) chars += (uint8_t(c) & 0xC0) != 0x80;
    if (chars != 1) fail(path, fmt::format("expected one character, got \"{}\"", s));
    return s;
}

void parsePreTokenizer(const Json& j, const std::string& path, std::vector<HfPreTokenizer>& out) {
    if (j.is_null()) return;
    const std::string type = typeOf(j, path);
    if (type == "Sequence") {
        const Json* list = find(j, "pretokenizers");
        if (list == nullptr) fail(path, "Sequence has no \"pretokenizers\"");
        const Json& a = array(*list, path + ".pretokenizers");
        for (size_t i = 0; i < a.size(); ++i) {
            parsePreTokenizer(a[i], fmt::format("{}.pretokenizers[{}]", path, i), out);
        }
        return;
    }
    HfPreTokenizer p;
    if (type == "Split") {
        const auto [isRegex, pat] = pattern(j.value("pattern", Json()), path + ".pattern");
        p.kind = isRegex ? HfPreTokenizer::Kind::SplitRegex : HfPreTokenizer::Kind::SplitString;
        p.pattern = pat;
        p.behavior = behavior(j.value("behavior", Json()), path + ".behavior");
        p.invert = boolean(j, "invert", path, false);
    } else if (type == "Digits") {
        // The library's Digits splits off numeric characters (Rust's char::is_numeric: Unicode
        // category N), each alone or as runs, exactly as this Split would (SmolLM, SmolLM2).
        p.kind = HfPreTokenizer::Kind::SplitRegex;
        p.pattern = boolean(j, "individual_digits", path, false) ? "\\p{N}" : "\\p{N}+";
        p.behavior = HfSplitBehavior::Isolated;
        p.invert = false;
    } else if (type == "ByteLevel") {
        p.kind = HfPreTokenizer::Kind::ByteLevel;
        p.addPrefixSpace = boolean(j, "add_prefix_space", path, true);
        p.useRegex = boolean(j, "use_regex", path, true);
    } else if (type == "Metaspace") {
        p.kind = HfPreTokenizer::Kind::Metaspace;
        p.replacement = singleChar(j.value("replacement", Json()), path + ".replacement");
        p.prepend = prependScheme(j, path);
        p.split = boolean(j, "split", path, true);
    } else {
        unsupported(path + ".type", fmt::format("\"{}\"", type),
                    "Sequence, Split, Digits, ByteLevel, Metaspace");
    }
    out.push_back(std::move(p));
}

int nonNegative(const Json& object, const char* key, const std::string& path) {
    const Json* j = find(object, key);
    if (j == nullptr || !j->is_number_integer() || j->get<int64_t>() < 0 ||
        j->get<int64_t>() > 1000) {
        fail(path + "." + key, "expected a small non-negative integer");
    }
    return j->get<int>();
}

void parseDecoder(const Json& j, const std::string& path, std::vector<HfDecoder>& out) {
    if (j.is_null()) return;
    const std::string type = typeOf(j, path);
    if (type == "Sequence") {
        const Json* list = find(j, "decoders");
        if (list == nullptr) fail(path, "Sequence has no \"decoders\"");
        const Json& a = array(*list, path + ".decoders");
        for (size_t i = 0; i < a.size(); ++i) {
            parseDecoder(a[i], fmt::format("{}.decoders[{}]", path, i), out);
        }
        return;
    }
    HfDecoder d;
    if (type == "ByteLevel") {
        d.kind = HfDecoder::Kind::ByteLevel;
    } else if (type == "Replace") {
        d.kind = HfDecoder::Kind::Replace;
        const auto [isRegex, p] = pattern(j.value("pattern", Json()), path + ".pattern");
        if (isRegex) unsupported(path + ".pattern", "a Regex pattern", "String patterns");
        if (p.empty()) fail(path + ".pattern", "an empty pattern replaces nothing useful");
        d.pattern = p;
        d.content = str(j.value("content", Json()), path + ".content");
    } else if (type == "ByteFallback") {
        d.kind = HfDecoder::Kind::ByteFallback;
    } else if (type == "Fuse") {
        d.kind = HfDecoder::Kind::Fuse;
    } else if (type == "Strip") {
        d.kind = HfDecoder::Kind::Strip;
        d.content = singleChar(j.value("content", Json()), path + ".content");
        d.start = nonNegative(j, "start", path);
        d.stop = nonNegative(j, "stop", path);
    } else if (type == "Metaspace") {
        d.kind = HfDecoder::Kind::Metaspace;
        d.replacement = singleChar(j.value("replacement", Json()), path + ".replacement");
        d.prependFirst = prependScheme(j, path) != HfPreTokenizer::Prepend::Never;
    } else {
        unsupported(path + ".type", fmt::format("\"{}\"", type),
                    "Sequence, ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace");
    }
    out.push_back(std::move(d));
}

void parseModel(const Json& m, const std::string& path, HfBpeSpec& out) {
    object(m, path);
    const std::string type = m.contains("type") ? str(m["type"], path + ".type") : "BPE";
    if (type != "BPE") {
        unsupported(path + ".type", fmt::format("\"{}\"", type), "BPE");
    }
    require(m, "dropout", path, Json());
    require(m, "continuing_subword_prefix", path, "");
    require(m, "end_of_word_suffix", path, "");
    if (const Json* u = find(m, "unk_token"); u != nullptr && !u->is_null()) {
        out.unkToken = str(*u, path + ".unk_token");
    }
    out.fuseUnk = boolean(m, "fuse_unk", path, false);
    out.byteFallback = boolean(m, "byte_fallback", path, false);
    out.ignoreMerges = boolean(m, "ignore_merges", path, false);

    const Json* vocab = find(m, "vocab");
    if (vocab == nullptr) fail(path, "has no \"vocab\"");
    object(*vocab, path + ".vocab");
    out.vocab.reserve(vocab->size());
    for (const auto& [token, id] : vocab->items()) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= (1 << 24)) {
            fail(fmt::format("{}.vocab[\"{}\"]", path, token),
                 fmt::format("expected an id from 0 to {}, got {}", (1 << 24) - 1, id.dump()));
        }
        out.vocab.emplace_back(token, id.get<int32_t>());
    }
    const Json* merges = find(m, "merges");
    if (merges == nullptr) fail(path, "has no \"merges\"");
    const Json& list = array(*merges, path + ".merges");
    out.merges.reserve(list.size());
    for (size_t i = 0; i < list.size(); ++i) {
        const std::string at = fmt::format("{}.merges[{}]", path, i);
        const Json& e = list[i];
        if (e.is_string()) {
            // The older form: exactly two tokens around one space, as the library requires.
            const std::string s = e.get<std::string>();
            const size_t space = s.find(' ');
            if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
                fail(at, fmt::format("\"{}\" is not two tokens separated by one space", s));
            }
            out.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
        } else if (e.is_array() && e.size() == 2) {
            out.merges.emplace_back(str(e[0], at + "[0]"), str(e[1], at + "[1]"));
        } else {
            fail(at, fmt::format("expected \"a b\" or [\"a\", \"b\"], got {}", e.dump()));
        }
    }
}

void parseAddedTokens(const Json& j, const std::string& path, std::vector<HfAddedToken>& out) {
    if (j.is_null()) return;
    array(j, path);
    for (size_t i = 0; i < j.size(); ++i) {
        const std::string at = fmt::format("{}[{}]", path, i);
        const Json& t = object(j[i], at);
        HfAddedToken a;
        const Json* id = find(t, "id");
        if (id == nullptr || !id->is_number_integer() || id->get<int64_t>() < 0 ||
            id->get<int64_t>() >= (1 << 24)) {
            fail(at + ".id", "expected a non-negative integer id");
        }
        a.id = id->get<int32_t>();
        a.content = str(t.value("content", Json()), at + ".content");
        if (a.content.empty()) fail(at + ".content", "an added token cannot be empty");
        if (boolean(t, "single_word", at, false)) {
            unsupported(at + ".single_word", "true", "false");
        }
        a.lstrip = boolean(t, "lstrip", at, false);
        a.rstrip = boolean(t, "rstrip", at, false);
        a.normalized = boolean(t, "normalized", at, !boolean(t, "special", at, false));
        a.special = boolean(t, "special", at, false);
        out.push_back(std::move(a));
    }
}

// TemplateProcessing's "single" template; ByteLevel post-processing only trims offsets.
void parsePostProcessor(const Json& j, const std::string& path,
                        std::optional<std::vector<HfTemplatePiece>>& single, HfOffsetTrim& trim) {
    if (j.is_null()) return;
    const std::string type = typeOf(j, path);
    if (type == "Sequence") {
        const Json* list = find(j, "processors");
        if (list == nullptr) fail(path, "Sequence has no \"processors\"");
        const Json& a = array(*list, path + ".processors");
        for (size_t i = 0; i < a.size(); ++i) {
            parsePostProcessor(a[i], fmt::format("{}.processors[{}]", path, i), single, trim);
        }
        return;
    }
    if (type == "ByteLevel") {
        // The library's defaults (ByteLevel::default()) where a key is missing.
        trim.enabled = boolean(j, "trim_offsets", path, true);
        trim.addPrefixSpace = boolean(j, "add_prefix_space", path, true);
        return;
    }
    if (type != "TemplateProcessing") {
        unsupported(path + ".type", fmt::format("\"{}\"", type),
                    "Sequence, ByteLevel, TemplateProcessing");
    }
    if (single) fail(path, "a second TemplateProcessing in one chain is not supported");
    const Json* specials = find(j, "special_tokens");
    const Json* tmpl = find(j, "single");
    if (tmpl == nullptr) fail(path, "TemplateProcessing has no \"single\" template");
    std::vector<HfTemplatePiece> pieces;
    const Json& list = array(*tmpl, path + ".single");
    for (size_t i = 0; i < list.size(); ++i) {
        const std::string at = fmt::format("{}.single[{}]", path, i);
        const Json& piece = object(list[i], at);
        HfTemplatePiece p;
        if (const Json* s = find(piece, "Sequence")) {
            const std::string id = str(s->value("id", Json()), at + ".Sequence.id");
            if (id != "A") unsupported(at + ".Sequence.id", fmt::format("\"{}\"", id), "\"A\"");
            p.isSequence = true;
        } else if (const Json* sp = find(piece, "SpecialToken")) {
            const std::string id = str(sp->value("id", Json()), at + ".SpecialToken.id");
            const Json* entry = specials == nullptr ? nullptr : find(*specials, id.c_str());
            if (entry == nullptr) {
                fail(at + ".SpecialToken.id",
                     fmt::format("\"{}\" is not in {}.special_tokens", id, path));
            }
            const std::string where = fmt::format("{}.special_tokens[\"{}\"].ids", path, id);
            const Json ids = entry->value("ids", Json());
            array(ids, where);
            for (const Json& v : ids) {
                if (!v.is_number_integer() || v.get<int64_t>() < 0) {
                    fail(where, "expected non-negative integer ids");
                }
                p.ids.push_back(v.get<int32_t>());
            }
        } else {
            fail(at, "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
        }
        pieces.push_back(std::move(p));
    }
    single = std::move(pieces);
}

// tokenizer_config.json's bos_token / eos_token: a string or {"content": ...}.
std::optional<std::string> configToken(const Json& config, const char* key) {
    const Json* j = find(config, key);
    if (j == nullptr || j->is_null()) return std::nullopt;
    if (j->is_string()) return j->get<std::string>();
    if (j->is_object() && j->contains("content") && (*j)["content"].is_string()) {
        return (*j)["content"].get<std::string>();
    }
    fail(key, "expected a token string or {\"content\": ...}");
}

// transformers' LlamaTokenizerFast.update_post_processor: add_bos_token / add_eos_token decide
// the template ([bos] $A [eos]) when the config states them.
void applyConfigTemplate(const Json& config, HfSpec& spec) {
    const Json* bos = find(config, "add_bos_token");
    const Json* eos = find(config, "add_eos_token");
    if ((bos == nullptr || bos->is_null()) && (eos == nullptr || eos->is_null())) return;
    const bool addBos = boolean(config, "add_bos_token", "", false);
    const bool addEos = boolean(config, "add_eos_token", "", false);
    const auto idOf = [&](const char* key) {
        const auto content = configToken(config, key);
        if (!content) fail(key, fmt::format("is needed because {} is true", key));
        for (const auto& a : spec.addedTokens) {
            if (a.content == *content) return a.id;
        }
        for (const auto& [token, id] : spec.model.vocab) {
            if (token == *content) return id;
        }
        fail(key, fmt::format("\"{}\" is not a token of tokenizer.json", *content));
    };
    std::vector<HfTemplatePiece> pieces;
    if (addBos) pieces.push_back({false, {idOf("bos_token")}});
    pieces.push_back({true, {}});
    if (addEos) pieces.push_back({false, {idOf("eos_token")}});
    spec.single = std::move(pieces);
}

}  // namespace

Result<HfSpec> parseHfTokenizerJson(std::string_view json, std::string_view configJson,
                                    std::string_view origin) {
    Json root;
    Json config;
    try {
        root = Json::parse(json);
    } catch (const Json::exception& e) {
        return Error{fmt::format("{}: not valid JSON ({})", origin, e.what())};
    }
    if (!configJson.empty()) {
        try {
            config = Json::parse(configJson);
        } catch (const Json::exception& e) {
            return Error{fmt::format("{}: tokenizer_config.json beside it is not valid JSON ({})",
                                     origin, e.what())};
        }
    }
    HfSpec spec;
    std::string stage = "tokenizer.json";
    try {
        object(root, "(top level)");
        const Json* model = find(root, "model");
        if (model == nullptr) {
            fail("model", "missing: this is not a Hugging Face tokenizer.json (it has no model)");
        }
        require(root, "truncation", "", Json());
        require(root, "padding", "", Json());
        parseModel(*model, "model", spec.model);
        parseAddedTokens(root.value("added_tokens", Json()), "added_tokens", spec.addedTokens);
        parseNormalizer(root.value("normalizer", Json()), "normalizer", spec.normalizers);
        parsePreTokenizer(root.value("pre_tokenizer", Json()), "pre_tokenizer", spec.preTokenizers);
        parsePostProcessor(root.value("post_processor", Json()), "post_processor", spec.single,
                           spec.offsetTrim);
        parseDecoder(root.value("decoder", Json()), "decoder", spec.decoders);
        if (config.is_object()) {
            stage = "tokenizer_config.json";
            applyConfigTemplate(config, spec);
        }
    } catch (const Problem& p) {
        const std::string path = p.path.starts_with('.') ? p.path.substr(1) : p.path;
        return Error{fmt::format("{}: {}{}: {}", origin,
                                 stage == "tokenizer.json" ? "" : "tokenizer_config.json ", path,
                                 p.message)};
    } catch (const Json::exception& e) {
        return Error{fmt::format("{}: malformed {} ({})", origin, stage, e.what())};
    }
    Sha256 h;
    h.update("wafer-hf-tokenizer/1\n");
    h.update(root.dump());
    h.update("\n");
    if (config.is_object()) {
        for (const char* key : {"add_bos_token", "add_eos_token", "bos_token", "eos_token"}) {
            if (const Json* j = find(config, key)) h.update(fmt::format("{}={}\n", key, j->dump()));
        }
    }
    spec.identity = h.hexDigest();
    return spec;
}

}  // namespace ws::tokenizer
