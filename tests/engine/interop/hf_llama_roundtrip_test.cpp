// SPDX-License-Identifier: GPL-3.0-or-later
// Llama-family Hugging Face folders through `wafer import` and `wafer export --format hf`
// (importHuggingFace, exportHuggingFace): a random small Llama with GQA and an untied head, a
// Qwen2 with q/k/v biases and a tied head, and a Mistral come back bit-exact, tensor by tensor
// (names, shapes, bytes), with a config.json that reads back as the same model.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "../modelio/hf_llama_files.h"
#include "engine/fileio/atomic_file.h"
#include "engine/fileio/safetensors.h"
#include "engine/interop/hf_export.h"
#include "engine/interop/hf_import.h"
#include "engine/model/parameters.h"
#include "engine/modelio/hf_config.h"
#include "engine/tokenizer/byte_level.h"
#include "support/temp_dir.h"

namespace ws::interop {
namespace {

namespace fs = std::filesystem;
using modelio::testing::HfArrays;
using modelio::testing::HfLlamaSpec;

// GPT-2-format files of the byte tokenizer (256 symbols, no merges): what the importer reads.
void writeByteTokenizer(const fs::path& dir) {
    nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
    for (int b = 0; b < 256; ++b) vocab[tokenizer::bytesToByteLevel(std::string(1, char(b)))] = b;
    ASSERT_TRUE(fileio::writeFileAtomically(dir / "vocab.json", vocab.dump()).ok());
    ASSERT_TRUE(fileio::writeFileAtomically(dir / "merges.txt", "#version: 0.2\n").ok());
}

void expectImportExportBitExact(HfLlamaSpec spec) {
    spec.vocab = 260;  // holds the 256 byte tokens
    ws::testing::TempDir dir("hf-llama-io");
    const HfArrays written = modelio::testing::writeHfLlamaFolder(dir / "hf", spec, 17);
    writeByteTokenizer(dir / "hf");
    auto original = modelio::readHfConfig(dir / "hf" / "config.json");
    ASSERT_TRUE(original.ok()) << original.error().message;
    if (Status st = model::GptShape::fromConfig(original->model).validate();
        !st.ok() && st.error().message.find("not trainable in this build yet") != std::string::npos)
        GTEST_SKIP() << "awaits the engine's Llama-block wiring: " << st.error().message;

    auto imported = importHuggingFace(dir / "hf", dir / "ours");
    ASSERT_TRUE(imported.ok()) << imported.error().message;
    auto exported = exportHuggingFace(dir / "ours", dir / "back", false);
    ASSERT_TRUE(exported.ok()) << exported.error().message;

    auto file = fileio::SafetensorsFile::open(dir / "back" / "model.safetensors");
    ASSERT_TRUE(file.ok()) << file.error().message;
    EXPECT_EQ(file->names().size(), written.size());
    for (const auto& [name, array] : written) {
        const auto* info = file->find(name);
        ASSERT_NE(info, nullptr) << name << " is missing from the export";
        EXPECT_EQ(info->dtype, fileio::DType::F32) << name;
        EXPECT_EQ(info->shape, array.shape) << name;
        auto values = file->readAsFloat(name);
        ASSERT_TRUE(values.ok()) << values.error().message;
        ASSERT_EQ(values->size(), array.values.size()) << name;
        EXPECT_EQ(std::memcmp(values->data(), array.values.data(), array.values.size() * 4), 0)
            << name << " is not bit-identical";
    }
    auto back = modelio::readHfConfig(dir / "back" / "config.json");
    ASSERT_TRUE(back.ok()) << back.error().message;
    config::ModelConfig a = original->model, b = back->model;
    a.name = b.name = "";
    EXPECT_EQ(a, b);
}

TEST(HfLlamaImportExport, LlamaWithGqaAndUntiedHead) {
    HfLlamaSpec spec;
    spec.attentionBias = true;
    spec.mlpBias = true;
    expectImportExportBitExact(spec);
}

TEST(HfLlamaImportExport, Qwen2WithQkvBiasesAndTiedHead) {
    HfLlamaSpec spec;
    spec.family = "qwen2";
    spec.tied = true;
    spec.kvHeads = 1;
    expectImportExportBitExact(spec);
}

TEST(HfLlamaImportExport, Mistral) {
    HfLlamaSpec spec;
    spec.family = "mistral";
    spec.slidingWindow = 32;
    expectImportExportBitExact(spec);
}

// Llama, Mistral, Qwen2 and SmolLM folders ship only a fast tokenizer's tokenizer.json: it is
// imported (the run trains with it, type hf), and exported back as it was, with no GPT-2 files.
TEST(HfLlamaImportExport, AFolderWithOnlyTokenizerJsonKeepsIt) {
    HfLlamaSpec spec;
    spec.vocab = 260;
    ws::testing::TempDir dir("hf-llama-tokjson");
    modelio::testing::writeHfLlamaFolder(dir / "hf", spec, 19);
    nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
    for (int b = 0; b < 256; ++b) vocab[tokenizer::bytesToByteLevel(std::string(1, char(b)))] = b;
    vocab["he"] = 256;
    const nlohmann::ordered_json tokenizerJson = {{"version", "1.0"},
                                                  {"added_tokens", nlohmann::ordered_json::array()},
                                                  {"normalizer", nullptr},
                                                  {"pre_tokenizer",
                                                   {{"type", "ByteLevel"},
                                                    {"add_prefix_space", false},
                                                    {"trim_offsets", true},
                                                    {"use_regex", true}}},
                                                  {"post_processor", nullptr},
                                                  {"decoder",
                                                   {{"type", "ByteLevel"},
                                                    {"add_prefix_space", true},
                                                    {"trim_offsets", true},
                                                    {"use_regex", true}}},
                                                  {"model",
                                                   {{"type", "BPE"},
                                                    {"dropout", nullptr},
                                                    {"unk_token", nullptr},
                                                    {"continuing_subword_prefix", nullptr},
                                                    {"end_of_word_suffix", nullptr},
                                                    {"fuse_unk", false},
                                                    {"byte_fallback", false},
                                                    {"ignore_merges", false},
                                                    {"vocab", vocab},
                                                    {"merges", {"h e"}}}}};
    const std::string text = tokenizerJson.dump();
    ASSERT_TRUE(fileio::writeFileAtomically(dir / "hf" / "tokenizer.json", text).ok());

    auto imported = importHuggingFace(dir / "hf", dir / "ours");
    ASSERT_TRUE(imported.ok()) << imported.error().message;
    EXPECT_EQ(imported->source.tokenizerJson, dir / "hf" / "tokenizer.json");
    EXPECT_EQ(imported->source.tokenizerVocab, 257);
    EXPECT_TRUE(fs::exists(dir / "ours" / "tokenizer.json"));
    auto exported = exportHuggingFace(dir / "ours", dir / "back", false);
    ASSERT_TRUE(exported.ok()) << exported.error().message;
    EXPECT_EQ(exported->tokenizerKind, "hf");
    EXPECT_FALSE(fs::exists(dir / "back" / "vocab.json"));
    auto back = fileio::readWholeFile(dir / "back" / "tokenizer.json");
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(nlohmann::json::parse(*back), nlohmann::json::parse(text));

    // Without any tokenizer the error names what a folder needs.
    fs::remove(dir / "hf" / "tokenizer.json");
    auto missing = inspectHfFolder(dir / "hf");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("tokenizer.json, or GPT-2's vocab.json and merges.txt"),
              std::string::npos)
        << missing.error().message;
}

}  // namespace
}  // namespace ws::interop
