// SPDX-License-Identifier: GPL-3.0-or-later
// The byte tokenizer and makeTokenizer(), the one entry point a session uses: it turns a
// TokenizerConfig into a tokenizer, training and caching a BPE when asked to.
#include "engine/tokenizer/tokenizer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

#include "engine/core/hash.h"
#include "engine/fileio/atomic_file.h"
#include "engine/tokenizer/bpe_tokenizer.h"
#include "engine/tokenizer/hf_tokenizer.h"

namespace ws::tokenizer {
namespace fs = std::filesystem;

Tokenizer::~Tokenizer() = default;

Result<std::vector<int32_t>> Tokenizer::encodeChecked(std::string_view text, bool) const {
    return encode(text);
}

Result<Encoding> Tokenizer::encodeWithOffsets(std::string_view text, bool addSpecialTokens) const {
    auto ids = encodeChecked(text, addSpecialTokens);
    if (!ids.ok()) return ids.error();
    Encoding out;
    out.ids = std::move(ids).value();
    out.offsets.reserve(out.ids.size());
    size_t pos = 0;
    for (const int32_t id : out.ids) {
        const size_t end = std::min(text.size(), pos + size_t(std::max(tokenByteCount(id), 0)));
        out.offsets.push_back({pos, end});
        pos = end;
    }
    return out;
}

std::optional<int32_t> Tokenizer::specialTokenId(std::string_view) const {
    return std::nullopt;
}

int32_t Tokenizer::tokenByteCount(int32_t id) const {
    return int32_t(decode(std::span<const int32_t>(&id, 1)).size());
}

std::string Tokenizer::tokenName(int32_t id) const {
    if (id < 0 || id >= vocabSize()) return {};
    return decode(std::span<const int32_t>(&id, 1));
}

namespace {

class ByteTokenizer final : public Tokenizer {
public:
    std::vector<int32_t> encode(std::string_view text) const override {
        std::vector<int32_t> out(text.size());
        for (size_t i = 0; i < text.size(); ++i) out[i] = uint8_t(text[i]);
        return out;
    }
    std::string decode(std::span<const int32_t> tokens) const override {
        std::string out;
        out.reserve(tokens.size());
        for (const int32_t t : tokens) {
            if (t >= 0 && t < 256) {
                out.push_back(char(t));
            } else {
                out += "\xEF\xBF\xBD";  // U+FFFD for ids outside the 256 bytes
            }
        }
        return out;
    }
    int vocabSize() const override { return 256; }
    std::string kind() const override { return "byte"; }
    std::string identity() const override { return sha256Hex("wafer-byte/1"); }
    Status save(const fs::path& dir) const override {
        std::error_code ec;
        fs::create_directories(dir, ec);
        if (ec) {
            return Error{fmt::format("cannot create folder '{}': {}", dir.string(), ec.message())};
        }
        return fileio::writeFileAtomically(dir / "tokenizer.json", "{\"type\": \"byte\"}\n");
    }
};

// Part of the cache folder name: bump when training changes so old caches are not reused.
constexpr std::string_view kTrainerVersion = "bpe1";

Result<std::unique_ptr<Tokenizer>> trainOrReuse(const config::TokenizerConfig& config,
                                                std::string_view corpus, const fs::path& cacheDir,
                                                ProgressFn progress) {
    const std::string key = fmt::format("{}-{}-v{}", kTrainerVersion,
                                        sha256Hex(corpus).substr(0, 32), config.vocabSize);
    const fs::path dir = cacheDir / "tokenizers" / key;
    std::error_code ec;
    if (fs::exists(dir / "vocab.json", ec) && fs::exists(dir / "merges.txt", ec)) {
        if (auto cached = loadGpt2Bpe(dir / "vocab.json", dir / "merges.txt"); cached.ok()) {
            return cached;
        }
        // A damaged cached copy (crash, disk trouble, hand edits): train again below.
    }
    auto trained = trainBpe(corpus, config.vocabSize, std::move(progress));
    if (!trained.ok()) return trained;

    // Save into a private folder, then rename it into place: the cache holds whole pairs only.
    static std::atomic<unsigned> counter{0};
    const fs::path temp = fmt::format("{}.tmp.{}.{}", dir.string(), ::getpid(), counter++);
    if (Status s = (*trained)->save(temp); !s.ok()) {
        fs::remove_all(temp, ec);
        return Error{fmt::format(
            "cannot cache the trained tokenizer under '{}' ({}): make that folder writable",
            cacheDir.string(), s.error().message)};
    }
    fs::remove_all(dir, ec);  // a damaged copy, or one a concurrent run just finished
    fs::rename(temp, dir, ec);
    if (ec) {
        fs::remove_all(temp, ec);
        // Another process may have renamed its identical result into place first; fine.
        if (!fs::exists(dir / "merges.txt", ec)) {
            return Error{fmt::format(
                "cannot move the trained tokenizer into '{}': make the cache folder writable",
                dir.string())};
        }
    }
    return trained;
}

}  // namespace

std::unique_ptr<Tokenizer> makeByteTokenizer() {
    return std::make_unique<ByteTokenizer>();
}

std::vector<int32_t> tokenByteCounts(const Tokenizer& tokenizer) {
    std::vector<int32_t> counts(size_t(std::max(tokenizer.vocabSize(), 0)));
    for (size_t id = 0; id < counts.size(); ++id)
        counts[id] = tokenizer.tokenByteCount(int32_t(id));
    return counts;
}

Result<std::unique_ptr<Tokenizer>> makeTokenizer(const config::TokenizerConfig& config,
                                                 std::string_view corpusText,
                                                 const fs::path& cacheDir, ProgressFn progress) {
    if (config.type == "byte") return makeByteTokenizer();
    if (config.type == "bpe") {
        if (config.vocabFile.empty() || config.mergesFile.empty()) {
            return Error{
                "type bpe needs vocab_file and merges_file (a GPT-2 vocab.json and "
                "merges.txt pair); set both, or use type train-bpe to learn one"};
        }
        return loadGpt2Bpe(config.vocabFile, config.mergesFile);
    }
    if (config.type == "hf") {
        if (config.tokenizerFile.empty()) {
            return Error{
                "type hf needs tokenizer_file (a Hugging Face tokenizer.json, e.g. the model "
                "folder's)"};
        }
        return loadHfTokenizer(config.tokenizerFile);
    }
    if (config.type == "train-bpe") {
        return trainOrReuse(config, corpusText, cacheDir, std::move(progress));
    }
    return Error{
        fmt::format("type '{}' is not a tokenizer: use byte, bpe, train-bpe or hf", config.type)};
}

}  // namespace ws::tokenizer
