// SPDX-License-Identifier: GPL-3.0-or-later
// LoRA adapters on one linear layer (issue 16): the low-rank update an adapted linear adds to its
// output, forward and backward, the adapters' initialisation, and which linears can carry one
// (config lora.targets: HF GPT-2 module names, or Llama's / PEFT's projection names, issue 33).
//
// Targets. GPT-2's four adapt a whole linear: c_attn, attn.c_proj, c_fc, mlp.c_proj. A Llama
// block is stored with the fused linears (parameters.h): c_attn = [q | k | v] (C -> Q + 2K) and
// SwiGLU's c_fc = [gate | up] (C -> 2F), so Llama's separate projections are SLICE targets, each
// with its own A (C, R) and B (R, width) adding scale·x·A·B to its column range of the fused
// output only: q_proj [0, Q), k_proj [Q, Q+K), v_proj [Q+K, Q+2K) of c_attn; gate_proj [0, F) and
// up_proj [F, 2F) of c_fc (SwiGLU only). This is exactly PEFT's adapter on a separate nn.Linear.
// o_proj and down_proj are other spellings of attn.c_proj and mlp.c_proj (the same adapter).
// A slice target and the whole fused linear together (c_attn with q/k/v_proj, c_fc with
// gate/up_proj) are refused (targetsProblem), as are gate_proj/up_proj on a GELU MLP.
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

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/parameters.h"

namespace ws::model::lora {

// The linears of a block an adapter can sit on: GPT-2's four (HF GPT-2 module names), then the
// slice targets (Llama's names). Index = position in GptShape::loraTargets / BlockOffsets::loraA.
enum class Target { CAttn, AttnCProj, CFc, MlpCProj, QProj, KProj, VProj, GateProj, UpProj };
inline constexpr size_t kTargetCount = kLoraTargetCount;
// "c_attn", "attn.c_proj", "c_fc", "mlp.c_proj", "q_proj", "k_proj", "v_proj", "gate_proj",
// "up_proj", and the aliases "o_proj" (attn.c_proj) and "down_proj" (mlp.c_proj).
std::optional<Target> targetFromName(std::string_view name);
std::string_view targetName(Target target);  // the GPT-2 name for the first four
// The name under "h.N." of the module the adapter's tensors hang off in the parameter table:
// attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj, attn.q_proj, attn.k_proj, attn.v_proj,
// mlp.gate_proj, mlp.up_proj.
std::string_view tableModule(Target target);
// Llama's (PEFT's) projection name: q_proj k_proj v_proj o_proj gate_proj up_proj down_proj;
// empty for c_attn and c_fc (no Llama module is the fused linear).
std::string_view llamaName(Target target);
bool isSlice(Target target);  // q/k/v/gate/up_proj

// Whether LoRA targets on this shape go by Llama's (PEFT's) names: its blocks are not GPT-2's
// (as modelio::usesHfLlamaNames decides the weights' names).
bool llamaNamed(const GptShape& shape);
// Every linear of a block, by the family's names: GPT-2 c_attn, attn.c_proj, c_fc, mlp.c_proj;
// Llama q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj (c_fc for a GELU MLP).
std::vector<std::string> allLinearTargets(const GptShape& shape);

// An adapter's product: in -> out (out = the slice's width for a slice target), written into
// columns [column, column + out) of the adapted linear's output, whose row stride is ld.
struct LinearShape {
    int in = 0;
    int out = 0;
    int column = 0;  // 0 unless a slice
    int ld = 0;      // the fused output's width (= out unless a slice)
};
// c_attn: C -> Q+2K, attn.c_proj: Q -> C, c_fc: C -> F (2F SwiGLU), mlp.c_proj: F -> C; q_proj:
// C -> Q at 0, k_proj: C -> K at Q, v_proj: C -> K at Q+K (ld Q+2K); gate_proj: C -> F at 0,
// up_proj: C -> F at F (ld 2F).
LinearShape linearShape(Target target, const GptShape& shape);

// Why a set of targets cannot go on `shape` (overlapping c_attn with q/k/v_proj or c_fc with
// gate/up_proj; gate/up_proj without SwiGLU), naming the lora.targets keys and the fix; empty when
// it can.
std::string targetsProblem(const std::array<bool, kTargetCount>& targets, const GptShape& shape);

// out (N,ldOut) += scale * dropout(inp) · A · B in its first OUT columns, A (IN,R), B (R,OUT);
// u (N,R) receives dropout(inp) · A for the backward. dropped (N,IN) is scratch, used only when
// dropout > 0 (may be null otherwise). ldOut 0 means OUT; a slice target passes the fused output
// offset to its columns and the fused width.
template <typename Real>
void loraForward(Real* out, Real* u, Real* dropped, const Real* inp, const Real* A, const Real* B,
                 int N, int IN, int R, int OUT, Real scale, double dropout, uint64_t key,
                 bool bf16 = false, int ldOut = 0);

// The backward of loraForward for the same inp, u, A, B, dropout and key: dA (IN,R), dB (R,OUT)
// and dinp (N,IN) ACCUMULATE (dA or dB null: that gradient is skipped, a frozen adapter). du (N,R)
// is scratch; dropped (N,IN) is scratch used only when dropout > 0. dout (N,ldOut), ldOut 0 = OUT.
template <typename Real>
void loraBackward(Real* dinp, Real* dA, Real* dB, Real* du, Real* dropped, const Real* dout,
                  const Real* inp, const Real* u, const Real* A, const Real* B, int N, int IN,
                  int R, int OUT, Real scale, double dropout, uint64_t key, bool bf16 = false,
                  int ldOut = 0);

// PEFT's init of lora_A: kaiming_uniform_(a = sqrt(5)), i.e. uniform in [-1/sqrt(IN), 1/sqrt(IN))
// (gain sqrt(1/3) times sqrt(3 / fan_in)), drawn from the counter-based stream `key` so a seed
// gives the same adapters everywhere. B starts at zero (the caller zeroes it).
void initA(float* A, int IN, int R, uint64_t key);

}  // namespace ws::model::lora
