// SPDX-License-Identifier: GPL-3.0-or-later
// Static unstructured sparsity: magnitude pruning counts per column, zero weights skipped on the
// wafer, so a sparse model predicts faster and cores whose columns hold more zeros idle more.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "engine/wafer/cycle_model.h"
#include "engine/wafer/sparsity.h"

namespace ws::wafer {
namespace {

TEST(Sparsity, MagnitudePruningCountsSurvivorsPerColumn) {
    // W[3, 2]: column 0 holds the three smallest magnitudes.
    const float W[] = {0.1f, 5.0f, -0.2f, -6.0f, 0.3f, 7.0f};
    const auto prefix = columnNonzerosAfterPruning(W, 3, 2, 0.5);  // prune 3 of 6
    ASSERT_EQ(prefix.size(), 3u);
    EXPECT_EQ(prefix[1] - prefix[0], 0);
    EXPECT_EQ(prefix[2] - prefix[1], 3);
    const auto uniform = uniformColumnNonzeros(10, 4, 0.3);
    EXPECT_EQ(uniform.back(), 4 * 7);
}

TEST(Sparsity, RejectsBadLevelsAndTargets) {
    model::GptShape s{
        .vocab = 16, .channels = 8, .layers = 1, .heads = 2, .ffn = 32, .maxPositions = 8};
    const model::ParameterTable table(s);
    std::vector<float> params(table.totalSize(), 1.0f);
    EXPECT_FALSE(blockSparsityFromWeights(table, params.data(), 0, 1.0, {}).ok());
    EXPECT_FALSE(blockSparsityFromWeights(table, params.data(), 0, 0.5, {"fcc"}).ok());
    EXPECT_FALSE(blockSparsityFromWeights(table, params.data(), 3, 0.5, {}).ok());
}

// Two blocks of width 64 (fc: W[64, 256]), weights ~ N(0, 0.02) except that block `block`'s fc
// holds large weights in its first `largeColumns` columns, so magnitude pruning empties the rest.
const model::GptShape kShape{
    .vocab = 256, .channels = 64, .layers = 2, .heads = 4, .ffn = 256, .maxPositions = 64};

std::vector<float> paramsWithLargeFcColumns(const model::ParameterTable& table, uint32_t seed,
                                            int block, int largeColumns) {
    std::vector<float> params(table.totalSize());
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 0.02f);
    for (auto& v : params) v = d(rng);
    const size_t fc = table.layers()[size_t(block) + 1].offset + model::blockOffsets(kShape).fcw;
    for (int k = 0; k < 64; ++k)
        for (int j = 0; j < largeColumns; ++j) params[fc + size_t(k) * 256 + j] *= 100;
    return params;
}

TEST(Sparsity, ZerosAreSkippedAndShowAsImbalance) {
    const model::GptShape s = kShape;
    const model::ParameterTable table(s);
    const std::vector<float> params = paramsWithLargeFcColumns(table, 7, 0, 128);
    auto sp = blockSparsityFromWeights(table, params.data(), 0, 0.5, {"fc"});
    ASSERT_TRUE(sp.ok()) << sp.error().message;
    EXPECT_TRUE(sp->qkv.empty());
    EXPECT_EQ(sp->fc.back(), 64 * 256 / 2);

    auto spec = loadWaferSpecFile(WAFER_PRESETS_DIR "/wafers/teaching-16x16.yaml");
    ASSERT_TRUE(spec.ok());
    auto dense = predictStep(*spec, {s, 4, 64, 1, nullptr});
    auto sparse = predictStep(*spec, {s, 4, 64, 1, &*sp});
    ASSERT_TRUE(dense.ok() && sparse.ok());
    auto fcCycles = [](const StepPrediction& p) {
        for (const auto& op : p.layers[1].ops)
            if (op.name == "fc") return op.computeCycles;
        return 0.0;
    };
    // The fc's busiest core is one whose columns stayed dense, so its time barely moves, but the
    // cores holding the pruned half go idle: lower mean busy in the block's frame.
    EXPECT_LE(fcCycles(*sparse), fcCycles(*dense));
    const auto& denseFrame = *dense->frameFor(1, false);  // h.0 forward
    const auto& sparseFrame = *sparse->frameFor(1, false);
    ASSERT_EQ(sparseFrame.label, "h forward");
    EXPECT_LT(sparseFrame.mean, denseFrame.mean);
    EXPECT_GT(sparseFrame.max - sparseFrame.min, denseFrame.max - denseFrame.min);
    // Uniform sparsity (every column equally pruned) is a real speedup.
    BlockSparsity uniform;
    uniform.qkv = uniformColumnNonzeros(64, 192, 0.75);
    uniform.attnProj = uniformColumnNonzeros(64, 64, 0.75);
    uniform.fc = uniformColumnNonzeros(64, 256, 0.75);
    uniform.fcProj = uniformColumnNonzeros(256, 64, 0.75);
    auto fast = predictStep(*spec, {s, 4, 64, 1, &uniform});
    ASSERT_TRUE(fast.ok());
    EXPECT_LT(fcCycles(*fast), 0.5 * fcCycles(*dense));
}

TEST(Sparsity, StaticSparsityPrunesInPlaceKeepsPositionsAndPlansEachBlock) {
    const model::GptShape s = kShape;
    const model::ParameterTable table(s);
    // Block 1's fc holds its large weights in the first quarter of the columns.
    std::vector<float> params = paramsWithLargeFcColumns(table, 11, 1, 64);
    const std::vector<float> original = params;

    // The counts match blockSparsityFromWeights on the original weights, block by block.
    auto expected0 = blockSparsityFromWeights(table, original.data(), 0, 0.75, {"fc"});
    auto expected1 = blockSparsityFromWeights(table, original.data(), 1, 0.75, {"fc"});
    auto sparsity = StaticSparsity::prune(table, params.data(), 0.75, {"fc"});
    ASSERT_TRUE(sparsity.ok() && expected0.ok() && expected1.ok());
    EXPECT_EQ(sparsity->prunedCount(), 2 * 64 * 256 * 3 / 4);
    ASSERT_EQ(sparsity->blocks().size(), 2u);
    EXPECT_EQ(sparsity->blocks()[0].fc, expected0->fc);
    EXPECT_EQ(sparsity->blocks()[1].fc, expected1->fc);
    EXPECT_TRUE(sparsity->blocks()[0].qkv.empty());

    // Only the pruned positions changed, to zero; reapply zeroes them again after an "update".
    int64_t changed = 0;
    for (size_t i = 0; i < params.size(); ++i)
        if (params[i] != original[i]) {
            ++changed;
            EXPECT_EQ(params[i], 0.0f);
        }
    EXPECT_EQ(changed, sparsity->prunedCount());
    for (auto& v : params) v += 1.0f;
    sparsity->reapply(params.data());
    int64_t zeros = 0;
    for (float v : params) zeros += v == 0.0f;
    EXPECT_EQ(zeros, sparsity->prunedCount());

    // Per-block planning: block 1's frame shows its three idle quarters, block 0's does not.
    auto spec = loadWaferSpecFile(WAFER_PRESETS_DIR "/wafers/teaching-16x16.yaml");
    ASSERT_TRUE(spec.ok());
    StepInput in{s, 4, 64, 1, nullptr};
    in.perBlockSparsity = sparsity->blocks();
    auto p = predictStep(*spec, in);
    ASSERT_TRUE(p.ok()) << p.error().message;
    const auto* h0 = p->frameFor(1, false);
    const auto* h1 = p->frameFor(2, false);
    ASSERT_TRUE(h0 && h1);
    EXPECT_EQ(h0->label, "h.0 forward");
    EXPECT_EQ(h1->label, "h.1 forward");
    EXPECT_GT(h1->max - h1->min, h0->max - h0->min);
    in.perBlockSparsity.pop_back();
    EXPECT_FALSE(predictStep(*spec, in).ok());  // one entry per block, or none
}

}  // namespace
}  // namespace ws::wafer
