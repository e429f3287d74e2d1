// libFuzzer target for the GPT-2 BPE tokenizer files (engine/tokenizer: loadGpt2Bpe): the input
// is vocab.json, a NUL byte, merges.txt, optionally a NUL byte and text to encode. Both files are
// written to a scratch folder and loaded as `wafer` loads them. Any input must load or come back
// as an Error, never crash, hang or hit undefined behaviour (ASan + UBSan). A tokenizer that loads
// must keep tokenizer.h's promises: ids inside the vocabulary, decode(encode(x)) == x byte for
// byte, unknown ids decode without harm, and save() + load gives the same identity and ids.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

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
    return 0;
}
