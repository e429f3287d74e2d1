// SPDX-License-Identifier: GPL-3.0-or-later
// A run's ModelZoo HDF5 data from its config (see hdf5_run_data.h).
#include "engine/session/hdf5_run_data.h"

#include <fmt/format.h>

namespace ws::session {

bool readsHdf5(const config::InputConfig& input) {
    return input.dataProcessor == "GptHDF5DataProcessor" ||
           input.dataProcessor == "GptHDF5MapDataProcessor";
}

namespace {

data::Hdf5DatasetOptions optionsFor(const config::Config& cfg, const config::InputConfig& input,
                                    const std::string& section) {
    data::Hdf5DatasetOptions o;
    o.key = section + ".data_dir";
    o.maxSequenceLength = 0;  // compared below: the config always has one by now
    o.vocabSize = cfg.model.vocabSize;
    o.useVsl = input.useVsl;
    o.vslKey = section + ".use_vsl";
    o.fractionKey = "train_input.validation_fraction";
    return o;
}

}  // namespace

Result<Hdf5RunData> openHdf5RunData(const config::Config& cfg) {
    const config::InputConfig& train = cfg.trainInput;
    const config::InputConfig& eval = cfg.evalInput;
    const bool separateEval = !eval.dataDir.empty();
    if (separateEval && readsHdf5(eval) != readsHdf5(train))
        return Error{fmt::format(
            "eval_input.data_processor {} reads {} but train_input.data_processor {} reads {}: "
            "evaluate on the same kind of data as the run trains on (both ModelZoo HDF5 "
            "processors, or both text), or leave eval_input.data_dir empty to hold out "
            "train_input.validation_fraction of the training samples",
            eval.dataProcessor, readsHdf5(eval) ? "HDF5 files" : "text", train.dataProcessor,
            readsHdf5(train) ? "HDF5 files" : "text")};
    if (train.shortSequenceLength > 0 && train.shortSequenceSteps > 0)
        return Error{fmt::format(
            "train_input.short_sequence_length: the two-stage schedule cuts short windows of a "
            "token stream, but {} reads preprocessed samples of a fixed length; preprocess a "
            "second data set at the short length and train on it first, or set "
            "short_sequence_length: 0",
            train.dataProcessor)};
    Hdf5RunData out;
    data::Hdf5DatasetOptions trainOptions = optionsFor(cfg, train, "train_input");
    trainOptions.validationFraction = separateEval ? 0.0 : train.validationFraction;
    auto trainSet = data::Hdf5Dataset::open(train.dataDir, trainOptions);
    if (!trainSet.ok()) return trainSet.error();
    out.train = std::move(trainSet).value();
    out.T = out.train->sequenceLength();
    // The config filled an unset max_sequence_length with model.max_position_embeddings
    // (config/modelzoo_compat.h), so a mismatch may come from either.
    if (train.maxSequenceLength != out.T)
        return Error{fmt::format(
            "train_input.max_sequence_length is {} (as given, or model.max_position_embeddings "
            "when left out) but the HDF5 files in train_input.data_dir hold sequences of {} tokens "
            "(\"data\" shape (n, {}, {}) in '{}'): set train_input.max_sequence_length: {} (a "
            "different length needs the data preprocessed again with max_seq_length {})",
            train.maxSequenceLength, out.T, out.train->files().features(), out.T,
            out.train->files().files().front().path.string(), out.T, train.maxSequenceLength)};
    if (Status s = out.train->checkBatch(train.batchSize); !s.ok()) return s.error();
    if (separateEval) {
        data::Hdf5DatasetOptions evalOptions = optionsFor(cfg, eval, "eval_input");
        evalOptions.validationFraction = 1.0;
        auto evalSet = data::Hdf5Dataset::open(eval.dataDir, evalOptions);
        if (!evalSet.ok()) return evalSet.error();
        out.eval = std::move(evalSet).value();
        if (out.eval->sequenceLength() != out.T)
            return Error{fmt::format(
                "eval_input.data_dir: its HDF5 files hold sequences of {} tokens ('{}') but the "
                "training files hold {}: evaluation runs at the training length, so preprocess "
                "the evaluation data with max_seq_length {}",
                out.eval->sequenceLength(), out.eval->files().files().front().path.string(), out.T,
                out.T)};
    }
    return out;
}

}  // namespace ws::session
