// SPDX-License-Identifier: GPL-3.0-or-later
// LoRA adapters in PEFT's Llama layout (issue 33): a Llama-family LoRA run (grouped-query heads,
// SwiGLU, RMSNorm, rotary, untied head) exports its q/k/v/o/gate/up/down_proj adapters under
// base_model.model.model.layers.N.{self_attn,mlp}.<proj>.lora_{A,B}.weight with nn.Linear's
// shapes (A (R, IN), B (OUT, R), GQA's narrower k/v), fan_in_fan_out false and PEFT's
// target_modules; import gives them back bit for bit, onto our folder or the base's Hugging Face
// folder; --merge folds each slice into its columns of the fused weights exactly as
// lora::mergeAdapters does. Refused, naming the tensor or key: a GPT-2 adapter on a Llama base and
// the reverse, an adapter for other k/v widths (both shapes), and exporting an adapter on the
// fused c_attn of a Llama (PEFT's Llama has no such module).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../sample/sample_test_util.h"
#include "engine/fileio/atomic_file.h"
#include "engine/fileio/safetensors.h"
#include "engine/interop/hf_export.h"
#include "engine/interop/peft_adapter.h"
#include "engine/model/gpt.h"
#include "engine/model/lora_merge.h"
#include "engine/modelio/load_model.h"
#include "support/temp_dir.h"

namespace ws::interop {
namespace {

namespace fs = std::filesystem;
using sample::testing::randomParams;
using sample::testing::writeRunFolder;

// A byte-level Llama: C 32, 2 blocks, 4 query heads of 8 sharing `kvGroups` KV heads, SwiGLU of
// 48, RMSNorm, rotary, no biases, untied head.
std::string llamaYaml(int kvGroups) {
    return "model:\n  hidden_size: 32\n  num_hidden_layers: 2\n  num_heads: 4\n"
           "  filter_size: 48\n  vocab_size: 256\n  max_position_embeddings: 16\n"
           "  position_embedding_type: rotary\n  norm_type: rmsnorm\n  nonlinearity: swiglu\n"
           "  attention_module: multiquery_attention\n"
           "  extra_attention_params: {num_kv_groups: " +
           std::to_string(kvGroups) +
           "}\n  use_projection_bias_in_attention: false\n  use_ffn_bias_in_attention: false\n"
           "  use_ffn_bias: false\n  share_embedding_weights: false\n"
           "train_input:\n  tokenizer: {type: byte}\n";
}

const std::vector<std::string> kAllSeven = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                            "gate_proj", "up_proj", "down_proj"};

std::string loraYaml(const std::vector<std::string>& targets) {
    std::string list;
    for (const auto& t : targets) list += (list.empty() ? "" : ", ") + t;
    return "lora:\n  rank: 3\n  alpha: 6\n  dropout: 0.05\n  targets: [" + list + "]\n";
}

// A model folder of `yaml`'s model with random weights; returns its shape and weights.
struct Folder {
    model::GptShape shape;
    std::vector<float> params;
};

Folder writeFolder(const fs::path& dir, const std::string& yaml, uint64_t seed,
                   const Folder* base = nullptr) {
    fs::create_directories(dir);
    auto cfg = config::parseConfig(yaml, "model.yaml", dir);
    EXPECT_TRUE(cfg.ok()) << cfg.error().message;
    Folder f;
    f.shape = model::GptShape::fromConfig(cfg->config.model);
    f.shape.applyLora(cfg->config.lora);
    EXPECT_TRUE(f.shape.validate().ok());
    const model::ParameterTable table(f.shape);
    f.params = randomParams(f.shape, seed);
    if (base) {  // a LoRA run on `base`: its weights, the adapters on top
        const model::ParameterTable baseTable(base->shape);
        for (const auto& t : baseTable.tensors())
            std::copy_n(base->params.data() + t.offset, t.size,
                        f.params.data() + table.find(t.name)->offset);
        cfg->config.runconfig.checkpointPath = "/models/llama-tiny/model.safetensors";
    }
    const auto tok = tokenizer::makeByteTokenizer();
    EXPECT_TRUE(
        modelio::writeModelFolder(dir, table, f.params.data(), cfg->config, 3, {tok.get(), {}, {}})
            .ok());
    return f;
}

class PeftLlamaTest : public ::testing::Test {
protected:
    void SetUp() override {
        base = writeFolder(dir.path() / "base", llamaYaml(2), 3);
        lora = writeFolder(dir.path() / "lora", llamaYaml(2) + loraYaml(kAllSeven), 11, &base);
    }
    fs::path exported(const fs::path& from, const std::string& name) {
        auto r = exportPeftAdapter(from, dir.path() / name, "llama-tiny");
        EXPECT_TRUE(r.ok()) << r.error().message;
        return dir.path() / name;
    }
    nlohmann::json configOf(const fs::path& peft) {
        return nlohmann::json::parse(*fileio::readWholeFile(peft / kPeftConfigFile));
    }
    void expectRefused(const fs::path& baseDir, const fs::path& peft, const std::string& needle) {
        const fs::path out = dir.path() / "out" / "imported";
        fs::create_directories(out.parent_path());
        auto r = importPeftAdapter(baseDir, peft, out);
        ASSERT_FALSE(r.ok()) << "imported " << peft;
        EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
        EXPECT_TRUE(fs::is_empty(out.parent_path())) << "left files behind";
    }

