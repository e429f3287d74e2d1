// SPDX-License-Identifier: GPL-3.0-or-later
// The local Hugging Face cache (modelio/hf_cache.h): model ids parsed as the Hub spells them, the
// cache folder from HF_HUB_CACHE / HF_HOME / XDG_CACHE_HOME / HOME in that order, snapshots found
// through refs/<revision>, a commit hash or the only snapshot, symlinks into blobs/ followed, and
// the listing's architecture, size and usability. The cache is laid out here as huggingface_hub
// lays it out (blobs/<sha>, refs/main, snapshots/<commit>/<file> -> ../../blobs/<sha>).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <optional>
#include <string>

#include "engine/modelio/hf_cache.h"
#include "engine/modelio/hf_config.h"
#include "support/temp_dir.h"
#include "support/test_shapes.h"

namespace ws::modelio {
namespace {

namespace fs = std::filesystem;

const std::string kCommitA(40, 'a');
const std::string kCommitB = "0123456789abcdef0123456789abcdef01234567";

// Sets an environment variable for one scope (unset when `value` is nullopt), then restores it.
class ScopedEnv {
public:
    ScopedEnv(const char* name, std::optional<std::string> value) : m_name(name) {
        if (const char* old = std::getenv(name)) m_old = old;
        if (value)
            ::setenv(name, value->c_str(), 1);
        else
            ::unsetenv(name);
    }
    ~ScopedEnv() {
        if (m_old)
            ::setenv(m_name, m_old->c_str(), 1);
        else
            ::unsetenv(m_name);
    }

private:
    const char* m_name;
    std::optional<std::string> m_old;
};

// A file of the snapshot stored as huggingface_hub stores it: the bytes in blobs/<name-hash>,
// the snapshot's entry a relative symlink to it.
void cacheFile(const fs::path& repo, const std::string& commit, const std::string& name,
               const std::string& content) {
    const std::string blob = "blob-" + std::to_string(std::hash<std::string>{}(name + content));
    fs::create_directories(repo / "blobs");
    fs::create_directories(repo / "snapshots" / commit);
    std::ofstream(repo / "blobs" / blob, std::ios::binary) << content;
    fs::create_symlink(fs::path("../../blobs") / blob, repo / "snapshots" / commit / name);
}

void writeRef(const fs::path& repo, const std::string& ref, const std::string& commit) {
    fs::create_directories((repo / "refs" / ref).parent_path());
    std::ofstream(repo / "refs" / ref) << commit;  // huggingface_hub writes no newline
}

std::string gpt2ConfigJson() {
    return hfConfigJson(ws::testing::modelConfigOf(ws::testing::samplingShape(256, 16)),
                        std::nullopt);
}

TEST(HfCache, ParsesModelIdsAsTheHubSpellsThem) {
    auto id = parseHfModelId("HuggingFaceTB/SmolLM2-135M");
    ASSERT_TRUE(id);
    EXPECT_EQ(id->repo, "HuggingFaceTB/SmolLM2-135M");
    EXPECT_EQ(id->revision, "");
    id = parseHfModelId("openai-community/gpt2@" + kCommitB);
    ASSERT_TRUE(id);
    EXPECT_EQ(id->repo, "openai-community/gpt2");
    EXPECT_EQ(id->revision, kCommitB);
    EXPECT_TRUE(parseHfModelId("Org.x/name_1.5@v1.0"));
    for (const char* notAnId : {"gpt2", "/abs/path", "./rel/x", "a/b/c", "a/", "/b", "a/.hidden",
                                "-a/b", "a b/c", "a/b@", "a/b@../x", "runs\\x/y", ""}) {
        EXPECT_FALSE(parseHfModelId(notAnId)) << notAnId;
    }
}

TEST(HfCache, FindsTheCacheFolderAsTransformersDoes) {
    ScopedEnv hubCache("HF_HUB_CACHE", std::nullopt);
    ScopedEnv legacy("HUGGINGFACE_HUB_CACHE", std::nullopt);
    ScopedEnv hfHome("HF_HOME", std::nullopt);
    ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
    ScopedEnv home("HOME", "/home/u");
    EXPECT_EQ(hfHubCache().dir, fs::path("/home/u/.cache/huggingface/hub"));
    EXPECT_EQ(hfHubCache().source, "the default");
    {
        ScopedEnv x("XDG_CACHE_HOME", "/xdg");
        EXPECT_EQ(hfHubCache().dir, fs::path("/xdg/huggingface/hub"));
        ScopedEnv h("HF_HOME", "~/hf");
        EXPECT_EQ(hfHubCache().dir, fs::path("/home/u/hf/hub"));
        EXPECT_EQ(hfHubCache().source, "HF_HOME");
        ScopedEnv l("HUGGINGFACE_HUB_CACHE", "/legacy");
        EXPECT_EQ(hfHubCache().dir, fs::path("/legacy"));
        ScopedEnv c("HF_HUB_CACHE", "/hub");
        EXPECT_EQ(hfHubCache().dir, fs::path("/hub"));
        EXPECT_EQ(hfHubCache().source, "HF_HUB_CACHE");
    }
}

TEST(HfCache, ResolvesSnapshotsThroughRefsCommitsOrTheOnlyOne) {
    testing::TempDir tmp("hf-cache");
    const fs::path hub = tmp / "hub";
    const fs::path repo = hub / "models--org--tiny";
    cacheFile(repo, kCommitA, "config.json", gpt2ConfigJson());
    cacheFile(repo, kCommitB, "config.json", gpt2ConfigJson());
    writeRef(repo, "main", kCommitB);
    writeRef(repo, "dev", kCommitA);

    auto snap = resolveHfSnapshot(*parseHfModelId("org/tiny"), hub);
    ASSERT_TRUE(snap.ok()) << snap.error().message;
    EXPECT_EQ(*snap, repo / "snapshots" / kCommitB);
    EXPECT_TRUE(fs::exists(*snap / "config.json"));  // through the symlink into blobs/
    snap = resolveHfSnapshot(*parseHfModelId("org/tiny@dev"), hub);
    ASSERT_TRUE(snap.ok()) << snap.error().message;
    EXPECT_EQ(*snap, repo / "snapshots" / kCommitA);
    snap = resolveHfSnapshot(*parseHfModelId("org/tiny@" + kCommitA), hub);
    ASSERT_TRUE(snap.ok()) << snap.error().message;
    EXPECT_EQ(*snap, repo / "snapshots" / kCommitA);

    // Several snapshots and no refs/main: the user must choose.
    fs::remove(repo / "refs" / "main");
    snap = resolveHfSnapshot(*parseHfModelId("org/tiny"), hub);
    ASSERT_FALSE(snap.ok());
    EXPECT_NE(snap.error().message.find("holds 2 snapshots"), std::string::npos)
        << snap.error().message;
    EXPECT_NE(snap.error().message.find("org/tiny@<commit>"), std::string::npos);
    // One snapshot and no refs: that one.
    fs::remove_all(repo / "snapshots" / kCommitB);
    snap = resolveHfSnapshot(*parseHfModelId("org/tiny"), hub);
    ASSERT_TRUE(snap.ok()) << snap.error().message;
    EXPECT_EQ(*snap, repo / "snapshots" / kCommitA);

    // A ref pointing at a snapshot that is gone.
    writeRef(repo, "main", kCommitB);
    snap = resolveHfSnapshot(*parseHfModelId("org/tiny"), hub);
    ASSERT_FALSE(snap.ok());
    EXPECT_NE(snap.error().message.find("the cache is incomplete"), std::string::npos)
        << snap.error().message;

    snap = resolveHfSnapshot(*parseHfModelId("org/tiny@v9"), hub);
    ASSERT_FALSE(snap.ok());
    EXPECT_NE(snap.error().message.find("org/tiny@v9 is not in the Hugging Face cache"),
              std::string::npos)
        << snap.error().message;
    EXPECT_NE(snap.error().message.find("--revision v9"), std::string::npos);
}

TEST(HfCache, NamesWhatWasLookedForAndWhere) {
    testing::TempDir tmp("hf-cache");
    ScopedEnv hubCache("HF_HUB_CACHE", std::nullopt);
    ScopedEnv legacy("HUGGINGFACE_HUB_CACHE", std::nullopt);
    ScopedEnv hfHome("HF_HOME", std::nullopt);
    ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
    ScopedEnv home("HOME", tmp.path().string());
    auto snap = resolveHfSnapshot(*parseHfModelId("HuggingFaceTB/SmolLM2-135M"));
    ASSERT_FALSE(snap.ok());
    EXPECT_EQ(snap.error().message,
              "HuggingFaceTB/SmolLM2-135M is not in the Hugging Face cache (looked in " +
                  (tmp.path() / ".cache/huggingface/hub").string() +
                  "); download it with `huggingface-cli download HuggingFaceTB/SmolLM2-135M` or "
                  "pass a folder");
    ScopedEnv hf("HF_HOME", (tmp / "hf").string());
    snap = resolveHfSnapshot(*parseHfModelId("a/b"));
    ASSERT_FALSE(snap.ok());
    EXPECT_NE(snap.error().message.find("(looked in " + (tmp / "hf" / "hub").string() +
                                        ", from HF_HOME)"),
              std::string::npos)
        << snap.error().message;
}

TEST(HfCache, ListsModelsWithArchitectureSizeAndUsability) {
    testing::TempDir tmp("hf-cache");
    const fs::path hub = tmp / "hub";
    EXPECT_TRUE(listCachedHfModels(hub).empty());  // no cache yet: nothing, not an error

    const fs::path gpt = hub / "models--org--tiny-gpt";
    const std::string config = gpt2ConfigJson();
    const std::string weights(1000, 'w');
    cacheFile(gpt, kCommitA, "config.json", config);
    cacheFile(gpt, kCommitA, "model.safetensors", weights);
    cacheFile(gpt, kCommitB, "config.json", config);
    writeRef(gpt, "main", kCommitA);

    const fs::path bert = hub / "models--google--bert-mini";
    cacheFile(bert, kCommitB, "config.json",
              R"({"architectures": ["BertForMaskedLM"], "model_type": "bert"})");

    const fs::path broken = hub / "models--org--broken";
    cacheFile(broken, kCommitA, "config.json", config);
    fs::create_symlink("../../blobs/gone", broken / "snapshots" / kCommitA / "model.safetensors");

    fs::create_directories(hub / "datasets--org--data" / "snapshots" / kCommitA);  // not a model

    const auto models = listCachedHfModels(hub);
    ASSERT_EQ(models.size(), 4u);
    EXPECT_EQ(models[0].id, "google/bert-mini");  // the only snapshot, no refs: the plain id
    EXPECT_EQ(models[0].architecture, "BertForMaskedLM");
    EXPECT_FALSE(models[0].usable());
    EXPECT_EQ(models[0].parameters, 0);

    EXPECT_EQ(models[1].id, "org/broken");
    EXPECT_FALSE(models[1].usable());
    EXPECT_NE(models[1].problem.find("model.safetensors is missing"), std::string::npos)
        << models[1].problem;

    EXPECT_EQ(models[2].id, "org/tiny-gpt");
    EXPECT_EQ(models[2].revision, kCommitA);
    EXPECT_EQ(models[2].snapshot, gpt / "snapshots" / kCommitA);
    EXPECT_EQ(models[2].architecture, "GPT2LMHeadModel");
    EXPECT_EQ(models[2].bytes, config.size() + weights.size());  // the blobs, not the links
    EXPECT_TRUE(models[2].usable()) << models[2].problem;
    EXPECT_GT(models[2].parameters, 0);

    EXPECT_EQ(models[3].id, "org/tiny-gpt@" + kCommitB);  // not what main points at
    EXPECT_TRUE(models[3].usable());
    for (const auto& m : models) {
        auto resolved = resolveHfSnapshot(*parseHfModelId(m.id), hub);  // every id listed works
        ASSERT_TRUE(resolved.ok()) << resolved.error().message;
        EXPECT_EQ(*resolved, m.snapshot);
    }
}

}  // namespace
}  // namespace ws::modelio
