// SPDX-License-Identifier: GPL-3.0-or-later
// `wafer finetune --base MODEL --data TEXT... [--set ...] [--freeze-embeddings]
// [--freeze-blocks K]`: fine-tunes a base model (run id, run or checkpoint folder, model file,
// Hugging Face folder or cached model id, `base`) on new text, or on instruction and chat
// records (rendered with a chat template, trained on the answers), with the defaults of
// engine/finetune/finetune_plan.h, as a run of kind "finetune" whose parent is the base run.
// --dry-run prints the plan and its config.
#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/output.h"
#include "engine/core/units.h"
#include "engine/finetune/finetune_plan.h"
#include "engine/session/session.h"

namespace ws::cli {
namespace {

struct FinetuneOptions {
    finetune::FinetuneRequest request;
    int64_t maxSteps = -1;
    int threads = -1;
    std::string name;
    bool dryRun = false;
};

// 'text' for a POSIX shell, so the printed command can be pasted as it is.
std::string shellQuoted(const std::string& text) {
    std::string quoted = "'";
    for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

int runFinetune(FinetuneOptions opt, const CommonOptions& common) {
    opt.request.dbPath = common.dbPath;
    if (opt.maxSteps >= 0)
        opt.request.overrides.push_back(fmt::format("runconfig.max_steps={}", opt.maxSteps));
    if (opt.threads >= 0)
        opt.request.overrides.push_back(fmt::format("runconfig.num_threads={}", opt.threads));
    auto plan = finetune::planFinetune(opt.request);
    if (!plan.ok()) return fail(plan.error().message);
    const auto& s = plan->summary;
    if (common.json) {
        nlohmann::json line{{"event", "finetune_plan"},
                            {"base", s.baseDescription},
                            {"tokenizer", s.tokenizerKind},
                            {"data_bytes", s.dataBytes},
                            {"tokens", s.tokens},
                            {"train_tokens", s.trainTokens},
                            {"held_out_tokens", s.heldOutTokens},
                            {"steps_per_epoch", s.stepsPerEpoch},
                            {"epochs", s.epochs},
                            {"max_steps", s.maxSteps},
                            {"steps_explained", finetune::explainSteps(s)},
                            {"sample_prompt", s.samplePrompt},
                            {"peak_lr", s.peakLearningRate},
                            {"base_peak_lr", s.basePeakLearningRate},
                            {"parameters", s.parameters},
                            {"frozen_parameters", s.frozenParameters},
                            {"method", s.lora ? "lora" : "full"},
                            {"bf16", s.bf16},
                            {"memoryx_bytes", s.memoryxBytes},
                            {"estimated_s", number(s.estimatedSeconds)}};
        if (s.records) {
            line["records"] = {{"format", s.recordFormat},
                               {"evidence", s.formatEvidence},
                               {"chat_template", s.chatTemplate},
                               {"train_records", s.trainRecords},
                               {"held_out_records", s.heldOutRecords},
                               {"examples", s.examples},
                               {"trained_tokens", s.trainedTokens},
                               {"truncated", s.truncated},
                               {"train_rows", s.trainRows},
                               {"held_out_rows", s.heldOutRows},
                               {"warnings", s.dataWarnings},
                               {"base_vocab", s.baseVocab},
                               {"vocab", s.vocab},
                               {"added_tokens", s.addedTokens}};
        }
        std::cout << line.dump() << std::endl;
    } else if (s.records) {
        std::cout << fmt::format(
            "fine-tune {} ({} parameters{})\n"
            "data: {}; {} records to train on, {} held out; chat template {}\n"
            "examples: {} for training ({} tokens, {} trained on: the answers; {} truncated) in "
            "{} rows of {} tokens; {} held-out row{} ({} tokens)\n"
            "{}"
            "steps: {}\n"
            "plan: {}{}, MemoryX {}, peak lr {:.3g} (base {:.3g}), estimated {} on this "
            "CPU\n",
            s.baseDescription, s.parameters,
            s.frozenParameters > 0 ? fmt::format(", {} frozen", s.frozenParameters) : "",
            s.formatEvidence.empty() ? s.recordFormat : s.formatEvidence, s.trainRecords,
            s.heldOutRecords, s.chatTemplate, s.examples, s.trainTokens, s.trainedTokens,
            s.truncated, s.trainRows, s.sequenceLength, s.heldOutRows,
            s.heldOutRows == 1 ? "" : "s", s.heldOutTokens,
            s.vocab > s.baseVocab
                ? fmt::format("vocabulary: {} → {} for {} (the base's rows copied, the new ones "
                              "mean-initialised{})\n",
                              s.baseVocab, s.vocab, s.addedTokens,
                              s.lora ? "; they train beside the adapters" : "")
                : std::string(),
            finetune::explainSteps(s), s.lora ? "LoRA (the base frozen)" : "full fine-tune",
            s.bf16 ? ", bf16" : "", formatBytes(double(s.memoryxBytes)), s.peakLearningRate,
            s.basePeakLearningRate, formatRoughDuration(s.estimatedSeconds));
        for (const std::string& w : s.dataWarnings) std::cout << "warning: data: " << w << "\n";
    } else {
        std::cout << fmt::format(
            "fine-tune {} ({} parameters{})\n"
            "data: {} bytes -> {} tokens ({} tokenizer); {} to train on, {} held out ({:.0f}%)\n"
            "steps: {}\n"
            "plan: {}{}, MemoryX {}, peak lr {:.3g} (base {:.3g}), estimated {} on this "
            "CPU\n",
            s.baseDescription, s.parameters,
            s.frozenParameters > 0 ? fmt::format(", {} frozen", s.frozenParameters) : "",
            s.dataBytes, s.tokens, s.tokenizerKind, s.trainTokens, s.heldOutTokens,
            100 * s.validationFraction, finetune::explainSteps(s),
            s.lora ? "LoRA (the base frozen)" : "full fine-tune", s.bf16 ? ", bf16" : "",
            formatBytes(double(s.memoryxBytes)), s.peakLearningRate, s.basePeakLearningRate,
            formatRoughDuration(s.estimatedSeconds));
    }
    if (!common.json) {
        for (const auto& note : plan->config.warnings) std::cout << "note: " << note << "\n";
    }
    if (opt.dryRun) {
        if (!common.json) std::cout << config::saveConfigYaml(plan->config.config);
        return 0;
    }
    session::SessionOptions options;
    options.dbPath = common.dbPath;
    options.runName = opt.name;
    options.kind = "finetune";
    options.parentRun = plan->parentRun;
    options.evaluateAtStart = true;
    const std::string prompt = s.samplePrompt;
    const bool records = s.records;
    auto created = session::Session::create(std::move(plan->config), options);
    if (!created.ok()) return fail(created.error().message);
    const int code = driveSession(**created, common);
    const session::RunSummary& result = (*created)->summary();
    // JSON: the summary object driveSession printed last carries both losses already.
    if (!common.json && result.state != session::RunState::Failed) {
        std::cout << "fine-tune result: "
                  << finetune::describeEvalChange(
                         result.initialEvalLoss, result.finalEvalLoss,
                         finetune::evalLossCounts((*created)->config().trainInput))
                  << "\n";
        if (!result.modelDir.empty() && records) {
            std::cout << fmt::format(
                "compare: ask it a held-out question ({}), rendered with the chat template: "
                "wafer tokenize --tokenizer {} --chat CONVERSATION.json --add-generation-prompt "
                "gives the prompt for wafer sample\n",
                prompt, shellQuoted(result.modelDir.string()));
        } else if (!result.modelDir.empty()) {
            std::cout << fmt::format(
                "compare: wafer sample {} --prompt {} (words of your held-out text)\n",
                shellQuoted(result.modelDir.string()), shellQuoted(prompt));
        }
    }
    return code;
}

}  // namespace

void addFinetuneCommand(CLI::App& app, CommonOptions& common, int& exitCode) {
    auto opt = std::make_shared<FinetuneOptions>();
    CLI::App* cmd = app.add_subcommand(
        "finetune",
        "Fine-tune a trained or imported model on new text (keeps its architecture "
        "and tokenizer)");
    cmd->add_option("--base", opt->request.base,
                    "Base model: a run id, a run folder, a checkpoint-<step> folder, a "
                    "model.safetensors, a Hugging Face GPT-2 folder, a model id in the local "
                    "Hugging Face cache (org/name[@revision]; `wafer import --list-cached` lists "
                    "them), or `base` (the shipped base model)")
        ->required();
    cmd->add_option("--data", opt->request.dataFiles,
                    "Text files or folders of text files; or instruction and chat records "
                    "(.jsonl .json .csv .tsv .zip: OpenAI messages, ShareGPT, Alpaca, "
                    "prompt/completion, CSV columns), rendered with the base's chat template "
                    "(ChatML when it has none) and trained on the answers")
        ->required();
    cmd->add_flag("--freeze-embeddings", opt->request.freezeEmbeddings,
                  "Never update the token and position embeddings (tied: the output layer too)");
    cmd->add_option("--freeze-blocks", opt->request.freezeBlocks,
                    "Never update the first K transformer blocks")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--lora", opt->request.loraRank,
                    "Train LoRA adapters of this rank on every block's linear layers and freeze "
                    "the base (alpha 2 x rank, peak LR 10 x the full fine-tune's)")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--epochs", opt->request.epochs,
                    "Passes over the new text that set max_steps (default 3)")
        ->check(CLI::PositiveNumber);
    cmd->add_flag("--allow-binary", opt->request.allowBinary,
                  "Train on data files that do not look like plain text (executables, PDF, "
                  "DOCX, images, archives) instead of refusing them");
    cmd->add_option("--set", opt->request.overrides,
                    "Override a value of the fine-tune config, e.g. --set "
                    "train_input.batch_size=4 (repeatable; applied last)");
    cmd->add_option("--max-steps", opt->maxSteps, "Train this many steps (runconfig.max_steps)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--threads", opt->threads, "CPU threads (runconfig.num_threads; 0 = all)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_flag("--dry-run", opt->dryRun, "Print the plan and its config; do not train");
    cmd->add_option("--name", opt->name, "Name of the run in the run store");
    cmd->add_option("--db", common.dbPath, "Run store (SQLite file)");
    cmd->add_flag("--json", common.json, "One JSON object per log step on stdout");
    cmd->callback([opt, &common, &exitCode] { exitCode = runFinetune(*opt, common); });
}

}  // namespace ws::cli
