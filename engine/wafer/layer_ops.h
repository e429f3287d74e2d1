// SPDX-License-Identifier: GPL-3.0-or-later
// The operations one layer runs on the wafer, per pass, and what each costs every core. Each op
// owns an output-stationary mapping (grid_mapping.h) of its output; a core's work is counted
// from the tile it really owns (causal attention tiles above the diagonal do nothing, sparse
// weight columns skip their zeros), so imbalance is computed, not assumed.
//
// Shapes per system: B sequences of T tokens, M = B*T rows; C channels, F ffn width, NH heads of
// hs = C/NH, V vocab. Cost constants (vector ops per element) are stated where they are defined.
//
// Block options (GptShape; GPT-2's give GPT-2's ops, names and numbers exactly): RMSNorm runs
// "rmsnorm_1" / "rmsnorm_2" / "rmsnorm_f" instead of "ln_*"; rotary positions add "rope" on q
// and k after "qkv" (backward "rope.backward" before "qkv.dX"); SwiGLU's "fc" is the fused
// [gate | up] matmul (M,C)x(C,2F), then "swiglu" (silu(gate)·up, (M,F)), then "fc_proj"
// (M,F)x(F,C); grouped-query attention's "qkv" is (C, Q+2K) and "attention" reads each KV
// head's K/V panel once for the NH/KV query heads that share it; "attn_proj" is (Q, C); ALiBi
// adds its bias to every score inside "attention"; absent biases drop their add (and their
// gradient); no wpe without learned positions; an untied head streams lm_head.
//
// LoRA (shape.hasLora(), model/lora.h): each targeted linear (IN -> OUT) of a block gains its
// adapter products, mapped onto the cores like every other matmul and marked WaferOp::adapter:
// forward "<op>.lora_A" u = x·A (M,R) and "<op>.lora_B" out += scale·u·B (M,OUT); backward
// "<op>.lora_B.dW" dB = uᵀ·dY, "<op>.lora_B.dX" du = scale·dY·Bᵀ, "<op>.lora_A.dW" dA = xᵀ·du and
// "<op>.lora_A.dX" dX += du·Aᵀ: 3·M·R·(IN + OUT) multiply-adds per target and step. A slice
// target rides on its fused op with OUT its width: "qkv.q_proj.lora_A" ... (q_proj, k_proj,
// v_proj on qkv; gate_proj, up_proj on fc), after the op's whole-linear adapter if any. The base is
// frozen in a LoRA run (session/param_groups.h), so no weight-gradient matmul of a base matrix
// runs (qkv.dW, attn_proj.dW, fc.dW, fc_proj.dW, logits.dW), the embeddings' backward does no
// work, and only the adapters' gradients stream out (gradientValues). The forward and the
// input-gradient matmuls of the base stay. LayerNorm's backward keeps its dγ/dβ arithmetic (a
// few vector ops per element; not worth a second op list).
//
// Mixture of experts (blockOps with an ExpertLoad): the block's MLP becomes a router, then E
// experts side by side. The router's matmul (M,C)x(C,E) and its softmax/top-k run on the whole
// wafer like any op. The experts' weights are placed before the router has decided anything, so
// the placement cannot follow the routing: each expert owns a fixed, equal rectangle of the grid
// (expertRegions), and its fc / gelu / fc_proj (backward: their dX, dW) are mapped onto that
// rectangle with the rows it really got this pass (ExpertLoad::tokens). The experts run at the
// same time, each its own chain of ops on its own cores (WaferOp::expert), so the MLP's time is
// its busiest expert's chain: compute follows the MAX of the tokens per expert, not their sum,
// and an expert that got fewer tokens leaves its cores partly idle (an expert with none: idle
// for the whole MLP; its ops are left out). Dispatch (each token's activation to its k experts)
// and combine (the k outputs back, weighted by the router) are counted as row traffic of k x C
// 16-bit values per token (ASSUMED: the fabric route from a token's row to the expert's
// rectangle is not modelled hop by hop).
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/model/parameters.h"
#include "engine/wafer/grid_mapping.h"
#include "engine/wafer/spec.h"