    ws::testing::TempDir dir{"peft_llama"};
    Folder base, lora;
};

TEST_F(PeftLlamaTest, ExportWritesPeftsLlamaNamesShapesAndConfig) {
    const fs::path peft = exported(dir.path() / "lora", "peft");
    const nlohmann::json c = configOf(peft);
    EXPECT_EQ(c["fan_in_fan_out"], false);
    EXPECT_EQ(c["r"], 3);
    EXPECT_EQ(c["lora_alpha"], 6);
    EXPECT_EQ(c["task_type"], "CAUSAL_LM");
    std::vector<std::string> modules = c["target_modules"].get<std::vector<std::string>>();
    std::sort(modules.begin(), modules.end());
    std::vector<std::string> want = kAllSeven;
    std::sort(want.begin(), want.end());
    EXPECT_EQ(modules, want);
    auto file = fileio::SafetensorsFile::open(peft / kPeftWeightsFile);
    ASSERT_TRUE(file.ok()) << file.error().message;
    EXPECT_EQ(file->names().size(), size_t(2 * 7 * 2));
    // C 32, Q 32, K = 2 KV heads x 8 = 16, F 48.
    auto shapeOf = [&](const std::string& name) {
        const auto* info = file->find("base_model.model.model.layers." + name);
        EXPECT_NE(info, nullptr) << name;
        return info ? info->shape : std::vector<int64_t>{};
    };
    EXPECT_EQ(shapeOf("1.self_attn.q_proj.lora_A.weight"), (std::vector<int64_t>{3, 32}));
    EXPECT_EQ(shapeOf("1.self_attn.q_proj.lora_B.weight"), (std::vector<int64_t>{32, 3}));
    EXPECT_EQ(shapeOf("0.self_attn.k_proj.lora_B.weight"), (std::vector<int64_t>{16, 3}));
    EXPECT_EQ(shapeOf("0.self_attn.v_proj.lora_B.weight"), (std::vector<int64_t>{16, 3}));
    EXPECT_EQ(shapeOf("0.self_attn.o_proj.lora_A.weight"), (std::vector<int64_t>{3, 32}));
    EXPECT_EQ(shapeOf("0.mlp.gate_proj.lora_B.weight"), (std::vector<int64_t>{48, 3}));
    EXPECT_EQ(shapeOf("1.mlp.up_proj.lora_B.weight"), (std::vector<int64_t>{48, 3}));
    EXPECT_EQ(shapeOf("1.mlp.down_proj.lora_A.weight"), (std::vector<int64_t>{3, 48}));
    // lora_B.weight[o][r] of v_proj is our B[r][o] (nn.Linear's (out, r)).
    const model::ParameterTable table(lora.shape);
    const auto* ours = table.find("h.1.attn.v_proj.lora_B.weight");
    ASSERT_NE(ours, nullptr);
    auto values =
        file->readAsFloat("base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight");
    ASSERT_TRUE(values.ok());
    for (int o = 0; o < 16; ++o)
        for (int r = 0; r < 3; ++r)
            ASSERT_EQ((*values)[size_t(o * 3 + r)], lora.params[ours->offset + size_t(r * 16 + o)]);
}

TEST_F(PeftLlamaTest, ExportThenImportIsBitExactAndReexportsTheSameBytes) {
    const fs::path peft = exported(dir.path() / "lora", "peft");
    auto imported = importPeftAdapter(dir.path() / "base", peft, dir.path() / "imported");
    ASSERT_TRUE(imported.ok()) << imported.error().message;
    auto m = modelio::loadModel(dir.path() / "imported");
    ASSERT_TRUE(m.ok()) << m.error().message;
    ASSERT_TRUE(m->config.lora.has_value());
    // lora.targets in PEFT's names (o_proj, down_proj: attn.c_proj and mlp.c_proj).
    std::vector<std::string> targets = m->config.lora->targets, want = kAllSeven;
    std::sort(targets.begin(), targets.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(targets, want);
    EXPECT_EQ(m->shape.loraTargets, lora.shape.loraTargets);
    ASSERT_EQ(m->params.size(), lora.params.size());
    EXPECT_EQ(std::memcmp(m->params.data(), lora.params.data(), lora.params.size() * 4), 0);
    auto again = exportPeftAdapter(dir.path() / "imported", dir.path() / "peft2", "llama-tiny");
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_EQ(*fileio::readWholeFile(peft / kPeftWeightsFile),
              *fileio::readWholeFile(dir.path() / "peft2" / kPeftWeightsFile));
}

TEST_F(PeftLlamaTest, QAndVOnlyImportOntoTheHuggingFaceFolder) {
    // PEFT's most common Llama choice, onto the base as transformers has it (config.json,
    // model.layers.N.* names).
    writeFolder(dir.path() / "qv", llamaYaml(2) + loraYaml({"q_proj", "v_proj"}), 13, &base);
    const fs::path peft = exported(dir.path() / "qv", "peft-qv");
    EXPECT_EQ(configOf(peft)["target_modules"], (nlohmann::json{"q_proj", "v_proj"}));
    ASSERT_TRUE(exportHuggingFace(dir.path() / "base", dir.path() / "hf").ok());
    auto imported = importPeftAdapter(dir.path() / "hf", peft, dir.path() / "imported");
    ASSERT_TRUE(imported.ok()) << imported.error().message;
    auto m = modelio::loadModel(dir.path() / "imported");
    ASSERT_TRUE(m.ok()) << m.error().message;
    auto qv = modelio::loadModel(dir.path() / "qv");
    ASSERT_TRUE(qv.ok());
    EXPECT_EQ(m->config.lora->targets, (std::vector<std::string>{"q_proj", "v_proj"}));
    ASSERT_EQ(m->params.size(), qv->params.size());
    EXPECT_EQ(std::memcmp(m->params.data(), qv->params.data(), qv->params.size() * 4), 0);
}

TEST_F(PeftLlamaTest, MergeFoldsEverySliceIntoTheFusedWeights) {
    auto merged = exportHuggingFace(dir.path() / "lora", dir.path() / "hf", true);
    ASSERT_TRUE(merged.ok()) << merged.error().message;
    EXPECT_EQ(merged->mergedAdapterRank, 3);
    auto back = modelio::loadModel(dir.path() / "hf");
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_FALSE(back->shape.hasLora());
    const std::vector<float> want = model::lora::mergeAdapters(lora.shape, lora.params.data());
    EXPECT_EQ(back->params, want);
    EXPECT_NE(want, model::lora::baseWeights(lora.shape, lora.params.data()));
}

TEST_F(PeftLlamaTest, GptTwoAdapterOnALlamaAndTheReverseAreRefused) {
    const fs::path peft = exported(dir.path() / "lora", "peft");
    // The Llama adapter onto a GPT-2 base.
    const modelio::LoadedModel gpt2 =
        sample::testing::tinyModel(ws::testing::gptShape(256, 32, 2, 4, 48, 16), 4);
    writeRunFolder(dir.path() / "gpt2", gpt2);
    expectRefused(dir.path() / "gpt2", peft,
                  "is not a GPT-2 linear this engine adapts (c_attn, attn.c_proj, c_fc, "
                  "mlp.c_proj; c_proj means both projections); it is a Llama module");
    // A GPT-2 adapter (c_attn) onto the Llama base.
    nlohmann::json c = configOf(peft);
    c["target_modules"] = {"c_attn"};
    c["fan_in_fan_out"] = true;
    ASSERT_TRUE(fileio::writeFileAtomically(peft / kPeftConfigFile, c.dump(2)).ok());
    expectRefused(dir.path() / "base", peft,
                  "target module \"c_attn\" is not a Llama linear this engine adapts (q_proj, "
                  "k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj); it is a GPT-2 module");
}

TEST_F(PeftLlamaTest, OtherKeyValueWidthsAreRefusedWithBothShapes) {
    const fs::path peft = exported(dir.path() / "lora", "peft");
    // The same model with 4 KV heads (no GQA): k_proj and v_proj are 32 wide instead of 16.
    writeFolder(dir.path() / "mha", llamaYaml(4), 5);
    expectRefused(dir.path() / "mha", peft,
                  "tensor base_model.model.model.layers.0.self_attn.k_proj.lora_B.weight has "
                  "shape [16, 3] but this base needs [32, 3] (out x r)");
    expectRefused(dir.path() / "mha", peft, "q width 32, k/v width 32 here");
}

TEST_F(PeftLlamaTest, FusedLinearAdaptersOfALlamaDoNotExport) {
    writeFolder(dir.path() / "fused", llamaYaml(2) + loraYaml({"c_attn", "down_proj"}), 7, &base);
    auto r = exportPeftAdapter(dir.path() / "fused", dir.path() / "peft", "llama-tiny");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("lora.targets [q_proj, k_proj, v_proj] instead"),
              std::string::npos)
        << r.error().message;
    EXPECT_FALSE(fs::exists(dir.path() / "peft"));
}

// A python3 that imports torch: the one on PATH, else Debian's (python3-torch).
std::string pythonWithTorch() {
    for (const char* python : {"python3", "/usr/bin/python3"}) {
        const std::string cmd = std::string(python) + " -c 'import torch' >/dev/null 2>&1";
        if (std::system(cmd.c_str()) == 0) return python;
    }
    return {};
}

TEST_F(PeftLlamaTest, AdaptedLogitsMatchPeftSemanticsInPyTorch) {
    const std::string python = pythonWithTorch();
    if (python.empty())
        GTEST_SKIP() << "PyTorch is not installed (python3 -c 'import torch' fails); the "
                        "independent PEFT reference is skipped";
    // The base as transformers loads it, and the adapter as PEFT loads it, in one folder.
    const fs::path ref = dir.path() / "ref";
    ASSERT_TRUE(exportHuggingFace(dir.path() / "base", ref).ok());
    const fs::path peft = exported(dir.path() / "lora", "peft");
    for (const std::string_view file : {kPeftConfigFile, kPeftWeightsFile})
        fs::copy_file(peft / file, ref / file);
    const int B = 2, T = 8;
    std::vector<int32_t> in(size_t(B) * T);
    for (size_t i = 0; i < in.size(); ++i) in[i] = int32_t(model::rng::bits(21, i) % 256);
    std::ofstream(ref / "tokens.json")
        << nlohmann::json{{"batch", B}, {"seq", T}, {"inputs", in}}.dump();
    const std::string cmd = python + " '" WAFER_PEFT_LLAMA_SCRIPT "' '" + ref.string() + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream outFile(ref / "out.json");
    const nlohmann::json out = nlohmann::json::parse(outFile);
    EXPECT_EQ(out["adapters"], 2 * 7 * 2);  // every A and B of both blocks was used
    const std::vector<double> want = out["logits"].get<std::vector<double>>();

    // The engine's adapted model (fused q|k|v and gate|up with slice adapters), in double and
    // in float, training off (no dropout).
    auto m = modelio::loadModel(dir.path() / "lora");
    ASSERT_TRUE(m.ok()) << m.error().message;
    const std::vector<double> params(m->params.begin(), m->params.end());
    model::Gpt<double> exact(m->shape, B, T);
    exact.forward(params.data(), in.data(), nullptr, false, 0);
    model::Gpt<float> single(m->shape, B, T);
    single.forward(m->params.data(), in.data(), nullptr, false, 0);
    ASSERT_EQ(want.size(), size_t(B) * T * 256);
    double worstDouble = 0, worstFloat = 0, largest = 0;
    for (int b = 0; b < B; ++b)
        for (int t = 0; t < T; ++t)
            for (int v = 0; v < 256; ++v) {
                const double w = want[(size_t(b) * T + size_t(t)) * 256 + size_t(v)];
                worstDouble = std::max(worstDouble, std::abs(exact.logits(b, t)[v] - w));
                worstFloat = std::max(worstFloat, std::abs(double(single.logits(b, t)[v]) - w));
                largest = std::max(largest, std::abs(w));
            }
    EXPECT_GT(largest, 1.0);  // logits far from zero: the comparison means something
    EXPECT_LT(worstDouble, 1e-10) << "double";
    EXPECT_LT(worstFloat, 1e-4 * largest) << "float";
    // Without the adapters the reference differs: they change the logits.
    auto plain = modelio::loadModel(dir.path() / "base");
    ASSERT_TRUE(plain.ok());
    model::Gpt<float> baseModel(plain->shape, B, T);
    baseModel.forward(plain->params.data(), in.data(), nullptr, false, 0);
    double adapterEffect = 0;
    for (int v = 0; v < 256; ++v)
        adapterEffect =
            std::max(adapterEffect, std::abs(double(baseModel.logits(0, 0)[v]) - want[size_t(v)]));
    EXPECT_GT(adapterEffect, 100 * worstFloat);
    std::printf(
        "PEFT reference (PyTorch, float64) vs engine: double %.3g, float %.3g (largest "
        "logit %.3g, adapters move the logits by up to %.3g)\n",
        worstDouble, worstFloat, largest, adapterEffect);
}

}  // namespace
}  // namespace ws::interop
