// SPDX-License-Identifier: GPL-3.0-or-later
// Hdf5Dataset: a BatchSource (batch_source.h) over ModelZoo's preprocessed HDF5 samples
// (hdf5_files.h), with an exact, documented order so runs are reproducible.
//
// Notation: N samples over the files in their sorted order (Hdf5Files), f = validationFraction,
// B rows per batch, T = the files' msl.
// A batch row from sample k (rows input_ids, loss mask, labels[, attention_span, position_ids]):
//   inputs[t]      = input_ids[t]
//   targets[t]     = labels[t] where the loss mask is 1, -1 where it is 0 (no loss there)
//   positionIds[t] = position_ids[t]   (use_vsl only; the files must then have F = 5 rows)
// as ModelZoo's GPT models use them (loss = labels weighted by the mask). Files with F = 5 read
// without use_vsl train their rows unpacked, as ModelZoo does (it takes the first three rows).
// Every sample is checked before it is used: token ids in [0, vocabSize) (labels only where the
// mask is 1: padding may carry any pad id), the mask 0 or 1, position_ids restarting at 0 and
// counting up by one (model/packed_sequences.h); a bad one is an error naming the file, the
// sample and the value.
//
// Split:      V = floor(N * f) validation samples, at least 1 when f > 0 (f = 1: all N, for a
//             separate eval data_dir), are the LAST V samples; the first Ntr = N - V train.
// Training:   row i of step s reads training sample p(k) of k = s * B + i (64-bit):
//               epoch e = k / Ntr, j = k mod Ntr;
//               shuffle = false: p = j (file order, wrapping around at the end of each epoch)
//               shuffle = true:  p = perm_e[j], perm_e = seededPermutation(Ntr, key_e):
//                 key_e = mix64(seed + (4 + e) * G), G = 0x9E3779B97F4A7C15;
//                 perm = 0, 1, .., Ntr-1; x = key_e;
//                 for m = Ntr-1 down to 1: x += G; r = mix64(x) mod (m + 1); swap(perm[m], perm[r])
//               with mix64 SplitMix64's finaliser (dataset.h), all mod 2^64: the epoch order of
//               data::ExampleDataset (examples.h, stream 4 + e), so both sources shuffle alike.
//               Every epoch sees every training sample once, in its own order, which depends only
//               on (seed, e), not on B, threads or systems. (ModelZoo shuffles with NumPy and
//               torch generators, whose orders are not reproduced: same data, other order.)
//             checkBatch(B) refuses Ntr < B: a step would hold a sample twice.
// Validation: W = V samples; validationBatches(B) = ceil(W / B); row i of batch j reads sample
//             Ntr + j * B + i when j * B + i < W, else a padding row (inputs 0, targets -1,
//             position ids 0), so every held-out sample counts exactly once.
//
// Thread-safety: const methods may run concurrently (the current epoch's permutation is cached
// under a lock).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/data/batch_source.h"
#include "engine/data/hdf5_files.h"

namespace ws::data {

struct Hdf5DatasetOptions {
    std::string key = "train_input.data_dir";  // starts every error about the files
    // The config's max_sequence_length, or 0 to take the files' msl. A mismatch is an error
    // naming lengthKey, both lengths and the fix.
    int maxSequenceLength = 0;
    std::string lengthKey = "train_input.max_sequence_length";
    int vocabSize = 0;  // token ids must be below it (model.vocab_size)
    bool useVsl = false;
    std::string vslKey = "train_input.use_vsl";
    // Share of the samples held out at the end for validation, in [0, 1]; 1 = all of them
    // (eval_input.data_dir's own files).
    double validationFraction = 0.0;
    std::string fractionKey = "train_input.validation_fraction";
};

class Hdf5Dataset final : public BatchSource {
public:
    static Result<std::unique_ptr<Hdf5Dataset>> open(const std::vector<std::string>& dataDirs,
                                                     const Hdf5DatasetOptions& options);

    int sequenceLength() const override { return m_files.sequenceLength(); }
    bool hasPositionIds() const override { return m_options.useVsl; }
    std::string describe() const override;
    int64_t trainSamples() const override { return m_trainSamples; }
    Status checkBatch(int B) const override;
    Result<int64_t> trainBatch(int64_t step, int B, bool shuffle, uint64_t seed,
                               const BatchView& out) const override;
    int64_t validationBatches(int B) const override;
    Result<int64_t> validationBatch(int64_t index, int B, const BatchView& out) const override;

    int64_t validationSamples() const { return m_files.samples() - m_trainSamples; }
    const Hdf5Files& files() const { return m_files; }
    // The sample (index over all files) that row `row` of step `step` reads; see above.
    int64_t trainSampleIndex(int64_t step, int B, int row, bool shuffle, uint64_t seed) const;
    // -1 for a padding row.
    int64_t validationSampleIndex(int64_t index, int B, int row) const;
    // One sample as a batch row: inputs, targets, positionIds (T each; positionIds may be null);
    // the count of targets >= 0.
    Result<int64_t> readRow(int64_t sample, int32_t* inputs, int32_t* targets,
                            int32_t* positionIds) const;

private:
    Hdf5Dataset(Hdf5Files files, Hdf5DatasetOptions options, int64_t trainSamples);
    // samples[i] < 0: a padding row.
    Result<int64_t> fillRows(int B, const BatchView& out,
                             const std::vector<int64_t>& samples) const;

    Hdf5Files m_files;
    Hdf5DatasetOptions m_options;
    int64_t m_trainSamples = 0;
    // The permutation of the last shuffled epoch asked for, and its (seed, epoch).
    mutable std::mutex m_permLock;
    mutable std::vector<int64_t> m_perm;
    mutable uint64_t m_permSeed = 0;
    mutable int64_t m_permEpoch = -1;
};

}  // namespace ws::data
