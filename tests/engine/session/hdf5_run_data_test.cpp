// SPDX-License-Identifier: GPL-3.0-or-later
// openHdf5RunData (hdf5_run_data.h): a config naming ModelZoo's HDF5 files opens them with the
// keys' meaning - the held-out share or eval_input's own files, the sequence length checked
// against the files', the vocabulary, use_vsl, the batch size - and every refusal names the key
// and the fix. The files are the h5py-written fixture of tests/engine/data (make_hdf5_fixture.py).
#include "engine/session/hdf5_run_data.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace ws::session {
namespace {

namespace fs = std::filesystem;
const fs::path kFixture = fs::path(WAFER_DATA_FIXTURES) / "hdf5";

config::Config hdf5Config(const std::string& processor = "GptHDF5MapDataProcessor") {
    config::Config cfg;
    cfg.model.vocabSize = 64;
    cfg.trainInput.dataProcessor = processor;
    cfg.trainInput.dataDir = {(kFixture / "plain").string()};
    cfg.trainInput.maxSequenceLength = 12;
    cfg.trainInput.batchSize = 2;
    cfg.trainInput.validationFraction = 0.25;
    return cfg;
}

std::string errorOf(const config::Config& cfg) {
    auto data = openHdf5RunData(cfg);
    EXPECT_FALSE(data.ok());
    return data.ok() ? std::string() : data.error().message;
}

#define EXPECT_MENTIONS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

TEST(Hdf5RunData, BothModelZooProcessorsReadTheFiles) {
    EXPECT_TRUE(readsHdf5(hdf5Config().trainInput));
    EXPECT_TRUE(readsHdf5(hdf5Config("GptHDF5DataProcessor").trainInput));
    EXPECT_FALSE(readsHdf5(config::InputConfig{}));
    for (const char* processor : {"GptHDF5MapDataProcessor", "GptHDF5DataProcessor"}) {
        auto data = openHdf5RunData(hdf5Config(processor));
        ASSERT_TRUE(data.ok()) << data.error().message;
        EXPECT_EQ(data->T, 12);
        EXPECT_EQ(data->train->trainSamples(), 6);  // 8 samples, the last quarter held out
        EXPECT_EQ(data->train->validationSamples(), 2);
        EXPECT_FALSE(data->eval);
        EXPECT_EQ(&data->evalSource(), data->train.get());
        EXPECT_FALSE(data->train->hasPositionIds());
    }
}

TEST(Hdf5RunData, EvalInputsOwnFilesAreAllEvaluated) {
    config::Config cfg = hdf5Config();
    cfg.evalInput.dataProcessor = "GptHDF5DataProcessor";
    cfg.evalInput.dataDir = {(kFixture / "vsl").string()};
    cfg.evalInput.useVsl = true;
    auto data = openHdf5RunData(cfg);
    ASSERT_TRUE(data.ok()) << data.error().message;
    EXPECT_EQ(data->train->trainSamples(), 8) << "nothing held out of the training files";
    ASSERT_TRUE(data->eval);
    EXPECT_EQ(data->eval->validationSamples(), 3);
    EXPECT_TRUE(data->eval->hasPositionIds());
    EXPECT_EQ(&data->evalSource(), data->eval.get());

    cfg.evalInput.dataProcessor = "TextFileDataProcessor";
    EXPECT_MENTIONS(errorOf(cfg),
                    "eval_input.data_processor TextFileDataProcessor reads text but "
                    "train_input.data_processor GptHDF5MapDataProcessor reads HDF5");
}

TEST(Hdf5RunData, RefusalsNameTheKeyAndTheFix) {
    config::Config cfg = hdf5Config();
    cfg.trainInput.maxSequenceLength = 128;
    std::string e = errorOf(cfg);
    EXPECT_MENTIONS(e,
                    "train_input.max_sequence_length is 128 (as given, or "
                    "model.max_position_embeddings when left out)");
    EXPECT_MENTIONS(e, "hold sequences of 12 tokens");
    EXPECT_MENTIONS(e, "set train_input.max_sequence_length: 12");

    cfg = hdf5Config();
    cfg.trainInput.batchSize = 7;
    EXPECT_MENTIONS(errorOf(cfg), "6 training sample(s) but train_input.batch_size 7");

    cfg = hdf5Config();
    cfg.trainInput.useVsl = true;
    EXPECT_MENTIONS(errorOf(cfg),
                    "train_input.use_vsl is on, but the HDF5 files in "
                    "train_input.data_dir have 3 rows per sample");

    cfg = hdf5Config();
    cfg.trainInput.shortSequenceLength = 4;
    cfg.trainInput.shortSequenceSteps = 10;
    EXPECT_MENTIONS(errorOf(cfg), "train_input.short_sequence_length: the two-stage schedule");

    cfg = hdf5Config();
    cfg.trainInput.dataDir = {(kFixture / "nowhere").string()};
    EXPECT_MENTIONS(errorOf(cfg), "train_input.data_dir: '");
    EXPECT_MENTIONS(errorOf(cfg), "nowhere' does not exist");

    cfg = hdf5Config();
    cfg.evalInput.dataProcessor = "GptHDF5MapDataProcessor";
    cfg.evalInput.dataDir = {(kFixture / "vsl").string()};
    cfg.evalInput.useVsl = false;
    cfg.model.vocabSize = 0;
    EXPECT_MENTIONS(errorOf(cfg), "model.vocab_size");
}

}  // namespace
}  // namespace ws::session
