// SPDX-License-Identifier: GPL-3.0-or-later
// The JSON/JSONL record formats (messages, ShareGPT, Alpaca, prompt/completion, text records)
// read into conversations, and every bad-input error naming file:line or the record index.
#include <gtest/gtest.h>

#include "record_test_support.h"

namespace ws::data {
namespace {
using chat::ChatMessage;
using testing::contains;
using testing::readError;
using testing::readOk;

TEST(JsonRecords, OpenAiMessagesWithTextPartsJoinedAndDeveloperAsSystem) {
    const auto set = readOk(
        R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]})"
        "\n\n"
        R"({"messages": [{"role": "developer", "content": "Terse."}, {"role": "user", "content": [{"type": "text", "text": "Part one"}, {"type": "text", "text": "part two"}]}, {"role": "assistant", "content": "Ok", "weight": 1}]})"
        "\n",
        "chat.jsonl");
    ASSERT_EQ(set.conversations.size(), 2u);
    EXPECT_EQ(set.conversations[0].messages,
              (std::vector<ChatMessage>{
                  {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello"}}));
    EXPECT_EQ(set.conversations[0].origin, "chat.jsonl:1");
    EXPECT_EQ(set.conversations[1].origin, "chat.jsonl:3");
    EXPECT_EQ(set.conversations[1].messages[0], (ChatMessage{"system", "Terse."}));
    EXPECT_EQ(set.conversations[1].messages[1].content, "Part one\npart two");
    EXPECT_EQ(set.report.format, RecordFormat::Messages);
    EXPECT_EQ(set.report.evidence, "OpenAI messages: 2 records with a `messages` list");
    EXPECT_EQ(set.report.records, 2u);
    EXPECT_EQ(set.report.conversations, 2u);
    EXPECT_EQ(set.report.blankLines, 1u);
    EXPECT_TRUE(set.report.warnings.empty());
    EXPECT_EQ(set.conversationGroups, (std::vector<size_t>{0, 1}));
}

TEST(JsonRecords, ShareGptRolesMapAndTheTopLevelSystemComesFirst) {
    const auto set = readOk(
        R"([{"system": "You help.", "conversations": [{"from": "human", "value": "Q1"}, {"from": "gpt", "value": "A1"}, {"from": "user", "value": "Q2"}, {"from": "assistant", "value": "A2"}]}])",
        "share.json");
    ASSERT_EQ(set.conversations.size(), 1u);
    EXPECT_EQ(set.conversations[0].messages, (std::vector<ChatMessage>{{"system", "You help."},
                                                                       {"user", "Q1"},
                                                                       {"assistant", "A1"},
                                                                       {"user", "Q2"},
                                                                       {"assistant", "A2"}}));
    EXPECT_EQ(set.conversations[0].origin, "share.json: record [0]");
    EXPECT_EQ(set.report.format, RecordFormat::ShareGpt);
    EXPECT_EQ(set.report.evidence, "ShareGPT conversations: 1 record with a `conversations` list");
}

TEST(JsonRecords, AlpacaJoinsInstructionAndInputWithANewlineAfterItsHistory) {
    const auto set = readOk(
        R"({"instruction": "Translate", "input": "chat", "output": "cat", "system": "Be exact.", "history": [["Translate hund", "dog"]]})"
        "\n"
        R"({"instruction": "Say hi", "input": "", "output": "hi"})"
        "\n"
        R"({"instruction": "Count", "input": null, "output": "1 2 3", "history": null})",
        "alpaca.jsonl");
    ASSERT_EQ(set.conversations.size(), 3u);
    EXPECT_EQ(set.conversations[0].messages, (std::vector<ChatMessage>{{"system", "Be exact."},
                                                                       {"user", "Translate hund"},
                                                                       {"assistant", "dog"},
                                                                       {"user", "Translate\nchat"},
                                                                       {"assistant", "cat"}}));
    EXPECT_EQ(set.conversations[1].messages,
              (std::vector<ChatMessage>{{"user", "Say hi"}, {"assistant", "hi"}}));
    EXPECT_EQ(set.conversations[2].messages[0].content, "Count");
    EXPECT_EQ(set.report.format, RecordFormat::Alpaca);
}

TEST(JsonRecords, PromptCompletionAsTextOrAsMessageLists) {
    const auto set = readOk(
        R"({"prompt": "2+2=", "completion": "4"})"
        "\n"
        R"({"prompt": [{"role": "user", "content": "Capital of France?"}], "completion": [{"role": "assistant", "content": "Paris"}]})",
        "pc.jsonl");
    ASSERT_EQ(set.conversations.size(), 2u);
    EXPECT_EQ(set.conversations[0].messages,
              (std::vector<ChatMessage>{{"user", "2+2="}, {"assistant", "4"}}));
    EXPECT_EQ(set.conversations[1].messages,
              (std::vector<ChatMessage>{{"user", "Capital of France?"}, {"assistant", "Paris"}}));
    EXPECT_EQ(set.report.format, RecordFormat::PromptCompletion);
}

TEST(JsonRecords, TextRecordsAreTrainedOnWhole) {
    const auto set = readOk("{\"text\": \"one\"}\r\n{\"text\": \"two\\nlines\"}\r\n", "t.jsonl");
    EXPECT_TRUE(set.conversations.empty());
    EXPECT_EQ(set.texts,
              (std::vector<TextRecord>{{"one", "t.jsonl:1"}, {"two\nlines", "t.jsonl:2"}}));
    EXPECT_EQ(set.report.format, RecordFormat::TextRecords);
    EXPECT_EQ(set.report.evidence,
              "text records: 2 records with only a `text` string (trained on whole, no roles)");
}

TEST(JsonRecords, JsonLinesInsideAJsonFileAreReadAndSaidSo) {
    const auto set = readOk("{\"text\": \"a\"}\n{\"text\": \"b\"}\n", "hf_export.json");
    EXPECT_EQ(set.texts.size(), 2u);
    EXPECT_EQ(set.texts[1].origin, "hf_export.json:2");
    EXPECT_TRUE(contains(set.report.evidence, "(JSON Lines in a .json file)"));
}

TEST(JsonRecords, AUtf8ByteOrderMarkIsDropped) {
    const auto set = readOk("\xEF\xBB\xBF{\"text\": \"a\"}\n", "bom.jsonl");
    ASSERT_EQ(set.texts.size(), 1u);
    EXPECT_EQ(set.texts[0].text, "a");
}

TEST(JsonRecords, PlainTextFilesAndFormatTextAreOneWholeTextRecord) {
    const auto plain = readOk("Once upon a time.\n", "story.txt");
    EXPECT_EQ(plain.report.format, RecordFormat::Text);
    EXPECT_EQ(plain.texts, (std::vector<TextRecord>{{"Once upon a time.\n", "story.txt"}}));
    RecordOptions text;
    text.format = RecordFormat::Text;
    const std::string jsonl = "{\"messages\": []}\n";
    const auto forced = readOk(jsonl, "chat.jsonl", text);
    EXPECT_EQ(forced.texts, (std::vector<TextRecord>{{jsonl, "chat.jsonl"}}));
    EXPECT_TRUE(contains(forced.report.evidence, "set by train_input.format (text)"));
    EXPECT_FALSE(isRecordFile("story.txt"));
    EXPECT_TRUE(isRecordFile("dir/Chat.JSONL"));
    EXPECT_TRUE(isRecordFile("x.csv"));
    EXPECT_TRUE(isRecordFile("x.zip"));
}

TEST(JsonRecords, ASetJsonFormatReadsAnyExtensionAsJsonLines) {
    RecordOptions options;
    options.format = RecordFormat::Alpaca;
    const auto set = readOk(R"({"instruction": "a", "output": "b"})", "data.txt", options);
    ASSERT_EQ(set.conversations.size(), 1u);
    EXPECT_EQ(set.report.evidence,
              "Alpaca instructions: set by train_input.format (alpaca), 1 record");
}

// --- bad input ---

TEST(JsonRecordErrors, MalformedLinesNameFileLineAndColumnAllOfThem) {
    const std::string error = readError(
        "{\"text\": \"ok\"}\n{\"text\": \"broken}\n{\"text\": \"ok\"}\n{\"text\" 1}\n", "d.jsonl");
    EXPECT_TRUE(contains(error, "d.jsonl:2:")) << error;
    EXPECT_TRUE(contains(error, "not valid JSON")) << error;
    EXPECT_TRUE(contains(error, "d.jsonl:4:")) << error;
    EXPECT_TRUE(contains(error, "2 bad records in all; nothing is trained")) << error;
}

TEST(JsonRecordErrors, ALineThatIsNotAnObjectSaysWhatItIs) {
    const std::string error = readError("[{\"text\": \"a\"}]\n", "d.jsonl");
    EXPECT_TRUE(contains(error, "d.jsonl:1: the line holds a list, not a record")) << error;
    EXPECT_TRUE(contains(error, "is a .json file")) << error;
}

TEST(JsonRecordErrors, ManyBadLinesShowTheFirstEightAndCountTheRest) {
    std::string text;
    for (int i = 0; i < 20; ++i) text += "nope\n";
    const std::string error = readError(text, "d.jsonl");
    EXPECT_TRUE(contains(error, "d.jsonl:8:")) << error;
    EXPECT_FALSE(contains(error, "d.jsonl:9:")) << error;
    EXPECT_TRUE(contains(error, "... and 12 more records with errors")) << error;
}

TEST(JsonRecordErrors, JsonArraysNameTheLineColumnAndTheRecordIndex) {
    EXPECT_TRUE(contains(readError("[\n  {\"text\": \"a\"},\n  {\"text\" \"b\"}\n]", "d.json"),
                         "d.json:3:"));
    const std::string notRecord = readError(R"([{"text": "a"}, 7])", "d.json");
    EXPECT_TRUE(contains(notRecord, "d.json: record [1] is a number, not a record")) << notRecord;
    const std::string object = readError(R"({"data": [{"text": "a"}]})", "d.json");
    EXPECT_TRUE(contains(object,
                         "d.json: the file holds an object with the keys `data`, not a "
                         "list of records"))
        << object;
    EXPECT_TRUE(contains(readError("[]", "d.json"), "d.json: the array holds no records"));
}

TEST(JsonRecordErrors, EmptyFilesAreRefused) {
    EXPECT_TRUE(contains(readError("", "d.jsonl"), "d.jsonl: the file holds no records"));
    EXPECT_TRUE(contains(readError("\n \n\r\n", "d.jsonl"), "d.jsonl: the file holds no records"));
    EXPECT_TRUE(contains(readError(" \n", "d.json"), "d.json: the file is empty"));
    EXPECT_TRUE(contains(readError("", "d.txt"), "d.txt: the file is empty"));
}

TEST(JsonRecordErrors, TextThatIsNotUtf8NamesTheLineAndByte) {
    const std::string error = readError("{\"text\": \"ok\"}\n{\"text\": \"caf\xE9\"}\n", "d.jsonl");
    EXPECT_TRUE(contains(error,
                         "d.jsonl:2: byte 0xE9 at column 14 is not UTF-8; save the file "
                         "as UTF-8"))
        << error;
    const std::string utf16 = readError(std::string("\xFF\xFE{\0\"\0", 6), "d.jsonl");
    EXPECT_TRUE(contains(utf16, "UTF-16 or UTF-32")) << utf16;
    const std::string binary = readError(std::string("\x7F"
                                                     "ELF\x02\x01\x01\0\0\0",
                                                     10),
                                         "d.jsonl");
    EXPECT_TRUE(contains(binary, "ELF")) << binary;
}

TEST(JsonRecordErrors, ARecordMissingItsFormatsKeysNamesTheKeysFound) {
    RecordOptions alpaca;
    alpaca.format = RecordFormat::Alpaca;
    const std::string error =
        readError(R"({"instruction": "a", "response": "b"})", "d.jsonl", alpaca);
    EXPECT_TRUE(contains(error,
                         "d.jsonl:1: the record has no `output` (Alpaca instructions need "
                         "`instruction` and `output`"))
        << error;
    EXPECT_TRUE(contains(error, "its keys: `instruction`, `response`")) << error;
    RecordOptions messages;
    messages.format = RecordFormat::Messages;
    EXPECT_TRUE(contains(readError(R"({"conversations": []})", "d.jsonl", messages),
                         "d.jsonl:1: the record has no `messages`"));
    EXPECT_TRUE(contains(readError(R"({"messages": "hi"})", "d.jsonl", messages),
                         "d.jsonl:1: `messages` is text, not a list of messages"));
}

TEST(JsonRecordErrors, BadMessagesNameTheRecordAndMessage) {
    EXPECT_TRUE(contains(readError(R"({"messages": [{"content": "x"}]})", "d.jsonl"),
                         "d.jsonl:1: `messages` message 1 has no `role`"));
    EXPECT_TRUE(contains(readError(R"({"messages": [{"role": "user"}]})", "d.jsonl"),
                         "d.jsonl:1: `messages` message 1 has no `content`; its keys: `role`"));
    EXPECT_TRUE(
        contains(readError(R"({"messages": [{"role": "user", "content": 5}]})", "d.jsonl"),
                 "`messages` message 1's content is a number, not text or a list of text parts"));
    EXPECT_TRUE(contains(
        readError(
            R"({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": null, "tool_calls": []}]})",
            "d.jsonl"),
        "d.jsonl:1: `messages` message 2 has no content (null; a tool call?)"));
    const std::string image = readError(
        R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "What is this?"}, {"type": "image_url", "image_url": {"url": "x.png"}}]}, {"role": "assistant", "content": "A cat"}]})",
        "d.jsonl");
    EXPECT_TRUE(contains(image,
                         "d.jsonl:1: `messages` message 1 part 2 is of type \"image_url\"; "
                         "only text is trained on"))
        << image;
}

