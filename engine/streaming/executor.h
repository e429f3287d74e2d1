// SPDX-License-Identifier: GPL-3.0-or-later
// StreamingExecutor: one training step the way a wafer-scale cluster with weight streaming runs
// it. Master weights and optimizer state live in MemoryX; each layer's weights stream onto every
// system's wafer (double-buffered by the WeightStreamer) before it computes, forward in order and
// again backward in reverse; activations stay on the systems; each layer's gradient streams out,
// SwarmX tree-reduces it across systems into MemoryX (accumulating over micro-batches), and
// MemoryX updates that layer while the systems compute the next one.
//
// Global-norm clipping needs every gradient before any update, so with max_gradient_norm > 0 the
// executor holds the updates until the backward pass is complete and then applies them layer by
// layer (a two-phase update at the iteration boundary, as a real system must). Without clipping
// each layer is updated as soon as its last micro-batch's gradient is reduced.
//
// Equivalence: with one system and one micro-batch a step performs exactly the plain path's
// arithmetic (Gpt::forward/backward, Optimizer::gradientNorm (globalNorm over the whole
// gradient buffer unless fine-tuning freezes tensors), Optimizer updates), so weights are
// bit-identical; with N systems or M micro-batches the gradient is the same mean, summed in a
// different (fixed) order.
//
// Precision: MemoryX holds fp32 master weights, gradients and optimizer state in both modes. In
// bf16 mode (shape.bf16) each visit's weights are converted to bf16 once as they stream onto the
// wafer (WeightStreamer), so the wafer buffer and the bytes streamed in are half the fp32 figures,
// and the systems compute from those bits (Gpt's packed LayerWeights), bit for bit the plain bf16
// step. Gradients stream out fp32 in both modes: they are the fp32 gradients of the bf16 step
// (Gpt keeps every gradient fp32), reduced and applied to fp32 masters as in plain training; 16-bit
// gradients on the wire would change the result. (The emulated hardware assumes 16-bit gradients,
// the spec's stream_bytes_per_value, as the published Cerebras runs.)
// Across processes (StreamingOptions::comm with more than one rank): the systems are split over
// the ranks in contiguous blocks (comm::systemsOfRank) and each rank computes only its own. Rank 0
// holds MemoryX and the optimizer; each visit's weights (fp32, or the bf16 bits) are broadcast
// from it, and every rank sends its systems' gradient slices to it, where SwarmX reduces all N
// systems in the same tree and order as in one process, and the losses are summed in system
// order: the weights are bit-identical whatever the placement. Ranks other than 0 construct the
// executor without MemoryX (the second constructor) and call step() in lockstep with rank 0; their
// StepResult is empty. Across processes a stop request acts between steps, never inside one.
// MemoryX sharded (StreamingOptions::memoryxShards = N > 1, shards.h): ranks 0..N-1 each construct
// the executor with their shard's MemoryX (the parameters [plan.begin(rank), plan.end(rank)) at
// local offsets) and an optimizer over those local offsets. A layer's weights are broadcast from
// its owner, its gradient slices gathered to and reduced on its owner in the same tree, and the
// owner updates it; the gradient norm is summed across shards in globalNorm's own order
// (shardedGlobalNorm) and the clip scale broadcast from rank 0, so the result is the unsharded
// one bit for bit. Rank 0 still sums the losses and returns the StepResult.
// Frozen parameters (fine-tuning's frozen groups, a LoRA run's whole base): the systems never
// compute their weight gradients (model::Gpt::setFrozen), no gradient of theirs streams out or is
// reduced (a layer with nothing to train streams nothing), and MemoryX keeps gradients and
// optimizer state for the trainable parameters only (optim::GradientLayout::Trainable: the
// optimizer must use that layout, or Full over a MemoryX with every parameter's gradients; a
// sharded MemoryX uses Trainable). The trainable gradients are the same bits as the full
// backward's, so the weights are those of a run that computes every gradient and discards the
// frozen ones.
// Mixture of experts (shape.isMoeBlock): MemoryX holds every expert; an MoE block's weights
// stream in as units (model::ParameterTable::streamUnits: its shared part - LayerNorms,
// attention, router - then each expert), each its own transfer and StreamIn span (Span::expert),
// into the block's slot in layout order, so the systems compute the block as one layer, bit for
// bit the plain step; its gradient streams out and is reduced unit by unit the same way (one
// process; across processes each node of the reduce stays one message per layer). The wafer buffer
// is counted per visit as before (slots x the largest layer: an MoE block with all its experts).
// Thread-safety: one step at a time; systems compute on their own threads,
// MemoryX work runs on its own thread, and spans are reported from all of them.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "engine/comm/comm.h"
#include "engine/model/gpt.h"
#include "engine/optim/optimizer.h"
#include "engine/streaming/memoryx.h"
#include "engine/streaming/shards.h"
#include "engine/streaming/spans.h"

