// SPDX-License-Identifier: GPL-3.0-or-later
// Encoding rendered chats for training (issue 34): byte/bpe offsets, the training mask laid over
// ChatML texts for every tokenizer kind (Qwen2.5 and Yi's real files, GPT-2's ids from the mini
// fixture, the byte tokenizer), special tokens added for a chat format (split out first, never
// merged, saved and loaded back, identity changed), and the errors on bad input.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "engine/tokenizer/bpe_tokenizer.h"
#include "engine/tokenizer/hf_tokenizer.h"
#include "engine/tokenizer/masked_encoding.h"
#include "engine/tokenizer/special_tokens.h"
#include "hf_fixtures.h"
#include "support/temp_dir.h"

namespace ws::tokenizer {
namespace {
namespace fs = std::filesystem;

using Ids = std::vector<int32_t>;
using testing::kHfFixtures;

const fs::path kMini = fs::path(WAFER_TOKENIZER_FIXTURES) / "gpt2_mini";
const std::vector<std::string> kChatMl = {"<|im_start|>", "<|im_end|>"};

std::shared_ptr<const Tokenizer> gpt2Mini() {
    auto tok = loadGpt2Bpe(kMini / "vocab.json", kMini / "merges.txt");
    if (!tok.ok()) throw std::runtime_error(tok.error().message);
    return std::move(tok).value();
}

// The studio's own BPE, the shipped base model's (2048 tokens).
std::shared_ptr<const Tokenizer> shippedBase() {
    const fs::path dir = fs::path(WAFER_CORPUS_DIR) / ".." / "base-model";
    auto tok = loadGpt2Bpe(dir / "vocab.json", dir / "merges.txt");
    if (!tok.ok()) throw std::runtime_error(tok.error().message);
    return std::move(tok).value();
}

std::shared_ptr<const Tokenizer> hfBase(const std::string& base) {
    auto tok = HfTokenizer::create(testing::baseTokenizerJson(base), "", base);
    if (!tok.ok()) throw std::runtime_error(tok.error().message);
    return std::move(tok).value();
}

std::shared_ptr<const Tokenizer> withChatMl(std::shared_ptr<const Tokenizer> base) {
    auto added = withSpecialTokens(std::move(base), kChatMl);
    if (!added.ok()) throw std::runtime_error(added.error().message);
    return added->tokenizer;
}

// The fixture's ChatML conversation (the last of texts.json) and what the library gave for it.
struct LibraryChat {
    std::string text;
    std::map<std::string, Ids> ids;  // by variant name
};
LibraryChat libraryChat() {
    const auto expected = nlohmann::json::parse(testing::readText(kHfFixtures / "expected.json"));
    LibraryChat out;
    const size_t last = expected.at("texts").size() - 1;
    out.text = expected.at("texts").at(last);
    for (const auto& [name, entry] : expected.at("tokenizers").items()) {
        out.ids[name] = entry.at("without_special").at(last).get<Ids>();
    }
    return out;
}

// Each assistant turn of a ChatML text: from after "<|im_start|>assistant\n" to the end of its
// "<|im_end|>", what the chat renderer hands over as trained.
std::vector<ByteSpan> assistantSpans(const std::string& text) {
    const std::string header = "<|im_start|>assistant\n", end = "<|im_end|>";
    std::vector<ByteSpan> spans;
    for (size_t at = text.find(header); at != std::string::npos; at = text.find(header, at + 1)) {
        const size_t begin = at + header.size();
        spans.push_back({begin, text.find(end, begin) + end.size()});
    }
    return spans;
}

// The facts a ChatML mask must show, for any tokenizer with ChatML's special tokens.
void expectChatMlMask(const Tokenizer& tok, const std::string& text, const MaskedEncoding& m,
                      bool editsSplitAtTurnEdges) {
    const auto spans = assistantSpans(text);
    ASSERT_EQ(spans.size(), 2u);
    ASSERT_EQ(m.ids.size(), m.mask.size());
    const int32_t start = *tok.specialTokenId("<|im_start|>");
    const int32_t end = *tok.specialTokenId("<|im_end|>");
    // <|im_start|> never; <|im_end|> exactly where it closes an assistant turn (2 of 5).
    int trainedEnds = 0, untrainedEnds = 0;
    for (size_t i = 0; i < m.ids.size(); ++i) {
        if (m.ids[i] == start) {
            EXPECT_EQ(m.mask[i], 0) << "token " << i;
        }
        if (m.ids[i] == end) (m.mask[i] ? trainedEnds : untrainedEnds)++;
        // The "assistant" header word right after <|im_start|> is never trained on.
        if (i > 0 && m.ids[i - 1] == start) {
            EXPECT_EQ(m.mask[i], 0) << "token " << i;
        }
    }
    EXPECT_EQ(trainedEnds, 2);
    EXPECT_EQ(untrainedEnds, 3);
    // The trained tokens are the answers with their <|im_end|>, nothing else.
    Ids trained;
    for (size_t i = 0; i < m.ids.size(); ++i) {
        if (m.mask[i]) trained.push_back(m.ids[i]);
    }
    std::string answers;
    for (const ByteSpan& s : spans) answers += text.substr(s.begin, s.end - s.begin);
    if (editsSplitAtTurnEdges) {
        EXPECT_EQ(tok.decode(trained), answers);
        // As many tokens as the answers encoded on their own (each with its <|im_end|>).
        size_t alone = 0;
        for (const ByteSpan& s : spans) {
            alone += tok.encode(text.substr(s.begin, s.end - s.begin)).size();
        }
        EXPECT_EQ(trained.size(), alone);
    } else {
        EXPECT_NE(tok.decode(trained).find("Vier."), std::string::npos) << tok.decode(trained);
        EXPECT_NE(tok.decode(trained).find("Sechs, na"), std::string::npos);
        EXPECT_EQ(tok.decode(trained).find("What"), std::string::npos);
    }
}

TEST(TokenOffsets, ByteAndBpeTileTheText) {
    const std::string text = "Hello world, caf\xC3\xA9 \xF0\x9F\x91\x8D\n\n  x<|endoftext|>\xFF";
    const std::shared_ptr<const Tokenizer> byte = makeByteTokenizer();
    const auto mini = gpt2Mini();
    for (const Tokenizer* tok : {byte.get(), mini.get()}) {
        auto enc = tok->encodeWithOffsets(text, true);
        ASSERT_TRUE(enc.ok());
        EXPECT_EQ(enc->ids, tok->encode(text)) << tok->kind();
        ASSERT_EQ(enc->offsets.size(), enc->ids.size());
        size_t pos = 0;
        for (size_t i = 0; i < enc->ids.size(); ++i) {
            EXPECT_EQ(enc->offsets[i].begin, pos) << tok->kind() << " token " << i;
            const Ids one{enc->ids[i]};
            EXPECT_EQ(text.substr(pos, enc->offsets[i].end - pos), tok->decode(one));
            pos = enc->offsets[i].end;
        }
        EXPECT_EQ(pos, text.size()) << tok->kind();
    }
    // GPT-2 ids: " world" is 995 at [5, 11).
    auto enc = mini->encodeWithOffsets("hello world", false);
    EXPECT_EQ(enc->ids, (Ids{31373, 995}));
    EXPECT_EQ(enc->offsets, (std::vector<ByteSpan>{{0, 5}, {5, 11}}));
}

TEST(MaskedEncoding, QwenChatMlIdsAreTheLibrarysAndOnlyAnswersAreTrained) {
    const LibraryChat chat = libraryChat();
    const auto qwen = hfBase("qwen2_5");
    // Qwen2.5 has ChatML's tokens already: adding them changes nothing.
    auto added = withSpecialTokens(qwen, kChatMl);
    ASSERT_TRUE(added.ok());
    EXPECT_EQ(added->tokenizer.get(), qwen.get());
    EXPECT_EQ(added->ids, (Ids{151644, 151645}));

    const auto spans = assistantSpans(chat.text);
    auto m = encodeWithMask(*qwen, chat.text, spans);
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ(m->ids, chat.ids.at("qwen2_5"));
    expectChatMlMask(*qwen, chat.text, *m, true);
}

TEST(MaskedEncoding, YiWithChatMlAddedMatchesTheLibrary) {
    const LibraryChat chat = libraryChat();
    const auto yi = hfBase("yi");
    // Yi's vocabulary has <|im_start|> (6) and <|im_end|> (7) but not as added tokens: as text
    // they are cut into pieces. Made special they keep their ids and are split out first.
    EXPECT_FALSE(yi->specialTokenId("<|im_end|>"));
    EXPECT_NE(yi->encode("<|im_end|>"), (Ids{7}));
    auto added = withSpecialTokens(yi, kChatMl);
    ASSERT_TRUE(added.ok()) << added.error().message;
    EXPECT_EQ(added->ids, (Ids{6, 7}));
    const Tokenizer& tok = *added->tokenizer;
    EXPECT_EQ(tok.encode("<|im_end|>"), (Ids{7}));
    EXPECT_EQ(tok.vocabSize(), yi->vocabSize());
    EXPECT_NE(tok.identity(), yi->identity());

    auto m = encodeWithMask(tok, chat.text, assistantSpans(chat.text));
    ASSERT_TRUE(m.ok()) << m.error().message;
    // The library, given the same added tokens (variants.json "yi-chatml-added"), agrees.
    EXPECT_EQ(m->ids, chat.ids.at("yi-chatml-added"));
    expectChatMlMask(tok, chat.text, *m, false);
}

TEST(MaskedEncoding, Gpt2ShippedBaseAndByteWithChatMlAdded) {
    const LibraryChat chat = libraryChat();
    const std::shared_ptr<const Tokenizer> bases[] = {gpt2Mini(), shippedBase(),
                                                      makeByteTokenizer()};
    const Ids newIds[] = {{50257, 50258}, {2048, 2049}, {256, 257}};
    for (size_t b = 0; b < std::size(bases); ++b) {
        const auto& base = bases[b];
        SCOPED_TRACE(base->kind() + " " + std::to_string(base->vocabSize()));
        auto added = withSpecialTokens(base, kChatMl);
        ASSERT_TRUE(added.ok());
        EXPECT_EQ(added->ids, newIds[b]);
        const auto tok = added->tokenizer;
        auto m = encodeWithMask(*tok, chat.text, assistantSpans(chat.text));
        ASSERT_TRUE(m.ok()) << m.error().message;
        EXPECT_EQ(m->ids, tok->encode(chat.text));
        expectChatMlMask(*tok, chat.text, *m, true);
    }
}

TEST(MaskedEncoding, SpanEdgesFollowTheOverlapRule) {
    const auto qwen = hfBase("qwen2_5");
    const auto mini = gpt2Mini();
    const std::string text = "Hello world";  // "Hello" [0, 5), " world" [5, 11) in both
    const auto maskFor = [&](const Tokenizer& tok, std::vector<ByteSpan> spans) {
        auto m = encodeWithMask(tok, text, spans);
        EXPECT_TRUE(m.ok());
        return m.ok() ? m->mask : std::vector<uint8_t>();
    };
    using Mask = std::vector<uint8_t>;
    for (const Tokenizer* tok : {qwen.get(), mini.get()}) {
        SCOPED_TRACE(tok->kind());
        EXPECT_EQ(maskFor(*tok, {{5, 11}}), (Mask{0, 1}));  // starts where a token starts
        EXPECT_EQ(maskFor(*tok, {{0, 5}}), (Mask{1, 0}));   // ends where a token ends
        EXPECT_EQ(maskFor(*tok, {{6, 11}}), (Mask{0, 1}));  // begins inside " world": straddles
        EXPECT_EQ(maskFor(*tok, {{0, 6}}), (Mask{1, 1}));   // ends inside " world": straddles
        EXPECT_EQ(maskFor(*tok, {{5, 5}}), (Mask{0, 0}));   // empty span: nothing
        EXPECT_EQ(maskFor(*tok, {}), (Mask{0, 0}));
        EXPECT_EQ(maskFor(*tok, {{0, 1}, {10, 11}}), (Mask{1, 1}));
    }
    // BOS from the post-processor (Yi in Llama 2's layout adds <|startoftext|>) is never
    // trained on, even under a span covering everything.
    const auto variants = nlohmann::json::parse(testing::readText(kHfFixtures / "variants.json"));
    for (const auto& v : variants.at("tokenizers")) {
        if (v.at("name") != "yi-llama2-layout") continue;
        auto llama2 = HfTokenizer::create(
            testing::variantTokenizerJson(v, testing::baseTokenizerJson("yi")), "", "llama2");
        ASSERT_TRUE(llama2.ok());
        const std::vector<ByteSpan> all{{0, text.size()}};
        auto m = encodeWithMask(**llama2, text, all, true);
        ASSERT_TRUE(m.ok());
        EXPECT_EQ(m->ids.front(), 1);  // <|startoftext|>
        EXPECT_EQ(m->ids, *(*llama2)->encodeChecked(text, true));
        EXPECT_EQ(m->mask.front(), 0);
        EXPECT_TRUE(std::all_of(m->mask.begin() + 1, m->mask.end(), [](uint8_t x) { return x; }));
    }
}

TEST(MaskedEncoding, BadInputIsAnError) {
    const auto qwen = hfBase("qwen2_5");
    const std::string bad = "Hello\xC3(";
    const std::vector<ByteSpan> none;
    auto m = encodeWithMask(*qwen, bad, none);
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.error().message.find("byte offset 5"), std::string::npos) << m.error().message;
    auto offsets = qwen->encodeWithOffsets(bad, false);
    ASSERT_FALSE(offsets.ok());

