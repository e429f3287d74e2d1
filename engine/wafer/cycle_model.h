// SPDX-License-Identifier: GPL-3.0-or-later
// The cycle model: predicts one training step of a GPT on N data-parallel systems of a wafer
// spec, as weight streaming runs it (one layer at a time on the whole wafer; weights stream in
// from MemoryX for forward and again for backward, gradients stream out and SwarmX reduces them
// over a tree of depth ceil(log4 N), MemoryX applies the update; the next layer prefetches while
// one computes, given two weight slots (StepInput::weightBufferLayers; with one slot stream and
// compute take turns); the update of the last layer is the iteration-boundary bubble).
//
// Per op: its busiest core's cycles (compute), its busiest link's bytes (fabric) and the fill
// latency across the grid; per layer: compute = sum of max(compute, fabric) + fill, overlapped
// with the layer's weight stream (bytes / system I/O), so layer time = the binding one + fill.
//
// Micro-batching (ModelZoo's micro_batch_size): each micro-batch streams the weights in again
// for its forward and backward and streams its gradients out (MemoryX accumulates them); the
// update runs once, after the last micro-batch.
//
// LoRA (StepInput::shape.hasLora()): the blocks carry the adapter products and the frozen base
// computes no weight gradients (layer_ops.h); the embeddings' backward has no work and is not
// scheduled, only the adapters' gradients stream out, reduce and update in MemoryX.
//
// Mixture of experts (shape.hasMoe()): each MoE block's experts run side by side, each on its own
// rectangle of the grid with the tokens it got (layer_ops.h), so an MoE block's compute follows
// its busiest expert; blocks with different routing are planned (and framed) each on its own.
// An MoE block's weights stream in as units - its shared part, then each expert - and its
// gradients out the same way (TimelineSpan::expert), as the streaming executor moves them. The
// activations an MoE block stores are counted as a dense block's (ActivationFit).
//
// Activation offload and recompute (StepInput::blockActivations, activation_memory.h): an
// offloaded block's activations stream out over the outbound link (the one gradients use) as its
// forward produces them, in order behind whatever that link still carries; a block's forward
// cannot start before the offload of the block two phases back has drained (two buffers, as for
// weights). Before a block's backward they stream back in over the inbound link, ahead of that
// phase's weights in the same stream, so they prefetch while the phase before computes; the
// backward starts once they are in. A recomputed block's backward phase runs its forward ops
// again first ("recompute.<op>", the same per-core costs), on the weights streamed in for the
// backward. Both are timed spans of their own (StepPrediction::activationSpans).
//
// Limits (stated, not hidden): without a plan (blockActivations empty), with the whole batch (or
// a micro-batch too large) activations are assumed to stay on the wafer whether or not they fit
// (ActivationFit reports whether they do; activation_plan.h chooses a plan that fits);
// dX of sparse matmuls is counted dense; sparse weights stream dense. The fabric moves 16-bit
// operands (layer_ops) whatever the run's precision: the wafer's compute is modelled as fp16/bf16.
// Weights stream in at StepInput::weightBytesPerValue (an fp32 run's 4-byte weights take twice
// a bf16 run's time).
//
// The computation is four phases, each a function of its own (and tested alone): plan
// (step_plan.h: the distinct layer phases mapped onto the grid), schedule (step_schedule.h: their
// order over micro-batches), simulate (step_simulation.h: the stream / compute / reduce / update
// timeline) and account (step_accounting.h: time split, FLOPs, MFU / HFU, frames).
//
// Thread-safety: pure functions. Failure contract: bad specs, num_csx beyond the spec's SwarmX
// limit and ops that cannot fit a tile in SRAM return errors before any work.
#pragma once

#include <string>
#include <vector>

#include "engine/core/result.h"
#include "engine/model/parameters.h"
#include "engine/streaming/spans.h"
#include "engine/wafer/activation_memory.h"
#include "engine/wafer/layer_ops.h"
#include "engine/wafer/spec.h"
#include "engine/wafer/utilization.h"

