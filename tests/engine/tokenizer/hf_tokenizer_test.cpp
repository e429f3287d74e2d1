// SPDX-License-Identifier: GPL-3.0-or-later
// The Hugging Face tokenizer's contract beyond the reference ids (hf_reference_test.cpp): every
// unsupported feature refused with its key path, invalid UTF-8 refused with its byte offset,
// tokenizer_config.json's add_bos_token / add_eos_token, identity, save/load, byte counts, and
// the PCRE2 regex's Oniguruma-compatible \s.
#include "engine/tokenizer/hf_tokenizer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <numeric>

#include "engine/tokenizer/byte_level.h"
#include "hf_fixtures.h"
#include "support/temp_dir.h"

namespace ws::tokenizer {
namespace {

using nlohmann::json;

// A tiny byte-level tokenizer.json that each refusal test breaks in one place.
json tinyByteLevel() {
    json vocab = json::object();
    for (int b = 0; b < 256; ++b) vocab[bytesToByteLevel(std::string(1, char(b)))] = b;
    vocab["he"] = 256;
    vocab["llo"] = 257;
    vocab["ll"] = 258;
    vocab["hello"] = 259;
    return {{"version", "1.0"},
            {"added_tokens", json::array({{{"id", 260},
                                           {"content", "<|end|>"},
                                           {"single_word", false},
                                           {"lstrip", false},
                                           {"rstrip", false},
                                           {"normalized", false},
                                           {"special", true}}})},
            {"normalizer", nullptr},
            {"pre_tokenizer",
             {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
            {"post_processor", nullptr},
            {"decoder", {{"type", "ByteLevel"}}},
            {"model",
             {{"type", "BPE"},
              {"dropout", nullptr},
              {"unk_token", nullptr},
              {"vocab", vocab},
              {"merges", json::array({"h e", "l l", "ll o", "he llo"})}}}};
}

std::string errorOf(const json& j, const std::string& config = "") {
    auto t = HfTokenizer::create(j.dump(), config, "tokenizer.json");
    return t.ok() ? std::string("(loaded)") : t.error().message;
}

TEST(HfTokenizer, TinyFileEncodesMergesAndAddedTokens) {
    auto t = HfTokenizer::create(tinyByteLevel().dump(), "", "tiny");
    ASSERT_TRUE(t.ok()) << t.error().message;
    auto ids = (*t)->encodeChecked("hello<|end|>hello", false);
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(*ids, (std::vector<int32_t>{259, 260, 259}));
    EXPECT_EQ((*t)->decode(*ids), "hello<|end|>hello");
    EXPECT_EQ((*t)->vocabSize(), 261);
    EXPECT_EQ((*t)->kind(), "hf");
    EXPECT_EQ((*t)->tokenName(260), "<|end|>");
    EXPECT_TRUE((*t)->isGpt2Pipeline());
}

TEST(HfTokenizer, UnsupportedFeaturesAreRefusedNamingTheKeyPath) {
    json j = tinyByteLevel();
    j["normalizer"] = {{"type", "Sequence"},
                       {"normalizers", json::array({{{"type", "Lowercase"}}})}};
    EXPECT_NE(errorOf(j).find("normalizer.normalizers[0].type: \"Lowercase\" is not supported"),
              std::string::npos)
        << errorOf(j);

    j = tinyByteLevel();
    j["model"]["type"] = "WordPiece";
    EXPECT_NE(errorOf(j).find("model.type: \"WordPiece\" is not supported"), std::string::npos);

    j = tinyByteLevel();
    j["pre_tokenizer"] = {{"type", "Sequence"},
                          {"pretokenizers", json::array({{{"type", "Whitespace"}}})}};
    EXPECT_NE(errorOf(j).find("pre_tokenizer.pretokenizers[0].type: \"Whitespace\""),
              std::string::npos);

    j = tinyByteLevel();
    j["pre_tokenizer"] = {{"type", "Split"},
                          {"pattern", {{"Regex", "\\s+"}}},
                          {"behavior", "Contiguous"},
                          {"invert", false}};
    EXPECT_NE(errorOf(j).find("pre_tokenizer.behavior: \"Contiguous\" is not supported"),
              std::string::npos);

    j = tinyByteLevel();
    j["decoder"] = {{"type", "WordPiece"}};
    EXPECT_NE(errorOf(j).find("decoder.type: \"WordPiece\""), std::string::npos);

    j = tinyByteLevel();
    j["post_processor"] = {{"type", "RobertaProcessing"}};
    EXPECT_NE(errorOf(j).find("post_processor.type: \"RobertaProcessing\""), std::string::npos);

    j = tinyByteLevel();
    j["model"]["dropout"] = 0.1;
    EXPECT_NE(errorOf(j).find("model.dropout: 0.1 is not supported"), std::string::npos);

    j = tinyByteLevel();
    j["added_tokens"][0]["single_word"] = true;
    EXPECT_NE(errorOf(j).find("added_tokens[0].single_word: true is not supported"),
              std::string::npos);

    j = tinyByteLevel();
    j["model"]["merges"][2] = "ll o x";
    EXPECT_NE(errorOf(j).find("model.merges[2]: \"ll o x\" is not two tokens"), std::string::npos);

    j = tinyByteLevel();
    j["model"]["merges"].push_back("h llo");
    EXPECT_NE(errorOf(j).find("model.merges[4]: \"hllo\" is not in model.vocab"),
              std::string::npos);

    j = tinyByteLevel();
    j["pre_tokenizer"] = {{"type", "Split"},
                          {"pattern", {{"Regex", "(unclosed"}}},
                          {"behavior", "Isolated"},
                          {"invert", false}};
    EXPECT_NE(errorOf(j).find("does not compile"), std::string::npos) << errorOf(j);

    j = tinyByteLevel();
    j["added_tokens"][0]["id"] = 259;  // the id of "hello"
    EXPECT_NE(errorOf(j).find("added_tokens[0].id: 259 is model.vocab's \"hello\""),
              std::string::npos);

    EXPECT_NE(errorOf(json{{"type", "byte"}}).find("model: missing"), std::string::npos);
}

TEST(HfTokenizer, InvalidUtf8IsRefusedNamingTheByteOffset) {
    auto t = HfTokenizer::create(tinyByteLevel().dump(), "", "tiny");
    ASSERT_TRUE(t.ok());
    auto ids = (*t)->encodeChecked("hello \xE2\x82 world", false);
    ASSERT_FALSE(ids.ok());
    EXPECT_NE(ids.error().message.find("byte offset 6 (byte 0xE2)"), std::string::npos)
        << ids.error().message;
    // encode() (the interface every corpus goes through) still round-trips any bytes.
    const std::string broken = "a\xFF\xFE hello\xC3";
    EXPECT_EQ((*t)->decode((*t)->encode(broken)), broken);
}

TEST(HfTokenizer, ConfigAddBosTokenDecidesTheTemplate) {
    const std::string yi = testing::baseTokenizerJson("yi");
    auto plain = HfTokenizer::create(yi, "", "yi");
    ASSERT_TRUE(plain.ok());
    auto withBos = HfTokenizer::create(
        yi, R"({"add_bos_token": true, "add_eos_token": true, "bos_token": "<|startoftext|>",
                "eos_token": {"content": "<|endoftext|>"}})",
        "yi");
    ASSERT_TRUE(withBos.ok()) << withBos.error().message;
    const auto body = *(*plain)->encodeChecked("Hello world", false);
    EXPECT_EQ(*(*plain)->encodeChecked("Hello world", true), body);  // no post_processor
    auto both = *(*withBos)->encodeChecked("Hello world", true);
    ASSERT_EQ(both.size(), body.size() + 2);
    EXPECT_EQ(both.front(), 1);
    EXPECT_EQ(both.back(), 2);
    EXPECT_EQ(std::vector<int32_t>(both.begin() + 1, both.end() - 1), body);
    EXPECT_NE((*plain)->identity(), (*withBos)->identity());

    auto missing =
        HfTokenizer::create(yi, R"({"add_bos_token": true, "bos_token": "<nope>"})", "yi");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("tokenizer_config.json bos_token"), std::string::npos)
        << missing.error().message;
}

TEST(HfTokenizer, IdentityIsStableAndSaveLoadKeepsIt) {
    const std::string text = testing::baseTokenizerJson("qwen2_5");
    auto a = HfTokenizer::create(text, "", "a");
    // The same content formatted differently is the same tokenizer.
    auto b = HfTokenizer::create(json::parse(text).dump(2), "", "b");
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ((*a)->identity(), (*b)->identity());
    EXPECT_EQ((*a)->identity().size(), 64u);

    ws::testing::TempDir dir("hf-save");
    ASSERT_TRUE((*a)->save(dir.path()).ok());
    auto reloaded = loadHfTokenizer(dir / "tokenizer.json");
    ASSERT_TRUE(reloaded.ok()) << reloaded.error().message;
    EXPECT_EQ((*reloaded)->identity(), (*a)->identity());
    const std::string sample = "Hello, 世界! 12345 <|im_end|>";
    EXPECT_EQ((*reloaded)->encode(sample), (*a)->encode(sample));

    auto other = HfTokenizer::create(testing::baseTokenizerJson("yi"), "", "yi");
    ASSERT_TRUE(other.ok());
    EXPECT_NE((*other)->identity(), (*a)->identity());
}

TEST(HfTokenizer, TokenByteCountsAddUpToTheText) {
    const std::string text = "Hello  world,\tnaïve café 中文 👨‍👩‍👧 12345\n\nend";
    for (const char* base : {"qwen2_5", "yi"}) {
        auto t = HfTokenizer::create(testing::baseTokenizerJson(base), "", base);
        ASSERT_TRUE(t.ok());
        const auto counts = tokenByteCounts(**t);
        ASSERT_EQ(counts.size(), size_t((*t)->vocabSize()));
        int64_t sum = 0;
        for (const int32_t id : (*t)->encode(text)) sum += counts[size_t(id)];
        EXPECT_EQ(sum, int64_t(text.size())) << base;
    }
}

TEST(HfTokenizer, MakeTokenizerBuildsTypeHfFromTheConfig) {
    ws::testing::TempDir dir("hf-config");
    { std::ofstream(dir / "tokenizer.json") << tinyByteLevel().dump(); }
    config::TokenizerConfig c;
    c.type = "hf";
    c.tokenizerFile = (dir / "tokenizer.json").string();
    auto t = makeTokenizer(c, "", dir.path());
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_EQ((*t)->kind(), "hf");
    EXPECT_EQ((*t)->encode("hello"), (std::vector<int32_t>{259}));
    c.tokenizerFile.clear();
    auto missing = makeTokenizer(c, "", dir.path());
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("type hf needs tokenizer_file"), std::string::npos);
}

TEST(HfRegex, WhitespaceIsUnicodeWhiteSpaceAsInOniguruma) {
    auto re = HfRegex::compile(R"(\s+|[^\s\p{L}]+|\p{L}+)");
    ASSERT_TRUE(re.ok()) << re.error().message;
    // U+180E is not White_Space (PCRE2's own \s would take it), U+0085 and U+3000 are.
    const std::string text = "a\u180Eb \u0085\u3000c";
    const auto m = re->findAll(text);
    ASSERT_EQ(m.size(), 5u);
    EXPECT_EQ(text.substr(m[1].first, m[1].second - m[1].first), "\u180E");
    EXPECT_EQ(text.substr(m[3].first, m[3].second - m[3].first), " \u0085\u3000");
    EXPECT_FALSE(HfRegex::compile(R"([\S])").ok());
    EXPECT_EQ(*HfRegex::onigurumaCompatible(R"(a\\s)"), R"(a\\s)");  // an escaped backslash
}

}  // namespace
}  // namespace ws::tokenizer