    const std::string text = "Hello world";
    for (const ByteSpan s : {ByteSpan{3, 12}, ByteSpan{7, 6}, ByteSpan{20, 30}}) {
        const std::vector<ByteSpan> spans{{0, 1}, s};
        auto r = encodeWithMask(*qwen, text, spans);
        ASSERT_FALSE(r.ok());
        EXPECT_NE(r.error().message.find("span 1"), std::string::npos) << r.error().message;
        EXPECT_NE(r.error().message.find("11 bytes"), std::string::npos) << r.error().message;
    }
    // byte and bpe take any bytes.
    EXPECT_TRUE(encodeWithMask(*gpt2Mini(), bad, none).ok());
}

TEST(SpecialTokens, SplitFirstNeverMergedNewIdsNamesAndIdentity) {
    const auto base = gpt2Mini();
    auto added = withSpecialTokens(base, kChatMl);
    ASSERT_TRUE(added.ok());
    const Tokenizer& tok = *added->tokenizer;
    EXPECT_EQ(added->ids, (Ids{50257, 50258}));
    EXPECT_EQ(tok.vocabSize(), 50259);
    EXPECT_EQ(tok.kind(), "bpe");
    EXPECT_NE(tok.identity(), base->identity());
    EXPECT_EQ(tok.tokenName(50258), "<|im_end|>");
    EXPECT_EQ(tok.tokenName(31373), base->tokenName(31373));
    EXPECT_EQ(*tok.specialTokenId("<|im_start|>"), 50257);
    // Without them the text is cut into ordinary pieces; with them each is one token, and the
    // text around is encoded as before (GPT-2 would merge "hello" with nothing across them).
    EXPECT_GT(base->encode("<|im_end|>").size(), 1u);
    const std::string text = "hello<|im_end|> world<|im_start|><|im_end|>hello";
    Ids want = base->encode("hello");
    want.push_back(50258);
    for (const int32_t id : base->encode(" world")) want.push_back(id);
    want.insert(want.end(), {50257, 50258});
    for (const int32_t id : base->encode("hello")) want.push_back(id);
    EXPECT_EQ(tok.encode(text), want);
    EXPECT_EQ(tok.decode(tok.encode(text)), text);
    EXPECT_EQ(tok.tokenByteCount(50257), 12);
    // An id past every token still shows as U+FFFD.
    EXPECT_EQ(tok.decode(Ids{50259}), "\xEF\xBF\xBD");
    // Asking again for known tokens keeps the tokenizer; GPT-2's own <|endoftext|> keeps 50256.
    auto again = withSpecialTokens(added->tokenizer, kChatMl);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->tokenizer.get(), added->tokenizer.get());
    const std::vector<std::string> eos{"<|endoftext|>"};
    auto withEos = withSpecialTokens(added->tokenizer, eos);
    ASSERT_TRUE(withEos.ok());
    EXPECT_EQ(withEos->ids, (Ids{50256}));
    EXPECT_EQ(withEos->tokenizer->vocabSize(), 50259);
    EXPECT_EQ(withEos->tokenizer->encode("a<|endoftext|>"), (Ids{base->encode("a")[0], 50256}));
    // Empty or invalid UTF-8 contents are refused.
    EXPECT_FALSE(withSpecialTokens(base, std::vector<std::string>{""}).ok());
    EXPECT_FALSE(withSpecialTokens(base, std::vector<std::string>{"<\xFF>"}).ok());
}

