// SPDX-License-Identifier: GPL-3.0-or-later
// Real Hugging Face checkpoint layouts through the import and the model references: a GPT-2
// folder whose weights are split into model-0000N-of-0000M.safetensors shards with mixed
// F32 / F16 / BF16 tensors imports (and loads in place) to exactly the values stored; a model id
// resolves to its snapshot in a Hugging Face cache laid out as huggingface_hub lays it out
// (symlinks into blobs/) and loads (loadModelRef) with the same weights; an existing path wins
// over an id.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../sample/sample_test_util.h"
#include "engine/fileio/dtype.h"
#include "engine/fileio/safetensors.h"
#include "engine/interop/hf_export.h"
#include "engine/interop/hf_import.h"
#include "engine/interop/model_ref.h"
#include "engine/modelio/load_model.h"
#include "support/temp_dir.h"
#include "support/test_shapes.h"

namespace ws::interop {
namespace {

namespace fs = std::filesystem;
using sample::testing::tinyModel;
using sample::testing::writeRunFolder;
using ws::testing::samplingShape;

// An exported GPT-2 folder (fp32 model.safetensors) re-saved as `shards` shards with an index,
// tensor i stored in F32, F16 or BF16 by i % 3 (values rounded to that dtype). Returns the values
// stored, by name in the file.
std::map<std::string, std::vector<float>> shardFolder(const fs::path& dir, size_t shards) {
    std::map<std::string, std::vector<float>> stored;
    auto file = fileio::SafetensorsFile::open(dir / "model.safetensors");
    EXPECT_TRUE(file.ok());
    const auto names = file->names();
    std::vector<std::vector<std::byte>> bytes(names.size());
    std::vector<std::vector<fileio::TensorView>> views(shards);
    nlohmann::json map = nlohmann::json::object();
    const fileio::DType cycle[] = {fileio::DType::F32, fileio::DType::F16, fileio::DType::BF16};
    for (size_t i = 0; i < names.size(); ++i) {
        const auto* info = file->find(names[i]);
        auto values = file->readAsFloat(names[i]);
        EXPECT_TRUE(values.ok());
        const fileio::DType dtype = cycle[i % 3];
        auto& out = stored[names[i]];
        for (float v : *values) {
            if (dtype == fileio::DType::F32) {
                out.push_back(v);
                const auto* p = reinterpret_cast<const std::byte*>(&v);
                bytes[i].insert(bytes[i].end(), p, p + 4);
            } else {
                const uint16_t b =
                    dtype == fileio::DType::F16 ? fileio::floatToHalf(v) : fileio::floatToBf16(v);
                out.push_back(dtype == fileio::DType::F16 ? fileio::halfToFloat(b)
                                                          : fileio::bf16ToFloat(b));
                const auto* p = reinterpret_cast<const std::byte*>(&b);
                bytes[i].insert(bytes[i].end(), p, p + 2);
            }
        }
        const size_t s = i % shards;
        const std::string shard = "model-0000" + std::to_string(s + 1) + "-of-0000" +
                                  std::to_string(shards) + ".safetensors";
        views[s].push_back({names[i], dtype, info->shape, bytes[i].data(), bytes[i].size()});
        map[names[i]] = shard;
    }
    for (size_t s = 0; s < shards; ++s) {
        const std::string shard = "model-0000" + std::to_string(s + 1) + "-of-0000" +
                                  std::to_string(shards) + ".safetensors";
        EXPECT_TRUE(fileio::writeSafetensors(dir / shard, views[s], {{"format", "pt"}}).ok());
    }
    std::ofstream(dir / "model.safetensors.index.json")
        << nlohmann::json{{"metadata", {{"total_size", 0}}}, {"weight_map", map}}.dump(2);
    fs::remove(dir / "model.safetensors");
    return stored;
}

// The model's parameters as the import should give them: each tensor's stored values at its
// table offset (names in the file carry "transformer.").
std::vector<float> expectedParams(const model::GptShape& shape,
                                  const std::map<std::string, std::vector<float>>& stored) {
    const model::ParameterTable table(shape);
    std::vector<float> params(table.totalSize());
    for (const auto& t : table.tensors()) {
        auto it = stored.find("transformer." + t.name);
        if (it == stored.end()) it = stored.find(t.name);
        EXPECT_NE(it, stored.end()) << t.name;
        std::copy(it->second.begin(), it->second.end(), params.begin() + ptrdiff_t(t.offset));
    }
    return params;
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(HfSharded, ImportsShardedSafetensorsWithMixedDtypesBitExact) {
    testing::TempDir tmp("hf-sharded");
    for (bool tied : {true, false}) {
        const fs::path run = tmp / (tied ? "run-tied" : "run-untied");
        const auto shape = samplingShape(256, 24, tied);
        writeRunFolder(run, tinyModel(shape, 4));
        const fs::path hf = run.string() + "-hf";
        ASSERT_TRUE(exportHuggingFace(run, hf).ok());
        const auto stored = shardFolder(hf, 3);
        ASSERT_FALSE(fs::exists(hf / "model.safetensors"));

        auto inspected = inspectHfFolder(hf);
        ASSERT_TRUE(inspected.ok()) << inspected.error().message;
        EXPECT_EQ(inspected->weightsFile, hf / "model.safetensors.index.json");
        EXPECT_GT(inspected->dtypeCounts.at("F32"), 0);
        EXPECT_GT(inspected->dtypeCounts.at("F16"), 0);
        EXPECT_GT(inspected->dtypeCounts.at("BF16"), 0);

        auto imported = importHuggingFace(hf, run.string() + "-back");
        ASSERT_TRUE(imported.ok()) << imported.error().message;
        bool noted = false;
        for (const auto& n : imported->source.notes) noted |= n.find("3 shard(s)") != n.npos;
        EXPECT_TRUE(noted);
        auto back = modelio::loadModel(run.string() + "-back");
        ASSERT_TRUE(back.ok()) << back.error().message;
        EXPECT_TRUE(sameBits(back->params, expectedParams(shape, stored)));

        // The same folder loaded in memory (what `wafer eval` and `wafer sample` compute with).
        auto loaded = loadModelRef(hf.string(), {});
        ASSERT_TRUE(loaded.ok()) << loaded.error().message;
        EXPECT_TRUE(sameBits(loaded->params, back->params));
        EXPECT_EQ(loaded->tokenizer->kind(), "byte");
        // And through modelio::loadModel, which the Samples tab, export and PEFT read models with.
        auto direct = modelio::loadModel(hf);
        ASSERT_TRUE(direct.ok()) << direct.error().message;
        EXPECT_EQ(direct->weightsFile, hf / "model.safetensors.index.json");
        EXPECT_TRUE(sameBits(direct->params, back->params));
    }
}

TEST(HfSharded, RefusesAMissingShardNamingIt) {
    testing::TempDir tmp("hf-sharded");
    writeRunFolder(tmp / "run", tinyModel(samplingShape(256, 24), 4));
    ASSERT_TRUE(exportHuggingFace(tmp / "run", tmp / "hf").ok());
    shardFolder(tmp / "hf", 2);
    fs::remove(tmp / "hf" / "model-00002-of-00002.safetensors");
    auto imported = importHuggingFace(tmp / "hf", tmp / "out");
    ASSERT_FALSE(imported.ok());
    EXPECT_NE(imported.error().message.find("shard model-00002-of-00002.safetensors is missing"),
              std::string::npos)
        << imported.error().message;
    EXPECT_FALSE(fs::exists(tmp / "out"));
}

TEST(HfSharded, AModelIdResolvesToItsCachedSnapshotAndAPathWins) {
    testing::TempDir tmp("hf-sharded");
    const auto shape = samplingShape(256, 24);
    writeRunFolder(tmp / "run", tinyModel(shape, 6));
    ASSERT_TRUE(exportHuggingFace(tmp / "run", tmp / "hf").ok());
    const auto stored = shardFolder(tmp / "hf", 2);

    // The cache: every file a blob, the snapshot's entries symlinks to them.
    const fs::path repo = tmp / "hub" / "models--tiny-org--tiny-gpt";
    const std::string commit(40, 'c');
    fs::create_directories(repo / "blobs");
    fs::create_directories(repo / "snapshots" / commit);
    fs::create_directories(repo / "refs");
    int n = 0;
    for (const auto& e : fs::directory_iterator(tmp / "hf")) {
        const std::string blob = "blob" + std::to_string(n++);
        fs::copy_file(e.path(), repo / "blobs" / blob);
        fs::create_symlink(fs::path("../../blobs") / blob,
                           repo / "snapshots" / commit / e.path().filename());
    }
    std::ofstream(repo / "refs" / "main") << commit;

    const char* old = std::getenv("HF_HUB_CACHE");
    const std::string saved = old ? old : "";
    ::setenv("HF_HUB_CACHE", (tmp / "hub").c_str(), 1);
    auto ref = resolveModelRef("tiny-org/tiny-gpt", {});
    auto loaded = loadModelRef("tiny-org/tiny-gpt", {});
    auto missing = resolveModelRef("tiny-org/not-here", {});
    if (old)
        ::setenv("HF_HUB_CACHE", saved.c_str(), 1);
    else
        ::unsetenv("HF_HUB_CACHE");

    ASSERT_TRUE(ref.ok()) << ref.error().message;
    EXPECT_EQ(ref->path, repo / "snapshots" / commit);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_TRUE(sameBits(loaded->params, expectedParams(shape, stored)));
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("tiny-org/not-here is not in the Hugging Face cache "
                                           "(looked in " +
                                           (tmp / "hub").string() + ", from HF_HUB_CACHE)"),
              std::string::npos)
        << missing.error().message;

    // A folder spelled like an id, relative to the working directory, wins over the cache.
    const fs::path cwd = fs::current_path();
    fs::current_path(tmp.path());
    fs::create_directories("tiny-org");
    fs::copy(tmp / "run", "tiny-org/tiny-gpt");
    auto local = resolveModelRef("tiny-org/tiny-gpt", {});
    fs::current_path(cwd);
    ASSERT_TRUE(local.ok()) << local.error().message;
    EXPECT_EQ(local->path, fs::path("tiny-org/tiny-gpt"));
}

}  // namespace
}  // namespace ws::interop
