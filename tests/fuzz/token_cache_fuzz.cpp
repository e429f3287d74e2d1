// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for the token cache file (engine/data/token_cache): the input replaces the
// cache file of a fixed corpus and tokenizer, then TokenCache::build() runs as a training run
// would, and a Dataset is made from it. Whatever the file holds (truncated, wrong magic, lying
// header, bad checksum), build() must either reuse it, serving only ids inside the vocabulary, or
// rebuild it with the corpus's encoding; never a crash, hang, out-of-bounds access or undefined
// behaviour (ASan + UBSan).
// WAFER_FUZZ_WRITE_SEED=<folder>: also writes the genuine cache file there (the seed corpus).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/data/dataset.h"
#include "engine/data/token_cache.h"
#include "fuzz_support.h"

namespace {

constexpr const char* kCorpus =
    "It was the best of times, it was the worst of times, it was the age of wisdom.\n";

struct Fixture {
    ws::fuzz::ScratchDir dir{"token-cache"};
    std::unique_ptr<ws::tokenizer::Tokenizer> tokenizer = ws::tokenizer::makeByteTokenizer();
    std::vector<int32_t> expected = tokenizer->encode(kCorpus);
    std::filesystem::path file;

    Fixture() {
        auto built = ws::data::TokenCache::build(kCorpus, *tokenizer, dir.path());
        if (!built.ok()) {
            std::fprintf(stderr, "token_cache_fuzz: %s\n", built.error().message.c_str());
            std::abort();
        }
        file = built->path();
        if (const char* seedDir = std::getenv("WAFER_FUZZ_WRITE_SEED")) {
            std::filesystem::copy_file(file, std::filesystem::path(seedDir) / "byte_tokenizer",
                                       std::filesystem::copy_options::overwrite_existing);
        }
    }
};

const Fixture& fixture() {
    static const Fixture f;
    return f;
}

[[noreturn]] void fail(const std::string& what) {
    std::fprintf(stderr, "token_cache_fuzz: %s\n", what.c_str());
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const Fixture& f = fixture();
    if (!ws::fuzz::writeFile(f.file, ws::fuzz::asText(data, size))) fail("cannot write the file");
    auto cache = ws::data::TokenCache::build(kCorpus, *f.tokenizer, f.dir.path());
    if (!cache.ok()) fail("a damaged cache file was not rebuilt: " + cache.error().message);
    ws::fuzz::note(cache->reused() ? "reused" : cache->note());
    std::vector<int32_t> tokens(cache->size());
    cache->copyTokens(0, tokens.size(), tokens.data());
    if (cache->reused()) {
        // A header that names this corpus's digest over another corpus's payload (with its own
        // valid checksum) can only be forged, not damaged into: reuse then only has to serve
        // ids the tokenizer and every table sized by its vocabulary can take.
        if (cache->vocabSize() != f.tokenizer->vocabSize()) fail("reused with another vocabulary");
        for (size_t i = 0; i < tokens.size(); ++i) {
            if (tokens[i] < 0 || tokens[i] >= f.tokenizer->vocabSize() ||
                cache->token(i) != tokens[i]) {
                fail("a reused cache serves ids outside the vocabulary");
            }
        }
    } else if (tokens != f.expected) {
        fail("a rebuilt cache does not hold the corpus's encoding");
    }
    // What training does with it first: the unigram statistics (tables sized by vocabSize()).
    const ws::data::Dataset dataset(*cache, 0.1);
    (void)dataset;
    return 0;
}