TEST(SpecialTokens, SaveAndLoadGiveTheSameTokenizer) {
    ws::testing::TempDir dir("special-tokens");
    const std::string text = "<|im_start|>user\nhello world<|im_end|>\n<|im_end|>";
    // bpe: vocab.json + merges.txt unchanged, added_tokens.json beside them. (Model folders:
    // tests/engine/modelio/folder_tokenizer_test.cpp.)
    const auto bpe = withChatMl(gpt2Mini());
    ASSERT_TRUE(bpe->save(dir / "bpe").ok());
    EXPECT_EQ(testing::readText(dir / "bpe" / "vocab.json").find("im_start"), std::string::npos);
    EXPECT_EQ(nlohmann::json::parse(testing::readText(dir / "bpe" / "added_tokens.json")),
              nlohmann::json::parse(R"({"<|im_start|>": 50257, "<|im_end|>": 50258})"));
    auto bpeBack = loadGpt2Bpe(dir / "bpe" / "vocab.json", dir / "bpe" / "merges.txt");
    ASSERT_TRUE(bpeBack.ok()) << bpeBack.error().message;
    // byte: tokenizer.json {"type": "byte"} + added_tokens.json.
    const auto byte = withChatMl(std::shared_ptr<const Tokenizer>(makeByteTokenizer()));
    ASSERT_TRUE(byte->save(dir / "byte").ok());
    auto byteFolder = loadByteTokenizerFolder(dir / "byte");
    ASSERT_TRUE(byteFolder.ok()) << byteFolder.error().message;
    // hf: tokenizer.json's added_tokens.
    auto yi = withSpecialTokens(hfBase("yi"), kChatMl);
    ASSERT_TRUE(yi.ok());
    ASSERT_TRUE(yi->tokenizer->save(dir / "yi").ok());
    auto yiFolder = loadHfTokenizer(dir / "yi" / "tokenizer.json");
    ASSERT_TRUE(yiFolder.ok()) << yiFolder.error().message;

    const std::vector<std::pair<const Tokenizer*, const Tokenizer*>> pairs{
        {bpe.get(), bpeBack->get()},
        {byte.get(), byteFolder->get()},
        {yi->tokenizer.get(), yiFolder->get()}};
    for (const auto& [made, loaded] : pairs) {
        SCOPED_TRACE(made->kind());
        EXPECT_EQ(loaded->identity(), made->identity());
        EXPECT_EQ(loaded->vocabSize(), made->vocabSize());
        EXPECT_EQ(loaded->kind(), made->kind());
        EXPECT_EQ(loaded->encode(text), made->encode(text));
        EXPECT_EQ(*loaded->specialTokenId("<|im_end|>"), *made->specialTokenId("<|im_end|>"));
    }
    EXPECT_EQ(byte->encode("<|im_end|>a"), (Ids{257, 'a'}));
    EXPECT_EQ(byte->vocabSize(), 258);
    EXPECT_EQ(byte->tokenName(256), "<|im_start|>");
}

TEST(SpecialTokens, ABadAddedTokensFileIsAnErrorNamingIt) {
    ws::testing::TempDir dir("special-tokens-bad");
    ASSERT_TRUE(gpt2Mini()->save(dir.path()).ok());
    const auto load = [&](std::string_view added) {
        std::ofstream(dir / "added_tokens.json") << added;
        return loadGpt2Bpe(dir / "vocab.json", dir / "merges.txt");
    };
    for (const std::string_view bad : {R"(["<|im_start|>"])", R"({"<|im_start|>": 31373})",
                                       R"({"<|a|>": 50257, "<|b|>": 50257})", R"({"<|a|>": -1})",
                                       R"({"": 50257})", "{not json"}) {
        auto r = load(bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_NE(r.error().message.find("added_tokens.json"), std::string::npos)
            << r.error().message;
    }
    auto eos = load(R"({"<|endoftext|>": 50256})");  // GPT-2's own, now split out
    ASSERT_TRUE(eos.ok()) << eos.error().message;
    EXPECT_EQ((*eos)->encode("a<|endoftext|>").back(), 50256);
}

}  // namespace
}  // namespace ws::tokenizer
