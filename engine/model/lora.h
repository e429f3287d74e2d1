// LoRA adapters on one linear layer (issue 16): the low-rank update an adapted linear adds to its
// output, forward and backward, the adapters' initialisation, and which GPT-2 linears can carry
// one (config lora.targets, by HF GPT-2 module name).
//
// Math (Hu et al. 2021; PEFT's LoraLayer): out += scale * dropout(x) · A · B, scale = alpha / rank.
// Storage: this model keeps every weight in HF GPT-2's Conv1D layout (IN, OUT), and the adapters
// follow it: A is (IN, R) and B is (R, OUT), so x · A · B needs no transpose. PEFT's
// lora_A.weight (R, IN) and lora_B.weight (OUT, R) are their transposes (what an export writes).
// Dropout (lora.dropout) applies to the adapter branch's input only, with the counter-based mask
// of stream `key` (random.h), so the backward recomputes the same mask instead of keeping the
// dropped input: what loraForward keeps for loraBackward is u = dropout(x) · A (N, R) alone.
// With B = 0 (the initialisation) the forward adds exact zeros: out is unchanged bit for bit
// (short of a -0.0 element becoming +0.0).
//
// Precision: the products run on the fp32 matmul backend, or with bf16 = true (float only, the
// model's bf16 mode) on the bf16 backend like the base matmuls: bf16 operands (each rounded to
// nearest even as it enters a product: x, A, u = x·A, B, the incoming gradient, du) with fp32
// accumulation and fp32 outputs (u, du and the gradients stay fp32). Real is float or double.
// Thread-safety: pure functions of their arguments; kernels use tensor::computeThreads().
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "engine/model/parameters.h"

namespace ws::model::lora {

// The linears of a GPT-2 block an adapter can sit on (HF GPT-2 module names).
enum class Target { CAttn, AttnCProj, CFc, MlpCProj };
std::optional<Target> targetFromName(std::string_view name);  // "c_attn", "attn.c_proj", ...
std::string_view targetName(Target target);

struct LinearShape {
    int in = 0;
    int out = 0;
};
// c_attn: C -> 3C, attn.c_proj: C -> C, c_fc: C -> F, mlp.c_proj: F -> C.
LinearShape linearShape(Target target, const GptShape& shape);

// out (N,OUT) += scale * dropout(inp) · A · B with A (IN,R), B (R,OUT); u (N,R) receives
// dropout(inp) · A for the backward. dropped (N,IN) is scratch, used only when dropout > 0 (may be
// null otherwise).
template <typename Real>
void loraForward(Real* out, Real* u, Real* dropped, const Real* inp, const Real* A, const Real* B,
                 int N, int IN, int R, int OUT, Real scale, double dropout, uint64_t key,
                 bool bf16 = false);

// The backward of loraForward for the same inp, u, A, B, dropout and key: dA (IN,R), dB (R,OUT)
// and dinp (N,IN) ACCUMULATE (dA or dB null: that gradient is skipped, a frozen adapter). du (N,R)
// is scratch; dropped (N,IN) is scratch used only when dropout > 0.
template <typename Real>
void loraBackward(Real* dinp, Real* dA, Real* dB, Real* du, Real* dropped, const Real* dout,
                  const Real* inp, const Real* u, const Real* A, const Real* B, int N, int IN,
                  int R, int OUT, Real scale, double dropout, uint64_t key, bool bf16 = false);

// PEFT's init of lora_A: kaiming_uniform_(a = sqrt(5)), i.e. uniform in [-1/sqrt(IN), 1/sqrt(IN))
// (gain sqrt(1/3) times sqrt(3 / fan_in)), drawn from the counter-based stream `key` so a seed
// gives the same adapters everywhere. B starts at zero (the caller zeroes it).
void initA(float* A, int IN, int R, uint64_t key);

}  // namespace ws::model::lora
