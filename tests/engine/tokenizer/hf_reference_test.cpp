// SPDX-License-Identifier: GPL-3.0-or-later
// The engine's Hugging Face tokenizer against the tokenizers library itself: the ids (without and
// with special tokens), the decoded text and the offsets that scripts/make_tokenizer_fixtures.mjs
// recorded
// with the library's Node binding, for every tokenizer in fixtures/hf/variants.json over the hard
// texts in texts.json. WAFER_HF_EXPECTED points the test at another expected file (the live test
// makes one with random texts added).
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/hf_tokenizer.h"
#include "hf_fixtures.h"

namespace ws::tokenizer {
namespace {

using testing::kHfFixtures;

std::string expectedFile() {
    const char* env = std::getenv("WAFER_HF_EXPECTED");
    return env != nullptr && *env ? std::string(env) : (kHfFixtures / "expected.json").string();
}

std::string shown(const std::string& text) {
    return nlohmann::json(text).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

// The Node binding's conversion of the library's byte offsets to character (code point) offsets,
// BytesToCharOffsetConverter in the Rust crate: start and end map to the character holding that
// byte; an end at the text's end maps one past the last character. The binding converts before
// the ByteLevel post-processor trims offsets, so a range trimmed to nothing at the text's end is
// (characters, characters) there where the engine (the library's byte form) has (bytes, bytes).
std::pair<size_t, size_t> libraryCharOffsets(const std::string& text, ByteSpan span) {
    std::vector<size_t> charOf(text.size());
    size_t chars = 0;
    for (size_t pos = 0; pos < text.size(); ++chars) {
        const auto len = size_t(decodeUtf8(std::string_view(text).substr(pos)).length);
        for (size_t k = 0; k < len; ++k) charOf[pos + k] = chars;
        pos += len;
    }
    if (span.begin >= text.size()) return {chars, chars};
    const size_t start = charOf[span.begin];
    if (span.end < text.size()) return {start, charOf[span.end]};
    return {start, span.end >= 1 ? charOf[span.end - 1] + 1 : start + 1};
}

std::vector<std::pair<size_t, size_t>> asCharOffsets(const std::string& text,
                                                     const std::vector<ByteSpan>& offsets) {
    std::vector<std::pair<size_t, size_t>> out;
    for (const ByteSpan& o : offsets) out.push_back(libraryCharOffsets(text, o));
    return out;
}

struct OffsetTally {
    int checks = 0, matches = 0, tokens = 0;
};

// encodeWithOffsets() of every text, with and without special tokens: encodeChecked()'s ids
// (held to the library's above) and the library's offsets.
void checkOffsets(const Tokenizer& tok, const std::string& name, const nlohmann::json& want,
                  const nlohmann::json& texts, OffsetTally& tally) {
    ASSERT_TRUE(want.contains("offsets_chars"))
        << expectedFile() << " has no offsets: regenerate it with "
        << "scripts/make_tokenizer_fixtures.mjs";
    for (size_t i = 0; i < texts.size(); ++i) {
        const std::string text = texts.at(i);
        for (const bool special : {false, true}) {
            const std::string at = name + " text " + std::to_string(i) + " " + shown(text) +
                                   (special ? " with special tokens" : "");
            auto enc = tok.encodeWithOffsets(text, special);
            ASSERT_TRUE(enc.ok()) << at << ": " << enc.error().message;
            EXPECT_EQ(enc->ids, *tok.encodeChecked(text, special)) << at;
            ASSERT_EQ(enc->offsets.size(), enc->ids.size()) << at;
            const auto wantOffsets = want.at(special ? "offsets_chars_special" : "offsets_chars")
                                         .at(i)
                                         .get<std::vector<std::pair<size_t, size_t>>>();
            const auto got = asCharOffsets(text, enc->offsets);
            EXPECT_EQ(got, wantOffsets) << at;
            for (size_t k = 0; k < std::min(got.size(), wantOffsets.size()); ++k) {
                if (got[k] == wantOffsets[k]) continue;
                ADD_FAILURE() << at << ": first difference at token " << k << " ("
                              << shown(tok.tokenName(enc->ids[k])) << "): [" << got[k].first << ", "
                              << got[k].second << ") instead of [" << wantOffsets[k].first << ", "
                              << wantOffsets[k].second << ")";
                break;
            }
            for (const ByteSpan& o : enc->offsets) {
                EXPECT_LE(o.begin, o.end) << at;
                EXPECT_LE(o.end, text.size()) << at;
            }
            ++tally.checks;
            tally.matches += got == wantOffsets;
            tally.tokens += int(got.size());
        }
    }
}

TEST(HfReference, EveryTokenizerMatchesTheLibraryIdForId) {
    const auto expected = nlohmann::json::parse(testing::readText(expectedFile()));
    const auto variants = nlohmann::json::parse(testing::readText(kHfFixtures / "variants.json"));
    const auto& texts = expected.at("texts");
    std::map<std::string, std::string> bases;
    int tokenizers = 0;
    int plainMatches = 0, specialMatches = 0, decodeMatches = 0, roundTrips = 0, checks = 0;
    OffsetTally offsets;
    for (const auto& variant : variants.at("tokenizers")) {
        const std::string name = variant.at("name");
        const std::string base = variant.at("base");
        if (!bases.count(base)) bases[base] = testing::baseTokenizerJson(base);
        ASSERT_TRUE(expected.at("tokenizers").contains(name))
            << name << " is missing from " << expectedFile();
        const auto& want = expected.at("tokenizers").at(name);
        // The library reads tokenizer.json alone, so tokenizer_config.json is left out here.
        auto tok =
            HfTokenizer::create(testing::variantTokenizerJson(variant, bases[base]), "", name);
        ASSERT_TRUE(tok.ok()) << tok.error().message;
        ++tokenizers;
        for (size_t i = 0; i < texts.size(); ++i) {
            const std::string text = texts.at(i);
            const std::string at = name + " text " + std::to_string(i) + " " + shown(text);
            auto plain = (*tok)->encodeChecked(text, false);
            auto special = (*tok)->encodeChecked(text, true);
            ASSERT_TRUE(plain.ok() && special.ok()) << at;
            const auto wantPlain = want.at("without_special").at(i).get<std::vector<int32_t>>();
            const auto wantSpecial = want.at("with_special").at(i).get<std::vector<int32_t>>();
            const std::string wantDecoded = want.at("decoded").at(i);
            EXPECT_EQ(*plain, wantPlain) << at;
            EXPECT_EQ(*special, wantSpecial) << at;
            const std::string decoded = (*tok)->decode(*plain);
            EXPECT_EQ(decoded, wantDecoded) << at;
            ++checks;
            plainMatches += *plain == wantPlain;
            specialMatches += *special == wantSpecial;
            decodeMatches += decoded == wantDecoded;
            roundTrips += decoded == text;
            // Where the library gives the text back, so does the engine (and vice versa).
            EXPECT_EQ(decoded == text, wantDecoded == text) << at;
            // encode() (the Tokenizer interface) agrees with encodeChecked on valid UTF-8.
            EXPECT_EQ((*tok)->encode(text), *plain) << at;
        }
        // In the same test, so that each tokenizer is loaded once (about a second each).
        checkOffsets(**tok, name, want, texts, offsets);
    }
    std::printf(
        "[ figures  ] %d tokenizers x %zu texts: ids without special tokens %d/%d, with special "
        "tokens %d/%d, decode %d/%d equal to the library; decode(encode(x)) == x for %d/%d "
        "(the rest are where the library's own decode differs from x: NFC, <unk>, stripped "
        "prefix)\n",
        tokenizers, texts.size(), plainMatches, checks, specialMatches, checks, decodeMatches,
        checks, roundTrips, checks);
    std::printf("[ figures  ] offsets of %d encodings (%d tokens): %d/%d equal to the library's\n",
                offsets.checks, offsets.tokens, offsets.matches, offsets.checks);
    EXPECT_GE(tokenizers, 2);
}

}  // namespace
}  // namespace ws::tokenizer
