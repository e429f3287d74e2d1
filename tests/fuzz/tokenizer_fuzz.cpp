// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for the GPT-2 BPE tokenizer files (engine/tokenizer: loadGpt2Bpe): the input
// is vocab.json, a NUL byte, merges.txt, optionally a NUL byte and text to encode. Both files are
// written to a scratch folder and loaded as `wafer` loads them. Any input must load or come back
// as an Error, never crash, hang or hit undefined behaviour (ASan + UBSan). A tokenizer that loads
// must keep tokenizer.h's promises: ids inside the vocabulary, decode(encode(x)) == x byte for
// byte, unknown ids decode without harm, and save() + load gives the same identity and ids.
// Issue 34: encodeWithOffsets() gives encode()'s ids with byte ranges that tile the text (each
// begins where the last ended, the last ends at the text's end, each is the token's bytes);
// with ChatML's special tokens added (special_tokens.h) the same holds, they come out whole,
// and save() + load (added_tokens.json) keeps identity and ids; encodeWithMask() over a span of
// the text marks exactly the tokens that overlap it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "engine/tokenizer/masked_encoding.h"
#include "engine/tokenizer/special_tokens.h"
#include "engine/tokenizer/tokenizer.h"
#include "fuzz_support.h"

namespace {

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "tokenizer_fuzz: %s\n", what);
    std::abort();
}

const ws::fuzz::ScratchDir& scratch() {
    static const ws::fuzz::ScratchDir dir("tokenizer");
    return dir;
}

// encodeWithOffsets: encode()'s ids, ranges tiling text, each range the token's own bytes.
void checkOffsets(const ws::tokenizer::Tokenizer& tok, const std::string& text) {
    auto enc = tok.encodeWithOffsets(text, false);
    if (!enc.ok()) fail("encodeWithOffsets refused text that encode() takes");
    if (enc->ids != tok.encode(text)) fail("encodeWithOffsets ids differ from encode()");
    if (enc->offsets.size() != enc->ids.size()) fail("not one offset per token");
    size_t pos = 0;
    for (size_t i = 0; i < enc->ids.size(); ++i) {
        const ws::tokenizer::ByteSpan o = enc->offsets[i];
        if (o.begin != pos || o.end < o.begin || o.end > text.size()) {
            fail("offsets do not tile the text in order");
        }
        const int32_t id = enc->ids[i];
        if (tok.decode(std::span<const int32_t>(&id, 1)) != text.substr(o.begin, o.end - o.begin)) {
            fail("a token's range is not its bytes");
        }
        pos = o.end;
    }
    if (pos != text.size()) fail("offsets do not reach the end of the text");

    // The mask over the middle third: 1 exactly where a token overlaps it.
    const std::vector<ws::tokenizer::ByteSpan> spans{{text.size() / 3, 2 * text.size() / 3}};
    auto masked = ws::tokenizer::encodeWithMask(tok, text, spans);
    if (!masked.ok() || masked->ids != enc->ids || masked->mask.size() != enc->ids.size()) {
        fail("encodeWithMask disagrees with encodeWithOffsets");
    }
    for (size_t i = 0; i < enc->ids.size(); ++i) {
        const auto o = enc->offsets[i];
        const bool overlaps = o.begin < spans[0].end && o.end > spans[0].begin;
        if (masked->mask[i] != (overlaps ? 1 : 0)) fail("mask is not the overlap rule");
    }
    const std::vector<ws::tokenizer::ByteSpan> outside{{0, text.size() + 1}};
    if (ws::tokenizer::encodeWithMask(tok, text, outside).ok()) fail("a span past the text passed");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto parts = ws::fuzz::splitInput(ws::fuzz::asText(data, size), {"\0", 1}, 3);
    const auto vocab = scratch().path() / "vocab.json";
    const auto merges = scratch().path() / "merges.txt";
    if (!ws::fuzz::writeFile(vocab, parts[0])) fail("cannot write vocab.json");
    if (!ws::fuzz::writeFile(merges, parts.size() > 1 ? parts[1] : std::string_view{})) {
        fail("cannot write merges.txt");
    }
    auto loaded = ws::tokenizer::loadGpt2Bpe(vocab, merges);
    if (!loaded.ok()) {
        ws::fuzz::note("refused: " + loaded.error().message);
        return 0;
    }
    ws::fuzz::note("loaded");
    const auto& tok = **loaded;
    const std::string text =
        parts.size() > 2 ? std::string(parts[2]) : std::string("Hello world, it's 2024!\n\xff\xfe");
    const std::vector<int32_t> ids = tok.encode(text);
    for (const int32_t id : ids) {
        if (id < 0 || id >= tok.vocabSize()) fail("encode produced an id outside the vocabulary");
    }
    if (tok.decode(ids) != text) fail("decode(encode(text)) differs from text");
    const int32_t odd[] = {-1, tok.vocabSize(), std::numeric_limits<int32_t>::max(),
                           std::numeric_limits<int32_t>::min()};
    (void)tok.decode(odd);
    (void)ws::tokenizer::tokenByteCounts(tok);

    const auto savedDir = scratch().path() / "saved";
    if (!tok.save(savedDir).ok()) fail("save() of a loaded tokenizer failed");
    auto again = ws::tokenizer::loadGpt2Bpe(savedDir / "vocab.json", savedDir / "merges.txt");
    if (!again.ok()) {
        std::fprintf(stderr, "%s\n", again.error().message.c_str());
        fail("what save() wrote does not load");
    }
    if ((*again)->identity() != tok.identity()) fail("save() + load changed the identity");
    if ((*again)->encode(text) != ids) fail("save() + load changed the encoding");
    checkOffsets(tok, text);

    // ChatML's special tokens added: split out whole, the rest as before, saved and loaded back.
    const std::vector<std::string> chatMl{"<|im_start|>", "<|im_end|>"};
    auto added = ws::tokenizer::withSpecialTokens(std::move(again).value(), chatMl);
    if (!added.ok()) fail("withSpecialTokens refused ChatML's tokens");
    const auto& special = *added->tokenizer;
    const std::string chat = "<|im_start|>" + text + "<|im_end|>";
    const std::vector<int32_t> chatIds = special.encode(chat);
    if (chatIds.empty() || chatIds.front() != added->ids[0] || chatIds.back() != added->ids[1]) {
        fail("the special tokens are not split out whole");
    }
    for (const int32_t id : chatIds) {
        if (id < 0 || id >= special.vocabSize()) fail("an id outside the grown vocabulary");
    }
    if (special.decode(chatIds) != chat) fail("decode(encode(chat)) differs from chat");
    checkOffsets(special, chat);
    const auto specialDir = scratch().path() / "saved-special";
    if (!special.save(specialDir).ok()) fail("save() with special tokens failed");
    auto back = ws::tokenizer::loadGpt2Bpe(specialDir / "vocab.json", specialDir / "merges.txt");
    if (!back.ok()) {
        std::fprintf(stderr, "%s\n", back.error().message.c_str());
        fail("what save() wrote with special tokens does not load");
    }
    if ((*back)->identity() != special.identity() || (*back)->encode(chat) != chatIds) {
        fail("save() + load with special tokens changed the tokenizer");
    }
    return 0;
}
