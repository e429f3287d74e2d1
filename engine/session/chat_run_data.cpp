// SPDX-License-Identifier: GPL-3.0-or-later
// Chat run data: see chat_run_data.h.
#include "engine/session/chat_run_data.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "engine/config/validate.h"
#include "engine/data/chat_examples.h"
#include "engine/data/chat_records.h"
#include "engine/data/record_split.h"
#include "engine/fileio/atomic_file.h"
#include "engine/tokenizer/special_tokens.h"

namespace ws::session {

namespace fs = std::filesystem;

namespace {

// The records at `indices` (conversations, or texts when there are none).
data::RecordSet subset(const data::RecordSet& records, const std::vector<size_t>& indices) {
    data::RecordSet out;
    for (const size_t i : indices) {
        if (!records.conversations.empty())
            out.conversations.push_back(records.conversations[i]);
        else
            out.texts.push_back(records.texts[i]);
    }
    return out;
}

}  // namespace

data::RecordOptions recordOptions(const config::InputConfig& input) {
    data::RecordOptions o;
    o.format = data::parseRecordFormat(input.format).value_or(data::RecordFormat::Auto);
    o.promptColumn = input.promptColumn;
    o.answerColumn = input.answerColumn;
    o.systemColumn = input.systemColumn;
    o.idColumn = input.idColumn;
    o.parentIdColumn = input.parentIdColumn;
    return o;
}

Result<data::RecordSet> readRecords(const config::InputConfig& input, const std::string& key) {
    data::RecordSet all;
    std::string textFile, chatFile;
    for (const std::string& entry : input.dataDir) {
        auto one = data::readRecordFile(entry, recordOptions(input));
        if (!one.ok()) return Error{key + ": " + one.error().message};
        (one->texts.empty() ? chatFile : textFile) = entry;
        if (!textFile.empty() && !chatFile.empty())
            return Error{fmt::format(
                "{}: {} holds conversations but {} holds plain text records; train on one kind "
                "at a time (split them into two runs, or set format: text to read both as text)",
                key, chatFile, textFile)};
        const size_t groupBase =
            all.conversationGroups.empty()
                ? 0
                : *std::max_element(all.conversationGroups.begin(), all.conversationGroups.end()) +
                      1;
        for (size_t g : one->conversationGroups) all.conversationGroups.push_back(groupBase + g);
        std::move(one->conversations.begin(), one->conversations.end(),
                  std::back_inserter(all.conversations));
        std::move(one->texts.begin(), one->texts.end(), std::back_inserter(all.texts));
        if (all.report.evidence.empty()) {
            all.report = one->report;
        } else {
            all.report.records += one->report.records;
            all.report.conversations += one->report.conversations;
            all.report.blankLines += one->report.blankLines;
            for (std::string& w : one->report.warnings) all.report.warnings.push_back(std::move(w));
        }
    }
    return all;
}

static std::string firstPrompt(const data::RecordSet& records) {
    if (!records.texts.empty()) return records.texts.front().text;
    for (const chat::Conversation& c : records.conversations)
        for (const chat::ChatMessage& m : c.messages)
            if (m.role == "user") return m.content;
    return {};
}

Result<chat::ChatTemplate> chatTemplateFor(const config::InputConfig& input) {
    const std::string& name = input.chatTemplate;
    if (name == "auto") {
        const fs::path folder = tokenizerFolder(input.tokenizer);
        if (folder.empty()) return chat::ChatTemplate::builtin("chatml");
        return chat::ChatTemplate::forModel(folder);
    }
    if (name.ends_with(".jinja")) {
        auto source = fileio::readWholeFile(name);
        if (!source.ok()) return Error{"train_input.chat_template: " + source.error().message};
        return chat::ChatTemplate::fromSource(name, std::move(source).value());
    }
    auto builtin = chat::ChatTemplate::builtin(name);
    if (!builtin.ok()) return Error{"train_input.chat_template: " + builtin.error().message};
    return builtin;
}

data::ChatMaskOptions chatMaskOptions(const config::InputConfig& input) {
    return {.trainOnInputs = input.trainOnInputs, .maskHistory = input.maskHistory};
}

Result<RunRecords> readRunRecords(const config::Config& cfg) {
    const config::InputConfig& input = cfg.trainInput;
    auto records = readRecords(input, "train_input.data_dir");
    if (!records.ok()) return records.error();
    RunRecords out;
    out.report = records->report;
    if (!cfg.evalInput.dataDir.empty()) {
        auto eval = readRecords(cfg.evalInput, "eval_input.data_dir");
        if (!eval.ok()) return eval.error();
        out.heldOut = std::move(eval).value();
        out.heldOut.report = {};
        out.train = std::move(records).value();
        out.train.report = {};
        return out;
    }
    auto split = data::splitHeldOut(
        *records, {.fraction = input.validationRecords > 0 ? 0.0 : input.validationFraction,
                   .count = input.validationRecords,
                   .seed = static_cast<uint64_t>(input.shuffleSeed)});
    if (!split.ok()) return Error{"train_input.validation_records: " + split.error().message};
    out.train = subset(*records, split->train);
    out.heldOut = subset(*records, split->heldOut);
    return out;
}

Result<std::shared_ptr<const tokenizer::Tokenizer>> templateTokenizer(
    const chat::ChatTemplate& chatTemplate, std::shared_ptr<const tokenizer::Tokenizer> tokenizer) {
    auto tokens = tokenizer::withSpecialTokens(std::move(tokenizer), chatTemplate.specialTokens());
    if (!tokens.ok()) return Error{"train_input.chat_template: " + tokens.error().message};
    return tokens->tokenizer;
}

data::ExampleOptions exampleOptions(const config::InputConfig& input,
                                    const chat::ChatTemplate& chatTemplate,
                                    const tokenizer::Tokenizer& tokenizer) {
    data::ExampleOptions options;
    options.T = input.maxSequenceLength;
    options.pack = input.packExamples;
    options.longExamples =
        input.longExamples == "refuse" ? data::LongExamples::Refuse : data::LongExamples::Truncate;
    options.seed = static_cast<uint64_t>(input.shuffleSeed);
    const std::vector<int32_t> eos = tokenizer.encode(chatTemplate.eosToken());
    options.padId = eos.size() == 1 ? eos[0] : 0;
    return options;
}

bool readsRecords(const config::InputConfig& input) {
    if (input.dataProcessor == "GptHDF5DataProcessor" ||
        input.dataProcessor == "GptHDF5MapDataProcessor")
        return false;
    if (input.format == "text") return false;
    if (input.format != "auto") return true;
    if (input.dataDir.empty()) return false;
    return std::all_of(input.dataDir.begin(), input.dataDir.end(), [](const std::string& entry) {
        std::error_code ec;
        return fs::is_regular_file(entry, ec) && data::isRecordFile(entry);
    });
}

std::string lossCountsLabel(const config::InputConfig& input) {
    if (!readsRecords(input) || input.trainOnInputs) return {};
    return input.maskHistory ? "last answer tokens" : "answer tokens";
}

fs::path tokenizerFolder(const config::TokenizerConfig& tokenizer) {
    if (tokenizer.type == "hf" && !tokenizer.tokenizerFile.empty())
        return fs::path(tokenizer.tokenizerFile).parent_path();
    if (tokenizer.type == "bpe" && !tokenizer.vocabFile.empty())
        return fs::path(tokenizer.vocabFile).parent_path();
    return {};
}

Result<ChatRunData> openChatRunData(const config::Config& cfg,
                                    std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
                                    VocabCheck vocabCheck) {
    const config::InputConfig& input = cfg.trainInput;
    auto records = readRunRecords(cfg);
    if (!records.ok()) return records.error();

    auto chatTemplate = chatTemplateFor(input);
    if (!chatTemplate.ok()) return chatTemplate.error();
    const int before = tokenizer->vocabSize();
    auto tokens = templateTokenizer(*chatTemplate, std::move(tokenizer));
    if (!tokens.ok()) return tokens.error();
    // Before the examples: a vocabulary without room for the template's tokens is the first fix.
    if (Status v = vocabCheck == VocabCheck::Grow ? Status::success()
                                                  : config::checkVocab(cfg, (*tokens)->vocabSize());
        !v.ok()) {
        const int added = (*tokens)->vocabSize() - before;
        if (added <= 0) return v.error();
        return Error{
            fmt::format("the chat template {} needs {} special token(s) ({}) after the "
                        "tokenizer's {}: {} (base weights named by runconfig.checkpoint_path "
                        "then grow: their rows are copied and each new row is their mean; "
                        "`wafer finetune --base B --data RECORDS` sets this up)",
                        chatTemplate->name(), added, fmt::join(chatTemplate->specialTokens(), ", "),
                        before, v.error().message)};
    }

    ChatRunData out;
    out.tokenizer = std::move(tokens).value();
    out.templateName = chatTemplate->name();
    out.stopStrings = chatTemplate->stopStrings();
    out.baseVocab = before;
    std::vector<std::string> added;  // the template's tokens with new ids
    for (const std::string& special : chatTemplate->specialTokens()) {
        const std::vector<int32_t> id = out.tokenizer->encode(special);
        if (id.size() == 1 && id[0] >= before) added.push_back(special);
    }
    if (!added.empty())
        out.addedTokens = fmt::format("{}'s {}", chatTemplate->name(), fmt::join(added, ", "));
    out.report = records->report;
    out.trainRecords = records->train.conversations.size() + records->train.texts.size();
    out.heldOutRecords = records->heldOut.conversations.size() + records->heldOut.texts.size();
    out.heldOutPrompt = firstPrompt(records->heldOut);
    const data::ChatMaskOptions mask = chatMaskOptions(input);
    auto train = data::makeExamples(records->train, *chatTemplate, *out.tokenizer, mask);
    if (!train.ok()) return train.error();
    auto heldOut = data::makeExamples(records->heldOut, *chatTemplate, *out.tokenizer, mask);
    if (!heldOut.ok()) return heldOut.error();

    auto dataset =
        data::ExampleDataset::create(std::move(train).value(), std::move(heldOut).value(),
                                     exampleOptions(input, *chatTemplate, *out.tokenizer));
    if (!dataset.ok()) return Error{"train_input.data_dir: " + dataset.error().message};
    if (Status st = dataset->checkBatch(input.batchSize); !st.ok())
        return Error{"train_input.batch_size: " + st.error().message};
    out.dataset = std::make_unique<data::ExampleDataset>(std::move(dataset).value());
    return out;
}

}  // namespace ws::session
