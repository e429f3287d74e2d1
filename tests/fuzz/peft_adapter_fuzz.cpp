// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for the PEFT adapter reader (engine/interop/peft_adapter_parse.cpp): the input
// is adapter_config.json, one NUL byte, then adapter_model.safetensors (without a NUL the whole
// input is the config and the weights are empty). Any input must come back as an adapter or an
// Error, never a crash, hang, out-of-bounds read or undefined behaviour (ASan + UBSan). An accepted
// adapter must hold, for every block of the fixed bases below (GPT-2 and Llama) and every target
// it names, A and B with exactly the sizes that base and its rank give, and nothing else.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "engine/interop/peft_adapter.h"

namespace {
// The bases of the seed corpus (tests/fuzz/corpus/peft_adapter): 2 blocks, 32 channels, ffn 64,
// as GPT-2 and (issue 33) as a grouped-query Llama (q width 32, k/v width 16, SwiGLU). Every
// input is read against both.
constexpr ws::interop::PeftBaseShape kBase{2, 32, 64};
constexpr ws::interop::PeftBaseShape kLlama{.layers = 2,
                                            .channels = 32,
                                            .ffn = 64,
                                            .llama = true,
                                            .qWidth = 32,
                                            .kvWidth = 16,
                                            .swiglu = true};

// An accepted adapter holds, for every block and every target it names, A and B with exactly the
// sizes the base and its rank give, and nothing else.
void checkAccepted(const ws::interop::PeftAdapter& adapter, const ws::interop::PeftBaseShape& b) {
    const size_t C = size_t(b.channels), F = size_t(b.ffn), R = size_t(adapter.rank);
    const size_t Q = b.llama ? size_t(b.qWidth) : C, K = b.llama ? size_t(b.kvWidth) : C;
    // lora::Target order: c_attn, attn.c_proj, c_fc, mlp.c_proj, q, k, v, gate, up.
    const size_t in[9] = {C, Q, C, F, C, C, C, C, C};
    const size_t out[9] = {Q + 2 * K, C, F, C, Q, K, K, F, F};
    size_t expected = 0;
    for (size_t t = 0; t < ws::interop::kPeftTargetCount; ++t) {
        if (!adapter.targets[t]) continue;
        // A GPT-2 base takes GPT-2's four; a Llama base its seven projections.
        if (b.llama ? ws::interop::kPeftLlamaNames[t].empty() : t >= 4) std::abort();
        for (int l = 0; l < b.layers; ++l) {
            const std::string module =
                "h." + std::to_string(l) + "." + std::string(ws::interop::kPeftModules[t]);
            const auto a = adapter.tensors.find(module + ".lora_A.weight");
            const auto bt = adapter.tensors.find(module + ".lora_B.weight");
            if (a == adapter.tensors.end() || bt == adapter.tensors.end()) std::abort();
            if (a->second.size() != in[t] * R || bt->second.size() != out[t] * R) std::abort();
            expected += 2;
        }
    }
    if (R < 1 || R > C || expected == 0 || adapter.tensors.size() != expected) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto* nul = static_cast<const uint8_t*>(std::memchr(data, 0, size));
    const size_t configSize = nul ? size_t(nul - data) : size;
    const std::string_view config(reinterpret_cast<const char*>(data), configSize);
    const std::span<const std::byte> weights(
        reinterpret_cast<const std::byte*>(data) + (nul ? configSize + 1 : size),
        nul ? size - configSize - 1 : 0);
    for (const ws::interop::PeftBaseShape& base : {kBase, kLlama}) {
        auto adapter = ws::interop::parsePeftAdapter(config, weights, base, "fuzz-input");
        if (adapter.ok()) checkAccepted(*adapter, base);
    }
    return 0;
}
