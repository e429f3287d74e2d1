// SPDX-License-Identifier: GPL-3.0-or-later
// Utf8Stream: turns a byte stream (token pieces from a byte or byte-level BPE tokenizer, where a
// piece may end in the middle of a multi-byte character) into pieces that end on character
// boundaries, so a GUI or terminal never shows half a character. A trailing lead byte with fewer
// continuation bytes than it announces is held back until they arrive; anything that can never
// become a valid character (stray continuation bytes, invalid lead bytes) is passed through
// unchanged. Guarantee: the concatenation of every push() and the final flush() equals the
// concatenation of the input, byte for byte.
// Thread-safety: one thread at a time per object.
#pragma once

#include <string>
#include <string_view>

namespace ws::sample {

class Utf8Stream {
public:
    // Appends bytes; returns what can be shown now (possibly empty).
    std::string push(std::string_view bytes);
    // Returns the bytes still held back (an incomplete character at the very end) and empties.
    std::string flush();
    bool holding() const { return !m_pending.empty(); }

private:
    std::string m_pending;
};

}  // namespace ws::sample
