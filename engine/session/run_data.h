// SPDX-License-Identifier: GPL-3.0-or-later
// The data a run reads, named by the config keys that give it: train_input.data_dir, and
// eval_input.data_dir when it names its own corpus. Session::prepareData reads each input with
// readRunData(); `wafer validate` checks a config's data with checkRunData(), which is that same
// read without the tokenizing, so validate refuses exactly the data a run would stop at: a path
// that does not exist or cannot be read, a folder without text files, a file that is not text
// (unless the input's allow_binary), no text at all; for ModelZoo's HDF5 processors, every check
// of openHdf5RunData (hdf5_run_data.h). Thread-safety: pure functions of their arguments (they
// read the files named).
#pragma once

#include <string>
#include <vector>

#include "engine/config/config.h"

namespace ws::session {

struct RunDataInput {
    std::string key;  // "train_input.data_dir": every problem with this input starts with it
    std::vector<std::string> dataDir;
    bool allowNonText = false;  // the input's allow_binary
    std::string allowHint;      // how to insist on a file that is not text
};

// train_input's, then eval_input's when its data_dir is not empty (an empty one evaluates on the
// held-out end of the training corpus).
std::vector<RunDataInput> runDataInputs(const config::Config& cfg);

// Every problem a run of `cfg` would stop at in reading its data, one per input, each
// "train_input.data_dir: <what and the fix>"; empty when the data reads. Reads every file.
std::vector<std::string> checkRunData(const config::Config& cfg);

}  // namespace ws::session
