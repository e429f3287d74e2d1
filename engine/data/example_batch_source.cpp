// SPDX-License-Identifier: GPL-3.0-or-later
// ExampleBatchSource: see example_batch_source.h.
#include "engine/data/example_batch_source.h"

#include <vector>

namespace ws::data {

namespace {

// The rows always come with position ids; a caller that does not want them (unpacked rows are
// dense) gets them written to scratch.
int32_t* positionsOrScratch(const BatchView& out, size_t n, std::vector<int32_t>& scratch) {
    if (out.positionIds) return out.positionIds;
    scratch.resize(n);
    return scratch.data();
}

}  // namespace

ExampleBatchSource::ExampleBatchSource(std::shared_ptr<const ExampleDataset> dataset)
    : m_dataset(std::move(dataset)) {}

int ExampleBatchSource::sequenceLength() const {
    return m_dataset->options().T;
}

bool ExampleBatchSource::hasPositionIds() const {
    return !m_dataset->positionIdsAreDense();
}

std::string ExampleBatchSource::describe() const {
    return m_dataset->describe();
}

int64_t ExampleBatchSource::trainSamples() const {
    return m_dataset->trainRows().rows();
}

Result<int64_t> ExampleBatchSource::trainBatch(int64_t step, int B, bool shuffle, uint64_t seed,
                                               const BatchView& out) const {
    if (Status st = m_dataset->checkBatch(B); !st.ok()) return st.error();
    const int T = sequenceLength();
    std::vector<int32_t> scratch;
    return m_dataset->trainBatch(step, B, T, shuffle, seed, out.inputs, out.targets,
                                 positionsOrScratch(out, size_t(B) * size_t(T), scratch));
}

int64_t ExampleBatchSource::validationBatches(int B) const {
    return m_dataset->validationBatches(B);
}

Result<int64_t> ExampleBatchSource::validationBatch(int64_t index, int B,
                                                    const BatchView& out) const {
    const int T = sequenceLength();
    std::vector<int32_t> scratch;
    return m_dataset->validationBatch(index, B, T, out.inputs, out.targets,
                                      positionsOrScratch(out, size_t(B) * size_t(T), scratch));
}

}  // namespace ws::data
