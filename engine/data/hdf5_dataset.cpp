// SPDX-License-Identifier: GPL-3.0-or-later
// Hdf5Dataset (hdf5_dataset.h): the split, the sample order and the batch rows of ModelZoo's
// HDF5 samples, implemented literally from the header's formulas.
#include "engine/data/hdf5_dataset.h"

#include "engine/data/examples.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>

namespace ws::data {
namespace {

int64_t validationSamplesFor(int64_t n, double fraction) {
    if (fraction >= 1.0) return n;
    if (fraction <= 0.0) return 0;
    return std::clamp(int64_t(std::floor(double(n) * fraction)), int64_t(1), n);
}

}  // namespace

Result<std::unique_ptr<Hdf5Dataset>> Hdf5Dataset::open(const std::vector<std::string>& dataDirs,
                                                       const Hdf5DatasetOptions& options) {
    const double f = options.validationFraction;
    if (!(f >= 0.0 && f <= 1.0))
        return Error{fmt::format("{} {} is outside [0, 1]", options.fractionKey, f)};
    if (options.vocabSize < 1) return Error{"model.vocab_size must be set to read HDF5 token ids"};
    auto files = Hdf5Files::open(dataDirs, options.key);
    if (!files.ok()) return files.error();
    const std::string& first = files->files().front().path.string();
    const int T = files->sequenceLength();
    if (options.maxSequenceLength != 0 && options.maxSequenceLength != T)
        return Error{fmt::format(
            "{} is {} but the HDF5 files in {} hold sequences of {} tokens (\"data\" shape (n, {}, "
            "{}) in '{}'): set {} to {}, or leave it out to take it from the files (a different "
            "length needs the data preprocessed again with max_seq_length {})",
            options.lengthKey, options.maxSequenceLength, options.key, T, files->features(), T,
            first, options.lengthKey, T, options.maxSequenceLength)};
    if (options.useVsl && files->features() != 5)
        return Error{fmt::format(
            "{} is on, but the HDF5 files in {} have {} rows per sample (\"data\" shape (n, {}, "
            "{}) "
            "in '{}'), without the attention_span and position_ids rows that variable sequence "
            "length needs (5 rows): preprocess with ModelZoo's VSL token generator "
            "(use_vsl: True in the preprocessing config), or set {}: false",
            options.vslKey, options.key, files->features(), files->features(), T, first,
            options.vslKey)};
    const int64_t n = files->samples();
    const int64_t v = validationSamplesFor(n, f);
    if (f < 1.0 && n - v < 1)
        return Error{fmt::format("{}: {} of {} samples leaves none to train on: lower {}",
                                 options.key, f, n, options.fractionKey)};
    if (f > 0.0 && f < 1.0 && v == 0)
        return Error{fmt::format(
            "{}: {} of {} samples holds out none for validation: raise {} to at least {:.3g}, "
            "set it to 0, or give eval_input.data_dir its own files",
            options.key, f, n, options.fractionKey, 1.0 / double(n))};
    return std::unique_ptr<Hdf5Dataset>(new Hdf5Dataset(std::move(files).value(), options, n - v));
}

Hdf5Dataset::Hdf5Dataset(Hdf5Files files, Hdf5DatasetOptions options, int64_t trainSamples)
    : m_files(std::move(files)), m_options(std::move(options)), m_trainSamples(trainSamples) {}

std::string Hdf5Dataset::describe() const {
    const int F = m_files.features();
    return fmt::format(
        "HDF5 samples: {} file(s), {} samples of {} tokens ({} rows: input_ids, loss mask, "
        "labels{}{}); {} train, {} held out",
        m_files.files().size(), m_files.samples(), sequenceLength(), F,
        F == 5 ? ", attention_span, position_ids" : "",
        F == 5 && !m_options.useVsl ? "; use_vsl off, so read unpacked" : "", m_trainSamples,
        validationSamples());
}

int64_t Hdf5Dataset::trainSampleIndex(int64_t step, int B, int row, bool shuffle,
                                      uint64_t seed) const {
    assert(step >= 0 && B > 0 && row >= 0 && row < B && m_trainSamples > 0);
    const uint64_t k = uint64_t(step) * uint64_t(B) + uint64_t(row);
    const auto n = uint64_t(m_trainSamples);
    const auto j = int64_t(k % n);
    if (!shuffle) return j;
    const auto epoch = int64_t(k / n);
    const std::lock_guard lock(m_permLock);
    if (m_permEpoch != epoch || m_permSeed != seed || m_perm.size() != n) {
        // examples.h's seeded orders, stream 4 + epoch, as the supervised examples' epochs.
        m_perm = seededPermutation(int64_t(n), streamKey(seed, 4 + uint64_t(epoch)));
        m_permEpoch = epoch;
        m_permSeed = seed;
    }
    return m_perm[size_t(j)];
}

Status Hdf5Dataset::checkBatch(int B) const {
    if (m_trainSamples >= B) return {};
    return Error{fmt::format(
        "{}: {} training sample(s) but train_input.batch_size {}: a step would hold a sample "
        "more than once; lower batch_size to at most {}, lower {}, or preprocess more data",
        m_options.key, m_trainSamples, B, m_trainSamples, m_options.fractionKey)};
}

int64_t Hdf5Dataset::validationBatches(int B) const {
    assert(B > 0);
    return (validationSamples() + B - 1) / B;
}

int64_t Hdf5Dataset::validationSampleIndex(int64_t index, int B, int row) const {
    const int64_t k = index * B + row;
    return k < validationSamples() ? m_trainSamples + k : -1;
}

Result<int64_t> Hdf5Dataset::trainBatch(int64_t step, int B, bool shuffle, uint64_t seed,
                                        const BatchView& out) const {
    std::vector<int64_t> samples(static_cast<size_t>(B));
    for (int i = 0; i < B; ++i) samples[size_t(i)] = trainSampleIndex(step, B, i, shuffle, seed);
    return fillRows(B, out, samples);
}

Result<int64_t> Hdf5Dataset::validationBatch(int64_t index, int B, const BatchView& out) const {
    assert(index >= 0 && index < validationBatches(B));
    std::vector<int64_t> samples(static_cast<size_t>(B));
    for (int i = 0; i < B; ++i) samples[size_t(i)] = validationSampleIndex(index, B, i);
    return fillRows(B, out, samples);
}

Result<int64_t> Hdf5Dataset::fillRows(int B, const BatchView& out,
                                      const std::vector<int64_t>& samples) const {
    const size_t T = size_t(sequenceLength());
    int64_t trained = 0;
    for (int i = 0; i < B; ++i) {
        const size_t at = size_t(i) * T;
        int32_t* positions = m_options.useVsl ? out.positionIds + at : nullptr;
        if (samples[size_t(i)] < 0) {
            std::fill_n(out.inputs + at, T, 0);
            std::fill_n(out.targets + at, T, -1);
            if (positions) std::fill_n(positions, T, 0);
            continue;
        }
        auto row = readRow(samples[size_t(i)], out.inputs + at, out.targets + at, positions);
        if (!row.ok()) return row.error();
        trained += *row;
    }
    return trained;
}

Result<int64_t> Hdf5Dataset::readRow(int64_t sample, int32_t* inputs, int32_t* targets,
                                     int32_t* positionIds) const {
    const int T = sequenceLength();
    std::vector<int64_t> rows(size_t(m_files.features()) * size_t(T));
    if (Status s = m_files.readSample(sample, rows.data()); !s.ok()) return s.error();
    const int64_t* ids = rows.data();
    const int64_t* mask = ids + T;
    const int64_t* labels = mask + T;
    const int64_t* positions = m_files.features() == 5 ? labels + 2 * T : nullptr;
    const int64_t vocab = m_options.vocabSize;
    auto where = [&](int t) {
        const auto [file, row] = m_files.locate(sample);
        return fmt::format("{}: '{}', sample {} (row {} of the file), position {}", m_options.key,
                           m_files.files()[file].path.string(), sample, row, t);
    };
    for (int t = 0; t < T; ++t) {
        if (mask[t] != 0 && mask[t] != 1)
            return Error{fmt::format(
                "{}: the loss mask is {}, but ModelZoo's GPT samples hold 1 (trained on) or 0 "
                "(not): preprocess the data again (a preprocessing with inverted_mask writes the "
                "mask inverted, which is not read)",
                where(t), mask[t])};
        if (ids[t] < 0 || ids[t] >= vocab)
            return Error{fmt::format(
                "{}: input token id {} is outside the model's vocabulary of {} (model.vocab_size): "
                "the data was tokenized with another tokenizer; preprocess it with the model's "
                "tokenizer, or set model.vocab_size to the tokenizer's",
                where(t), ids[t], vocab)};
        if (mask[t] == 1 && (labels[t] < 0 || labels[t] >= vocab))
            return Error{fmt::format(
                "{}: label token id {} is outside the model's vocabulary of {} (model.vocab_size): "
                "the data was tokenized with another tokenizer; preprocess it with the model's "
                "tokenizer, or set model.vocab_size to the tokenizer's",
                where(t), labels[t], vocab)};
        if (positionIds && positions) {
            const int64_t p = positions[t];
            const bool ok = p == 0 || (t > 0 && p == positions[t - 1] + 1);
            if (!ok)
                return Error{fmt::format(
                    "{}: position id {} follows {}, but a packed sample's position_ids count 0, "
                    "1, 2, ... inside each sequence (0 starts the next): preprocess the data "
                    "again with ModelZoo's VSL token generator",
                    where(t), p, t > 0 ? std::to_string(positions[t - 1]) : "the row's start")};
        }
    }
    int64_t trained = 0;
    for (int t = 0; t < T; ++t) {
        inputs[t] = int32_t(ids[t]);
        targets[t] = mask[t] == 1 ? int32_t(labels[t]) : -1;
        trained += mask[t];
        if (positionIds) positionIds[t] = int32_t(positions[t]);
    }
    return trained;
}

}  // namespace ws::data