namespace ws::streaming {

struct StreamingOptions {
    int systems = 1;             // runconfig.num_csx
    int microBatch = 0;          // sequences per system per micro-batch (0: the whole shard)
    int weightBufferLayers = 2;  // wafer.weight_buffer_layers
    comm::Comm* comm = nullptr;  // the job's processes (null: this process computes every system)
    // memoryx.shards: ranks holding MemoryX (1: rank 0 alone).
    int memoryxShards = 1;
    // memoryx.reduce_fan_in: the tree of ranks gradients are reduced in (rank_tree.h).
    int reduceFanIn = 4;
    // Every parameter's optimizer group (global offsets, sorted): which parameters train, so
    // which gradients are computed, leave the systems and are kept in MemoryX; the sharded
    // gradient norm needs them too. Every rank must pass the same. Empty: the optimizer's groups
    // (one process, unsharded), else every parameter trains.
    std::vector<optim::ParamGroup> groups;
};

struct StepResult {
    // Mean cross-entropy over the global batch's trained targets (>= 0; a target < 0 masks its
    // position): their summed loss / lossTokens (0 when every target is masked).
    double loss = 0.0;
    int64_t lossTokens = 0;  // the global batch's trained targets
    double gradNorm = 0.0;   // global L2 norm of the reduced gradient, before clipping
    // (layers) L2 norm of each ParameterTable layer's reduced gradient, before clipping; their
    // squares sum to gradNorm² (up to rounding). Empty for a cancelled step.
    std::vector<double> layerGradNorms;
    bool cancelled = false;  // stopped between layers before any update: MemoryX is unchanged
    // Mixture of experts (model::GptShape::hasMoe(); otherwise 0 and empty), over this process's
    // systems and micro-batches (one process: the whole batch). `loss` stays the cross-entropy;
    // the objective trained is loss + loadBalancingLoss.
    double loadBalancingLoss = 0.0;  // mean per micro-batch of the MoE blocks' summed LB loss
    // (layers) per block, the tokens each expert computed this step (after capacity drops),
    // summed over every system and micro-batch (across processes, gathered on rank 0); empty for
    // a dense block.
    std::vector<std::vector<int64_t>> expertTokens;
};

struct StreamingStats {
    int maxResidentLayers = 0;         // most layers' weights any wafer held at once
    int bytesPerWeight = 4;            // on the wafer: 4 (fp32) or 2 (bf16 mode)
    int64_t waferBufferBytes = 0;      // one system's weight buffer: slots x the largest visit
    int64_t peakWaferBufferBytes = 0;  // the most weight bytes one system's buffer held at once
    // Across processes rank 0 counts every system's bytes, the other ranks their own systems'.
    int64_t bytesStreamedIn = 0;     // weights broadcast to systems (all systems, all steps)
    int64_t bytesStreamedOut = 0;    // gradients leaving systems (fp32 in both modes)
    double streamInSec = 0.0;        // total time spent copying weights in
    double streamInHiddenSec = 0.0;  // of which overlapped a compute on the same system
    // Wall time of this process's systems (summed over them, as streamInSec): computing layers
    // forward and backward, and sending gradients out. Across processes the latter is packing
    // and waiting in the gradient reduce, so a slow link shows here, not as compute.
    double computeSec = 0.0;
    double streamOutSec = 0.0;
    // Across processes, the tree reduce's links: bytes each rank sent to its parent in the last
    // step, as rank 0 learns them with the step's losses (empty elsewhere and in one process).
    std::vector<int64_t> reduceLinkBytes;  // (ranks); the owner's entry is 0
};

// How the outside world steers a step between layers (see StreamingExecutor::step).
struct StepHooks {
    std::function<void()> pausePoint;           // may block while paused
    const std::atomic<bool>* cancel = nullptr;  // stop as soon as it is safe
};

class StreamingExecutor {
public:
    // globalBatch must divide into systems x micro-batches (the session validates the config).
    StreamingExecutor(const model::GptShape& shape, int globalBatch, int seqLen,
                      const StreamingOptions& options, MemoryX& memoryx,
                      optim::Optimizer& optimizer, SpanSink sink = {});
    // A rank other than 0 of options.comm that holds no MemoryX shard: computes its systems.
    StreamingExecutor(const model::GptShape& shape, int globalBatch, int seqLen,
                      const StreamingOptions& options, SpanSink sink = {});
    ~StreamingExecutor();
    StreamingExecutor(const StreamingExecutor&) = delete;
    StreamingExecutor& operator=(const StreamingExecutor&) = delete;