namespace ws::wafer {

struct StepInput {
    model::GptShape shape;
    int batchPerSystem = 1;                   // B sequences on each system
    int seqLen = 1;                           // T
    int numSystems = 1;                       // N (num_csx)
    const BlockSparsity* sparsity = nullptr;  // every block's weight sparsity; null = dense
    int microBatch = 0;  // sequences per wafer pass (divides B); 0 = the whole B at once
    // Each block's own sparsity (L entries, e.g. from magnitude pruning of real weights): every
    // block is then planned, and framed, on its own. Empty: `sparsity` for all blocks.
    std::vector<BlockSparsity> perBlockSparsity = {};
    // Global-norm gradient clipping (optimizer.max_gradient_norm > 0): no layer can be updated
    // before every gradient is in, so the updates run after the backward pass, not beside it.
    bool updatesAfterNorm = false;
    // Bytes per weight streamed in: the run's width on the wafer (model::streamedBytesPerWeight:
    // 4 for an fp32 run, 2 in bf16 mode); 0 = the spec's stream_bytes_per_value. Gradients out
    // always use the spec's figure (the hardware's 16-bit gradients).
    int weightBytesPerValue = 0;
    // (ParameterTable layers) layers whose every tensor is frozen (fine-tuning's frozen
    // embeddings and blocks, a LoRA run's embeddings and head): no gradient of theirs streams
    // out, is reduced or updated, as the streaming executor does. Empty: every layer trains.
    std::vector<bool> frozenLayers = {};
    // wafer.weight_buffer_layers: the wafer's weight slots. 2 or more: the next layer prefetches
    // into the free slot while one computes (the schedule above; a third slot is not modelled).
    // 1: nothing prefetches - a layer's stream-in starts once the layer before it has computed
    // and left the slot, and it computes once its weights are all in, so every layer phase costs
    // its stream plus its compute.
    int weightBufferLayers = 2;
    // Mixture of experts (shape.hasMoe()): per block (L entries, a dense block's empty), the
    // token-assignments each expert processed in one wafer pass (one system's micro-batch; every
    // micro-batch and both passes are taken to route alike). Empty, or a block's entry empty:
    // uniform routing, M x top_k / E each (what the planner assumes without a run).
    std::vector<std::vector<int64_t>> expertTokens = {};
    // Variable sequence length (attention_span.h): the attention problems' equivalent length,
    // sum over the packed pieces of len² / T (data/packing.h: attentionLength); 0 = seqLen.
    int attentionLength = 0;
    // Per block (L entries): how its activations reach its backward (activation_memory.h;
    // activation_plan.h chooses). Empty: every block keeps them on the wafer (the schedule above,
    // unchanged).
    std::vector<BlockActivation> blockActivations = {};
    // The planner's one-line account of the choice, copied to StepPrediction::activationPlan.
    std::string activationPlanNote = {};
};

struct PredictOptions {
    bool frames = true;     // compute per-core utilization frames (costs one pass over the grid)
    int displayRows = 256;  // frames are averaged down to at most this many rows / columns
    int displayCols = 256;
};

enum class Binding { Compute, Fabric, WeightStream };
const char* bindingName(Binding b);

struct OpTiming {
    std::string name;
    double computeCycles = 0;  // busiest core
    double fabricCycles = 0;   // busiest link
    double fillCycles = 0;
    int64_t chunks = 1;
    int folds = 1;
    bool adapter = false;  // a LoRA adapter product (WaferOp::adapter)
    int expert = -1;       // MoE: the expert whose cores run it (WaferOp::expert); -1: all cores
    CoreRegion region;     // those cores (whole: the wafer)
    double fmacs = 0;      // multiply-adds of the whole op (dense count)
    // Its output matrix Y[m, n] (per chunk: m = the chunk's rows) and how Y's tiles sit on the
    // cores (grid_mapping.h): which cores hold which rows and columns of Y.
    int64_t m = 0, n = 0;
    std::vector<int64_t> columnParts;  // WaferOp::columnParts
    GridMapping mapping;
    // When it runs, in seconds from its layer phase's compute start (ops run one after another,
    // each taking max(compute, fabric) + fill; a run of MoE expert ops runs at once, each
    // expert's ops one after another, and the run takes its slowest expert's), and for how long.
    double startS = 0;
    double timeS = 0;
};

// One layer in one pass, per system.
struct LayerTiming {
    std::string layer;  // "embeddings", "h.3", "head"
    Pass pass = Pass::Forward;
    double computeS = 0;  // sum over ops of the busiest core's time
    double fabricS = 0;   // sum over ops of max(0, fabric - compute): fabric-bound excess
    double fillS = 0;
    double weightStreamS = 0;  // weights in (forward and backward)
    double gradStreamS = 0;    // gradients out (backward)
    double timeS = 0;          // layer time on the wafer (end - start of its compute span)
    Binding binding = Binding::Compute;
    double meanBusy = 0;  // mean core busy fraction over the layer time (frames only)
    // Stall reasons, the same for every core: an op ends when its busiest core and its busiest
    // link are done, so every core waits out the fabric-bound excess and fill; the layer's
    // stream-bound excess is waiting for weights. A core's remaining idle time is imbalance
    // (1 - busy - waits, per core in the frames).
    double waitWeightsS = 0;
    double waitFabricS = 0;
    double tileSramBytes = 0;     // largest op tile per core
    double sramBytesPerCore = 0;  // tile + this system's stored activations spread over cores
    // Bytes through each physical row's / column's busiest link (frames only; R and C long).
    std::vector<double> rowLinkBytes, colLinkBytes;
    std::vector<OpTiming> ops;
};

// Where the step's time goes on the wafer; the parts add up to stepS.
struct TimeSplit {
    double compute = 0;
    double streaming = 0;  // waiting on the link: weights, or offloaded activations (not hidden)
    double fabric = 0;     // fabric-bound excess and fill latency
    double reduce = 0;     // SwarmX reduce latency exposed at the end of the step
    double bubble = 0;     // iteration boundary: first stream-in, last update in MemoryX
    // The part of the link waits above (streaming, then bubble, then reduce) that lockstep over
    // SwarmX adds (cluster_links.h): the step minus the same step at the links' line rate.
    // 0 on one system.
    double queueing = 0;
};

// One kind of link around the systems and what a step puts on it (cluster_links.h), per link:
// the GUI's cluster diagram draws these.
struct LinkLoad {
    std::string name;              // "system links", "SwarmX level 1 uplinks", "MemoryX link", ...
    int count = 0;                 // links of this kind in the job, all lanes
    double capacityBytesPerS = 0;  // each, each direction (fabric: the job's share, all links)
    double bytesDown = 0;    // per link per step toward the systems: weights, activations back
    double bytesUp = 0;      // toward MemoryX: gradients (reduced above the systems), activations
    double utilization = 0;  // max(down, up) / (capacity x step); fabric: (down + up) / ...
    double waitS = 0;        // per step: transfer time on it spent waiting for the slowest link
};

struct ActivationFit {
    double storedBytes = 0;     // activations kept for backward, all blocks, no recompute
    double minimalBytes = 0;    // only each block's input kept (the rest recomputed)
    double availableBytes = 0;  // wafer SRAM
    bool fits = false;          // storedBytes <= availableBytes
    bool fitsWithRecompute = false;
    int maxSequences = 0;  // largest per-system batch whose storedBytes fit
};

// One piece of the emulated schedule, in the streamed execution's terms (streaming::Span):
// the same kinds, layer numbering and micro-batches, so real spans can be given emulated times.
struct TimelineSpan {
    int system = 0;  // -1: SwarmX / MemoryX work (reduce, update), done once for all systems
    int micro = 0;
    int layer = 0;  // ParameterTable layer index: 0 embeddings, 1..L blocks, L + 1 head
    streaming::SpanKind kind = streaming::SpanKind::Forward;
    bool backwardPass = false;  // StreamIn: the weights for the backward visit
    double startS = 0;          // seconds from the start of the step
    double endS = 0;
    // MoE blocks stream (in and out) as units, each its own span (streaming::Span::expert): -1
    // the shared part (or a whole dense layer), e expert e; `share` is the unit's part of the
    // layer's values (1 for a whole layer).
    int expert = -1;
    double share = 1.0;
    // A weight / gradient transfer (StreamIn, StreamOut, Reduce): the part of it spent waiting
    // for SwarmX's slowest link (lockstep, cluster_links.h); 0 on one system.
    double waitS = 0;
};

// Offloaded activations on the system's link to MemoryX: out after a block's forward, in before
// its backward (a lane of its own on the timeline).
struct ActivationSpan {
    int system = 0;
    int micro = 0;
    int layer = 0;          // ParameterTable layer index (1..L)
    bool toMemoryX = true;  // out (forward) or back in (backward)
    double bytes = 0;
    double startS = 0;
    double endS = 0;
};

struct StepPrediction {
    std::string waferName;
    int numSystems = 1;
    int treeDepth = 0;
    int batchPerSystem = 0;
    int microBatch = 0;  // sequences per wafer pass
    int seqLen = 0;
    int weightBufferLayers = 2;  // StepInput::weightBufferLayers
    double stepS = 0;
    double forwardS = 0;  // wafer time of the forward pass (first compute start to last end)
    double backwardS = 0;
    double gradientStreamS = 0;  // total gradient stream-out time
    double reduceS = 0;          // SwarmX reduce latency per layer x layers (overlapped mostly)
    double optimizerS = 0;       // total MemoryX update time (overlapped but the last)
    double bubbleS = 0;          // == split.bubble
    // The links (cluster_links.h): the lockstep factor (slowest link's chunk time over a
    // link's mean), the rate one system's weights and gradients moved at, what set it, and the
    // load on each kind of link.
    double lockstep = 1;
    double swarmxBytesPerS = 0;
    std::string linkBinding;
    std::vector<LinkLoad> links;
    double tokensPerS = 0;  // all systems
    double samplesPerS = 0;
    double modelFlopsPerStep = 0;        // all systems, model::stepTrainingFlopsPerToken x tokens
    double mfu = 0;                      // modelFlopsPerStep / (stepS x peak x N)
    bool weightStreamingHidden = false;  // no layer is bound by its weight stream
    TimeSplit split;
    ActivationFit activations;
    std::vector<LayerTiming> layers;  // forward then backward, execution order
    std::vector<TimelineSpan> spans;  // every system's spans (systems are identical)
    // Per planned layer phase, each over its compute window (UtilizationFrame::windowS: the
    // phase's ops back to back, waits for weights excluded), then "step" (last), over stepS.
    std::vector<UtilizationFrame> frames;
    // frames[] index of each layer's forward / backward phase (L + 2 entries, by ParameterTable
    // layer index); -1 without frames.
    std::vector<int> forwardFrame, backwardFrame;
    // LoRA (shape.hasLora()): the adapter products of one block's forward / backward, every
    // system's own: their time (the sum of their OpTiming::timeS, per micro-batch and block) and
    // multiply-adds; and a frame of the cores' busy fraction over just those ops (frames[] index,
    // -1 without LoRA or frames). Every block's adapters are the same dense products, so one
    // frame per pass stands for all.
    int loraRank = 0;
    double adapterForwardS = 0, adapterBackwardS = 0;  // per block, per micro-batch
    double adapterS = 0;                               // the whole step's, all blocks and micros
    double adapterFmacsPerStep = 0;                    // one system
    int adapterForwardFrame = -1, adapterBackwardFrame = -1;
    // MoE: per block (L entries; a dense block's empty) the tokens per expert the prediction
    // mapped (StepInput::expertTokens, or the uniform split it assumed), and whether that split
    // was assumed (no routing given) rather than a run's.
    std::vector<std::vector<int64_t>> expertTokens;
    bool uniformRouting = false;
    int moeExperts = 0, moeTopK = 0;        // 0: a dense model
    std::vector<CoreRegion> expertRegions;  // (moeExperts) each expert's cores (layer_ops.h)
    // Activation offload and recompute (StepInput::blockActivations; zero / empty without).
    std::vector<BlockActivation> blockActivations;  // as given (L entries, or empty)
    std::string activationPlan;          // the planner's one-line account (StepInput's note)
    double residentActivationBytes = 0;  // peak SRAM for activations (activation_memory.h)
    double offloadBytesPerStep = 0;      // one system, each way (out == back in)
    double offloadS = 0;                 // link time of those bytes, out plus in, one system
    double recomputeFmacsPerStep = 0;    // one system: the recomputed forward ops
    double recomputeS = 0;               // wafer time of the recomputed ops (part of compute)
    double hardwareFlopsPerStep = 0;     // all systems: model FLOPs + 2 x recomputed FMACs
    double hfu = 0;                      // hardwareFlopsPerStep / (stepS x peak x N)
    std::vector<ActivationSpan> activationSpans;  // every system's

    // The utilization frame of a layer phase, or of the whole step (layer < 0); null when the
    // prediction has no frames.
    const UtilizationFrame* frameFor(int layer, bool backward) const;
    // The frame of the LoRA adapter products of a block's pass; null without LoRA or frames.
    const UtilizationFrame* adapterFrame(bool backward) const;
};

Result<StepPrediction> predictStep(const WaferSpec& spec, const StepInput& input,
                                   const PredictOptions& options = {});

// Every core's busy cycles in a planned layer phase (planLayer), R x C row-major: the raw
// material of a utilization frame. Cost: one pass over the grid per op.
std::vector<float> coreBusyCycles(const LayerOps& planned, const WaferSpec& spec);

// The largest micro-batch dividing `batch` whose stored activations fit `availableBytes` (<= 0:
// the wafer's whole SRAM); 1 when none larger does (micro_batch_size: auto).
int largestFittingMicroBatch(const WaferSpec& spec, const model::GptShape& shape, int batch,
                             int seqLen, double availableBytes = 0);

ActivationFit activationFit(const WaferSpec& spec, const model::GptShape& shape, int batch,
                            int seqLen);

}  // namespace ws::wafer
