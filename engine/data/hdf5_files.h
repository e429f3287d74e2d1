// SPDX-License-Identifier: GPL-3.0-or-later
// Hdf5Files: the .h5 files of ModelZoo's preprocessed data sets (data_processor
// GptHDF5DataProcessor / GptHDF5MapDataProcessor), found in data_dir folders, checked, and read
// sample by sample with Debian's HDF5 C library (libhdf5-dev). hdf5_dataset.h turns the samples
// into batches.
//
// What the files hold, from Cerebras/modelzoo (Release 2.10.0, commit f1fd1e0):
//  - The writers: data_preparation/data_preprocessing/data_preprocessor.py (save_buffer_to_hdf5,
//    append_df_to_hdf5; files output_chunk_<p>_<n>.h5) and the older
//    data_preparation/nlp/hdf5_preprocessing/hdf5_base_preprocessor.py (write_hdf5_file(s);
//    files <output_name>_<n>[_<process>].h5, "examples_0.h5" by default). Each file has ONE
//    dataset "data" of dtype "i4" (int32), shape (n, F, msl), chunks (1, F, msl), gzip, and a
//    root attribute "n_examples" = n. utils.py verify_saved_hdf5_files checks exactly that.
//  - A sample's F rows (utils.py create_features_auto_lm, create_features_summarization):
//    row 0 input_ids; row 1 input_mask, the LOSS mask (1 = predict this position; "attention_mask
//    is a misnomer and serves as a loss mask", data/nlp/gpt/GptHDF5MapDataProcessor.py; prompts
//    and padding carry 0); row 2 labels (input_ids shifted by one; pad_id on padding).
//  - Variable sequence length (use_vsl), F = 5 (vsl_pretraining_token_generator.py,
//    vsl_finetuning_token_generator.py create_features_*_vsl): row 3 attention_span (tokens left
//    in the packed sequence after this one) and row 4 position_ids (index inside the packed
//    sequence, restarting at 0 for each; 0 on padding). The engine derives attention from
//    position_ids alone (model/packed_sequences.h), so attention_span is read but not used.
//  - The readers: data/common/HDF5IterableDataset.py (GptHDF5DataProcessor) and
//    data/common/h5_map_dataset/readers.py H5Reader (GptHDF5MapDataProcessor) both glob "*.h5" in
//    every data_dir folder (not recursive) and sort all the paths together; a sample's index runs
//    over the files in that order, then over rows. Both cast to int32. The map reader also reads
//    a rank-1 "corpus" format (tokens concatenated), which is not read here (refused by name).
//
// Here: every data_dir entry is a folder (its "*.h5" files, names starting with '.' skipped, as a
// glob does) or one .h5 file; all paths sorted together by std::filesystem::path's element-wise
// order, which is Python's PurePosixPath order. Every file is checked when opened: an HDF5 file,
// a "data" dataset of integers, rank 3, F = 3 or 5 and the same F and msl in every file, msl at
// most 2^20 tokens, an "n_examples" attribute (when present) equal to the rows, every declared
// sample written (a chunk for every block, or all the contiguous storage: unwritten samples
// would read as fill values), and its first and last sample readable (a truncated file fails
// there or at open). HDF5's own printing of its error stack is turned off; its innermost messages
// go into the errors, which name the file and the fix.
//
// Thread-safety: the serial HDF5 library is not thread-safe, so every HDF5 call of this module is
// made under one process-wide lock; const methods may run concurrently. Copies share the open
// files, closed with the last copy.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/result.h"

namespace ws::data {

struct Hdf5FileInfo {
    std::filesystem::path path;
    int64_t samples = 0;      // rows of "data"
    int64_t firstSample = 0;  // global index of its row 0
};

class Hdf5Files {
public:
    // key: the config key the entries came from ("train_input.data_dir"); every error starts
    // with it.
    static Result<Hdf5Files> open(const std::vector<std::string>& dataDirs, const std::string& key);

    int features() const { return m_features; }              // F: 3, or 5 with VSL rows
    int sequenceLength() const { return m_sequenceLength; }  // msl
    int64_t samples() const { return m_samples; }            // over all files
    const std::vector<Hdf5FileInfo>& files() const { return m_files; }
    const std::string& key() const { return m_key; }

    // The file (index into files()) and row of global sample `index` in [0, samples()).
    std::pair<size_t, int64_t> locate(int64_t index) const;
    // out (F, msl): every row of sample `index` as stored (int64, so no stored value is changed).
    Status readSample(int64_t index, int64_t* out) const;

private:
    struct Open;  // the HDF5 handles
    std::shared_ptr<const Open> m_open;
    std::vector<Hdf5FileInfo> m_files;
    std::string m_key;
    int m_features = 0;
    int m_sequenceLength = 0;
    int64_t m_samples = 0;
};

}  // namespace ws::data
