// SPDX-License-Identifier: GPL-3.0-or-later
// LoRA adapters in PEFT's layout (issue 16): export -> import gives back the adapters bit for bit
// (and the base's weights untouched); the exported files have PEFT's names, shapes (the
// transposes of ours) and config fields; a merged HF export is refused without --merge. Bad
// adapters (wrong rank, unknown module, another base, a missing file, another PEFT method) are
// refused naming the key and the fix, with nothing written.
#include "engine/interop/peft_adapter.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "../sample/sample_test_util.h"
#include "engine/fileio/atomic_file.h"
#include "engine/fileio/safetensors.h"
#include "engine/interop/hf_export.h"
#include "engine/model/lora_merge.h"
#include "engine/modelio/load_model.h"
#include "support/temp_dir.h"
#include "support/test_shapes.h"

namespace ws::interop {
namespace {

namespace fs = std::filesystem;
using sample::testing::randomParams;
using sample::testing::tinyConfigYaml;
using sample::testing::tinyModel;
using sample::testing::writeRunFolder;
using ws::testing::samplingShape;

constexpr const char* kLoraYaml =
    "lora:\n  rank: 3\n  alpha: 6\n  dropout: 0.05\n  targets: [c_attn, mlp.c_proj]\n";

model::GptShape loraShapeOf(model::GptShape s) {
    s.applyLora(config::LoraConfig{
        .rank = 3, .alpha = 6.0, .dropout = 0.05, .targets = {"c_attn", "mlp.c_proj"}});
    return s;
}

// A LoRA run's model folder: `base`'s weights plus random (trained-looking) adapters.
std::vector<float> writeLoraFolder(const fs::path& dir, const modelio::LoadedModel& base) {
    fs::create_directories(dir);
    const model::GptShape s = loraShapeOf(base.shape);
    const model::ParameterTable table(s), baseTable(base.shape);
    std::vector<float> params = randomParams(s, 11);
    for (const auto& t : baseTable.tensors())
        std::copy_n(base.params.data() + t.offset, t.size,
                    params.data() + table.find(t.name)->offset);
    auto cfg = config::parseConfig(tinyConfigYaml(base.shape) + kLoraYaml, "lora.yaml", dir);
    EXPECT_TRUE(cfg.ok()) << cfg.error().message;
    cfg->config.runconfig.checkpointPath = "/models/tiny-base/model.safetensors";
    EXPECT_TRUE(
        modelio::saveWeights(dir / "model.safetensors", table, params.data(), cfg->config, 5).ok());
    std::ofstream(dir / "config.yaml") << config::saveConfigYaml(cfg->config);
    EXPECT_TRUE(base.tokenizer->save(dir).ok());
    return params;
}

class PeftAdapterTest : public ::testing::Test {
protected:
    void SetUp() override {
        base = tinyModel(samplingShape(256, 16), 3);
        writeRunFolder(dir.path() / "base", base);
        loraParams = writeLoraFolder(dir.path() / "lora", base);
    }
    // Exports the LoRA folder's adapters to `name`.
    fs::path exported(const std::string& name = "peft") {
        auto r = exportPeftAdapter(dir.path() / "lora", dir.path() / name, "gpt2-tiny");
        EXPECT_TRUE(r.ok()) << r.error().message;
        return dir.path() / name;
    }
    nlohmann::json configOf(const fs::path& peft) {
        return nlohmann::json::parse(*fileio::readWholeFile(peft / kPeftConfigFile));
    }
    void writeConfig(const fs::path& peft, const nlohmann::json& j) {
        ASSERT_TRUE(fileio::writeFileAtomically(peft / kPeftConfigFile, j.dump(2)).ok());
    }
    // Import must fail with `needle` in the message and leave nothing in the output's folder.
    void expectRefused(const fs::path& baseDir, const fs::path& peft, const std::string& needle) {
        const fs::path out = dir.path() / "out" / "imported";
        fs::create_directories(out.parent_path());
        auto r = importPeftAdapter(baseDir, peft, out);
        ASSERT_FALSE(r.ok()) << "imported " << peft;
        EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
        EXPECT_TRUE(fs::is_empty(out.parent_path())) << "left files behind";
    }

