// SPDX-License-Identifier: GPL-3.0-or-later
// Import and export of Hugging Face GPT-2 folders: export -> import gives back the same weights
// and tokenizer; fp16 files with "transformer." names, attention buffers and a tied (absent)
// lm_head import; damaged or foreign folders are refused naming the file and the problem.
#include <gtest/gtest.h>

#include <fstream>

#include "../sample/sample_test_util.h"
#include "engine/fileio/safetensors.h"
#include "engine/interop/hf_export.h"
#include "engine/interop/hf_import.h"
#include "engine/modelio/hf_config.h"
#include "engine/modelio/load_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/temp_dir.h"
#include "support/test_shapes.h"

namespace ws::interop {
namespace {

namespace fs = std::filesystem;
using sample::testing::randomParams;
using sample::testing::tinyModel;
using sample::testing::writeRunFolder;
using ws::testing::samplingShape;

struct HfFolderSpec {
    fileio::DType dtype = fileio::DType::F16;
    bool prefix = true;
    bool buffers = true;
    std::string skip;       // a tensor to leave out
    std::string transpose;  // a 2-D tensor to store (out, in)
    std::string extra;      // an unknown tensor to add
    std::string activation = "gelu_new";
};

// An HF-style folder written by the engine's own writer (the independent writer is the Python
// script of tests/app). Values are rounded to the dtype, so the expected floats are exact.
std::vector<float> writeHfFolder(const fs::path& dir, const model::GptShape& s,
                                 const HfFolderSpec& spec) {
    fs::create_directories(dir);
    const model::ParameterTable table(s);
    std::vector<float> params = randomParams(s, 7);
    std::vector<std::vector<uint16_t>> halves;
    std::vector<fileio::TensorView> views;
    halves.reserve(table.tensors().size() + 2 * size_t(s.layers));
    for (const auto& t : table.tensors()) {
        if (t.name == spec.skip) continue;
        auto& h = halves.emplace_back(t.size);
        for (size_t i = 0; i < t.size; ++i) {
            float& v = params[t.offset + i];
            if (spec.dtype == fileio::DType::F16) {
                h[i] = fileio::floatToHalf(v);
                v = fileio::halfToFloat(h[i]);
            } else {
                h[i] = fileio::floatToBf16(v);
                v = fileio::bf16ToFloat(h[i]);
            }
        }
        std::vector<int64_t> shape = t.shape;
        if (t.name == spec.transpose) std::swap(shape[0], shape[1]);
        views.push_back({(spec.prefix ? "transformer." : "") + t.name, spec.dtype, shape, h.data(),
                         h.size() * 2});
    }
    std::vector<float> mask(size_t(s.maxPositions) * s.maxPositions, 1.0f);
    const float masked = -1e4f;
    if (spec.buffers) {
        for (int l = 0; l < s.layers; ++l) {
            const std::string p = (spec.prefix ? "transformer.h." : "h.") + std::to_string(l);
            views.push_back({p + ".attn.bias",
                             fileio::DType::F32,
                             {1, 1, s.maxPositions, s.maxPositions},
                             mask.data(),
                             mask.size() * 4});
            views.push_back({p + ".attn.masked_bias", fileio::DType::F32, {}, &masked, 4});
        }
    }
    if (!spec.extra.empty()) {
        views.push_back({spec.extra, fileio::DType::F32, {1}, &masked, 4});
    }
    EXPECT_TRUE(
        fileio::writeSafetensors(dir / "model.safetensors", views, {{"format", "pt"}}).ok());
    std::string json = modelio::hfConfigJson(ws::testing::modelConfigOf(s), std::nullopt);
    const std::string from = "\"gelu_new\"";
    json.replace(json.find(from), from.size(), "\"" + spec.activation + "\"");
    std::ofstream(dir / "config.json") << json;
    auto bpe = tokenizer::trainBpe("the theme of the thing is there then", 262);
    EXPECT_TRUE(bpe.ok());
    EXPECT_TRUE((*bpe)->save(dir).ok());
    return params;
}

TEST(HfImport, Fp16WithPrefixBuffersAndTiedHead) {
    testing::TempDir tmp("hf-import");
    const auto shape = samplingShape(262, 16);
    const auto expected = writeHfFolder(tmp / "hf", shape, {});
    auto imported = importHuggingFace(tmp / "hf", tmp / "ours");
    ASSERT_TRUE(imported.ok()) << imported.error().message;
    EXPECT_FALSE(imported->source.byteTokenizer);
    EXPECT_EQ(imported->source.dtypeCounts.at("F16"), 2 + 12 * shape.layers + 2);
    ASSERT_FALSE(imported->source.notes.empty());
    EXPECT_NE(imported->source.notes[0].find("attention buffer"), std::string::npos);

    auto loaded = modelio::loadModel(tmp / "ours");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ(loaded->params, expected);
    EXPECT_EQ(loaded->tokenizer->kind(), "bpe");
    EXPECT_EQ(loaded->config.model.vocabSize, 262);
    EXPECT_TRUE(fs::exists(tmp / "ours" / "config.yaml"));
    EXPECT_TRUE(fs::exists(tmp / "ours" / "merges.txt"));
}

TEST(HfImport, Bf16WithoutPrefix) {
    testing::TempDir tmp("hf-import");
    const auto shape = samplingShape(262, 16, /*tied=*/false);
    HfFolderSpec spec;
    spec.dtype = fileio::DType::BF16;
    spec.prefix = false;
    spec.buffers = false;
    const auto expected = writeHfFolder(tmp / "hf", shape, spec);
    auto imported = importHuggingFace(tmp / "hf", tmp / "ours");
    ASSERT_TRUE(imported.ok()) << imported.error().message;
    auto loaded = modelio::loadModel(tmp / "ours");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ(loaded->params, expected);
    EXPECT_FALSE(loaded->config.model.shareEmbeddingWeights);
}

TEST(HfExport, RoundTripThroughImportIsExact) {
    testing::TempDir tmp("hf-export");
    for (bool tied : {true, false}) {
        const fs::path run = tmp / (tied ? "run-tied" : "run-untied");
        const auto model = tinyModel(samplingShape(256, 24, tied), 3);
        writeRunFolder(run, model);
        auto exported = exportHuggingFace(run, run.string() + "-hf");
        ASSERT_TRUE(exported.ok()) << exported.error().message;
        EXPECT_EQ(exported->tokenizerKind, "byte");
        auto file = fileio::SafetensorsFile::open(run.string() + "-hf/model.safetensors");
        ASSERT_TRUE(file.ok());
        EXPECT_TRUE(file->find("transformer.h.1.mlp.c_proj.weight"));
        EXPECT_EQ(file->find("lm_head.weight") != nullptr, !tied);
        EXPECT_EQ(file->metadata().at("format"), "pt");

        auto imported = importHuggingFace(run.string() + "-hf", run.string() + "-back");
        ASSERT_TRUE(imported.ok()) << imported.error().message;
        EXPECT_TRUE(imported->source.byteTokenizer);  // the byte tokenizer comes back as itself
        auto back = modelio::loadModel(run.string() + "-back");
        ASSERT_TRUE(back.ok()) << back.error().message;
        EXPECT_EQ(back->params, model.params);
        EXPECT_EQ(back->tokenizer->kind(), "byte");
        EXPECT_EQ(back->config.model.shareEmbeddingWeights, tied);
    }
}

TEST(HfExport, ByteVocabularyEncodesLikeTheByteTokenizer) {
    testing::TempDir tmp("hf-export");
    writeRunFolder(tmp / "run", tinyModel(samplingShape(), 1));
    ASSERT_TRUE(exportHuggingFace(tmp / "run", tmp / "hf").ok());
    auto bpe = tokenizer::loadGpt2Bpe(tmp / "hf" / "vocab.json", tmp / "hf" / "merges.txt");
    ASSERT_TRUE(bpe.ok()) << bpe.error().message;
    std::string text = "Hello, wafer! caf\xc3\xa9 \xff\x00 tabs\tand\nnewlines  ";
    text.push_back('\0');
    const auto byteIds = tokenizer::makeByteTokenizer()->encode(text);
    EXPECT_EQ((*bpe)->encode(text), byteIds);
}

TEST(HfExport, RefusesAnExistingFolderAndMup) {
    testing::TempDir tmp("hf-export");
    writeRunFolder(tmp / "run", tinyModel(samplingShape(), 1));
    fs::create_directories(tmp / "busy");
    std::ofstream(tmp / "busy" / "keep.txt") << "mine";
    auto r = exportHuggingFace(tmp / "run", tmp / "busy");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("nothing is overwritten"), std::string::npos);
    EXPECT_TRUE(fs::exists(tmp / "busy" / "keep.txt"));
}

// GPT-2 in transformers has no MoE layout: export refuses and says so; the model folder itself
// (expert tensors by name) loads back exactly.
TEST(HfExport, RefusesAMixtureOfExpertsModel) {
    testing::TempDir tmp("hf-export-moe");
    model::GptShape s = samplingShape();
    s.numExperts = 3;
    s.topK = 2;
    s.moeEvery = 1;
    const auto model = tinyModel(s, 1);
    writeRunFolder(tmp / "run", model);
    auto loaded = modelio::loadModel(tmp / "run");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ(loaded->shape.numExperts, 3);
    EXPECT_EQ(loaded->params, model.params);
    auto r = exportHuggingFace(tmp / "run", tmp / "hf");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("no mixture-of-experts layout"), std::string::npos)
        << r.error().message;
    EXPECT_FALSE(fs::exists(tmp / "hf"));
}