    // Trains one step on the global batch (B,T) of inputs/targets. `updateCount` is the 1-based
    // optimizer step (Adam's bias correction); `lr` this step's learning rate.
    // Between layers the executor calls hooks.pausePoint (which may block while the user pauses)
    // and polls hooks.cancel: a step cancelled before MemoryX applied its first update ends at
    // once with cancelled = true and changes nothing; once updates have begun (without clipping
    // they start in the last micro-batch's backward pass) the step completes, so MemoryX never
    // holds a half-applied step.
    StepResult step(int64_t step, const int32_t* inputs, const int32_t* targets, double lr,
                    double maxGradientNorm, int64_t updateCount, uint64_t dropoutSeed,
                    const StepHooks& hooks = {});

    // Packed sequences (model/packed_sequences.h): the global batch's position_ids (B,T) for the
    // steps that follow (the caller keeps them alive and fills them before each step), or null
    // for dense rows. This process's systems read their own rows.
    void setPositionIds(const int32_t* positionIds);

    StreamingStats stats() const;
    int microBatches() const { return m_micros; }
    int systems() const { return m_options.systems; }
    comm::SystemRange localSystems() const;  // the systems this process computes
    const model::ParameterTable& table() const { return m_table; }
    const ShardPlan& shardPlan() const { return m_plan; }

private:
    StepResult runStep(int64_t step, const int32_t* inputs, const int32_t* targets, double lr,
                       double maxGradientNorm, int64_t updateCount, uint64_t dropoutSeed,
                       const StepHooks& hooks);
    void init(const model::GptShape& shape, int globalBatch, int seqLen, MemoryX* memoryx,
              optim::Optimizer* optimizer, SpanSink sink);
    void unshardedStepEnd(StepResult& result, double lr, double maxGradientNorm,
                          int64_t updateCount, int64_t step, const std::vector<double>& losses);
    StepResult shardedStepEnd(double lr, double maxGradientNorm, int64_t updateCount, int64_t step,
                              const std::vector<double>& losses);

    struct Impl;
    model::ParameterTable m_table;
    StreamingOptions m_options;
    ShardPlan m_plan;
    int m_micros = 1;
    std::unique_ptr<Impl> m_impl;
};

// The most parameters any one layer holds: the MemoryX journal and the weight buffer size by it.
size_t largestLayerSize(const model::ParameterTable& table);

// Activation memory one sequence of length T needs on a system for a training step (every
// activation the backward pass reads: model::activationLayout), in bytes of fp32. Used to pick
// micro_batch_size: auto.
int64_t activationBytesPerSequence(const model::GptShape& shape, int seqLen);

}  // namespace ws::streaming
