// `wafer eval MODEL --data FILE [--json] [--seq-len N] [--batch B] [--max-tokens N]`: the mean
// loss, perplexity, bits per byte and token count of a text under a model (a run id, a run or
// checkpoint folder, a model file, a Hugging Face folder or cached model id, `base`), through the
// trainer's forward (engine/sample/text_eval.h, which defines the windows exactly).
#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/output.h"
#include "engine/fileio/atomic_file.h"
#include "engine/interop/model_ref.h"
#include "engine/sample/text_eval.h"
#include "engine/tensor/threads.h"

namespace ws::cli {
namespace {

struct EvalOptions {
    std::string model;
    std::string data;
    sample::TextEvalOptions eval;
    int threads = -1;
};

int runEval(const EvalOptions& opt, const CommonOptions& common) {
    if (opt.threads >= 0) tensor::setComputeThreads(opt.threads);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(opt.data, ec)) {
        return fail(fmt::format("--data {}: no such file; give the text file to score", opt.data));
    }
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
    cmd->add_option("--data", opt->data, "The text file to score (read as bytes, UTF-8)")
        ->required();
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
                  "scored_tokens, scored_bytes, windows, seq_len, ...)");
    cmd->callback([opt, &common, &exitCode] { exitCode = runEval(*opt, common); });
}

}  // namespace ws::cli
