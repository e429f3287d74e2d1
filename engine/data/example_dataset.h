// SPDX-License-Identifier: GPL-3.0-or-later
// ExampleDataset: the batch source for supervised (instruction/chat) fine-tuning. Tokenized
// examples with their training masks (examples.h) become a training and a held-out set of rows of T
// slots (example_rows.h), and batches are drawn from them by an exact formula, so runs are
// reproducible and another implementation can produce the same batches. The pipeline of create():
//   check (shapes; Refuse: no example longer than T + 1) -> split (examples.h, unless the split is
//   given) -> prepare each split (truncate, drop examples with nothing to train) -> pack each split
//   into rows (training rows: packing key streamKey(seed, 2), held-out rows: streamKey(seed, 3)).
//
// Targets: a target id < 0 means no loss there (prompt tokens, padding, an example's first token).
//
// Notation: R training rows, B rows per batch (the global batch: systems take equal consecutive
// shares of it), s a step, i a row of the batch.
// Training: sample g = s * B + i (64-bit), epoch e = floor(g / R), k = g mod R;
//             shuffle = false:  row = k
//             shuffle = true:   row = seededPermutation(R, streamKey(seed, 4 + e))[k]
//           so every row, hence every example, appears exactly once per epoch; rows depend only on
//           (seed, s, B, i), not on threads, systems or ranks. checkBatch(B) refuses R < B (a step
//           would hold a row twice), so every batch holds B distinct rows, each with at least one
//           target >= 0: no training batch, and no system's share of one, is all -1.
// Validation: Rv held-out rows (in packing order), validationBatches(B) = ceil(Rv / B); row i of
//           batch j is held-out row j * B + i when that is < Rv, else a padding row (all targets
//           -1), so every held-out row is counted exactly once. The last batch's padding rows may
//           leave one system's share all -1: normalise the loss by the batch's returned count
//           of targets, never per system.
// position_ids (B,T): restart at 0 at each example's first slot (packed rows; example_rows.h);
//           ops::checkPositionIds accepts them. Without packing they are 0 .. T-1 on every row
//           (positionIdsAreDense()), so the dense path may be used instead.
//
// Thread-safety: immutable except a cache of the last epoch's order, guarded by a mutex; every
// const method may run concurrently. Copies share that cache.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/result.h"
#include "engine/data/example_rows.h"
#include "engine/data/examples.h"

namespace ws::data {

// A remark for the wizard's Data page and the CLI: the data set trains, but not as the user may
// think.
struct DataWarning {
    enum class Kind {
        ManyEpochs,           // the steps go over the training rows more than kManyEpochs times
        Truncated,            // long examples were cut to T + 1 tokens
        DroppedByTruncation,  // long examples lost every trained token to the cut
        Untrained,            // examples without a trained token were left out
    };
    Kind kind;
    std::string message;
};

class ExampleDataset {
public:
    static constexpr double kManyEpochs = 20.0;

    // Splits `examples` by options.heldOutFraction / heldOutCount and options.seed (examples.h).
    static Result<ExampleDataset> create(std::vector<Example> examples,
                                         const ExampleOptions& options);
    // A split made elsewhere (e.g. by records; options.heldOut* are not used): heldOut may be
    // empty (no validation).
    static Result<ExampleDataset> create(std::vector<Example> train, std::vector<Example> heldOut,
                                         const ExampleOptions& options);

    // Errors when the training rows are fewer than B, naming the numbers and the fixes.
    Status checkBatch(int B) const;

    // Training row of row i of step `step` (the formula above).
    int64_t trainRow(int64_t step, int B, int i, bool shuffle, uint64_t seed) const;
    // inputs, targets, positionIds: (B, T) row-major; T must be options.T. Returns the number of
    // targets >= 0 (trained targets) in the batch. Call checkBatch(B) first.
    int64_t trainBatch(int64_t step, int B, int T, bool shuffle, uint64_t seed, int32_t* inputs,
                       int32_t* targets, int32_t* positionIds) const;

    int64_t validationBatches(int B) const;  // 0 without held-out rows
    // inputs, targets, positionIds: (B, T); index in [0, validationBatches(B)). Returns the
    // number of targets >= 0 in the batch.
    int64_t validationBatch(int64_t index, int B, int T, int32_t* inputs, int32_t* targets,
                            int32_t* positionIds) const;

    const ExampleRows& trainRows() const { return m_train; }
    const ExampleRows& heldOutRows() const { return m_heldOut; }
    const ExampleStats& trainStats() const { return m_trainStats; }
    const ExampleStats& heldOutStats() const { return m_heldOutStats; }
    const ExampleOptions& options() const { return m_options; }
    bool positionIdsAreDense() const { return !m_options.pack; }

    // One line for the CLI and the wizard, e.g. "120 training examples (5400 tokens, 2310
    // trained on: 43%) packed into 24 rows of 256 tokens (88% filled); 12 held out in 3 rows".
    std::string describe() const;

    // steps * B / R: how many times the run goes over the training rows.
    double epochs(int64_t steps, int B) const;
    // What the user should know before training `steps` steps of B rows (empty when nothing).
    std::vector<DataWarning> warnings(int64_t steps, int B) const;

private:
    struct EpochCache;
    ExampleDataset(ExampleRows train, ExampleRows heldOut, ExampleStats trainStats,
                   ExampleStats heldOutStats, const ExampleOptions& options);
    static Result<ExampleDataset> build(ExampleSplit split, const ExampleOptions& options);
    std::shared_ptr<const std::vector<int64_t>> epochOrder(int64_t epoch, uint64_t seed) const;

    ExampleRows m_train;
    ExampleRows m_heldOut;
    ExampleStats m_trainStats;
    ExampleStats m_heldOutStats;
    ExampleOptions m_options;
    std::shared_ptr<EpochCache> m_cache;
};

}  // namespace ws::data
