// SPDX-License-Identifier: GPL-3.0-or-later
// TokenCache: writing (chunked encoding, temp file, fsync, rename) and validated memory-mapped
// reading of the token file described in token_cache.h.
#include "engine/data/token_cache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <vector>

#include "engine/core/hash.h"

namespace ws::data {
namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'W', 'S', 'T', 'O', 'K', 'E', 'N', 'S'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kByteOrderMark = 0x01020304;
constexpr size_t kHeaderBytes = 256;
constexpr size_t kChunkBytes = size_t(1) << 20;

struct Header {
    char magic[8];
    uint32_t version;
    uint32_t byteOrderMark;
    uint32_t bytesPerToken;
    uint32_t vocabSize;
    uint64_t count;
    char corpusSha[64];
    char tokenizerSha[64];
    char payloadSha[64];
    char reserved[32];
};
static_assert(sizeof(Header) == kHeaderBytes, "the header is exactly 256 bytes");

std::string systemReason() {
    return std::strerror(errno);
}

void fsyncDirectory(const fs::path& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd < 0) return;  // best effort: the file itself is durable already
    ::fsync(fd);
    ::close(fd);
}

// Writes all of data at the file position; false (errno set) on failure.
bool writeAll(int fd, const void* data, size_t size) {
    const auto* p = static_cast<const char*>(data);
    while (size > 0) {
        const ssize_t n = ::write(fd, p, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        size -= size_t(n);
    }
    return true;
}

// A temp file that removes itself unless committed by renaming.
class TempFile {
public:
    explicit TempFile(fs::path finalPath) : m_final(std::move(finalPath)) {
        static std::atomic<unsigned> counter{0};
        m_temp = fmt::format("{}.tmp.{}.{}", m_final.string(), ::getpid(), counter++);
        m_fd = ::open(m_temp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    }
    ~TempFile() {
        if (m_fd >= 0) ::close(m_fd);
        if (!m_committed) ::unlink(m_temp.c_str());
    }
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;

    int fd() const { return m_fd; }
    const fs::path& tempPath() const { return m_temp; }
    Status commit() {
        if (::fsync(m_fd) != 0) return failure("cannot flush the token cache");
        if (::close(m_fd) != 0) {
            m_fd = -1;
            return failure("cannot close the token cache");
        }
        m_fd = -1;
        if (::rename(m_temp.c_str(), m_final.c_str()) != 0) {
            return Error{fmt::format("cannot rename '{}' to '{}': {}", m_temp.string(),
                                     m_final.string(), systemReason())};
        }
        m_committed = true;
        fsyncDirectory(m_final.parent_path());
        return {};
    }

    // Names the cache file (the temp file is gone once this object is), the system's reason and,
    // when the disk is full, the way out.
    Error failure(std::string_view what) const {
        const int error = errno;
        const bool full = error == ENOSPC || error == EFBIG || error == EDQUOT;
        return Error{fmt::format(
            "{} '{}': {}{}", what, m_final.string(), std::strerror(error),
            full ? " (the disk is full: free some space in that folder or point XDG_CACHE_HOME "
                   "at a disk with room, then run again; nothing partial was kept)"
                 : "")};
    }

private:
    fs::path m_final;
    fs::path m_temp;
    int m_fd = -1;
    bool m_committed = false;
};

// Where a chunk may end so that both sides pre-tokenise as they would together (token_cache.h).
size_t safeChunkEnd(std::string_view text, size_t from, size_t target) {
    const auto isAsciiLetter = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    };
    for (size_t p = std::max(target, from + 1); p + 1 < text.size(); ++p) {
        if (text[p] == ' ' && isAsciiLetter(text[p - 1]) && isAsciiLetter(text[p + 1])) return p;
    }
    return text.size();
}

}  // namespace

struct TokenCache::Mapping {
    void* base = nullptr;
    size_t length = 0;
    ~Mapping() {
        if (base) ::munmap(base, length);
    }
};

