// SPDX-License-Identifier: GPL-3.0-or-later
// The preview of chat and instruction records the fine-tune wizard's Data page shows
// (session/record_preview.h): the format and the CSV columns found, the rendered examples split
// into trained and untrained text by the run's own token mask, the length histogram against the
// sequence length, the warnings and the readers' errors.
#include "engine/session/record_preview.h"

#include <gtest/gtest.h>

#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "engine/data/chat_records.h"
#include "engine/session/chat_run_data.h"
#include "engine/tokenizer/tokenizer.h"
#include "session_test_util.h"

namespace ws::session {
namespace {
using namespace testing;
namespace fs = std::filesystem;
using Kind = PreviewSegment::Kind;

// n conversations "Say <word> twice." -> "<word> <word>", every word of five letters, so every
// example has the same length.
fs::path writeChat(const TempDir& dir, int n) {
    const char* words[] = {"apple", "river", "stone", "cloud", "ember", "maple", "tiger", "piano"};
    const fs::path path = dir.path() / "chat.jsonl";
    std::ofstream out(path);
    for (int i = 0; i < n; ++i) {
        const std::string w = words[i % 8];
        out << R"({"messages": [{"role": "user", "content": "Say )" << w
            << R"( twice."}, {"role": "assistant", "content": ")" << w << " " << w << "\"}]}\n";
    }
    return path;
}

// H2O LLM Studio's shape with other column names: row 3 continues row 2's conversation.
fs::path writeCsv(const TempDir& dir) {
    const fs::path path = dir.path() / "turns.csv";
    std::ofstream out(path);
    out << "question,reply,rid,follows,note\n"
           "What is red?,A colour.,1,,x\n"
           "Name a fruit.,Apple.,2,,y\n"
           "Another one?,Pear.,3,2,z\n";
    return path;
}

RecordPreviewRequest requestFor(const TempDir& dir, const fs::path& data,
                                std::vector<std::string> extra = {}) {
    std::vector<std::string> overrides = {
        "train_input.data_dir=" + data.string(), "train_input.max_sequence_length=64",
        "train_input.batch_size=2", "train_input.validation_fraction=0"};
    overrides.insert(overrides.end(), extra.begin(), extra.end());
    RecordPreviewRequest r;
    r.config = tinyConfig(dir.path(), 10, overrides).config;
    r.tokenizer = tokenizer::makeByteTokenizer();
    return r;
}

std::string joined(const PreviewExample& e) {
    std::string all;
    for (const PreviewSegment& s : e.segments) all += s.text;
    return all;
}

std::string textOf(const PreviewExample& e, Kind kind) {
    std::string all;
    for (const PreviewSegment& s : e.segments)
        if (s.kind == kind) all += s.text;
    return all;
}

bool anyWarning(const RecordPreview& p, const std::string& part) {
    for (const std::string& w : p.warnings)
        if (w.find(part) != std::string::npos) return true;
    return false;
}

const std::string kUserTurn = "<|im_start|>user\nSay apple twice.<|im_end|>\n";
const std::string kHeader = "<|im_start|>assistant\n";

TEST(RecordPreview, MessagesShowTheFormatAndTrainTheAnswersOnly) {
    TempDir dir;
    auto p =
        previewRecords(requestFor(dir, writeChat(dir, 40), {"train_input.validation_records=4"}));
    ASSERT_EQ(p.error, "");
    EXPECT_EQ(p.report.format, data::RecordFormat::Messages);
    EXPECT_NE(p.report.evidence.find("messages"), std::string::npos) << p.report.evidence;
    EXPECT_TRUE(p.columns.empty());
    EXPECT_EQ(p.templateName, "chatml");
    EXPECT_NE(p.templateReason.find("byte tokenizer"), std::string::npos) << p.templateReason;
    EXPECT_EQ(p.trainRecords, 36u);
    EXPECT_EQ(p.heldOutRecords, 4u);
    ASSERT_EQ(p.examples.size(), 3u);
    auto plain = previewRecords(requestFor(dir, writeChat(dir, 40)));
    ASSERT_EQ(plain.error, "");
    const PreviewExample& first = plain.examples[0];
    EXPECT_NE(first.origin.find("chat.jsonl:1"), std::string::npos) << first.origin;
    // The segments are the whole rendering: the user's turn and the header untrained, the
    // answer with ChatML's end of turn ("<|im_end|>\n", chat_template.h's span) trained.
    EXPECT_EQ(joined(first), kUserTurn + kHeader + "apple apple<|im_end|>\n");
    ASSERT_EQ(first.segments.size(), 2u);
    EXPECT_EQ(first.segments[0], (PreviewSegment{kUserTurn + kHeader, Kind::Context}));
    EXPECT_EQ(first.segments[1], (PreviewSegment{"apple apple<|im_end|>\n", Kind::Trained}));
    // Byte tokens, ChatML's markers one token each: 11 + 1 + 1 trained.
    EXPECT_EQ(first.trainedTokens, 13);
    // Two <|im_start|> (12 bytes) and two <|im_end|> (10 bytes), one token each.
    const int64_t length = int64_t(joined(first).size()) - 2 * 11 - 2 * 9;
    EXPECT_EQ(first.tokens, length);
}

// The preview is the run's data: the same records, examples, rows and figures as the data a
// session opens (openChatRunData) on the same config.
TEST(RecordPreview, ShowsWhatTheRunOpens) {
    TempDir dir;
    auto request = requestFor(dir, writeChat(dir, 30),
                              {"model.vocab_size=258", "train_input.validation_records=5",
                               "train_input.max_sequence_length=40"});
    request.steps = 7;
    const RecordPreview p = previewRecords(request);
    ASSERT_EQ(p.error, "");
    auto run = openChatRunData(request.config, tokenizer::makeByteTokenizer());
    ASSERT_TRUE(run.ok()) << run.error().message;
    EXPECT_EQ(p.trainRecords, run->trainRecords);
    EXPECT_EQ(p.heldOutRecords, run->heldOutRecords);
    EXPECT_EQ(p.templateName, run->templateName);
    EXPECT_EQ(p.report.evidence, run->report.evidence);
    const data::ExampleStats& s = run->dataset->trainStats();
    EXPECT_EQ(p.stats.examples, s.examples);
    EXPECT_EQ(p.stats.tokens, s.tokens);
    EXPECT_EQ(p.stats.trainedTokens, s.trainedTokens);
    EXPECT_EQ(p.stats.truncated, s.truncated);
    EXPECT_GT(p.stats.truncated, 0);
    EXPECT_EQ(p.stats.lengths.counts, s.lengths.counts);
    EXPECT_EQ(p.rows, run->dataset->trainRows().rows());
    std::vector<std::string> warnings;
    for (const auto& w : run->dataset->warnings(7, 2)) warnings.push_back(w.message);
    EXPECT_EQ(p.warnings, warnings);
}

TEST(RecordPreview, HistogramCountsEveryTrainingExampleAgainstTheSequenceLength) {
    TempDir dir;
    auto p = previewRecords(requestFor(dir, writeChat(dir, 40)));
    ASSERT_EQ(p.error, "");
    const data::LengthHistogram& h = p.stats.lengths;
    EXPECT_EQ(h.limit, 65);
    EXPECT_EQ(h.binWidth, 5);  // ceil(65 / 16)
    const int64_t total = std::accumulate(h.counts.begin(), h.counts.end(), int64_t(0)) + h.beyond;
    EXPECT_EQ(total, int64_t(p.trainRecords));
    // Every example has the first one's length, so one bin holds them all.
    const int64_t length = p.examples[0].tokens;
    EXPECT_EQ(h.counts[size_t((length - 1) / h.binWidth)], int64_t(p.trainRecords));
    EXPECT_EQ(p.stats.truncated, 0);
    EXPECT_TRUE(p.blocking.empty()) << p.blocking;
    EXPECT_GT(p.rows, 0);
}

TEST(RecordPreview, ManyStepsOnFewExamplesWarnOfEpochs) {
    TempDir dir;
    auto request = requestFor(dir, writeChat(dir, 12));
    request.steps = 0;  // counted from epochs
    request.epochs = 3;
    request.minSteps = 200;
    auto counted = previewRecords(request);
    ASSERT_EQ(counted.error, "");
    EXPECT_TRUE(counted.stepsCounted);
    EXPECT_EQ(counted.rows, 12);    // one example of 48 tokens per row of 64
    EXPECT_EQ(counted.steps, 200);  // 3 epochs (18 steps) are fewer than the minimum
    EXPECT_DOUBLE_EQ(counted.epochs, 200.0 * 2 / 12);
    EXPECT_GT(counted.epochs, data::ExampleDataset::kManyEpochs);
    EXPECT_TRUE(anyWarning(counted, "more than 20 epochs")) << counted.warnings.size();

    request.steps = 2;
    auto few = previewRecords(request);
    EXPECT_FALSE(few.stepsCounted);
    EXPECT_EQ(few.steps, 2);
    EXPECT_FALSE(anyWarning(few, "epochs"));
}

TEST(RecordPreview, LongExamplesAreTruncatedCountedAndShownCut) {
    TempDir dir;
    auto p =
        previewRecords(requestFor(dir, writeChat(dir, 16), {"train_input.max_sequence_length=40"}));
    ASSERT_EQ(p.error, "");
    EXPECT_EQ(p.stats.truncated, int64_t(p.trainRecords));
    EXPECT_TRUE(anyWarning(p, "were truncated")) << (p.warnings.empty() ? "" : p.warnings[0]);
    const PreviewExample& first = p.examples[0];
    EXPECT_EQ(joined(first), kUserTurn + kHeader + "apple apple<|im_end|>\n");
    // The first 41 tokens stay: 24 of the user's turn, 11 of the header, 6 of the answer.
    EXPECT_EQ(textOf(first, Kind::Trained), "apple ");
    EXPECT_EQ(textOf(first, Kind::Cut), "apple<|im_end|>\n");
    EXPECT_EQ(first.trainedTokens, 6);
    EXPECT_GT(p.stats.lengths.counts[size_t((first.tokens - 1) / p.stats.lengths.binWidth)], 0);

    // Refused instead: the preview still shows the examples and says what stops the run.
    auto refused = previewRecords(
        requestFor(dir, writeChat(dir, 16),
                   {"train_input.max_sequence_length=40", "train_input.long_examples=refuse"}));
    EXPECT_EQ(refused.error, "");
    EXPECT_NE(refused.blocking.find("max_sequence_length"), std::string::npos) << refused.blocking;
    EXPECT_EQ(refused.examples.size(), 3u);
    EXPECT_EQ(refused.stats.longerThanRow, int64_t(refused.trainRecords));
}

TEST(RecordPreview, ExamplesCutBeforeTheirAnswerAreLeftOutAndSaidSo) {
    TempDir dir;
    // 20 slots: the answer starts at token 35, so nothing trained is left in the first 21.
    auto p =
        previewRecords(requestFor(dir, writeChat(dir, 8), {"train_input.max_sequence_length=20"}));
    EXPECT_EQ(p.error, "");
    // The run would refuse the data: said, with the figures of why (the histogram too).
    EXPECT_NE(p.blocking.find("raise max_sequence_length"), std::string::npos) << p.blocking;
    EXPECT_EQ(p.stats.lengths.counts[size_t(47 / 2)], 8);  // 48 tokens, bins of ceil(21 / 16)
    EXPECT_EQ(p.stats.droppedByTruncation, 8);
    EXPECT_EQ(textOf(p.examples[0], Kind::Trained), "");
    EXPECT_EQ(p.examples[0].trainedTokens, 0);
}

TEST(RecordPreview, TrainOnInputsAndMaskHistoryChangeTheSegments) {
    TempDir dir;
    const fs::path data = writeChat(dir, 20);
    auto all = previewRecords(requestFor(dir, data, {"train_input.train_on_inputs=true"}));
    ASSERT_EQ(all.error, "");
    const PreviewExample& e = all.examples[0];
    // Everything but the first token (never predicted) is trained.
    ASSERT_EQ(e.segments.size(), 2u);
    EXPECT_EQ(e.segments[0], (PreviewSegment{"<|im_start|>", Kind::Context}));
    EXPECT_EQ(e.segments[1].kind, Kind::Trained);
    EXPECT_EQ(e.trainedTokens, e.tokens - 1);
    EXPECT_TRUE(all.trainOnInputs);
}

TEST(RecordPreview, CsvChainsShowTheColumnsAndTheMappingUsed) {
    TempDir dir;
    const fs::path csv = writeCsv(dir);
    const std::vector<std::string> mapping = {
        "train_input.prompt_column=question", "train_input.answer_column=reply",
        "train_input.id_column=rid", "train_input.parent_id_column=follows",
        "train_input.max_sequence_length=128"};
    auto p = previewRecords(requestFor(dir, csv, mapping));
    ASSERT_EQ(p.error, "");
    EXPECT_EQ(p.columns, (std::vector<std::string>{"question", "reply", "rid", "follows", "note"}));
    EXPECT_EQ(p.report.format, data::RecordFormat::Columns);
    EXPECT_EQ(p.options.promptColumn, "question");
    EXPECT_NE(p.report.evidence.find("chained by `follows`"), std::string::npos)
        << p.report.evidence;
    EXPECT_TRUE(anyWarning(p, "`note`"));  // the reader's warning: a column not read
    ASSERT_EQ(p.examples.size(), 2u);      // two conversations: row 1, rows 2 -> 3
    const PreviewExample& chain = p.examples[1];
    EXPECT_EQ(textOf(chain, Kind::Trained), "Apple.<|im_end|>\nPear.<|im_end|>\n");
    const std::string context = textOf(chain, Kind::Context);
    EXPECT_NE(context.find("Name a fruit."), std::string::npos);
    EXPECT_NE(context.find("Another one?"), std::string::npos);

    // mask_history: only the chain's last answer.
    auto mapped = mapping;
    mapped.push_back("train_input.mask_history=true");
    auto last = previewRecords(requestFor(dir, csv, mapped));
    ASSERT_EQ(last.error, "");
    EXPECT_EQ(textOf(last.examples[1], Kind::Trained), "Pear.<|im_end|>\n");
    EXPECT_NE(textOf(last.examples[1], Kind::Context).find("Apple."), std::string::npos);
}

TEST(RecordPreview, AMissingColumnNamesItListsTheColumnsAndKeepsThem) {
    TempDir dir;
    auto p = previewRecords(requestFor(dir, writeCsv(dir)));  // prompt/answer by default
    EXPECT_NE(p.error.find("turns.csv"), std::string::npos) << p.error;
    EXPECT_NE(p.error.find("`prompt`"), std::string::npos) << p.error;
    EXPECT_NE(p.error.find("`question`, `reply`, `rid`, `follows`, `note`"), std::string::npos)
        << p.error;
    EXPECT_EQ(p.columns.size(), 5u);  // for the mapping to be fixed
    EXPECT_TRUE(p.examples.empty());
}

TEST(RecordPreview, AMalformedLineIsNamedWithItsFileAndLine) {
    TempDir dir;
    const fs::path path = dir.path() / "bad.jsonl";
    std::ofstream(path) << R"({"messages": [{"role": "user", "content": "Hi"}, )"
                           R"({"role": "assistant", "content": "Hello"}]})"
                        << "\n{\"messages\": [\n";
    auto p = previewRecords(requestFor(dir, path));
    EXPECT_NE(p.error.find("bad.jsonl:2"), std::string::npos) << p.error;
}

TEST(RecordPreview, TooFewRowsForABatchBlockTheRunButShowTheData) {
    TempDir dir;
    auto p = previewRecords(requestFor(dir, writeChat(dir, 4), {"train_input.batch_size=16"}));
    EXPECT_EQ(p.error, "");
    EXPECT_NE(p.blocking.find("train_input.batch_size"), std::string::npos) << p.blocking;
    EXPECT_FALSE(p.examples.empty());
}

TEST(RecordPreview, SegmentsNeverSplitACharacter) {
    // Byte tokens of "é" (2 bytes): a boundary inside it moves past it.
    const std::string text = "a\xC3\xA9z";
    const std::vector<tokenizer::ByteSpan> offsets = {{0, 1}, {1, 2}, {2, 3}, {3, 4}};
    const auto segments = previewSegments(text, offsets, {0, 1, 0, 0}, 64);
    ASSERT_EQ(segments.size(), 3u);
    EXPECT_EQ(segments[0], (PreviewSegment{"a", Kind::Context}));
    EXPECT_EQ(segments[1], (PreviewSegment{"\xC3\xA9", Kind::Trained}));
    EXPECT_EQ(segments[2], (PreviewSegment{"z", Kind::Context}));
}

TEST(RecordPreview, ColumnsOfRecordFiles) {
    TempDir dir;
    EXPECT_TRUE(recordColumns(writeChat(dir, 2))->empty());
    EXPECT_EQ(recordColumns(writeCsv(dir))->size(), 5u);
    EXPECT_FALSE(recordColumns(dir.path() / "missing.csv").ok());
    // A zip (written by Python's zipfile, tests/engine/data): its first CSV file by name.
    auto zipped = recordColumns(fs::path(WAFER_DATA_FIXTURES) / "records" / "chat_csvs.zip");
    ASSERT_TRUE(zipped.ok()) << zipped.error().message;
    EXPECT_EQ(*zipped, (std::vector<std::string>{"prompt", "answer", "id", "parent_id"}));
}

}  // namespace
}  // namespace ws::session
