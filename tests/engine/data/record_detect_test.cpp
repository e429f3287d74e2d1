// SPDX-License-Identifier: GPL-3.0-or-later
// Format detection over every record: the evidence reported, mixed and ambiguous files refused
// with the records named and the train_input.format fix, ignored keys warned about.
#include "engine/data/record_detect.h"

#include <gtest/gtest.h>

#include "record_test_support.h"

namespace ws::data {
namespace {
using testing::contains;
using testing::readError;
using testing::readOk;

TEST(RecordDetect, ShapesFollowTheKeysOfEachRecord) {
    using F = RecordFormat;
    auto shapes = [](const char* json) { return recordShapes(nlohmann::json::parse(json)); };
    EXPECT_EQ(shapes(R"({"messages": []})"), std::vector<F>{F::Messages});
    EXPECT_EQ(shapes(R"({"messages": "x"})"), std::vector<F>{});  // not a list: no shape
    EXPECT_EQ(shapes(R"({"conversations": []})"), std::vector<F>{F::ShareGpt});
    EXPECT_EQ(shapes(R"({"instruction": "", "output": ""})"), std::vector<F>{F::Alpaca});
    EXPECT_EQ(shapes(R"({"instruction": ""})"), std::vector<F>{});
    EXPECT_EQ(shapes(R"({"prompt": "", "completion": ""})"), std::vector<F>{F::PromptCompletion});
    EXPECT_EQ(shapes(R"({"text": ""})"), std::vector<F>{F::TextRecords});
    EXPECT_EQ(shapes(R"({"text": 1})"), std::vector<F>{});
    EXPECT_EQ(shapes(R"({"prompt": "", "completion": "", "messages": []})"),
              (std::vector<F>{F::Messages, F::PromptCompletion}));
    // text is the fallback: another shape with `text` beside it is that shape.
    EXPECT_EQ(shapes(R"({"instruction": "", "output": "", "text": ""})"),
              std::vector<F>{F::Alpaca});
}

TEST(RecordDetect, EveryRecordIsLookedAtNotTheFirstOnly) {
    std::string text;
    for (int i = 0; i < 50; ++i)
        text +=
            R"({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]})"
            "\n";
    text += R"({"instruction": "q", "output": "a"})"
            "\n";
    const std::string error = readError(text, "mixed.jsonl");
    EXPECT_TRUE(contains(error,
                         "mixed.jsonl: records of different formats: 50 records of OpenAI "
                         "messages (mixed.jsonl:1, mixed.jsonl:2, mixed.jsonl:3, ...); 1 "
                         "record of Alpaca instructions (mixed.jsonl:51)"))
        << error;
    EXPECT_TRUE(contains(error, "set train_input.format to messages or alpaca")) << error;
}

TEST(RecordDetect, ARecordWithTwoFormatsKeysIsAmbiguous) {
    const std::string error = readError(
        R"({"prompt": "q", "completion": "a", "messages": [{"role": "user", "content": "q"}]})",
        "amb.jsonl");
    EXPECT_TRUE(contains(error,
                         "amb.jsonl:1: the record fits messages or prompt_completion (its "
                         "keys: `completion`, `messages`, `prompt`); set "
                         "train_input.format to the one to read"))
        << error;
    // Setting the format reads it.
    RecordOptions options;
    options.format = RecordFormat::PromptCompletion;
    const auto set = readOk(
        R"({"prompt": "q", "completion": "a", "messages": [{"role": "user", "content": "q"}]})",
        "amb.jsonl", options);
    ASSERT_EQ(set.conversations.size(), 1u);
    EXPECT_EQ(set.conversations[0].messages[1].content, "a");
}

TEST(RecordDetect, ARecordOfNoFormatNamesItsKeysAndTheKeysNeeded) {
    const std::string error = readError(R"({"question": "q", "answer": "a"})"
                                        "\n",
                                        "odd.jsonl");
    EXPECT_TRUE(contains(error,
                         "odd.jsonl:1: a record of no known format (its keys: `answer`, "
                         "`question`); records hold `messages`, `conversations`, "
                         "`instruction` and `output`, `prompt` and `completion`, or "
                         "`text`"))
        << error;
}

TEST(RecordDetect, IgnoredTextBesideAlpacaKeysIsAWarning) {
    const auto set = readOk(
        R"({"instruction": "q", "output": "a", "text": "### Instruction: q ### Response: a"})"
        "\n"
        R"({"instruction": "q2", "output": "a2"})",
        "alpaca.jsonl");
    EXPECT_EQ(set.report.format, RecordFormat::Alpaca);
    ASSERT_EQ(set.report.warnings.size(), 1u);
    EXPECT_EQ(set.report.warnings[0],
              "1 record also carries `text`, which is ignored (read as Alpaca instructions); set "
              "train_input.format: text_records to train on `text` instead");
    RecordOptions text;
    text.format = RecordFormat::TextRecords;
    const std::string missing = readError(R"({"instruction": "q", "output": "a", "text": "x"})"
                                          "\n"
                                          R"({"instruction": "q2", "output": "a2"})",
                                          "alpaca.jsonl", text);
    EXPECT_TRUE(contains(missing, "alpaca.jsonl:2: the record has no `text`")) << missing;
}

TEST(RecordDetect, ColumnsOnJsonAndJsonFormatsOnCsvAreRefused) {
    RecordOptions columns;
    columns.format = RecordFormat::Columns;
    EXPECT_TRUE(contains(readError(R"({"text": "a"})", "d.jsonl", columns),
                         "d.jsonl: train_input.format is columns, which reads CSV/TSV files"));
    RecordOptions messages;
    messages.format = RecordFormat::Messages;
    EXPECT_TRUE(contains(readError("prompt,answer\nq,a\n", "d.csv", messages),
                         "d.csv: train_input.format is messages, a JSON record format; this is a "
                         "CSV file"));
}

TEST(RecordDetect, FormatKeysRoundTrip) {
    for (auto f : {RecordFormat::Auto, RecordFormat::Text, RecordFormat::Messages,
                   RecordFormat::ShareGpt, RecordFormat::Alpaca, RecordFormat::PromptCompletion,
                   RecordFormat::TextRecords, RecordFormat::Columns}) {
        EXPECT_EQ(parseRecordFormat(recordFormatKey(f)), f);
    }
    EXPECT_EQ(parseRecordFormat("chatml"), std::nullopt);
    EXPECT_EQ(recordFormatKeys(),
              "auto, text, messages, sharegpt, alpaca, prompt_completion, text_records, columns");
}

}  // namespace
}  // namespace ws::data
