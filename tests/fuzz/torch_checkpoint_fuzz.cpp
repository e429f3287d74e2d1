// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for the pytorch_model.bin reader (engine/modelio/torch_pickle.cpp and
// torch_checkpoint.cpp): any byte string must come back as a state dict or an Error, never a
// crash, hang, leak, out-of-bounds read or undefined behaviour (run under AddressSanitizer and
// UBSan). Input starting with "PK" is opened as a whole archive (through libzip, from memory) and
// every tensor is read; anything else is fed to the pickle interpreter directly, then checked
// against storages of exactly the declared sizes. Every accepted tensor must lie inside its
// storage and read back with its element count.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "engine/fileio/dtype.h"
#include "engine/modelio/torch_checkpoint.h"
#include "engine/modelio/torch_pickle.h"

namespace {

void checkInside(const ws::modelio::TorchStateDict& dict) {
    for (const auto& t : dict.tensors) {
        const auto& s = dict.storages.at(t.storageKey);
        if (t.dtype != s.dtype) std::abort();
        if (t.elementCount() < 0 || t.storageOffset + uint64_t(t.elementCount()) > s.elements) {
            std::abort();
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
    if (size >= 2 && data[0] == 'P' && data[1] == 'K') {
        auto ckpt = ws::modelio::TorchCheckpoint::openBytes(bytes, "fuzz-input");
        if (!ckpt.ok()) return 0;
        for (const auto& name : ckpt->names()) {
            const auto* info = ckpt->find(name);
            if (!info) std::abort();
            auto values = ckpt->readAsFloat(name);
            if (values.ok() && int64_t(values->size()) != info->elementCount()) std::abort();
        }
        return 0;
    }
    auto dict = ws::modelio::parseTorchPickle(bytes, "fuzz-input");
    if (!dict.ok()) return 0;
    checkInside(*dict);
    std::map<std::string, uint64_t> storageBytes;
    for (const auto& [key, s] : dict->storages) {
        storageBytes[key] = s.elements * ws::fileio::dtypeSize(s.dtype);
    }
    (void)ws::modelio::checkTorchStorages(*dict, storageBytes, "fuzz-input");
    return 0;
}
