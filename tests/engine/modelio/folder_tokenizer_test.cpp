// SPDX-License-Identifier: GPL-3.0-or-later
// Which tokenizer a model folder (or a path given to `wafer tokenize`) gets: a Hugging Face
// tokenizer.json when the folder has one, GPT-2's vocab.json + merges.txt as before (also when
// GPT-2's own tokenizer.json sits beside them, so those folders keep their ids and cache keys),
// the byte tokenizer's {"type": "byte"}, and errors naming the problem.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/modelio/load_model.h"
#include "engine/tokenizer/special_tokens.h"
#include "support/temp_dir.h"

namespace ws::modelio {
namespace {

namespace fs = std::filesystem;
const fs::path kMini = fs::path(WAFER_TOKENIZER_FIXTURES) / "gpt2_mini";

void write(const fs::path& file, const std::string& text) {
    std::ofstream(file, std::ios::binary) << text;
}

// gpt2_mini's vocabulary as a tokenizer.json with the given pre-tokenizer.
std::string tokenizerJson(const nlohmann::json& preTokenizer) {
    std::ifstream vocabFile(kMini / "vocab.json");
    const auto vocab = nlohmann::json::parse(vocabFile);
    std::ifstream mergesFile(kMini / "merges.txt");
    nlohmann::json merges = nlohmann::json::array();
    for (std::string line; std::getline(mergesFile, line);) {
        if (!line.empty() && !line.starts_with("#version")) merges.push_back(line);
    }
    return nlohmann::json{{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}},
                          {"pre_tokenizer", preTokenizer},
                          {"decoder", {{"type", "ByteLevel"}}}}
        .dump();
}

const nlohmann::json kGpt2Pre = {
    {"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
const nlohmann::json kSplitPre = {
    {"type", "Sequence"},
    {"pretokenizers",
     {{{"type", "Split"},
       {"pattern", {{"Regex", R"(\p{N}|\p{L}+|\s+|[^\s\p{L}\p{N}]+)"}}},
       {"behavior", "Isolated"},
       {"invert", false}},
      {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};

TEST(FolderTokenizer, TokenizerJsonWinsUnlessItIsGpt2sOwnBesideVocabAndMerges) {
    ws::testing::TempDir dir("folder-tok");
    fs::copy(kMini / "vocab.json", dir / "vocab.json");
    fs::copy(kMini / "merges.txt", dir / "merges.txt");
    auto plain = loadFolderTokenizer(dir.path());
    ASSERT_TRUE(plain.ok()) << plain.error().message;
    EXPECT_EQ((*plain)->kind(), "bpe");

    write(dir / "tokenizer.json", tokenizerJson(kGpt2Pre));
    auto gpt2 = loadFolderTokenizer(dir.path());
    ASSERT_TRUE(gpt2.ok()) << gpt2.error().message;
    EXPECT_EQ((*gpt2)->kind(), "bpe");
    EXPECT_EQ((*gpt2)->identity(), (*plain)->identity());

    write(dir / "tokenizer.json", tokenizerJson(kSplitPre));  // a Qwen2-style pipeline
    auto hf = loadFolderTokenizer(dir.path());
    ASSERT_TRUE(hf.ok()) << hf.error().message;
    EXPECT_EQ((*hf)->kind(), "hf");
    // Single digits: the Split regex, not GPT-2's, decides the pieces.
    EXPECT_EQ((*hf)->encode("123").size(), 3u);
    EXPECT_EQ((*hf)->decode((*hf)->encode("hello 123 world")), "hello 123 world");

    auto direct = loadTokenizerAt(dir / "tokenizer.json");
    ASSERT_TRUE(direct.ok());
    EXPECT_EQ((*direct)->identity(), (*hf)->identity());
    auto viaVocab = loadTokenizerAt(dir / "vocab.json");
    ASSERT_TRUE(viaVocab.ok());
    EXPECT_EQ((*viaVocab)->kind(), "hf");  // the folder's choice
}

TEST(FolderTokenizer, HfOnlyFoldersByteFilesAndErrors) {
    ws::testing::TempDir dir("folder-tok");
    write(dir / "tokenizer.json", tokenizerJson(kSplitPre));
    auto hf = loadFolderTokenizer(dir.path());
    ASSERT_TRUE(hf.ok()) << hf.error().message;
    EXPECT_EQ((*hf)->kind(), "hf");

    write(dir / "tokenizer.json", R"({"type": "byte"})");
    auto byte = loadTokenizerAt(dir.path());
    ASSERT_TRUE(byte.ok());
    EXPECT_EQ((*byte)->kind(), "byte");

    auto missing = loadTokenizerAt(dir / "nowhere");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("no such file or folder"), std::string::npos);

    write(dir / "tokenizer.json", R"({"type": "wordpiece"})");
    auto unknown = loadFolderTokenizer(dir.path());
    ASSERT_FALSE(unknown.ok());
    EXPECT_NE(unknown.error().message.find("not a tokenizer file"), std::string::npos);

    nlohmann::json bad = nlohmann::json::parse(tokenizerJson(kSplitPre));
    bad["normalizer"] = {{"type", "BertNormalizer"}};
    write(dir / "tokenizer.json", bad.dump());
    auto refused = loadFolderTokenizer(dir.path());
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("normalizer.type: \"BertNormalizer\" is not supported"),
              std::string::npos)
        << refused.error().message;
}

// Issue 34: special tokens added for a chat format (tokenizer/special_tokens.h) are saved as
// added_tokens.json beside a byte or GPT-2 tokenizer's files, and a model folder loads them back.
TEST(FolderTokenizer, AddedSpecialTokensComeBackFromTheFolder) {
    const std::vector<std::string> chatMl{"<|im_start|>", "<|im_end|>"};
    auto mini = tokenizer::loadGpt2Bpe(kMini / "vocab.json", kMini / "merges.txt");
    ASSERT_TRUE(mini.ok());
    std::shared_ptr<const tokenizer::Tokenizer> bases[] = {std::move(mini).value(),
                                                           tokenizer::makeByteTokenizer()};
    for (auto& base : bases) {
        SCOPED_TRACE(base->kind());
        ws::testing::TempDir dir("folder-special-tokens");
        auto added = tokenizer::withSpecialTokens(base, chatMl);
        ASSERT_TRUE(added.ok());
        ASSERT_TRUE(added->tokenizer->save(dir.path()).ok());
        EXPECT_TRUE(fs::exists(dir / "added_tokens.json"));
        auto loaded = loadFolderTokenizer(dir.path());
        ASSERT_TRUE(loaded.ok()) << loaded.error().message;
        EXPECT_EQ((*loaded)->identity(), added->tokenizer->identity());
        EXPECT_NE((*loaded)->identity(), base->identity());
        EXPECT_EQ((*loaded)->vocabSize(), base->vocabSize() + 2);
        EXPECT_EQ((*loaded)->encode("<|im_start|>hi<|im_end|>").front(), base->vocabSize());
        EXPECT_EQ((*loaded)->encode("<|im_start|>hi<|im_end|>").back(), base->vocabSize() + 1);
        // Without the file the folder is the plain tokenizer again.
        fs::remove(dir / "added_tokens.json");
        auto plain = loadFolderTokenizer(dir.path());
        ASSERT_TRUE(plain.ok());
        EXPECT_EQ((*plain)->identity(), base->identity());
    }
}

}  // namespace
}  // namespace ws::modelio