void expectImportRefused(const HfFolderSpec& spec, const std::string& needle,
                         const std::function<void(const fs::path&)>& damage = {}) {
    testing::TempDir tmp("hf-refuse");
    writeHfFolder(tmp / "hf", samplingShape(262, 16), spec);
    if (damage) damage(tmp / "hf");
    auto r = importHuggingFace(tmp / "hf", tmp / "out");
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
    EXPECT_FALSE(fs::exists(tmp / "out"));
}

TEST(HfImport, Refusals) {
    expectImportRefused({}, "merges.txt is missing",
                        [](const fs::path& d) { fs::remove(d / "merges.txt"); });
    expectImportRefused({}, "config.json is missing",
                        [](const fs::path& d) { fs::remove(d / "config.json"); });
    expectImportRefused({}, "model.safetensors is missing",
                        [](const fs::path& d) { fs::remove(d / "model.safetensors"); });
    expectImportRefused({}, "not valid JSON",
                        [](const fs::path& d) { std::ofstream(d / "config.json") << "{\"n_"; });
    HfFolderSpec missing;
    missing.skip = "h.1.mlp.c_fc.bias";
    expectImportRefused(missing, "h.1.mlp.c_fc.bias (or transformer.h.1.mlp.c_fc.bias) is missing");
    HfFolderSpec transposed;
    transposed.transpose = "h.0.attn.c_attn.weight";
    expectImportRefused(transposed, "looks transposed");
    HfFolderSpec extra;
    extra.extra = "score.weight";
    expectImportRefused(extra, "score.weight is not part of a GPT-2 language model");
    HfFolderSpec relu;
    relu.activation = "relu";
    expectImportRefused(relu, "activation_function");
    expectImportRefused({}, "model.safetensors", [](const fs::path& d) {
        fs::resize_file(d / "model.safetensors", 100);  // truncated
    });
    // Issue 31: a folder named in a file may be a path the system refuses (a component past
    // 255 bytes): an error naming it, never an exception.
    const fs::path tooLong = fs::temp_directory_path() / std::string(300, 'h');
    auto refused = inspectHfFolder(tooLong);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find(tooLong.string()), std::string::npos)
        << refused.error().message;
}

}  // namespace
}  // namespace ws::interop
