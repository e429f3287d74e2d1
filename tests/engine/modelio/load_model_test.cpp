// SPDX-License-Identifier: GPL-3.0-or-later
// loadModel: a run folder as training writes it loads (folder or file path) with the weights as
// written; each broken folder fails with a message naming the file and fix. loadModelInfo gives
// the same as loadModel without the weights, and fails the same way on every broken folder.
// (That a loaded model generates as the one in memory is sample's generator_test.)
#include "engine/modelio/load_model.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../sample/sample_test_util.h"
#include "engine/fileio/safetensors.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/temp_dir.h"

namespace ws::modelio {
namespace {

namespace fs = std::filesystem;
using sample::testing::tinyModel;
using sample::testing::writeRunFolder;
using ::ws::testing::samplingShape;
using ws::testing::TempDir;

// Both loaders refuse `path` with the same message, holding both parts.
void expectError(const fs::path& path, const std::string& part1, const std::string& part2) {
    auto r = loadModel(path);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find(part1), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find(part2), std::string::npos) << r.error().message;
    auto info = loadModelInfo(path);
    ASSERT_FALSE(info.ok()) << path;
    EXPECT_EQ(info.error().message, r.error().message);
}

TEST(LoadModel, LoadsARunFolderOrItsWeightsFile) {
    TempDir dir("modelio");
    const LoadedModel m = tinyModel(samplingShape());
    writeRunFolder(dir / "run", m);
    for (const fs::path& p : {dir / "run", dir / "run" / "model.safetensors"}) {
        auto loaded = loadModel(p);
        ASSERT_TRUE(loaded.ok()) << loaded.error().message;
        EXPECT_EQ(loaded->params, m.params);
        EXPECT_EQ(loaded->shape.channels, 32);
        EXPECT_EQ(loaded->tokenizer->kind(), "byte");
        EXPECT_EQ(loaded->step, 3);
    }
}

TEST(LoadModelInfo, IsLoadModelWithoutTheWeights) {
    TempDir dir("modelio");
    writeRunFolder(dir / "run", tinyModel(samplingShape()));
    fs::create_directories(dir / "run" / "checkpoint-3");
    fs::copy_file(dir / "run" / "model.safetensors",
                  dir / "run" / "checkpoint-3" / "model.safetensors");
    for (const fs::path& p :
         {dir / "run", dir / "run" / "model.safetensors", dir / "run" / "checkpoint-3"}) {
        auto info = loadModelInfo(p);
        ASSERT_TRUE(info.ok()) << info.error().message;
        auto loaded = loadModel(p);
        ASSERT_TRUE(loaded.ok()) << loaded.error().message;
        EXPECT_EQ(info->folder, loaded->folder);
        EXPECT_EQ(info->weightsFile, loaded->weightsFile);
        EXPECT_EQ(info->tokenizerFolder, loaded->tokenizerFolder);
        EXPECT_EQ(info->step, loaded->step);
        EXPECT_EQ(info->shape.channels, loaded->shape.channels);
        EXPECT_EQ(info->shape.layers, loaded->shape.layers);
        EXPECT_EQ(info->tokenizer->identity(), loaded->tokenizer->identity());
        EXPECT_EQ(config::saveConfigYaml(info->config), config::saveConfigYaml(loaded->config));
        // Facts of the config: the parameter count is the number of weights loadModel reads.
        EXPECT_EQ(info->facts.parameters, int64_t(loaded->params.size()));
    }
    EXPECT_EQ(loadModelInfo(dir / "run" / "checkpoint-3")->tokenizerFolder, dir / "run");
    EXPECT_EQ(loadModelInfo(dir / "run")->tokenizerFolder, dir / "run");
}

// It reads the header, not the tensors: a tensor of the right name and shape but a dtype no
// float can be read from gives its info, while loadModel, which reads it, refuses it. (A header
// that does not fit the config's shape is refused by both: ErrorsNameTheFileAndTheFix.)
TEST(LoadModelInfo, ChecksTheHeaderWithoutReadingTensors) {
    TempDir dir("modelio");
    const LoadedModel m = tinyModel(samplingShape());
    writeRunFolder(dir / "run", m);
    const model::ParameterTable table(m.shape);
    std::vector<fileio::TensorView> views;
    for (const auto& t : table.tensors()) {
        views.push_back({t.name, t.name == "wpe.weight" ? fileio::DType::I32 : fileio::DType::F32,
                         t.shape, m.params.data() + t.offset, t.size * sizeof(float)});
    }
    ASSERT_TRUE(fileio::writeSafetensors(dir / "run" / "model.safetensors", views, {}).ok());
    auto info = loadModelInfo(dir / "run");
    ASSERT_TRUE(info.ok()) << info.error().message;
    EXPECT_EQ(info->facts.parameters, int64_t(table.totalSize()));
    auto loaded = loadModel(dir / "run");
    ASSERT_FALSE(loaded.ok());
    EXPECT_NE(loaded.error().message.find("wpe.weight"), std::string::npos)
        << loaded.error().message;
}

TEST(LoadModel, ConfigFromTheMetadataWhenConfigYamlIsMissing) {
    TempDir dir("modelio");
    writeRunFolder(dir / "run", tinyModel(samplingShape()));
    fs::remove(dir / "run" / "config.yaml");
    auto loaded = loadModel(dir / "run");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ(loaded->shape.layers, 2);
}

TEST(LoadModel, LoadsACheckpointFolderWithTheRunsTokenizer) {
    // checkpoint-<step>/ holds model.safetensors (config in its metadata) but no tokenizer or
    // config.yaml: those are the run folder's, one level up.
    TempDir dir("modelio");
    const LoadedModel m = tinyModel(samplingShape());
    writeRunFolder(dir / "run", m);
    fs::create_directories(dir / "run" / "checkpoint-3");
    fs::copy_file(dir / "run" / "model.safetensors",
                  dir / "run" / "checkpoint-3" / "model.safetensors");
    for (const fs::path& p :
         {dir / "run" / "checkpoint-3", dir / "run" / "checkpoint-3" / "model.safetensors"}) {
        auto loaded = loadModel(p);
        ASSERT_TRUE(loaded.ok()) << loaded.error().message;
        EXPECT_EQ(loaded->params, m.params);
        EXPECT_EQ(loaded->tokenizer->kind(), "byte");
        EXPECT_EQ(loaded->folder, dir / "run" / "checkpoint-3");
    }
    // Any other folder without a tokenizer still fails, naming it.
    fs::create_directories(dir / "loose");
    fs::copy_file(dir / "run" / "model.safetensors", dir / "loose" / "model.safetensors");
    expectError(dir / "loose", (dir / "loose").string(), "tokenizer");
    // And a checkpoint whose run folder lost its tokenizer names the run folder.
    fs::remove(dir / "run" / "tokenizer.json");
    expectError(dir / "run" / "checkpoint-3", (dir / "run").string(), "tokenizer");
}

TEST(LoadModel, LoadsABpeTokenizer) {
    TempDir dir("modelio");
    writeRunFolder(dir / "run", tinyModel(samplingShape(300)));
    fs::remove(dir / "run" / "tokenizer.json");
    auto bpe = tokenizer::trainBpe("the theme of the thesis, then there they were", 270);
    ASSERT_TRUE(bpe.ok());
    ASSERT_TRUE((*bpe)->save(dir / "run").ok());
    auto loaded = loadModel(dir / "run");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ(loaded->tokenizer->kind(), "bpe");
    fs::remove(dir / "run" / "merges.txt");
    expectError(dir / "run", "merges.txt", "copy");
}

// A Hugging Face GPT-2 folder: tensors named "transformer.*", no config in the metadata, the
// shape in config.json.
TEST(LoadModel, LoadsAHuggingFaceGpt2Folder) {
    TempDir dir("modelio");
    const LoadedModel m = tinyModel(samplingShape(256, 24, false));
    const fs::path run = dir / "hf";
    fs::create_directories(run);
    const model::ParameterTable table(m.shape);
    std::vector<fileio::TensorView> views;
    for (const auto& t : table.tensors()) {
        views.push_back({"transformer." + t.name, fileio::DType::F32, t.shape,
                         m.params.data() + t.offset, t.size * sizeof(float)});
    }
    ASSERT_TRUE(
        fileio::writeSafetensors(run / "model.safetensors", views, {{"format", "pt"}}).ok());
    ASSERT_TRUE(m.tokenizer->save(run).ok());
    std::ofstream(run / "config.json")
        << R"({"model_type": "gpt2", "vocab_size": 256, "n_embd": 32, "n_layer": 2, "n_head": 4,
               "n_inner": 64, "n_positions": 24, "layer_norm_epsilon": 1e-05,
               "activation_function": "gelu_new", "tie_word_embeddings": false})";
    auto loaded = loadModel(run);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ(loaded->params, m.params);
    EXPECT_FALSE(loaded->shape.tiedEmbedding);
    EXPECT_EQ(loaded->shape.ffn, 64);

    std::ofstream(run / "config.json") << R"({"model_type": "mixtral"})";
    expectError(run, "config.json", "GPT-2");
    fs::remove(run / "config.json");
    expectError(run, "no config.yaml", "config.json");
}

