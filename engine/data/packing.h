// SPDX-License-Identifier: GPL-3.0-or-later
// Packing for variable sequence length (VSL): where documents start in a token cache, and the
// position_ids (model/packed_sequences.h: each token's index inside its document) of any window
// of it. A document is one data_dir file (readCorpusDocuments); the token stream is unchanged, so
// the windows of dataset.h stay what they are and only the mask and the positions follow the
// documents. A token that straddles the separator between two files (a BPE merge across it)
// belongs to the document it starts in.
//
// A two-stage schedule packs short sequences into rows of the long length: `segment` > 0 cuts each
// window into pieces of that many tokens that see nothing outside themselves, documents or not.
//
// Thread-safety: immutable after construction; const methods may run concurrently.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/core/result.h"
#include "engine/data/token_cache.h"

namespace ws::data {

class DocumentIndex {
public:
    DocumentIndex() = default;  // no boundaries: one document
    // documentStarts: token indices in ascending order (duplicates are dropped; 0 is implied).
    explicit DocumentIndex(std::vector<int64_t> documentStarts);
    // From the corpus's byte offsets of its files (CorpusDocuments::documentStarts) and the bytes
    // each token id decodes to (tokenizer::tokenByteCounts): document i starts at the first token
    // whose first byte is at or after its file's first byte.
    static DocumentIndex fromByteOffsets(const TokenCache& cache,
                                         std::span<const int32_t> tokenBytes,
                                         std::span<const size_t> byteStarts);

    int64_t documents() const { return int64_t(m_starts.size()); }   // at least 1
    const std::vector<int64_t>& starts() const { return m_starts; }  // m_starts[0] == 0

    // position_ids (T) of the window of tokens [first, first + T): restart at every document
    // start inside it and, with segment > 0, at every multiple of `segment` from the window's
    // start. Position 0 of the window is always 0.
    void positionIds(int64_t first, int T, int segment, int32_t* out) const;

private:
    std::vector<int64_t> m_starts{0};
};

// The attention lengths of rows of position_ids (B,T): every document piece's length, and the
// statistic the emulator charges for: sum over pieces of len², divided by the tokens (B*T) - the
// length of equal pieces that cost as much attention (T for one piece per row).
double attentionLength(std::span<const int32_t> positionIds);

}  // namespace ws::data
