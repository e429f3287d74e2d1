// SPDX-License-Identifier: GPL-3.0-or-later
// The data a run reads (see run_data.h).
#include "engine/session/run_data.h"

#include "engine/config/validate.h"
#include "engine/session/chat_run_data.h"
#include "engine/session/hdf5_run_data.h"
#include "engine/session/run_data_read.h"

namespace ws::session {

std::vector<RunDataInput> runDataInputs(const config::Config& cfg) {
    std::vector<RunDataInput> inputs;
    inputs.push_back({"train_input.data_dir", cfg.trainInput.dataDir, cfg.trainInput.allowBinary,
                      "set train_input.allow_binary: true to train on it anyway"});
    if (!cfg.evalInput.dataDir.empty())
        inputs.push_back({"eval_input.data_dir", cfg.evalInput.dataDir, cfg.evalInput.allowBinary,
                          "set eval_input.allow_binary: true to evaluate on it anyway"});
    return inputs;
}

Result<data::CorpusDocuments> readRunData(const RunDataInput& input) {
    auto documents =
        data::readCorpusDocuments(input.dataDir, {input.allowNonText, input.allowHint});
    if (!documents.ok()) return Error{input.key + ": " + documents.error().message};
    return documents;
}

std::vector<std::string> checkRunData(const config::Config& cfg) {
    std::vector<std::string> problems;
    if (readsHdf5(cfg.trainInput)) {
        if (auto data = openHdf5RunData(cfg); !data.ok()) problems.push_back(data.error().message);
        return problems;
    }
    if (readsRecords(cfg.trainInput)) {
        // The run's own reading: records, template, masked encoding, examples, the vocabulary.
        if (cfg.trainInput.tokenizer.type == "train-bpe") {
            problems.push_back(
                "train_input.tokenizer.type train-bpe learns a vocabulary from plain text; chat "
                "and instruction data needs the model's own tokenizer (type bpe or hf), or byte");
            return problems;
        }
        auto tok = tokenizer::makeTokenizer(cfg.trainInput.tokenizer, {}, {});
        if (!tok.ok()) {
            problems.push_back("train_input.tokenizer: " + tok.error().message);
            return problems;
        }
        auto chat = openChatRunData(cfg, std::move(tok).value());
        if (!chat.ok())
            problems.push_back(chat.error().message);
        else if (Status v = config::checkVocab(cfg, chat->tokenizer->vocabSize()); !v.ok())
            problems.push_back(v.error().message);
        return problems;
    }
    for (const RunDataInput& input : runDataInputs(cfg)) {
        if (auto read = readRunData(input); !read.ok()) problems.push_back(read.error().message);
    }
    return problems;
}

}  // namespace ws::session