    ws::testing::TempDir dir;
    modelio::LoadedModel base;
    std::vector<float> loraParams;
};

TEST_F(PeftAdapterTest, ExportWritesPeftNamesShapesAndConfig) {
    const fs::path peft = exported();
    const nlohmann::json c = configOf(peft);
    EXPECT_EQ(c["peft_type"], "LORA");
    EXPECT_EQ(c["r"], 3);
    EXPECT_EQ(c["lora_alpha"], 6);
    EXPECT_DOUBLE_EQ(c["lora_dropout"].get<double>(), 0.05);
    EXPECT_EQ(c["target_modules"], (nlohmann::json{"c_attn", "mlp.c_proj"}));
    EXPECT_EQ(c["fan_in_fan_out"], true);
    EXPECT_EQ(c["bias"], "none");
    EXPECT_EQ(c["task_type"], "CAUSAL_LM");
    EXPECT_EQ(c["base_model_name_or_path"], "gpt2-tiny");
    auto file = fileio::SafetensorsFile::open(peft / kPeftWeightsFile);
    ASSERT_TRUE(file.ok()) << file.error().message;
    EXPECT_EQ(file->names().size(), size_t(2 * 2 * base.shape.layers));
    const int C = base.shape.channels, F = base.shape.ffn;
    const auto* a = file->find("base_model.model.transformer.h.1.attn.c_attn.lora_A.weight");
    const auto* b = file->find("base_model.model.transformer.h.1.mlp.c_proj.lora_B.weight");
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->shape, (std::vector<int64_t>{3, C}));
    EXPECT_EQ(b->shape, (std::vector<int64_t>{C, 3}));
    EXPECT_EQ(file->find("base_model.model.transformer.h.0.mlp.c_proj.lora_A.weight")->shape,
              (std::vector<int64_t>{3, F}));
    // lora_A.weight[r][i] is our A[i][r].
    const model::ParameterTable table(loraShapeOf(base.shape));
    const auto* ours = table.find("h.1.attn.c_attn.lora_A.weight");
    auto values = file->readAsFloat(a->name);
    ASSERT_TRUE(values.ok());
    for (int i = 0; i < C; ++i)
        for (int r = 0; r < 3; ++r)
            ASSERT_EQ((*values)[size_t(r * C + i)], loraParams[ours->offset + size_t(i * 3 + r)]);
}

TEST_F(PeftAdapterTest, ExportThenImportGivesTheAdaptersBitForBit) {
    const fs::path peft = exported();
    auto imported = importPeftAdapter(dir.path() / "base", peft, dir.path() / "imported");
    ASSERT_TRUE(imported.ok()) << imported.error().message;
    EXPECT_EQ(imported->adapter.rank, 3);
    auto m = modelio::loadModel(dir.path() / "imported");
    ASSERT_TRUE(m.ok()) << m.error().message;
    ASSERT_TRUE(m->config.lora.has_value());
    EXPECT_EQ(m->config.lora->alpha, 6.0);
    EXPECT_EQ(m->config.lora->dropout, 0.05);
    EXPECT_EQ(m->config.lora->targets, (std::vector<std::string>{"c_attn", "mlp.c_proj"}));
    EXPECT_EQ(m->shape.loraRank, 3);
    ASSERT_EQ(m->params.size(), loraParams.size());
    EXPECT_EQ(std::memcmp(m->params.data(), loraParams.data(), loraParams.size() * 4), 0);
    EXPECT_EQ(m->tokenizer->kind(), base.tokenizer->kind());
    // Exporting the imported model again writes the same adapter file, byte for byte.
    auto again = exportPeftAdapter(dir.path() / "imported", dir.path() / "peft2", "gpt2-tiny");
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_EQ(*fileio::readWholeFile(peft / kPeftWeightsFile),
              *fileio::readWholeFile(dir.path() / "peft2" / kPeftWeightsFile));
}

TEST_F(PeftAdapterTest, ImportsOntoAHuggingFaceFolder) {
    // The base as transformers would have it (config.json, GPT-2 names), the adapter on top.
    ASSERT_TRUE(exportHuggingFace(dir.path() / "base", dir.path() / "hf").ok());
    auto imported = importPeftAdapter(dir.path() / "hf", exported(), dir.path() / "imported");
    ASSERT_TRUE(imported.ok()) << imported.error().message;
    EXPECT_EQ(imported->notes.size(), 1u);  // names the adapter's declared base
    auto m = modelio::loadModel(dir.path() / "imported");
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ(m->config.runconfig.checkpointPath,
              fs::absolute(dir.path() / "hf" / "model.safetensors").lexically_normal().string());
    EXPECT_EQ(m->config.trainInput.tokenizer.type, "byte");
    EXPECT_EQ(m->tokenizer->kind(), "byte");
    ASSERT_EQ(m->params.size(), loraParams.size());
    EXPECT_EQ(std::memcmp(m->params.data(), loraParams.data(), loraParams.size() * 4), 0);
}

TEST_F(PeftAdapterTest, ExportNamesTheBasePortablyAndImportFindsItAgain) {
    // The LoRA run's base is a folder of this machine (an absolute build-tree path): the
    // adapter records its name only, and importing without naming a base finds it beside the
    // adapter, where a shared adapter and its base would be unpacked.
    const fs::path baseWeights = fs::absolute(dir.path() / "base" / "model.safetensors");
    const std::string yaml = *fileio::readWholeFile(dir.path() / "lora" / "config.yaml");
    auto lora = config::parseConfig(yaml, "config.yaml", dir.path() / "lora");
    ASSERT_TRUE(lora.ok()) << lora.error().message;
    lora->config.runconfig.checkpointPath = baseWeights.string();
    ASSERT_TRUE(fileio::writeFileAtomically(dir.path() / "lora" / "config.yaml",
                                            config::saveConfigYaml(lora->config))
                    .ok());
    auto r = exportPeftAdapter(dir.path() / "lora", dir.path() / "peft");
    ASSERT_TRUE(r.ok()) << r.error().message;
    const std::string text = *fileio::readWholeFile(dir.path() / "peft" / kPeftConfigFile);
    EXPECT_EQ(text.find(dir.path().string()), std::string::npos) << text;
    const nlohmann::json c = configOf(dir.path() / "peft");
    ASSERT_TRUE(c["base_model_name_or_path"].is_string()) << c.dump();
    const std::string name = c["base_model_name_or_path"].get<std::string>();
    EXPECT_EQ(name, "base");
    EXPECT_FALSE(fs::path(name).is_absolute());

    auto found = findPeftBase(dir.path() / "peft");
    ASSERT_TRUE(found.ok()) << found.error().message;
    EXPECT_TRUE(fs::equivalent(*found, dir.path() / "base"));
    auto imported = importPeftAdapter(*found, dir.path() / "peft", dir.path() / "imported");
    ASSERT_TRUE(imported.ok()) << imported.error().message;
    auto m = modelio::loadModel(dir.path() / "imported");
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ(std::memcmp(m->params.data(), loraParams.data(), loraParams.size() * 4), 0);

    // Moved away from its base, the adapter says where it looked and how to name the base.
    fs::rename(dir.path() / "peft", dir.path() / "out-peft");
    fs::create_directories(dir.path() / "elsewhere");
    fs::rename(dir.path() / "out-peft", dir.path() / "elsewhere" / "peft");
    auto missing = findPeftBase(dir.path() / "elsewhere" / "peft");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("\"base\" (base_model_name_or_path"), std::string::npos)
        << missing.error().message;
    EXPECT_NE(missing.error().message.find("wafer import BASE --adapter"), std::string::npos);
}

