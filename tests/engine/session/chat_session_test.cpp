// SPDX-License-Identifier: GPL-3.0-or-later
// A run on chat records (session/chat_run_data.h): an OpenAI messages file trains through the
// chat template and the answer mask, says what it read and what it trains on, learns the answers,
// keeps ChatML's special tokens in its run folder's tokenizer, and refuses bad records and a
// vocabulary too small for the template's tokens by naming them.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "engine/modelio/load_model.h"
#include "session_test_util.h"

namespace ws::session {
namespace {
using namespace testing;
namespace fs = std::filesystem;

// n conversations: "Say <word> twice." -> "<word> <word>".
fs::path writeChat(const TempDir& dir, int n) {
    const char* words[] = {"apple", "river", "stone", "cloud", "ember", "maple", "tiger", "piano"};
    const fs::path path = dir.path() / "chat.jsonl";
    std::ofstream out(path);
    for (int i = 0; i < n; ++i) {
        const std::string w = words[(i * 5 + i / 8) % 8];
        out << R"({"messages": [{"role": "user", "content": "Say )" << w
            << R"( twice."}, {"role": "assistant", "content": ")" << w << " " << w << "\"}]}\n";
    }
    return path;
}

config::LoadedConfig chatConfig(const TempDir& dir, const fs::path& data, int steps,
                                std::vector<std::string> extra = {}) {
    std::vector<std::string> overrides = {
        "train_input.data_dir=" + data.string(),
        "model.vocab_size=258",  // bytes + <|im_start|>, <|im_end|>
        "train_input.max_sequence_length=64",
        "train_input.validation_records=8",
        "runconfig.eval_frequency=10",
        "runconfig.eval_steps=4"};
    overrides.insert(overrides.end(), extra.begin(), extra.end());
    return tinyConfig(dir.path(), steps, overrides);
}

std::string logOf(const std::vector<Event>& events) {
    std::string all;
    for (const Event& e : events)
        if (const auto* l = std::get_if<LogLine>(&e)) all += l->message + "\n";
    return all;
}

TEST(ChatSession, AMessagesFileTrainsOnTheAnswersAndSaysSo) {
    TempDir dir;
    const fs::path data = writeChat(dir, 64);
    std::vector<Event> events;
    auto options = sessionOptionsIn(dir);
    options.evaluateAtStart = true;
    const RunSummary summary = train(chatConfig(dir, data, 40), options, &events);
    ASSERT_EQ(summary.state, RunState::Finished) << summary.detail;
    const std::string log = logOf(events);
    EXPECT_NE(log.find("OpenAI messages"), std::string::npos) << log;
    EXPECT_NE(log.find("56 records for training, 8 held out; chat template chatml"),
              std::string::npos)
        << log;
    EXPECT_NE(log.find("trained on the assistant's answers only"), std::string::npos) << log;
    // It learns the answers: the held-out answer loss falls far below its start.
    ASSERT_TRUE(std::isfinite(summary.initialEvalLoss));
    EXPECT_LT(summary.finalEvalLoss, 0.5 * summary.initialEvalLoss)
        << summary.initialEvalLoss << " -> " << summary.finalEvalLoss;
    // The run folder's tokenizer keeps ChatML's tokens, so the model can be chatted with.
    auto tok = modelio::loadTokenizerAt(summary.modelDir);
    ASSERT_TRUE(tok.ok()) << tok.error().message;
    EXPECT_EQ((*tok)->encode("<|im_start|>"), std::vector<int32_t>{256});
    EXPECT_EQ((*tok)->encode("<|im_end|>"), std::vector<int32_t>{257});
}

TEST(ChatSession, BadRecordsAndASmallVocabularyAreRefusedByName) {
    TempDir dir;
    const fs::path data = writeChat(dir, 16);
    {
        std::ofstream out(data, std::ios::app);
        out << "{\"messages\": [{\"role\": \"user\", \"content\": \"unfinished\"\n";
    }
    auto options = sessionOptionsIn(dir);
    options.recordInStore = false;
    RunSummary summary = train(chatConfig(dir, data, 2), options);
    EXPECT_EQ(summary.state, RunState::Failed);
    EXPECT_NE(summary.detail.find("chat.jsonl:17"), std::string::npos) << summary.detail;

    const fs::path good = writeChat(dir, 16);
    summary = train(chatConfig(dir, good, 2, {"model.vocab_size=256"}), options);
    EXPECT_EQ(summary.state, RunState::Failed);
    EXPECT_NE(summary.detail.find("vocab_size"), std::string::npos) << summary.detail;
}

}  // namespace
}  // namespace ws::session
