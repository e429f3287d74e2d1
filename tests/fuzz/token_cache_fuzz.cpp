// libFuzzer target for the token cache file (engine/data/token_cache): the input replaces the
// cache file of a fixed corpus and tokenizer, then TokenCache::build() runs as a training run
// would. Whatever the file holds (truncated, wrong magic, lying header, bad checksum), build()
// must either reuse it or rebuild it, and the tokens it serves must be the corpus's encoding;
// never a crash, hang, out-of-bounds read of the mapping or undefined behaviour (ASan + UBSan).
// WAFER_FUZZ_WRITE_SEED=<folder>: also writes the genuine cache file there (the seed corpus).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

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
    if (cache->size() != f.expected.size()) fail("the cache serves the wrong token count");
    std::vector<int32_t> tokens(cache->size());
    cache->copyTokens(0, tokens.size(), tokens.data());
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (tokens[i] != f.expected[i] || cache->token(i) != f.expected[i]) {
            fail("the cache serves tokens that are not the corpus's encoding");
        }
    }
    return 0;
}