TEST(PeftBaseName, IsTheHuggingFaceIdOrTheFolderName) {
    ws::testing::TempDir dir("peft_base_name");
    EXPECT_EQ(portableBaseName("/home/me/build/resources/base-model/model.safetensors"),
              "base-model");
    EXPECT_EQ(portableBaseName("/home/me/build/resources/base-model/"), "base-model");
    EXPECT_EQ(portableBaseName("/root/.cache/huggingface/hub/models--cerebras--Cerebras-GPT-111M/"
                               "snapshots/abc123/model.safetensors"),
              "cerebras/Cerebras-GPT-111M");
    // A Hugging Face folder saved by transformers: its config.json's id, unless that is a path.
    fs::create_directories(dir.path() / "hf");
    std::ofstream(dir.path() / "hf" / "config.json") << R"({"_name_or_path": "gpt2"})";
    EXPECT_EQ(portableBaseName(dir.path() / "hf" / "model.safetensors"), "gpt2");
    std::ofstream(dir.path() / "hf" / "config.json") << R"({"_name_or_path": "/tmp/x/gpt2"})";
    EXPECT_EQ(portableBaseName(dir.path() / "hf"), "hf");
}

TEST_F(PeftAdapterTest, HfExportOfALoraRunNeedsMergeAndMergesExactly) {
    auto refused = exportHuggingFace(dir.path() / "lora", dir.path() / "hf");
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("--merge"), std::string::npos);
    EXPECT_FALSE(fs::exists(dir.path() / "hf"));
    auto merged = exportHuggingFace(dir.path() / "lora", dir.path() / "hf", true);
    ASSERT_TRUE(merged.ok()) << merged.error().message;
    EXPECT_EQ(merged->mergedAdapterRank, 3);
    auto back = modelio::loadModel(dir.path() / "hf");
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_FALSE(back->shape.hasLora());
    EXPECT_EQ(back->params, model::lora::mergeAdapters(loraShapeOf(base.shape), loraParams.data()));
}