void encodeInChunks(std::string_view text, const tokenizer::Tokenizer& tokenizer, size_t chunkBytes,
                    const std::function<void(std::span<const int32_t>)>& sink,
                    const ProgressFn& progress) {
    constexpr std::string_view kWhat = "tokenizing corpus";
    if (progress) progress(0.0, kWhat);
    for (size_t start = 0; start < text.size();) {
        const size_t end =
            tokenizer.kind() == "hf" ? text.size() : safeChunkEnd(text, start, start + chunkBytes);
        const std::vector<int32_t> ids = tokenizer.encode(text.substr(start, end - start));
        sink(ids);
        start = end;
        if (progress) progress(double(start) / double(text.size()), kWhat);
    }
}

Result<TokenCache> TokenCache::build(std::string_view corpusText,
                                     const tokenizer::Tokenizer& tokenizer,
                                     const fs::path& cacheDir, ProgressFn progress) {
    if (corpusText.empty()) return Error{"the corpus is empty: add text to data_dir"};
    const int vocab = tokenizer.vocabSize();
    const std::string corpusSha = sha256Hex(corpusText);
    const std::string tokenizerSha = sha256Hex(tokenizer.identity());
    const fs::path dir = cacheDir / "tokens";
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
        return Error{fmt::format(
            "cannot create the token cache folder '{}': {}; make it writable or choose another "
            "cache folder",
            dir.string(), ec.message())};
    }
    const fs::path file =
        dir / fmt::format("{}-{}.tokens", corpusSha.substr(0, 24), tokenizerSha.substr(0, 24));

    std::string note;
    if (fs::exists(file, ec)) {
        auto existing = open(file, corpusSha, tokenizerSha, vocab);
        if (existing.ok()) {
            existing->m_reused = true;
            return existing;
        }
        note = fmt::format("rebuilt the token cache: {}", existing.error().message);
    }

    const uint32_t width = vocab <= 65536 ? 2 : 4;
    TempFile temp(file);
    if (temp.fd() < 0) {
        return Error{fmt::format("{}; make the cache folder writable",
                                 temp.failure("cannot create the token cache").message)};
    }
    Header header{};
    if (!writeAll(temp.fd(), &header, sizeof header)) {  // placeholder until the count is known
        return temp.failure("cannot write the token cache");
    }
    Sha256 payloadHash;
    uint64_t count = 0;
    std::vector<unsigned char> buffer;
    std::string failure;
    encodeInChunks(
        corpusText, tokenizer, kChunkBytes,
        [&](std::span<const int32_t> ids) {
            if (!failure.empty()) return;
            buffer.resize(ids.size() * width);
            for (size_t i = 0; i < ids.size(); ++i) {
                const int32_t id = ids[i];
                if (id < 0 || id >= vocab) {
                    failure = fmt::format(
                        "the tokenizer produced id {} outside its vocabulary of {}", id, vocab);
                    return;
                }
                if (width == 2) {
                    const auto v = uint16_t(id);
                    std::memcpy(&buffer[i * 2], &v, 2);
                } else {
                    std::memcpy(&buffer[i * 4], &id, 4);
                }
            }
            payloadHash.update(buffer.data(), buffer.size());
            if (!writeAll(temp.fd(), buffer.data(), buffer.size())) {
                failure = temp.failure("cannot write the token cache").message;
            }
            count += ids.size();
        },
        progress);
    if (!failure.empty()) return Error{failure};

    std::memcpy(header.magic, kMagic, sizeof kMagic);
    header.version = kVersion;
    header.byteOrderMark = kByteOrderMark;
    header.bytesPerToken = width;
    header.vocabSize = uint32_t(vocab);
    header.count = count;
    std::memcpy(header.corpusSha, corpusSha.data(), 64);
    std::memcpy(header.tokenizerSha, tokenizerSha.data(), 64);
    std::memcpy(header.payloadSha, payloadHash.hexDigest().data(), 64);
    if (::pwrite(temp.fd(), &header, sizeof header, 0) != ssize_t(sizeof header)) {
        return temp.failure("cannot write the token cache");
    }
    if (Status s = temp.commit(); !s.ok()) return s.error();

    auto built = open(file, corpusSha, tokenizerSha, vocab);
    if (!built.ok())
        return Error{
            fmt::format("the token cache just written is unreadable: {}", built.error().message)};
    built->m_note = std::move(note);
    return built;
}

