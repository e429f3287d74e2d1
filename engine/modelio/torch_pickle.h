// SPDX-License-Identifier: GPL-3.0-or-later
// The pickle inside a PyTorch checkpoint (data.pkl of torch.save's zip format), read by a
// restricted interpreter that never executes anything: it knows the opcodes a state dict is
// written with (protocols 2 to 5) and exactly these globals, which it never calls but recognises:
//   collections.OrderedDict              REDUCE with () -> an empty ordered dict
//   torch._utils._rebuild_tensor_v2      REDUCE with (storage, offset, size, stride, ...) -> tensor
//   torch._utils._rebuild_parameter      REDUCE with (tensor, requires_grad, hooks) -> the tensor
//   torch.<T>Storage                     only as the storage type inside a persistent id
// Storages arrive through BINPERSID as ('storage', torch.<T>Storage, key, location, numel).
// Anything else (another global such as os.system, INST/OBJ/NEWOBJ, an unknown or truncated
// opcode, a non-contiguous tensor, a storage declared twice with different types) is an Error
// naming the opcode, global or tensor, its byte offset, and what the user can do.
//
// parseTorchPickle is a pure function over bytes (no I/O), so it can be fuzzed; checkTorchStorages
// (torch_checkpoint.h) then checks the tensors against the storage files the archive holds.
// Thread-safety: free functions over their arguments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/result.h"
#include "engine/fileio/dtype.h"

namespace ws::modelio {

// One tensor of a state dict: a contiguous run of `elementCount()` elements of storage
// `storageKey`, starting at element `storageOffset`.
struct TorchTensorInfo {
    std::string name;
    fileio::DType dtype = fileio::DType::F32;
    std::vector<int64_t> shape;
    std::string storageKey;  // the archive holds its bytes as <prefix>/data/<key>
    uint64_t storageOffset = 0;
    int64_t elementCount() const;
};

struct TorchStorageInfo {
    fileio::DType dtype = fileio::DType::F32;
    std::string typeName;  // "FloatStorage", for messages
    uint64_t elements = 0;
};

// A state dict as data.pkl describes it, before any storage byte is read.
struct TorchStateDict {
    std::vector<TorchTensorInfo> tensors;              // in the file's order, names unique
    std::map<std::string, TorchStorageInfo> storages;  // by key
};

// Largest data.pkl accepted; a GPT-2 state dict's is about 30 KB.
inline constexpr size_t kMaxTorchPickleBytes = 64u * 1024u * 1024u;

// `source` names the pickle in messages (e.g. "model/pytorch_model.bin (archive/data.pkl)").
Result<TorchStateDict> parseTorchPickle(std::span<const std::byte> pickle, std::string_view source);

// What to tell a user whose file this reader refuses.
inline constexpr std::string_view kTorchConvertHint =
    "if you trust the file, convert it to safetensors in Python (transformers: "
    "AutoModelForCausalLM.from_pretrained(folder).save_pretrained(folder, "
    "safe_serialization=True)) and import the model.safetensors";

}  // namespace ws::modelio