TEST(LoadModel, ErrorsNameTheFileAndTheFix) {
    TempDir dir("modelio");
    expectError(dir / "nope", "nope", "run folder");
    fs::create_directories(dir / "empty");
    expectError(dir / "empty", "no model.safetensors", "empty");

    writeRunFolder(dir / "notok", tinyModel(samplingShape()));
    fs::remove(dir / "notok" / "tokenizer.json");
    expectError(dir / "notok", "no tokenizer files", "vocab.json");

    // config.yaml says 64 channels, the weights have 32.
    writeRunFolder(dir / "shape", tinyModel(samplingShape()));
    {
        auto other = samplingShape();
        other.channels = 64;
        std::ofstream(dir / "shape" / "config.yaml") << sample::testing::tinyConfigYaml(other);
    }
    expectError(dir / "shape", "model.safetensors", "shape");

    writeRunFolder(dir / "badyaml", tinyModel(samplingShape()));
    std::ofstream(dir / "badyaml" / "config.yaml") << "model:\n  hiden_size: 3\n";
    expectError(dir / "badyaml", "config.yaml", "hidden_size");

    // A tokenizer bigger than the model's vocabulary belongs to another model.
    writeRunFolder(dir / "vocab", tinyModel(samplingShape(100)));
    expectError(dir / "vocab", "256 tokens", "100");

    writeRunFolder(dir / "garbage", tinyModel(samplingShape()));
    std::ofstream(dir / "garbage" / "model.safetensors") << "not a safetensors file";
    expectError(dir / "garbage", "model.safetensors", "");

    // Issue 31: a model folder or checkpoint_path read from a file may name a path the system
    // refuses (a component past 255 bytes): an error, never an exception.
    const fs::path tooLong = dir / std::string(300, 'm');
    expectError(tooLong, tooLong.string(), "");
    expectError(tooLong / "model.safetensors", tooLong.string(), "");
}

}  // namespace
}  // namespace ws::modelio
