// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/core/hash.h"

#include <openssl/evp.h>

#include <array>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace ws {

Sha256::Sha256() : m_ctx(EVP_MD_CTX_new()) {
    EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(m_ctx), EVP_sha256(), nullptr);
}

Sha256::~Sha256() {
    EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(m_ctx));
}

void Sha256::update(const void* data, size_t size) {
    EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(m_ctx), data, size);
}

std::string Sha256::hexDigest() {
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int length = 0;
    EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(m_ctx), digest.data(), &length);
    static constexpr char kHex[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(length * 2);
    for (unsigned int i = 0; i < length; ++i) {
        hex.push_back(kHex[digest[i] >> 4]);
        hex.push_back(kHex[digest[i] & 15]);
    }
    return hex;
}

std::string sha256Hex(std::string_view bytes) {
    Sha256 h;
    h.update(bytes);
    return h.hexDigest();
}

Result<std::string> sha256File(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return Error{"cannot read " + path.string() + ": " + std::strerror(errno)};
    }
    Sha256 h;
    std::array<char, 1 << 16> buffer{};
    while (in) {
        in.read(buffer.data(), buffer.size());
        h.update(buffer.data(), static_cast<size_t>(in.gcount()));
    }
    if (in.bad()) return Error{"read error in " + path.string()};
    return h.hexDigest();
}

}  // namespace ws
