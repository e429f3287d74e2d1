// SPDX-License-Identifier: GPL-3.0-or-later
// `wafer eval MODEL --data FILE [--json] [--seq-len N] [--batch B] [--max-tokens N]`: the mean
// loss, perplexity, bits per byte and token count of a text under a model (a run id, a run or
// checkpoint folder, a model file, a Hugging Face folder or cached model id, `base`), through the
// trainer's forward (engine/sample/text_eval.h, which defines the windows exactly).
// With chat or instruction records as --data (a held-out set), the model answers each record's
// last question instead (engine/sample/answer_check.h): exact match, the answer loss, and the
// best and worst records by it.
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/output.h"
#include "engine/data/chat_records.h"
#include "engine/fileio/atomic_file.h"
#include "engine/interop/model_ref.h"
#include "engine/sample/answer_check.h"
#include "engine/sample/text_eval.h"
#include "engine/tensor/threads.h"

namespace ws::cli {
namespace {

struct EvalOptions {
    std::string model;
    std::string data;
    sample::TextEvalOptions eval;
    int threads = -1;
    // Records as --data:
    size_t answers = 0;  // the first N cases (0: all)
    int maxNewTokens = 64;
    std::string chatTemplate = "auto";
    int show = 3;  // best and worst cases printed
};

nlohmann::json outcomeJson(const sample::AnswerOutcome& o) {
    return {{"origin", o.origin},
            {"question", o.question},
            {"reference", o.reference},
            {"reply", o.reply},
            {"exact", o.exact},
            {"stop_reason", sample::stopReasonName(o.stop)},
            {"answer_loss", number(o.answerLoss)},
            {"answer_tokens", o.answerTokens}};
}

std::string outcomeLine(const sample::AnswerOutcome& o) {
    return fmt::format("  {} {}  loss {:.3f}  reply \"{}\"{}", o.exact ? "=" : "x", o.origin,
                       o.answerLoss, o.reply,
                       o.exact ? std::string() : fmt::format(" (answer \"{}\")", o.reference));
}

// --data names chat or instruction records: the held-out answers check.
int runAnswerEval(const EvalOptions& opt, const CommonOptions& common) {
    auto records = data::readRecordFile(opt.data);
    if (!records.ok()) return fail("--data: " + records.error().message);
    const std::vector<sample::AnswerCase> cases =
        sample::answerCases(records->conversations, opt.answers);
    if (cases.empty())
        return fail(fmt::format(
            "--data {}: no record is a conversation ending with an assistant's answer ({}), so "
            "there is nothing to compare replies with; give held-out chat or instruction records",
            opt.data, records->report.evidence));
    std::string described;
    auto model = interop::loadModelRef(opt.model, common.dbPath, &described);
    if (!model.ok()) return fail(model.error().message);
    auto chatModel = sample::prepareChatModel(std::move(model).value(), opt.chatTemplate);
    if (!chatModel.ok()) return fail(chatModel.error().message);
    if (!common.json) {
        std::cout << fmt::format(
            "model: {} ({} parameters), chat template {} ({})\n"
            "data: {}: {}; answering {} of {} conversations greedily (at most {} tokens "
            "each)\n",
            described, (*chatModel)->model.facts.parameters, (*chatModel)->chatTemplate.name(),
            (*chatModel)->templateWhy, opt.data, records->report.evidence, cases.size(),
            records->conversations.size(), opt.maxNewTokens);
    }
    const bool tty = !common.json && isatty(fileno(stderr));
    size_t done = 0;
    auto outcomes = sample::checkAnswers(
        *chatModel, true, cases, sample::greedyAnswerOptions(opt.maxNewTokens),
        [&](const sample::AnswerOutcome&) {
            ++done;
            if (tty)
                std::cerr << fmt::format("\r{} of {} answered", done, cases.size()) << std::flush;
        },
        &catchCtrlC());
    restoreCtrlC();
    if (tty) std::cerr << "\r\033[K" << std::flush;
    if (!outcomes.ok()) return fail(outcomes.error().message);
    const sample::AnswerSummary s = sample::summarize(*outcomes);
    const auto ranked = sample::byAnswerLoss(*outcomes);
    if (common.json) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& o : *outcomes) list.push_back(outcomeJson(o));
        std::cout << nlohmann::json{{"event", "eval_answers"},
                                    {"model", described},
                                    {"data", opt.data},
                                    {"chat_template", (*chatModel)->chatTemplate.name()},
                                    {"cases", s.cases},
                                    {"exact", s.exact},
                                    {"exact_fraction", number(s.exactFraction())},
                                    {"answer_loss", number(s.meanAnswerLoss)},
                                    {"outcomes", list}}
                         .dump()
                  << std::endl;
        return 0;
    }
    std::cout << fmt::format("exact match {}/{} ({:.1f}%)   answer loss {:.4f} nats/token\n",
                             s.exact, s.cases, 100.0 * s.exactFraction(), s.meanAnswerLoss);
    const size_t show = std::min(size_t(std::max(opt.show, 0)), ranked.size() / 2);
    if (show > 0) {
        std::cout << "best by answer loss:\n";
        for (size_t i = 0; i < show; ++i) std::cout << outcomeLine(ranked[i]) << "\n";
        std::cout << "worst by answer loss:\n";
        for (size_t i = 0; i < show; ++i)
            std::cout << outcomeLine(ranked[ranked.size() - 1 - i]) << "\n";
    }
    return 0;
}

