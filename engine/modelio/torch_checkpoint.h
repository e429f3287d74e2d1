// SPDX-License-Identifier: GPL-3.0-or-later
// PyTorch checkpoints (pytorch_model.bin as torch.save writes it since PyTorch 1.6: a zip archive
// <prefix>/data.pkl + <prefix>/data/<key> per storage + <prefix>/version), read without executing
// anything: the zip through libzip, the pickle through the restricted reader of torch_pickle.h.
//
// open() checks everything before a value is read: the archive is whole (libzip's consistency
// check), it holds exactly one data.pkl, its byte order is little, the pickle is a state dict of
// tensors, every storage file exists with the size its type and element count imply, every tensor
// lies inside its storage and only identical views share elements. readAsFloat() then converts a
// F32 / F16 / BF16 / F64 tensor to float (the zip's CRC is checked as the storage is read).
// The legacy format (a bare pickle, PyTorch < 1.6) is refused with how to re-save it.
// Failure contract: every problem is an Error naming the file, the tensor, storage, opcode or
// global, and what the user can do. Thread-safety: a TorchCheckpoint may be read from several
// threads (reads of the archive are serialised inside); open() is a free function.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/result.h"
#include "engine/modelio/torch_pickle.h"

namespace ws::modelio {

// Every storage a tensor uses must exist (`storageBytes`: key -> bytes of <prefix>/data/<key>)
// with exactly its declared elements x element size; every tensor must lie inside its storage;
// two tensors sharing storage elements must be the same view (a tied weight) and not overlap in
// part. `source` names the checkpoint in messages.
Status checkTorchStorages(const TorchStateDict& dict,
                          const std::map<std::string, uint64_t>& storageBytes,
                          std::string_view source);

// True when the file starts like a torch.save file (zip or legacy pickle), by its first bytes.
bool looksLikeTorchCheckpoint(const std::filesystem::path& file);

class TorchCheckpoint {
public:
    static Result<TorchCheckpoint> open(const std::filesystem::path& path);
    // The same over bytes in memory (which must outlive the object); `source` names them.
    static Result<TorchCheckpoint> openBytes(std::span<const std::byte> bytes,
                                             std::string_view source);

    TorchCheckpoint(TorchCheckpoint&&) noexcept;
    TorchCheckpoint& operator=(TorchCheckpoint&&) noexcept;
    ~TorchCheckpoint();

    const std::filesystem::path& path() const { return m_path; }
    std::vector<std::string> names() const;                    // sorted
    const TorchTensorInfo* find(std::string_view name) const;  // nullptr when absent
    // F32, F16, BF16 and F64 tensors converted to float (F64 rounds to nearest); other dtypes
    // and unknown names are errors naming the file and tensor.
    Result<std::vector<float>> readAsFloat(std::string_view name) const;

private:
    struct Archive;
    // Opens the archive over a zip_source_t (taking ownership of it) and checks everything.
    static Result<TorchCheckpoint> finishOpen(void* zipSource, std::filesystem::path path,
                                              std::unique_ptr<Archive> archive);
    TorchCheckpoint(std::filesystem::path path, std::unique_ptr<Archive> archive,
                    TorchStateDict dict);

    std::filesystem::path m_path;
    std::unique_ptr<Archive> m_archive;
    TorchStateDict m_dict;
};

}  // namespace ws::modelio