TEST(JsonRecordErrors, TurnRulesAreCheckedForEveryRecord) {
    const std::string order = readError(
        R"({"messages": [{"role": "assistant", "content": "Hi"}, {"role": "user", "content": "Yo"}]})",
        "d.jsonl");
    EXPECT_TRUE(contains(order,
                         "d.jsonl:1: message 1 is from the assistant where the user "
                         "speaks next"))
        << order;
    const std::string empty = readError(R"({"instruction": "a", "output": "  "})", "d.jsonl");
    EXPECT_TRUE(contains(empty, "d.jsonl:1: message 2: the assistant's answer is empty")) << empty;
    const std::string tool = readError(
        R"({"conversations": [{"from": "human", "value": "q"}, {"from": "function_call", "value": "{}"}]})",
        "d.jsonl");
    EXPECT_TRUE(contains(tool, "has the role \"function_call\"")) << tool;
}

TEST(JsonRecordErrors, WrongKindsAreNamed) {
    EXPECT_TRUE(contains(readError(R"({"instruction": 3, "output": "b"})", "d.jsonl"),
                         "d.jsonl:1: `instruction` is a number, not text"));
    EXPECT_TRUE(contains(readError(R"({"instruction": "a", "output": ["b", "c"]})", "d.jsonl"),
                         "a preference or ranking data set"));
    EXPECT_TRUE(contains(
        readError(R"({"instruction": "a", "output": "b", "history": [["only one"]]})", "d.jsonl"),
        "`history` entry 1 is not a [prompt, answer] pair"));
    EXPECT_TRUE(contains(readError(R"({"text": "  "})", "d.jsonl"),
                         "d.jsonl:1: the record's `text` is empty"));
}

}  // namespace
}  // namespace ws::data

namespace ws::data {
namespace {

// Found by fuzzing: nlohmann reports a number past double's range as out_of_range, not as a
// parse error; it escaped the reader and ended the process.
TEST(JsonRecordErrors, ANumberPastDoublesRangeIsAnErrorNamingTheLine) {
    const std::string line = R"({"instruction": "q", "output": "a", "n": 1e999999})";
    const std::string jsonl = testing::readError("{\"text\": \"ok\"}\n" + line + "\n", "d.jsonl");
    EXPECT_TRUE(testing::contains(jsonl, "d.jsonl:2: not valid JSON here (number overflow"))
        << jsonl;
    const std::string array = testing::readError("[" + line + "]", "d.json");
    EXPECT_TRUE(testing::contains(array, "d.json: not valid JSON (number overflow")) << array;
}

}  // namespace
}  // namespace ws::data
