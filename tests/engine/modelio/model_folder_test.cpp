// SPDX-License-Identifier: GPL-3.0-or-later
// writeModelFolder: the one writer of a model folder (training runs, `wafer import`, the PEFT
// import). What it writes loads back as written (weights, config, tokenizer); config.yaml is
// saveConfigYaml's text; a Hugging Face folder's vocab.json and merges.txt are copied byte for
// byte; a folder it cannot write into is an error naming the file.
#include "engine/modelio/model_folder.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../sample/sample_test_util.h"
#include "engine/config/config_yaml.h"
#include "engine/modelio/load_model.h"
#include "support/temp_dir.h"

namespace ws::modelio {
namespace {

namespace fs = std::filesystem;
using sample::testing::tinyConfigYaml;
using sample::testing::tinyModel;
using ::ws::testing::samplingShape;
using ws::testing::TempDir;

std::string readAll(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

TEST(ModelFolder, WritesWhatLoadModelReadsBack) {
    TempDir dir("modelio");
    const LoadedModel m = tinyModel(samplingShape());
    auto cfg = config::parseConfig(tinyConfigYaml(m.shape), "tiny.yaml", dir.path());
    ASSERT_TRUE(cfg.ok()) << cfg.error().message;
    const model::ParameterTable table(m.shape);
    ASSERT_TRUE(fs::create_directories(dir / "out"));
    ASSERT_TRUE(writeModelFolder(dir / "out", table, m.params.data(), cfg->config, 5,
                                 {m.tokenizer.get(), {}, {}})
                    .ok());
    EXPECT_EQ(readAll(dir / "out" / "config.yaml"), config::saveConfigYaml(cfg->config));
    auto loaded = loadModel(dir / "out");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ(loaded->params, m.params);
    EXPECT_EQ(loaded->step, 5);
    EXPECT_EQ(loaded->tokenizer->kind(), "byte");
    EXPECT_EQ(config::hashConfig(loaded->config), config::hashConfig(cfg->config));
}

TEST(ModelFolder, CopiesGpt2TokenizerFilesByteForByte) {
    TempDir dir("modelio");
    // Formatting the tokenizer's own save would not keep: odd spacing, no trailing newline.
    const std::string vocab = "{\"a\":0,  \"b\": 1}";
    const std::string merges = "#version: 0.2\na b";
    std::ofstream(dir / "vocab-source.json", std::ios::binary) << vocab;
    std::ofstream(dir / "merges-source.txt", std::ios::binary) << merges;
    config::Config cfg;
    ASSERT_TRUE(fs::create_directories(dir / "out"));
    ASSERT_TRUE(
        writeModelFolderFiles(dir / "out", cfg,
                              {nullptr, dir / "vocab-source.json", dir / "merges-source.txt"})
            .ok());
    EXPECT_EQ(readAll(dir / "out" / "vocab.json"), vocab);
    EXPECT_EQ(readAll(dir / "out" / "merges.txt"), merges);
    EXPECT_FALSE(fs::exists(dir / "out" / "model.safetensors"));
}

TEST(ModelFolder, AMissingTokenizerSourceIsAnErrorNamingIt) {
    TempDir dir("modelio");
    config::Config cfg;
    ASSERT_TRUE(fs::create_directories(dir / "out"));
    const Status st =
        writeModelFolderFiles(dir / "out", cfg, {nullptr, dir / "nowhere.json", dir / "m.txt"});
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("nowhere.json"), std::string::npos) << st.error().message;
}

}  // namespace
}  // namespace ws::modelio
