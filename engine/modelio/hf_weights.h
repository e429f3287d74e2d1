// SPDX-License-Identifier: GPL-3.0-or-later
// The weights of a Hugging Face folder, whichever way save_pretrained stored them, behind one
// reader: model.safetensors; model.safetensors.index.json with its model-0000N-of-0000M
// shards; pytorch_model.bin (torch.save's zip, read by the restricted reader of
// torch_checkpoint.h, nothing executed); pytorch_model.bin.index.json with its .bin shards.
//
// An index is {"metadata": {...}, "weight_map": {tensor name: shard file name}}, as transformers
// writes it. open() checks everything before a value is read: the index is JSON of that shape,
// every shard it names is a plain file name in the index's folder and exists, every shard opens
// (each reader validates its own file), every tensor the weight map names is in the shard it
// names, no tensor sits in two shards, and no shard holds a tensor the weight map does not name
// (such an index does not belong to its shards). readAsFloat() converts F32, F16, BF16 (exactly)
// and F64 (rounded to nearest) to fp32, as the single-file readers do.
//
// Failure contract: every problem is an Error naming the index or shard file, the tensor, and
// what to do. Thread-safety: an HfWeights is immutable after open() and may be read from several
// threads (the readers underneath are).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/result.h"
#include "engine/fileio/dtype.h"

namespace ws::modelio {

// One tensor as the folder stores it, and the file (the shard) that holds it.
struct HfTensorInfo {
    std::string name;
    fileio::DType dtype = fileio::DType::F32;
    std::vector<int64_t> shape;
    std::filesystem::path file;
};

// The weights files save_pretrained writes, in the order a folder is searched for them.
inline constexpr std::string_view kHfWeightsFiles[] = {
    "model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
    "pytorch_model.bin.index.json"};

// The weights file of `folder` (the first of kHfWeightsFiles present), or an Error naming the
// folder and every name looked for.
Result<std::filesystem::path> findHfWeightsFile(const std::filesystem::path& folder);

// True for a file name that is a shard index (*.index.json).
bool isHfWeightsIndex(const std::filesystem::path& file);

class HfWeights {
public:
    // `path`: a folder (searched as findHfWeightsFile does), a .safetensors file, a
    // pytorch_model.bin (any torch.save zip), or an index (*.index.json) whose shards are
    // .safetensors or .bin files.
    static Result<HfWeights> open(const std::filesystem::path& path);

    HfWeights(HfWeights&&) noexcept;
    HfWeights& operator=(HfWeights&&) noexcept;
    ~HfWeights();

    // The file opened: the single weights file, or the index.
    const std::filesystem::path& path() const { return m_path; }
    bool sharded() const { return m_shards.size() > 1 || isHfWeightsIndex(m_path); }
    // The files the tensors are in (one, or the shards in the index's order of first use).
    std::vector<std::filesystem::path> files() const;
    // A single safetensors file's __metadata__; empty for shards and torch files.
    const std::map<std::string, std::string>& metadata() const { return m_metadata; }
    std::vector<std::string> names() const;                 // sorted
    const HfTensorInfo* find(std::string_view name) const;  // nullptr when absent
    Result<std::vector<float>> readAsFloat(std::string_view name) const;

private:
    struct Shard;
    HfWeights() = default;
    // Opens one weights file as a shard and records its tensors (`index`: the index file that
    // named it, empty for a single file).
    Status addShard(const std::filesystem::path& file, const std::filesystem::path& index);

    std::filesystem::path m_path;
    std::vector<std::unique_ptr<Shard>> m_shards;
    std::map<std::string, HfTensorInfo, std::less<>> m_tensors;
    std::map<std::string, size_t, std::less<>> m_shardOf;  // tensor name -> index in m_shards
    std::map<std::string, std::string> m_metadata;
};

}  // namespace ws::modelio