namespace ws::wafer {

enum class Pass { Forward, Backward };

enum class TileLayout {
    Dense,   // every element of the tile counts
    Causal,  // rows repeat every `period` (one attention problem); only columns s <= t count
};

// A rectangle of the core grid (rows == 0: the whole wafer).
struct CoreRegion {
    int row0 = 0, col0 = 0;
    int rows = 0, cols = 0;
    bool whole() const { return rows == 0; }
    bool contains(int r, int c) const {
        return whole() || (r >= row0 && r < row0 + rows && c >= col0 && c < col0 + cols);
    }
};

// Each of `experts` experts' rectangle of the grid: the grid cut into er x ec near-equal blocks
// (er x ec >= experts, the fewest left over, then the most square cores' blocks), expert e in
// block (e / ec, e % ec); every block keeps at least one core. Blocks beyond the experts stay
// idle. More experts than cores (which predictStep refuses) share single cores.
std::vector<CoreRegion> expertRegions(int experts, const WaferSpec& spec);

// One MoE block's routing in one wafer pass (one system's micro-batch of M tokens): how many
// token-assignments each expert processes (they sum to M x topK, less any dropped by the
// capacity factor).
struct ExpertLoad {
    int topK = 1;
    std::vector<int64_t> tokens;  // (E)
};
// M x topK split as evenly as integers allow (what the planner assumes without a run).
ExpertLoad uniformExpertLoad(int experts, int topK, int64_t tokens);

struct WaferOp {
    std::string name;  // "qkv", "qkv.dW", "attention", "ln_1", "expert.3.fc", ...
    TileLayout layout = TileLayout::Dense;
    int64_t m = 0, n = 0;             // output (or score tile) rows and columns
    int64_t period = 0;               // Causal: rows per attention problem (T)
    double fmacsPerElement = 0;       // multiply-adds per counted output element (k of a matmul)
    double vectorOpsPerElement = 0;   // other arithmetic per counted element, on the same lanes
    double rowBytesPerRow = 0;        // bytes through the core's row links per owned row (A panel)
    double colBytesPerCol = 0;        // bytes through its column links per owned column (B panel)
    bool colBytesPerProblem = false;  // Causal: the column panel repeats per attention problem
    // Causal, grouped-query attention: consecutive problems (the heads of one KV group, laid
    // out side by side) that read the same K/V column panel; 1 = one panel per problem.
    int64_t problemsPerColumnPanel = 1;
    double accumulatorBytesPerRow = 0;  // SRAM per owned row beyond the tile (attention output)
    // Sparse weights: prefix sums (size n + 1) of the nonzero weights of each output column; the
    // core's FMACs are rows x (its columns' nonzeros) instead of rows x cols x k.
    std::vector<int64_t> columnNonzerosPrefix;
    // Rows too many for one tile per core to fit in SRAM are processed in `chunks` consecutive
    // row chunks (whole attention problems for Causal) with the weights resident: `mapping` maps
    // one full chunk of `chunkRows` rows, `lastMapping` the remainder chunk (== mapping when
    // chunks divide evenly). Chunks run one after the other; each pays the fill latency.
    int64_t chunks = 1;
    int64_t chunkRows = 0;
    GridMapping mapping;
    GridMapping lastMapping;
    bool adapter = false;  // a LoRA adapter product (see the header comment)
    // Widths of Y's named column parts, in order: qkv's [Q | K | V] (K < Q with grouped-query
    // attention), SwiGLU fc's [gate | up]; empty: one part (what the Wafer tab labels).
    std::vector<int64_t> columnParts;
    // MoE: the expert whose cores (region) run this op; -1: the whole wafer. A run of
    // consecutive expert ops executes at once, each expert's ops in order on its own region.
    int expert = -1;
    CoreRegion region;
};

struct LayerOps {
    std::string layer;  // "embeddings", "h.0", "head" (ParameterTable names)
    Pass pass = Pass::Forward;
    double weightValues = 0;    // values streamed in for this pass
    double gradientValues = 0;  // values streamed out (backward only)
    std::vector<WaferOp> ops;
};

// Per-block weight sparsity: fraction of each weight matrix's values that are zero, by
// magnitude (see sparsity.h for measuring it on real weights).
struct BlockSparsity {
    // Prefix sums of nonzeros per output column for "qkv", "attn_proj", "fc", "fc_proj";
    // empty vectors = dense.
    std::vector<int64_t> qkv, attnProj, fc, fcProj;
};

// The layers of one step in execution order of their pass: embeddings, blocks, head (forward).
// blockSparsity may be null (dense). With LoRA (shape.hasLora()) blocks carry the adapter
// products and the frozen base's weight gradients are left out (see the header comment).
// moe: null for a dense block; an MoE block's routing in this pass (see the header comment).
LayerOps embeddingOps(const model::GptShape& s, int batch, int seqLen, Pass pass,
                      const WaferSpec& spec);
LayerOps blockOps(const model::GptShape& s, int batch, int seqLen, Pass pass, const WaferSpec& spec,
                  const BlockSparsity* sparsity, const ExpertLoad* moe = nullptr);
// Parameters of an MoE block of E experts: the dense block's, its MLP replaced by a router (C,E)
// and E MLPs (C,F)+(F)+(F,C)+(C).
double moeBlockValues(const model::GptShape& s, int experts);
LayerOps headOps(const model::GptShape& s, int batch, int seqLen, Pass pass, const WaferSpec& spec);

// Share of a core's SRAM an op's working tile may use; the rest holds the resident activations
// and the streamed weight buffers (ASSUMED split).
inline constexpr double kTileSramShare = 0.5;

// Chooses the op's chunking and mappings (see WaferOp). Fails, naming the layer and op, when
// even the smallest tile (one row, or one attention problem) does not fit in a core's SRAM.
Status planOp(WaferOp& op, const WaferSpec& spec, const std::string& layer);
Status planLayer(LayerOps& layer, const WaferSpec& spec);

// The op's multiply-adds over the whole output (dense count: every element x k).
double opFmacs(const WaferOp& op);

// Elements (output elements for Dense, causal pairs for Causal) a virtual tile of `mapping`
// counts.
double tileElements(const WaferOp& op, const GridMapping& mapping, int64_t vRow, int64_t vCol);
// Busy cycles of physical core (r, c) for the whole op (every chunk).
double coreCycles(const WaferOp& op, int r, int c, const WaferSpec& spec);
// Adds every core's busy cycles for the whole op into `busy` (R x C row-major): the same
// numbers as coreCycles() per core, computed row- and column-factored for dense tiles.
void addCoreCycles(const WaferOp& op, const WaferSpec& spec, std::vector<float>& busy);
// The op's compute time in cycles: per chunk, its busiest core.
double maxCoreCycles(const WaferOp& op, const WaferSpec& spec);
// Cycles the busiest row or column link needs for the op's broadcasts and reductions (all
// chunks).
double fabricCycles(const WaferOp& op, const WaferSpec& spec);
// Bytes the op moves through each physical row's / column's busiest link (added into `rows`
// (size R) and `cols` (size C)).
void addLinkBytes(const WaferOp& op, std::vector<double>& rows, std::vector<double>& cols);
// Cycles for the first operands to cross the grid before the last core can start (per chunk).
double fillCycles(const WaferSpec& spec);
double opFillCycles(const WaferOp& op, const WaferSpec& spec);
// SRAM a core needs for a tile of `mapping` at the smallest panel width (one k-column, double
// buffered).
double tileSramBytes(const WaferOp& op, const GridMapping& mapping);

}  // namespace ws::wafer
