// libFuzzer target for the PEFT adapter reader (engine/interop/peft_adapter_parse.cpp): the input
// is adapter_config.json, one NUL byte, then adapter_model.safetensors (without a NUL the whole
// input is the config and the weights are empty). Any input must come back as an adapter or an
// Error, never a crash, hang, out-of-bounds read or undefined behaviour (ASan + UBSan). An accepted
// adapter must hold, for every block of the fixed base below and every target it names, A and B
// with exactly the sizes that base and its rank give, and nothing else.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string_view>

#include "engine/interop/peft_adapter.h"

namespace {
// The base of the seed corpus (tests/fuzz/corpus/peft_adapter): 2 blocks, 32 channels, ffn 64.
constexpr ws::interop::PeftBaseShape kBase{2, 32, 64};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto* nul = static_cast<const uint8_t*>(std::memchr(data, 0, size));
    const size_t configSize = nul ? size_t(nul - data) : size;
    const std::string_view config(reinterpret_cast<const char*>(data), configSize);
    const std::span<const std::byte> weights(
        reinterpret_cast<const std::byte*>(data) + (nul ? configSize + 1 : size),
        nul ? size - configSize - 1 : 0);
    auto adapter = ws::interop::parsePeftAdapter(config, weights, kBase, "fuzz-input");
    if (!adapter.ok()) return 0;
    const int C = kBase.channels, F = kBase.ffn, R = adapter->rank;
    const size_t in[4] = {size_t(C), size_t(C), size_t(C), size_t(F)};
    const size_t out[4] = {size_t(3 * C), size_t(C), size_t(F), size_t(C)};
    size_t expected = 0;
    for (size_t t = 0; t < 4; ++t) {
        if (!adapter->targets[t]) continue;
        for (int l = 0; l < kBase.layers; ++l) {
            const std::string module =
                "h." + std::to_string(l) + "." + std::string(ws::interop::kPeftModules[t]);
            const auto a = adapter->tensors.find(module + ".lora_A.weight");
            const auto b = adapter->tensors.find(module + ".lora_B.weight");
            if (a == adapter->tensors.end() || b == adapter->tensors.end()) std::abort();
            if (a->second.size() != in[t] * size_t(R) || b->second.size() != out[t] * size_t(R))
                std::abort();
            expected += 2;
        }
    }
    if (R < 1 || R > C || expected == 0 || adapter->tensors.size() != expected) std::abort();
    return 0;
}
