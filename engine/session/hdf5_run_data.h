// SPDX-License-Identifier: GPL-3.0-or-later
// A run's ModelZoo HDF5 data (train_input.data_processor GptHDF5DataProcessor or
// GptHDF5MapDataProcessor): the config keys mapped onto data::Hdf5Dataset's options, so the
// session and `wafer validate` open the same sources with the same checks. Not a public header
// (it exposes the data module, a private dependency of the session), like run_data_read.h.
//
// The mapping:
//   train_input.data_dir            the training files (folders of .h5 and/or .h5 files)
//   eval_input.data_dir             its own files, all of them evaluated (ModelZoo's way); empty:
//                                   train_input.validation_fraction of the training samples, the
//                                   last ones, are held out instead
//   max_sequence_length             must equal the files' msl (a mismatch names both and the fix);
//                                   eval_input's files must have train_input's msl
//   model.vocab_size                every token id read must be below it
//   train_input.use_vsl             needs the files' 5-row VSL samples; gives position_ids
//   eval_input.use_vsl              the same for eval_input's own files
//   train_input.batch_size          at most the training samples (data::Hdf5Dataset::checkBatch)
// Refused by name: eval_input.data_dir of another kind than train_input's (both HDF5 or neither),
// and the two-stage schedule (short_sequence_length), which cuts windows of a token stream that
// preprocessed samples do not have.
//
// Thread-safety: a pure function of its arguments (it reads the files named).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/config/config.h"
#include "engine/core/result.h"
#include "engine/data/hdf5_dataset.h"

namespace ws::session {

// True when the input reads ModelZoo's HDF5 files instead of text.
bool readsHdf5(const config::InputConfig& input);

struct Hdf5RunData {
    std::unique_ptr<data::Hdf5Dataset> train;
    std::unique_ptr<data::Hdf5Dataset> eval;  // eval_input.data_dir's own; null: train's held-out
    int T = 0;                                // the files' msl

    const data::Hdf5Dataset& evalSource() const { return eval ? *eval : *train; }
};

// Opens and checks train_input's (and eval_input's own) HDF5 files as the mapping above says.
Result<Hdf5RunData> openHdf5RunData(const config::Config& cfg);

}  // namespace ws::session
