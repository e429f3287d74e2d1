// SPDX-License-Identifier: GPL-3.0-or-later
// What a training step keeps of its activations on the emulated wafer, and what it sends to
// MemoryX or recomputes instead: the byte accounting behind the cycle model's activation
// strategies (cycle_model.h schedules them, activation_plan.h chooses them).
//
// Per micro-batch of M = mb x T tokens, in 16-bit values (the wafer's compute width):
//   A = 34 x C x M  bytes: everything one block keeps for its backward (Korthikanti et al. 2022,
//                   "Reducing Activation Recomputation", without the attention scores, which
//                   our attention op recomputes flash-style anyway);
//   X =  2 x C x M  bytes: one block's input (its checkpoint), part of A;
//   H =  2 x C x M  bytes: the head's input (the final block's output).
// Each block's activations reach its backward in one of four ways:
//   Keep             A stays in SRAM from the block's forward to its backward (today's model).
//   Offload          A streams out to MemoryX over the system's outbound link as the forward
//                    produces it and back in over the inbound link before the block's backward
//                    (before that block's weights, in the same inbound stream).
//   Recompute        X stays in SRAM; the backward phase first runs the block's forward again
//                    from X (its weights are on the wafer for the backward anyway), charging
//                    exactly the forward ops' work, then the backward.
//   RecomputeOffload X streams out and back in as Offload does with A; then as Recompute.
// Blocks are ordered by index as blockActivationsFor() lays them out: Offload first, then
// RecomputeOffload, Recompute, and Keep last (the forward runs them in that order, the backward
// in reverse). SRAM held at the peak (residentActivationBytes) is the largest of
//   the forward's end:  H + Keep x A + Recompute x X;
//   recomputing:        Recompute x X + A (the recomputed block) + 2 X with RecomputeOffload (the
//                       input in use and the next prefetched); the kept blocks are freed by then;
//   offloading:         2 A (the block computing and the one draining out or prefetched in, the
//                       two-slot rule the weights follow); nothing else is resident then.
// All Keep: exactly ActivationFit::storedBytes (cycle_model.h). The available SRAM is the wafer's
// (or wafer.sram_bytes), as ActivationFit counts it: op tiles and weight buffers are not subtracted
// (a stated limit, as before).
// MemoryX holds one micro-batch's offloaded activations at a time (each micro-batch's backward
// takes them back before the next forward): offloadBytes per micro-batch, beside the model's
// weights and optimizer state (16 bytes a parameter: fp32 weight, gradient accumulator, two
// AdamW moments).
// Thread-safety: plain values and pure functions.
#pragma once

#include <string>
#include <vector>

#include "engine/model/parameters.h"
#include "engine/wafer/layer_ops.h"
#include "engine/wafer/spec.h"

namespace ws::wafer {

enum class BlockActivation { Keep, Offload, Recompute, RecomputeOffload };
const char* blockActivationName(BlockActivation a);  // "keep", "offload", ...

// How many blocks take each way (the cycle model only needs counts and an order).
struct ActivationCounts {
    int keep = 0, offload = 0, recompute = 0, recomputeOffload = 0;
    int blocks() const { return keep + offload + recompute + recomputeOffload; }
    int recomputed() const { return recompute + recomputeOffload; }
    int offloaded() const { return offload + recomputeOffload; }
    bool allKeep() const { return offload == 0 && recompute == 0 && recomputeOffload == 0; }
    bool operator==(const ActivationCounts&) const = default;
};

inline constexpr double kBlockStoredBytesPerTokenChannel = 34;  // A / (C x M)
inline constexpr double kCheckpointBytesPerTokenChannel = 2;    // X / (C x M)

// One block's bytes per micro-batch of `tokens` tokens.
double blockStoredBytes(const model::GptShape& s, double tokens);      // A
double blockCheckpointBytes(const model::GptShape& s, double tokens);  // X (== H)
// Bytes that leave for MemoryX after one block's forward (and come back before its backward).
double blockOffloadBytes(const model::GptShape& s, double tokens, BlockActivation a);
// Peak SRAM for activations (see above).
double residentActivationBytes(const model::GptShape& s, double tokens, const ActivationCounts& c);
// Bytes offloaded per micro-batch, all blocks (each way).
double offloadBytesPerMicroBatch(const model::GptShape& s, double tokens,
                                 const ActivationCounts& c);

// The per-block list (L entries) for counts: the blocks whose backward runs last (the first
// blocks) offload, as the link has the longest time to bring them back; then recompute with
// offloaded checkpoints, recompute, and the last blocks (whose backward comes first) keep.
std::vector<BlockActivation> blockActivationsFor(const ActivationCounts& c);
ActivationCounts countsOf(const std::vector<BlockActivation>& blocks);
// "recompute 60 + keep 20 of 80 blocks"; "keep all" when every block keeps.
std::string describeCounts(const ActivationCounts& c);

// A recomputed block's backward phase: its forward ops again, named "recompute.<op>" (the same
// shapes and per-core costs as blockOps' forward), then blockOps' backward ops; the weights and
// gradients of the backward phase (the forward's weights are the same values, already there).
LayerOps recomputeBlockOps(const model::GptShape& s, int batch, int seqLen, const WaferSpec& spec,
                           const BlockSparsity* sparsity, const ExpertLoad* moe = nullptr);
inline constexpr const char* kRecomputePrefix = "recompute.";
bool isRecomputeOp(const WaferOp& op);

}  // namespace ws::wafer