Result<TokenCache> TokenCache::open(const fs::path& file, std::string_view corpusSha,
                                    std::string_view tokenizerSha, int vocabSize) {
    const std::string name = fmt::format("'{}'", file.string());
    const auto fail = [&](std::string_view problem) {
        return Error{fmt::format("{} {}", name, problem)};
    };
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail(fmt::format("cannot be opened: {}", systemReason()));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || size_t(st.st_size) < kHeaderBytes) {
        ::close(fd);
        return fail("is truncated (shorter than its header)");
    }
    auto mapping = std::make_shared<Mapping>();
    mapping->length = size_t(st.st_size);
    void* base = ::mmap(nullptr, mapping->length, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (base == MAP_FAILED) return fail(fmt::format("cannot be mapped: {}", systemReason()));
    mapping->base = base;

    Header header{};
    std::memcpy(&header, base, sizeof header);
    if (std::memcmp(header.magic, kMagic, sizeof kMagic) != 0) {
        return fail("is not a token cache (bad magic)");
    }
    if (header.version != kVersion || header.byteOrderMark != kByteOrderMark) {
        return fail(fmt::format("has format version {} or a byte order this build does not read",
                                header.version));
    }
    if (header.bytesPerToken != 2 && header.bytesPerToken != 4) {
        return fail("has an invalid token width");
    }
    const size_t payloadBytes = mapping->length - kHeaderBytes;
    if (payloadBytes % header.bytesPerToken != 0 ||
        payloadBytes / header.bytesPerToken != header.count) {
        return fail(
            fmt::format("is {} bytes but its header promises {} tokens (truncated or padded)",
                        mapping->length, header.count));
    }
    if (std::string_view(header.corpusSha, 64) != corpusSha ||
        std::string_view(header.tokenizerSha, 64) != tokenizerSha) {
        return fail("belongs to another corpus or tokenizer");
    }
    const auto* payload = static_cast<const unsigned char*>(base) + kHeaderBytes;
    Sha256 hash;
    hash.update(payload, mapping->length - kHeaderBytes);
    if (hash.hexDigest() != std::string_view(header.payloadSha, 64)) {
        return fail("fails its checksum (damaged on disk)");
    }
    // The checksum covers the payload only: a damaged vocabulary size in the header would let
    // token ids past it through to every table sized by it (seen examining a fuzz_token_cache
    // finding).
    if (header.vocabSize != uint32_t(vocabSize) ||
        header.bytesPerToken != (vocabSize <= 65536 ? 2u : 4u)) {
        return fail(fmt::format(
            "has a header for a vocabulary of {} tokens stored in {} bytes each, but the "
            "tokenizer has {} (damaged header)",
            header.vocabSize, header.bytesPerToken, vocabSize));
    }
    for (size_t i = 0; i < size_t(header.count); ++i) {
        uint32_t id = 0;
        std::memcpy(&id, payload + i * header.bytesPerToken, header.bytesPerToken);
        if (id >= uint32_t(vocabSize)) {
            return fail(
                fmt::format("holds token id {} at position {}, outside the vocabulary of {}",
                            int32_t(id), i, vocabSize));
        }
    }
    TokenCache cache;
    cache.m_mapping = std::move(mapping);
    cache.m_payload = payload;
    cache.m_count = size_t(header.count);
    cache.m_vocabSize = int(header.vocabSize);
    cache.m_bytesPerToken = int(header.bytesPerToken);
    cache.m_path = file;
    return cache;
}

int32_t TokenCache::token(size_t i) const {
    assert(i < m_count);
    if (m_bytesPerToken == 2) {
        uint16_t v;
        std::memcpy(&v, m_payload + i * 2, 2);
        return v;
    }
    int32_t v;
    std::memcpy(&v, m_payload + i * 4, 4);
    return v;
}

void TokenCache::copyTokens(size_t first, size_t count, int32_t* out) const {
    assert(first + count <= m_count);
    if (m_bytesPerToken == 4) {
        std::memcpy(out, m_payload + first * 4, count * 4);
        return;
    }
    const unsigned char* p = m_payload + first * 2;
    for (size_t i = 0; i < count; ++i) {
        uint16_t v;
        std::memcpy(&v, p + i * 2, 2);
        out[i] = v;
    }
}

}  // namespace ws::data
