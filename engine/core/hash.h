// SPDX-License-Identifier: GPL-3.0-or-later
// SHA-256 digests (OpenSSL) for cache keys, config hashes and checkpoint checksums.
// Thread-safe: no shared state.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "engine/core/result.h"

namespace ws {

// Incremental SHA-256; feed bytes with update(), read the lowercase hex digest with hexDigest().
class Sha256 {
public:
    Sha256();
    ~Sha256();
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;

    void update(const void* data, size_t size);
    void update(std::string_view text) { update(text.data(), text.size()); }
    std::string hexDigest();  // finalises; further update() calls are a programmer error

private:
    void* m_ctx;  // EVP_MD_CTX*
};

std::string sha256Hex(std::string_view bytes);
// Digest of a whole file, read in chunks; an error names the file when it cannot be read.
Result<std::string> sha256File(const std::filesystem::path& path);

}  // namespace ws
