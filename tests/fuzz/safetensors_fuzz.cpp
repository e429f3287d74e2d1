// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for the safetensors parser (engine/fileio/safetensors_parse.cpp): any byte
// string must come back as a parsed file or an Error, never a crash, hang, out-of-bounds read or
// undefined behaviour (run under AddressSanitizer and UBSan). Every tensor the parser accepts
// must lie inside the input with a byte count matching its dtype and shape.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "engine/fileio/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
    auto parsed = ws::fileio::parseSafetensors(bytes, "fuzz-input");
    if (!parsed.ok()) return 0;
    for (const auto& [name, t] : parsed->tensors) {
        const auto* begin = static_cast<const std::byte*>(t.data);
        if (begin < bytes.data() || begin + t.bytes > bytes.data() + bytes.size()) std::abort();
        if (size_t(t.elementCount()) * ws::fileio::dtypeSize(t.dtype) != t.bytes) std::abort();
    }
    return 0;
}
