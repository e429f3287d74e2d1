// SPDX-License-Identifier: GPL-3.0-or-later
// `wafer sample RUN_ID|FOLDER|HF_ID|base --prompt TEXT`: generates text from a trained model,
// streaming each piece to stdout as it is produced (or one JSON object per token with --json, then
// a summary). Ctrl-C stops after the current layer's work and still prints the summary.
#include <fmt/format.h>

#include <atomic>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/output.h"
#include "app/cli/sampling_flags.h"
#include "engine/core/paths.h"
#include "engine/interop/model_ref.h"
#include "engine/modelio/load_model.h"
#include "engine/sample/generator.h"
#include "engine/store/run_store.h"
#include "engine/tensor/threads.h"

namespace ws::cli {
namespace {

struct SampleOptions {
    std::string model;  // run id or folder / model.safetensors
    std::string prompt;
    sample::SamplingOptions sampling;
    int threads = -1;
    bool noAdapters = false;  // a LoRA model: sample its base (adapters off)
};

// A number that is not an existing path names a run in the store; anything else is a path.
Result<std::filesystem::path> resolveModel(const std::string& arg, const CommonOptions& common) {
    std::error_code ec;
    const bool digits = !arg.empty() && arg.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::filesystem::exists(arg, ec)) return std::filesystem::path(arg);
    const auto db = common.dbPath.empty() ? userDataDir() / "runs.sqlite"
                                          : std::filesystem::path(common.dbPath);
    if (!std::filesystem::exists(db, ec)) {
        return Error{
            fmt::format("no run store at {}, so run {} is unknown; give the run's folder "
                        "instead, or --db with the store that numbered it",
                        db.string(), arg)};
    }
    auto store = store::RunStore::open(db);
    if (!store.ok()) return store.error();
    if (arg.size() > 18) return Error{fmt::format("{}: no such run id or path", arg)};
    auto run = (*store)->getRun(std::stoll(arg));
    if (!run.ok()) return run.error();
    if (run->modelDir.empty()) {
        return Error{
            fmt::format("run {} has no output folder yet (it never started training); "
                        "see `wafer runs show {}`",
                        arg, arg)};
    }
    return std::filesystem::path(run->modelDir);
}

// JSON text that survives invalid UTF-8 (a model can emit any byte): invalid bytes become U+FFFD.
std::string dumpJson(const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

int runSample(const SampleOptions& opt, const CommonOptions& common) {
    if (Status st = opt.sampling.validate(); !st.ok()) return fail(st.error().message);
    if (opt.threads >= 0) tensor::setComputeThreads(opt.threads);
    // A run id as before; anything else (a folder, a Hugging Face folder with single or sharded
    // weights, a model id in the Hugging Face cache, `base`) as every command names a model.
    std::error_code ec;
    const bool runId = !opt.model.empty() &&
                       opt.model.find_first_not_of("0123456789") == std::string::npos &&
                       !std::filesystem::exists(opt.model, ec);
    Result<modelio::LoadedModel> loaded = Error{""};
    if (runId) {
        auto path = resolveModel(opt.model, common);
        if (!path.ok()) return fail(path.error().message);
        loaded = modelio::loadModel(*path);
    } else {
        loaded = interop::loadModelRef(opt.model, common.dbPath);
    }
    if (!loaded.ok()) return fail(loaded.error().message);
    const modelio::LoadedModel& model = *loaded;
    sample::Generator generator(model, !opt.noAdapters);
    const int loraRank = model.shape.loraRank;

    if (common.json) {
        std::cout << dumpJson({{"event", "model"},
                               {"path", model.weightsFile.string()},
                               {"step", model.step},
                               {"parameters", model.params.size()},
                               {"tokenizer", model.tokenizer->kind()},
                               {"max_positions", model.shape.maxPositions},
                               {"lora_rank", loraRank},
                               {"adapters", loraRank > 0 && !opt.noAdapters}})
                  << std::endl;
    } else {
        if (loraRank > 0)
            std::cerr << fmt::format("LoRA adapters (rank {}) {}\n", loraRank,
                                     opt.noAdapters ? "off: sampling the base model"
                                                    : "merged into the weights for sampling");
        std::cout << opt.prompt << std::flush;
    }
    auto onToken = [&](const sample::TokenEvent& e) {
        if (common.json) {
            std::cout << dumpJson({{"event", "token"},
                                   {"index", e.index},
                                   {"token", e.token},
                                   {"text", e.text}})
                      << std::endl;
        } else if (!e.text.empty()) {
            std::cout << e.text << std::flush;
        }
    };
    std::atomic<bool>& cancel = catchCtrlC();
    auto result = generator.generate(opt.prompt, opt.sampling, onToken, &cancel);
    restoreCtrlC();
    if (!result.ok()) {
        if (!common.json) std::cout << "\n";
        return fail(result.error().message);
    }
    const auto& r = *result;
    if (common.json) {
        std::cout << dumpJson({{"event", "summary"},
                               {"stop", sample::stopReasonName(r.stop)},
                               {"prompt_tokens", r.promptTokens.size()},
                               {"prompt_tokens_used", r.promptTokensUsed},
                               {"tokens", r.tokens.size()},
                               {"tokens_per_s", number(r.tokensPerSecond())},
                               {"prefill_s", r.prefillSeconds},
                               {"generate_s", r.generateSeconds},
                               {"window_shifts", r.windowShifts},
                               {"text", r.text}})
                  << std::endl;
    } else {
        std::cout << "\n";
        std::cerr << fmt::format(
            "{}{} tokens in {:.2f} s ({:.1f} tokens/s); prompt {} tokens in {:.2f} s{}\n",
            r.stop == sample::StopReason::Cancelled ? "stopped: " : "", r.tokens.size(),
            r.generateSeconds, r.tokensPerSecond(), r.promptTokens.size(), r.prefillSeconds,
            r.windowShifts > 0 ? fmt::format("; context slid {} times past {} positions",
                                             r.windowShifts, model.shape.maxPositions)
                               : std::string());
    }
    return 0;
}

}  // namespace

void addSampleCommand(CLI::App& app, CommonOptions& common, int& exitCode) {
    auto opt = std::make_shared<SampleOptions>();
    CLI::App* cmd = app.add_subcommand("sample", "Generate text from a trained model");
    cmd->add_option("model", opt->model,
                    "Run id (from `wafer runs list`), run folder, a model.safetensors in one, a "
                    "Hugging Face folder, a model id in the local Hugging Face cache "
                    "(org/name[@revision]), or `base` (the shipped base model)")
        ->required();
    cmd->add_option("--prompt,-p", opt->prompt, "Text to continue")->required();
    addSamplingFlags(cmd, opt->sampling, "Tokens to generate");
    cmd->add_flag("--no-adapters", opt->noAdapters,
                  "A model with LoRA adapters: sample its base model without them");
    cmd->add_option("--threads", opt->threads, "CPU threads (0 = all)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--db", common.dbPath, "Run store (SQLite file) that resolves run ids");
    cmd->add_flag("--json", common.json,
                  "One JSON object per line: model, one per token, then a summary");
    cmd->callback([opt, &common, &exitCode] { exitCode = runSample(*opt, common); });
}

}  // namespace ws::cli
