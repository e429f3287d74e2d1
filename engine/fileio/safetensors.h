// SPDX-License-Identifier: GPL-3.0-or-later
// safetensors checkpoints (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length N, N bytes of UTF-8 JSON {"name": {"dtype", "shape", "data_offsets": [begin, end]},
// "__metadata__": {str: str}}, then the tensor bytes (offsets relative to the end of the header).
//
// Guarantees:
// - writeSafetensors is atomic: it writes a temp file in the target folder, fsyncs it, renames it
//   over the target and fsyncs the folder. A failure at any point leaves no partial file under the
//   final name and no temp file behind; an existing file is only replaced by a complete new one.
// - The reader validates everything before handing out a tensor: header size, UTF-8, JSON shape,
//   dtypes, shape products (no overflow), byte counts, offsets in range, no overlaps or gaps,
//   no duplicate names. Each failure is an Error naming the file and the problem.
// - parseSafetensors is a pure function over a byte span (no I/O), so it can be fuzzed.
// Thread-safety: free functions are thread-safe; a SafetensorsFile is immutable after open() and
// may be read from any number of threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/result.h"
#include "engine/fileio/dtype.h"

namespace ws::fileio {

// A tensor to write: `data` points at `bytes` bytes of little-endian elements in row-major order;
// `bytes` must equal product(shape) * dtypeSize(dtype).
struct TensorView {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    const void* data = nullptr;
    size_t bytes = 0;
};

// A validated tensor inside a parsed file. `data` points into the file's bytes and may be
// unaligned when the header length is not a multiple of 8 (files from other writers): copy with
// memcpy or use readAsFloat rather than casting it.
struct TensorInfo {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    const void* data = nullptr;
    size_t bytes = 0;
    uint64_t dataBegin = 0;  // offset relative to the start of the data region
    int64_t elementCount() const;
};

// The header and tensor table of a safetensors byte image.
struct ParsedSafetensors {
    std::map<std::string, std::string> metadata;
    std::map<std::string, TensorInfo, std::less<>> tensors;  // by name
    size_t headerBytes = 0;                                  // N (without the 8-byte length)
};

// Largest header the reader accepts; real checkpoints have headers of a few hundred kilobytes.
inline constexpr uint64_t kMaxHeaderBytes = 100u * 1024u * 1024u;

// Parses and validates a whole file image held in `bytes`. `source` names it in error messages
// (usually the file path). TensorInfo::data pointers point into `bytes`.
Result<ParsedSafetensors> parseSafetensors(std::span<const std::byte> bytes,
                                           std::string_view source);

// Writes `tensors` (names must be unique and not "__metadata__") and `metadata` atomically to
// `path`. Tensors are laid out by element size (largest first), then name, as the reference
// writer does, so every tensor is aligned to its element size. When `sha256Out` is given it
// receives the SHA-256 (lowercase hex) of the bytes written, for the run store's checksum.
Status writeSafetensors(const std::filesystem::path& path, const std::vector<TensorView>& tensors,
                        const std::map<std::string, std::string>& metadata,
                        std::string* sha256Out = nullptr);
// The same for tensors that are not all in memory at once: a view without data gets its bytes
// from fetch(index into `tensors`) when the writer reaches it (valid until the next fetch), so a
// sharded MemoryX's tensors can be gathered one by one as the file is written.
using TensorFetch = std::function<const void*(size_t tensor)>;
Status writeSafetensors(const std::filesystem::path& path, const std::vector<TensorView>& tensors,
                        const std::map<std::string, std::string>& metadata, std::string* sha256Out,
                        const TensorFetch& fetch);

// An opened, validated safetensors file (memory-mapped, read-only). Movable, not copyable.
class SafetensorsFile {
public:
    static Result<SafetensorsFile> open(const std::filesystem::path& path);

    SafetensorsFile(SafetensorsFile&&) noexcept;
    SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
    ~SafetensorsFile();

    const std::filesystem::path& path() const { return m_path; }
    const std::map<std::string, std::string>& metadata() const { return m_parsed.metadata; }
    std::vector<std::string> names() const;               // sorted
    const TensorInfo* find(std::string_view name) const;  // nullptr when absent
    // F32, F16, BF16 and F64 tensors converted to float (F64 rounds to nearest); other dtypes
    // and unknown names are errors naming the file and tensor.
    Result<std::vector<float>> readAsFloat(std::string_view name) const;

private:
    struct Mapping;
    SafetensorsFile(std::filesystem::path path, std::unique_ptr<Mapping> mapping,
                    ParsedSafetensors parsed);

    std::filesystem::path m_path;
    std::unique_ptr<Mapping> m_mapping;  // owns the bytes TensorInfo::data points into
    ParsedSafetensors m_parsed;
};

}  // namespace ws::fileio
