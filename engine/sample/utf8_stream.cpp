// SPDX-License-Identifier: GPL-3.0-or-later
// Utf8Stream (see utf8_stream.h): only the last up to 3 bytes can be an incomplete character.
#include "engine/sample/utf8_stream.h"

namespace ws::sample {

namespace {

// Bytes of the sequence a lead byte announces; 0 for continuation or invalid bytes.
int sequenceLength(unsigned char byte) {
    if (byte < 0x80) return 1;
    if (byte >= 0xC2 && byte <= 0xDF) return 2;
    if (byte >= 0xE0 && byte <= 0xEF) return 3;
    if (byte >= 0xF0 && byte <= 0xF4) return 4;
    return 0;
}

bool isContinuation(unsigned char byte) {
    return (byte & 0xC0) == 0x80;
}

// Where an incomplete trailing character starts in s, or s.size() when there is none.
size_t incompleteTail(const std::string& s) {
    const size_t n = s.size();
    for (size_t back = 1; back <= 3 && back <= n; ++back) {
        const auto byte = static_cast<unsigned char>(s[n - back]);
        if (isContinuation(byte)) continue;
        const int len = sequenceLength(byte);
        return len > int(back) ? n - back : n;
    }
    return n;
}

}  // namespace

std::string Utf8Stream::push(std::string_view bytes) {
    m_pending.append(bytes);
    const size_t cut = incompleteTail(m_pending);
    std::string ready = m_pending.substr(0, cut);
    m_pending.erase(0, cut);
    return ready;
}

std::string Utf8Stream::flush() {
    std::string rest;
    rest.swap(m_pending);
    return rest;
}

}  // namespace ws::sample