TEST_F(PeftAdapterTest, ExportOfAModelWithoutAdaptersIsRefused) {
    auto r = exportPeftAdapter(dir.path() / "base", dir.path() / "peft");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("no LoRA adapters"), std::string::npos);
    EXPECT_FALSE(fs::exists(dir.path() / "peft"));
}

TEST_F(PeftAdapterTest, WrongRankIsRefusedNamingTheTensor) {
    const fs::path peft = exported();
    nlohmann::json c = configOf(peft);
    c["r"] = 4;
    writeConfig(peft, c);
    expectRefused(dir.path() / "base", peft,
                  "base_model.model.transformer.h.0.attn.c_attn.lora_A.weight has shape [3, 32] "
                  "but this base needs [4, 32]");
    expectRefused(dir.path() / "base", peft, "rank does not match r = 4");
}

TEST_F(PeftAdapterTest, UnknownTargetModuleIsRefused) {
    const fs::path peft = exported();
    nlohmann::json c = configOf(peft);
    c["target_modules"] = {"c_attn", "q_proj"};
    writeConfig(peft, c);
    expectRefused(dir.path() / "base", peft, "target module \"q_proj\" is not a GPT-2 linear");
}

TEST_F(PeftAdapterTest, AdapterForADifferentBaseIsRefused) {
    const fs::path peft = exported();
    // A base of hidden size 48 instead of 32.
    const modelio::LoadedModel wider = tinyModel(ws::testing::gptShape(256, 48, 2, 4, 64, 16), 4);
    writeRunFolder(dir.path() / "wider", wider);
    expectRefused(dir.path() / "wider", peft, "trained for a different base (hidden size 48");
    // And a deeper base: the adapter has no tensors for its third block.
    const modelio::LoadedModel deeper = tinyModel(ws::testing::gptShape(256, 32, 3, 4, 64, 16), 4);
    writeRunFolder(dir.path() / "deeper", deeper);
    expectRefused(dir.path() / "deeper", peft,
                  "base_model.model.transformer.h.2.attn.c_attn.lora_A.weight is missing");
}

