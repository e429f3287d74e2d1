// SPDX-License-Identifier: GPL-3.0-or-later
// ExampleBatchSource: the supervised examples' batches (example_dataset.h) as a BatchSource
// (batch_source.h), so a run reads chat and instruction data through the same door as ModelZoo's
// HDF5 samples. Position ids come with every batch when examples are packed (each example sees
// only itself); unpacked rows are dense. Thread-safety: as ExampleDataset (immutable).
#pragma once

#include <memory>
#include <string>

#include "engine/data/batch_source.h"
#include "engine/data/example_dataset.h"

namespace ws::data {

class ExampleBatchSource final : public BatchSource {
public:
    // The dataset's T is options().T.
    explicit ExampleBatchSource(std::shared_ptr<const ExampleDataset> dataset);

    int sequenceLength() const override;
    bool hasPositionIds() const override;
    std::string describe() const override;
    int64_t trainSamples() const override;
    Status checkBatch(int B) const override { return m_dataset->checkBatch(B); }
    Result<int64_t> trainBatch(int64_t step, int B, bool shuffle, uint64_t seed,
                               const BatchView& out) const override;
    int64_t validationBatches(int B) const override;
    Result<int64_t> validationBatch(int64_t index, int B, const BatchView& out) const override;

    const ExampleDataset& dataset() const { return *m_dataset; }

private:
    std::shared_ptr<const ExampleDataset> m_dataset;
};

}  // namespace ws::data