int runEval(const EvalOptions& opt, const CommonOptions& common) {
    if (opt.threads >= 0) tensor::setComputeThreads(opt.threads);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(opt.data, ec)) {
        return fail(fmt::format("--data {}: no such file; give the text file to score", opt.data));
    }
    if (data::isRecordFile(opt.data)) return runAnswerEval(opt, common);
    auto text = fileio::readWholeFile(opt.data);
    if (!text.ok()) return fail(text.error().message);
    std::string described;
    auto model = interop::loadModelRef(opt.model, common.dbPath, &described);
    if (!model.ok()) return fail(model.error().message);

    sample::TextEvalOptions options = opt.eval;
    options.cancel = &catchCtrlC();
    auto result =
        sample::evaluateText(model->shape, model->params.data(), *model->tokenizer, *text, options);
    restoreCtrlC();
    if (!result.ok()) return fail(fmt::format("--data {}: {}", opt.data, result.error().message));
    const auto& r = *result;
    if (common.json) {
        std::cout << nlohmann::json{{"event", "eval"},
                                    {"model", described},
                                    {"data", opt.data},
                                    {"parameters", model->facts.parameters},
                                    {"tokenizer", model->tokenizer->kind()},
                                    {"precision", r.bf16 ? "bf16" : "fp32"},
                                    {"text_bytes", r.textBytes},
                                    {"text_tokens", r.textTokens},
                                    {"tokens", r.tokens},
                                    {"scored_tokens", r.scoredTokens},
                                    {"scored_bytes", r.scoredBytes},
                                    {"seq_len", r.seqLen},
                                    {"batch", r.batch},
                                    {"windows", r.windows},
                                    {"total_nats", number(r.totalNats)},
                                    {"loss", number(r.loss)},
                                    {"perplexity", number(r.perplexity)},
                                    {"bits_per_byte", number(r.bitsPerByte)},
                                    {"cancelled", r.cancelled}}
                         .dump()
                  << std::endl;
        return 0;
    }
    std::cout << fmt::format(
        "model: {} ({} parameters, {}, context {} tokens)\n"
        "text: {}, {} bytes -> {} tokens ({} tokenizer){}\n"
        "windows: {} of up to {} tokens, {} at a time; {} tokens scored ({} bytes), the first "
        "is context only\n"
        "loss {:.4f} nats/token   perplexity {:.3f}   bits per byte {:.4f}\n",
        described, model->facts.parameters, r.bf16 ? "bf16" : "fp32", model->shape.maxPositions,
        opt.data, r.textBytes, r.textTokens, model->tokenizer->kind(),
        r.tokens < r.textTokens
            ? fmt::format(", cut to the first {} (--max-tokens {})", r.tokens, opt.eval.maxTokens)
            : std::string(),
        r.windows, r.seqLen, r.batch, r.scoredTokens, r.scoredBytes, r.loss, r.perplexity,
        r.bitsPerByte);
    if (r.cancelled) std::cout << "stopped early (Ctrl-C): the figures cover the windows done\n";
    return 0;
}

}  // namespace

void addEvalCommand(CLI::App& app, CommonOptions& common, int& exitCode) {
    auto opt = std::make_shared<EvalOptions>();
    CLI::App* cmd = app.add_subcommand(
        "eval",
        "Score a text under a model: mean loss (nats per token), perplexity, bits per byte and "
        "token count, through the trainer's forward in the model's precision. The text is "
        "tokenized whole (t0 ... tn-1) and cut into non-overlapping windows of the model's "
        "context T (or --seq-len): window k feeds t[kT] ... t[kT+T-1] and scores t[kT+1] ... "
        "t[kT+T], so every token but the first is scored exactly once, with the tokens since "
        "its window's start as context; the last window is shorter. Bits per byte = total "
        "nats / ln 2 / the bytes the scored tokens decode to");
    cmd->add_option("model", opt->model,
                    "A run id, a run folder, a checkpoint-<step> folder, a model.safetensors, a "
                    "Hugging Face folder, a model id in the local Hugging Face cache "
                    "(org/name[@revision]), or `base` (the shipped base model)")
        ->required();
    cmd->add_option("--data", opt->data,
                    "The text file to score (read as bytes, UTF-8); or chat / instruction "
                    "records (.jsonl, .json, .csv, .tsv, .zip), whose last answers the model "
                    "gives greedily: exact match and answer loss")
        ->required();
    cmd->add_option("--answers", opt->answers,
                    "Records: check the first N conversations (default: all)")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--max-new-tokens", opt->maxNewTokens,
                    "Records: the longest reply in tokens (default 64)")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--chat-template", opt->chatTemplate,
                    "Records: the chat template (auto: the run's, else the model's own, else "
                    "ChatML; a built-in name or a .jinja file)");
    cmd->add_option("--show", opt->show,
                    "Records: how many best and worst records by answer loss to print (default "
                    "3)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--seq-len", opt->eval.seqLen,
                    "Window length T in tokens (default: the model's max_position_embeddings; "
                    "shorter windows give each token less context and a higher loss)")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--batch", opt->eval.batch,
                    "Full windows per forward pass (default 1; changes speed and memory, the "
                    "figures only by float rounding)")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--max-tokens", opt->eval.maxTokens,
                    "Score only the first N tokens after the first (default: the whole text)")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--threads", opt->threads, "CPU threads (0 = all)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--db", common.dbPath, "Run store (SQLite file) for a model given as a run id");
    cmd->add_flag("--json", common.json,
                  "One JSON object on stdout (keys: loss, perplexity, bits_per_byte, tokens, "
                  "scored_tokens, scored_bytes, windows, seq_len, ...; for records: cases, exact, "
                  "exact_fraction, answer_loss, outcomes)");
    cmd->callback([opt, &common, &exitCode] { exitCode = runEval(*opt, common); });
}

}  // namespace ws::cli