TEST_F(PeftAdapterTest, MissingFileIsRefused) {
    const fs::path peft = exported();
    fs::remove(peft / kPeftWeightsFile);
    std::ofstream(peft / "adapter_model.bin") << "pickle";
    expectRefused(dir.path() / "base", peft, "safe_serialization=True");
    fs::remove(peft / kPeftConfigFile);
    expectRefused(dir.path() / "base", peft, "adapter_config.json is missing");
    expectRefused(dir.path() / "base", dir.path() / "nowhere", "no such folder");
    // Issue 31: a path the system refuses (a component past 255 bytes) is refused the same way.
    expectRefused(dir.path() / "base", dir.path() / std::string(300, 'p'), "no such folder");
}

TEST_F(PeftAdapterTest, OtherPeftMethodsAreRefused) {
    const fs::path peft = exported();
    nlohmann::json c = configOf(peft);
    c["peft_type"] = "IA3";
    writeConfig(peft, c);
    expectRefused(dir.path() / "base", peft, "peft_type is \"IA3\"; only LoRA adapters");
    c["peft_type"] = "LORA";
    c["use_dora"] = true;
    writeConfig(peft, c);
    expectRefused(dir.path() / "base", peft, "use_dora is set");
    c["use_dora"] = false;
    c["bias"] = "lora_only";
    writeConfig(peft, c);
    expectRefused(dir.path() / "base", peft, "bias is \"lora_only\"");
}

TEST_F(PeftAdapterTest, AStrangerTensorIsRefusedByName) {
    const fs::path peft = exported();
    std::vector<std::vector<float>> keep;
    std::vector<fileio::TensorView> views;
    {
        auto file = fileio::SafetensorsFile::open(peft / kPeftWeightsFile);
        ASSERT_TRUE(file.ok());
        keep.reserve(file->names().size());
        for (const std::string& name : file->names()) {
            keep.push_back(*file->readAsFloat(name));
            views.push_back({name, fileio::DType::F32, file->find(name)->shape, keep.back().data(),
                             keep.back().size() * 4});
        }
    }
    const float one = 1.0f;
    views.push_back({"base_model.model.lm_head.weight", fileio::DType::F32, {1}, &one, 4});
    // The name of an adapter tensor without PEFT's prefix is a stranger too.
    views.push_back({"h.0.attn.c_attn.lora_A.weight", fileio::DType::F32, {1}, &one, 4});
    ASSERT_TRUE(fileio::writeSafetensors(peft / kPeftWeightsFile, views, {}).ok());
    expectRefused(dir.path() / "base", peft,
                  "tensor base_model.model.lm_head.weight is not an adapter of this base");
    views.erase(views.end() - 2);
    ASSERT_TRUE(fileio::writeSafetensors(peft / kPeftWeightsFile, views, {}).ok());
    expectRefused(dir.path() / "base", peft,
                  "tensor h.0.attn.c_attn.lora_A.weight is not an adapter of this base");
}

TEST_F(PeftAdapterTest, AllLinearTargetsEveryConv1D) {
    const fs::path peft = exported();
    nlohmann::json c = configOf(peft);
    c["target_modules"] = "all-linear";
    writeConfig(peft, c);
    // It then needs attn.c_proj and c_fc too, which this adapter lacks: named.
    expectRefused(dir.path() / "base", peft,
                  "base_model.model.transformer.h.0.attn.c_proj.lora_A.weight is missing");
}

}  // namespace
}  // namespace ws::interop
