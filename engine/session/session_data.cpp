// SPDX-License-Identifier: GPL-3.0-or-later
// Session (session.h): the run's data, the training corpus tokenized into its cache and split,
// the evaluation corpus when eval_input.data_dir names its own, and the documents variable
// sequence length packs. The rest of the preparation is in session.cpp.
#include <fmt/format.h>

#include "engine/core/paths.h"
#include "engine/data/example_batch_source.h"
#include "engine/session/chat_run_data.h"
#include "engine/session/run_data_read.h"
#include "engine/session/session.h"
#include "engine/session/session_state.h"

namespace ws::session {

// Data: corpus -> tokenizer -> token cache -> train/validation windows.
Status Session::prepareData(Prepared& p) {
    const config::Config& cfg = m_config.config;
    Impl& s = *m_impl;
    const fs::path cacheDir = m_options.cacheDir.empty() ? userCacheDir() : m_options.cacheDir;
    m_activity = "reading and tokenizing the corpus";
    auto progress = [this](double fraction, std::string_view what) {
        m_events.push(PrepareProgress{fraction, std::string(what)});
    };
    if (cluster() && packsSequences(cfg.trainInput)) {
        return Error{
            "train_input.use_vsl / short_sequence_length: packed sequences do not run across "
            "processes yet (the other ranks receive token ids only); run the job in one process "
            "(num_csx systems still train data-parallel there) or turn them off"};
    }
    if (readsHdf5(cfg.trainInput)) return prepareHdf5Data(p, cacheDir);
    if (readsRecords(cfg.trainInput)) return prepareChatData(p, cacheDir);
    const std::vector<RunDataInput> inputs = runDataInputs(cfg);
    auto documents = readRunData(inputs.front());
    if (!documents.ok()) return documents.error();
    const std::string* corpus = &documents->text;
    auto tok = tokenizer::makeTokenizer(cfg.trainInput.tokenizer, *corpus, cacheDir);
    if (!tok.ok()) return Error{"train_input.tokenizer: " + tok.error().message};
    s.tokenizer = std::move(tok).value();
    if (Status v = config::checkVocab(cfg, s.tokenizer->vocabSize()); !v.ok()) return v;
    auto cache = data::TokenCache::build(*corpus, *s.tokenizer, cacheDir, progress);
    if (!cache.ok()) return cache.error();
    s.trainCache.emplace(std::move(cache).value());
    log(LogLine::Level::Info,
        fmt::format("corpus: {} bytes -> {} tokens ({} tokenizer, vocab {}){}", corpus->size(),
                    s.trainCache->size(), s.tokenizer->kind(), s.tokenizer->vocabSize(),
                    s.trainCache->reused() ? ", token cache reused" : ""));
    p.B = cfg.trainInput.batchSize;
    p.T = cfg.trainInput.maxSequenceLength;
    const bool separateEval = !cfg.evalInput.dataDir.empty();
    auto dataset = data::Dataset::create(
        *s.trainCache, separateEval ? 0.0 : cfg.trainInput.validationFraction, p.T);
    if (!dataset.ok()) return dataset.error();
    s.dataset.emplace(std::move(dataset).value());
    m_summary.unigramEntropyNats = s.dataset->unigramEntropyNats();
    log(LogLine::Level::Info,
        fmt::format("data: {} training tokens, {} held out; unigram entropy {:.3f} nats/token "
                    "(the loss of a model that ignores context)",
                    s.dataset->trainTokens(), s.dataset->validationTokens(),
                    m_summary.unigramEntropyNats));
    p.evalData = &*s.dataset;
    if (cfg.trainInput.useVsl || (cfg.evalInput.useVsl && !separateEval)) {
        auto index =
            documentIndexFor(*documents, *s.trainCache, tokenizer::tokenByteCounts(*s.tokenizer),
                             cfg.trainInput.useVsl ? "train_input" : "eval_input", "train_input");
        if (!index.ok()) return index.error();
        s.documents.emplace(std::move(index).value());
        s.evalDocuments = s.documents;
        log(LogLine::Level::Info,
            fmt::format("variable sequence length: {} documents; attention stays inside each "
                        "and positions restart at each{}",
                        s.documents->documents(),
                        cfg.trainInput.useVsl ? "" : " (evaluation only)"));
    }
    if (!s.documents) s.documents.emplace();  // one document: short segments only, if any
    if (cfg.trainInput.shortSequenceLength > 0) {
        log(LogLine::Level::Info,
            fmt::format("two-stage schedule: steps 1 to {} train on sequences of {} tokens ({} "
                        "packed in each row of {}), then {} tokens",
                        cfg.trainInput.shortSequenceSteps, cfg.trainInput.shortSequenceLength,
                        p.T / cfg.trainInput.shortSequenceLength, p.T, p.T));
    }
    return separateEval ? prepareEvalData(p, inputs.back(), cacheDir) : Status::success();
}

// Instruction and chat records: conversations rendered with the chat template, encoded with the
// answer mask, packed into rows of whole examples (chat_run_data.h).
Status Session::prepareChatData(Prepared& p, const fs::path& cacheDir) {
    const config::Config& cfg = m_config.config;
    Impl& s = *m_impl;
    if (cluster() && cfg.trainInput.packExamples) {
        return Error{
            "train_input.pack_examples: packed examples do not run across processes yet (the "
            "other ranks receive token ids only); run the job in one process (num_csx systems "
            "still train data-parallel there) or set pack_examples: false"};
    }
    if (cfg.trainInput.tokenizer.type == "train-bpe")
        return Error{
            "train_input.tokenizer.type train-bpe learns a vocabulary from plain text; chat and "
            "instruction data needs the model's own tokenizer: set train_input.tokenizer to it "
            "(type bpe or hf), or byte"};
    m_activity = "reading the chat and instruction records";
    auto tok = tokenizer::makeTokenizer(cfg.trainInput.tokenizer, std::string_view(), cacheDir);
    if (!tok.ok()) return Error{"train_input.tokenizer: " + tok.error().message};
    auto chat = openChatRunData(cfg, std::move(tok).value());
    if (!chat.ok()) return chat.error();
    s.tokenizer = chat->tokenizer;
    s.addedTokens = chat->addedTokens;
    if (Status v = config::checkVocab(cfg, s.tokenizer->vocabSize()); !v.ok()) return v;
    p.B = cfg.trainInput.batchSize;
    p.T = cfg.trainInput.maxSequenceLength;
    m_summary.unigramEntropyNats = kNaN;
    const data::RecordReport& report = chat->report;
    log(LogLine::Level::Info,
        fmt::format("data: {} ({}); {} records for training, {} held out; chat template {}",
                    data::recordFormatName(report.format), report.evidence, chat->trainRecords,
                    chat->heldOutRecords, chat->templateName));
    for (const std::string& w : report.warnings) log(LogLine::Level::Warning, "data: " + w);
    log(LogLine::Level::Info,
        "data: " + chat->dataset->describe() +
            (cfg.trainInput.trainOnInputs ? "; trained on every token (train_on_inputs)"
             : cfg.trainInput.maskHistory ? "; trained on each conversation's last answer"
                                          : "; trained on the assistant's answers only"));
    for (const data::DataWarning& w :
         chat->dataset->warnings(cfg.runconfig.maxSteps, cfg.trainInput.batchSize))
        log(LogLine::Level::Warning, "data: " + w.message);
    s.source = std::make_unique<data::ExampleBatchSource>(std::move(chat->dataset));
    p.evalSource = s.source.get();
    return Status::success();
}

// ModelZoo's HDF5 samples: already tokenized, so the tokenizer is only checked against the model
// (and decodes samples and eval bytes); T is the files' sequence length.
Status Session::prepareHdf5Data(Prepared& p, const fs::path& cacheDir) {
    const config::Config& cfg = m_config.config;
    Impl& s = *m_impl;
    if (cfg.trainInput.tokenizer.type == "train-bpe")
        return Error{fmt::format(
            "train_input.tokenizer.type train-bpe learns a vocabulary from text, but {} reads "
            "token ids already made by a tokenizer: set train_input.tokenizer to that tokenizer "
            "(type bpe or hf), or byte for byte-level ids",
            cfg.trainInput.dataProcessor)};
    m_activity = "reading the HDF5 data sets";
    auto data = openHdf5RunData(cfg);
    if (!data.ok()) return data.error();
    auto tok = tokenizer::makeTokenizer(cfg.trainInput.tokenizer, std::string_view(), cacheDir);
    if (!tok.ok()) return Error{"train_input.tokenizer: " + tok.error().message};
    s.tokenizer = std::move(tok).value();
    if (Status v = config::checkVocab(cfg, s.tokenizer->vocabSize()); !v.ok()) return v;
    s.hdf5.emplace(std::move(data).value());
    p.B = cfg.trainInput.batchSize;
    p.T = s.hdf5->T;
    p.evalSource = &s.hdf5->evalSource();
    m_summary.unigramEntropyNats = kNaN;
    log(LogLine::Level::Info, "data (train_input): " + s.hdf5->train->describe());
    if (s.hdf5->eval) log(LogLine::Level::Info, "data (eval_input): " + s.hdf5->eval->describe());
    return Status::success();
}

// eval_input.data_dir given: the evaluation reads all of its own corpus, in the run's tokenizer.
Status Session::prepareEvalData(Prepared& p, const RunDataInput& input, const fs::path& cacheDir) {
    const config::Config& cfg = m_config.config;
    Impl& s = *m_impl;
    auto progress = [this](double fraction, std::string_view what) {
        m_events.push(PrepareProgress{fraction, std::string(what)});
    };
    auto evalCorpus = readRunData(input);
    if (!evalCorpus.ok()) return evalCorpus.error();
    auto evalCache = data::TokenCache::build(evalCorpus->text, *s.tokenizer, cacheDir, progress);
    if (!evalCache.ok()) return evalCache.error();
    s.evalCache.emplace(std::move(evalCache).value());
    auto evalDataset = data::Dataset::create(*s.evalCache, 1.0, p.T);
    if (!evalDataset.ok()) return Error{"eval_input.data_dir: " + evalDataset.error().message};
    s.evalDataset.emplace(std::move(evalDataset).value());
    p.evalData = &*s.evalDataset;
    s.evalDocuments.reset();
    if (cfg.evalInput.useVsl) {
        auto index = documentIndexFor(*evalCorpus, *s.evalCache,
                                      tokenizer::tokenByteCounts(*s.tokenizer), "eval_input");
        if (!index.ok()) return index.error();
        s.evalDocuments.emplace(std::move(index).value());
    }
    return Status::success();
}

}  // namespace ws::session
