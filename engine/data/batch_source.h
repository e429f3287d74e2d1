// SPDX-License-Identifier: GPL-3.0-or-later
// BatchSource: where a run's training and validation batches come from when they are not windows
// of a token cache (dataset.h): ModelZoo's preprocessed HDF5 samples (hdf5_dataset.h) today, other
// readers of ready-made samples later. A source owns its sequence length T (its samples have one)
// and fills (B, T) batches of
//   inputs       token ids,
//   targets      the token to predict at each position, or -1 where no loss is taken (the
//                engine's convention: a target < 0 is masked out of the loss and of eval),
//   positionIds  only when hasPositionIds(): each token's index inside its packed document
//                (model/packed_sequences.h), 0 at a document's first token.
// Sample order is a pure function of (step, B, row, shuffle, seed): reproducible, and the same
// whichever thread or system asks. A batch returns how many of its targets are >= 0, so a loss is
// normalised by the batch's count, never per row or system. Validation batches count every
// held-out sample exactly once: the last batch is filled with padding rows (targets all -1), as
// data::ExampleDataset does. Errors name the file, the sample and the fix: a source may read
// lazily, so a batch can fail (a corrupt sample), and nothing is trained on a sample that did.
//
// Thread-safety: every const method may run concurrently (implementations lock what they share).
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/result.h"

namespace ws::data {

struct BatchView {
    int32_t* inputs = nullptr;       // (B, T)
    int32_t* targets = nullptr;      // (B, T), -1 = no loss
    int32_t* positionIds = nullptr;  // (B, T) when the source hasPositionIds(), else unused
};

class BatchSource {
public:
    virtual ~BatchSource() = default;

    virtual int sequenceLength() const = 0;  // T
    virtual bool hasPositionIds() const = 0;
    // One line for the run's log: what was read and how it splits.
    virtual std::string describe() const = 0;

    virtual int64_t trainSamples() const = 0;
    // Errors when a step of B rows would hold a training sample twice, naming the fix.
    virtual Status checkBatch(int B) const = 0;
    // Step `step`'s B training rows; the count of targets >= 0.
    virtual Result<int64_t> trainBatch(int64_t step, int B, bool shuffle, uint64_t seed,
                                       const BatchView& out) const = 0;

    // Validation batches of B rows (0: no validation data).
    virtual int64_t validationBatches(int B) const = 0;
    // index in [0, validationBatches(B)); the count of targets >= 0.
    virtual Result<int64_t> validationBatch(int64_t index, int B, const BatchView& out) const = 0;
};

}  // namespace ws::data
