// SPDX-License-Identifier: GPL-3.0-or-later
// `wafer validate CONFIG`: checks a config (every problem at once, the data it names included)
// and prints the derived model.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>

#include "app/cli/commands.h"
#include "app/cli/output.h"
#include "engine/config/validate.h"
#include "engine/core/units.h"
#include "engine/finetune/finetune_plan.h"
#include "engine/model/model_facts.h"
#include "engine/model/parameters.h"
#include "engine/optim/optimizer.h"
#include "engine/session/emulation.h"
#include "engine/session/param_groups.h"
#include "engine/session/run_data.h"
#include "engine/streaming/shards.h"

namespace ws::cli {
namespace {

// A LoRA config: the method, what trains, and the emulated step beside a full fine-tune's.
struct LoraFacts {
    finetune::MethodCost cost;
    std::shared_ptr<const wafer::StepPrediction> step, fullStep;
    std::string emulatorError;
};

LoraFacts loraFacts(const config::Config& cfg) {
    LoraFacts f;
    f.cost = finetune::methodCost(cfg);
    // The same step the studio shows for the config (its activation plan where they do not fit).
    auto step = session::predictConfigStep(cfg, false);
    config::Config full = cfg;
    full.lora.reset();
    auto fullStep = session::predictConfigStep(full, false);
    if (step.ok() && fullStep.ok()) {
        f.step = *step;
        f.fullStep = *fullStep;
    } else {
        f.emulatorError = step.ok() ? fullStep.error().message : step.error().message;
    }
    return f;
}

struct ValidateOptions {
    std::string configPath;
    std::vector<std::string> overrides;
};

// memoryx.shards > 1: which rank holds which layers of MemoryX, and their bytes.
struct Shard {
    std::string layers;
    int64_t bytes = 0;
};

// Everything `wafer validate` reports about one config, gathered once for either output.
struct ValidateReport {
    std::string configPath;
    std::vector<std::string> problems, warnings;
    model::ModelFacts facts;
    std::string precision;  // "" under fp32
    std::vector<Shard> shards;
    std::optional<LoraFacts> lora;
};

std::vector<Shard> memoryxShards(const config::Config& cfg) {
    std::vector<Shard> shards;
    model::GptShape shape = model::GptShape::fromConfig(cfg.model);
    shape.applyLora(cfg.lora);
    const model::ParameterTable table(shape);
    if (cfg.memoryx.shards <= 1 || cfg.memoryx.shards > int(table.layers().size())) return shards;
    const streaming::ShardPlan plan(table, cfg.memoryx.shards);
    // Weights of every parameter; gradients and optimizer state of those that train.
    const int64_t perTrained =
        int64_t(sizeof(float)) * (2 + optim::Optimizer::stateCopies(cfg.optimizer));
    const auto groups = session::parameterGroups(table, cfg.optimizer);
    for (int k = 0; k < plan.shards(); ++k) {
        const int64_t trained = int64_t(plan.trainableOnRank(groups, k));
        shards.push_back(
            {plan.layerNames(table, k),
             (int64_t(plan.count(k)) - trained) * int64_t(sizeof(float)) + trained * perTrained});
    }
    return shards;
}

void printJson(const ValidateReport& r, const config::Config& cfg) {
    const auto& facts = r.facts;
    nlohmann::json j = {{"event", "validate"},
                        {"config", r.configPath},
                        {"valid", r.problems.empty()},
                        {"problems", r.problems},
                        {"warnings", r.warnings},
                        {"parameters", facts.parameters},
                        {"embedding_parameters", facts.embeddingParameters},
                        {"training_flops_per_token", facts.trainingFlopsPerToken},
                        {"weight_bytes", facts.weightBytes},
                        {"trainable_parameters", facts.trainableParameters},
                        {"gradient_bytes", facts.gradientBytes},
                        {"optimizer_bytes", facts.optimizerBytes},
                        {"tokens_per_step", facts.tokensPerStep},
                        {"stream_bytes_per_weight", facts.streamBytesPerWeight},
                        {"wafer_buffer_bytes", facts.waferBufferBytes},
                        {"streamed_bytes_per_pass", facts.streamedBytesPerPass}};
    if (!r.precision.empty()) j["precision"] = r.precision;
    if (cfg.lora)
        j["lora"] = {{"rank", cfg.lora->rank},
                     {"alpha", cfg.lora->alpha},
                     {"scale", cfg.lora->alpha / cfg.lora->rank},
                     {"dropout", cfg.lora->dropout},
                     {"targets", cfg.lora->targets},
                     {"adapter_parameters", facts.adapterParameters}};
    if (r.lora) {
        j["method"] = "lora";
        j["trainable_parameters"] = r.lora->cost.trainableParameters;
        j["lora_training_flops_per_token"] = r.lora->cost.flopsPerToken;
        if (r.lora->step) {
            j["emulated_step_s"] = r.lora->step->stepS;
            j["emulated_adapter_s"] = r.lora->step->adapterS;
            j["emulated_full_finetune_step_s"] = r.lora->fullStep->stepS;
        } else {
            j["emulator_error"] = r.lora->emulatorError;
        }
    }
    if (!r.shards.empty()) {
        nlohmann::json list = nlohmann::json::array();
        for (size_t k = 0; k < r.shards.size(); ++k)
            list.push_back(
                {{"rank", k}, {"layers", r.shards[k].layers}, {"bytes", r.shards[k].bytes}});
        j["memoryx_shards"] = list;
    }
    std::cout << j.dump() << std::endl;
}

// The LoRA method's lines: what trains, and the emulated step beside a full fine-tune's.
void printLora(const LoraFacts& lora) {
    const auto& c = lora.cost;
    std::cout << fmt::format(
        "method      LoRA: the base is frozen; {} of {} parameters train ({:.3g}%), {:.3g} "
        "training FLOPs per token (the base's forward and input gradients, the adapters' "
        "products)\n",
        c.trainableParameters, c.parameters,
        100.0 * double(c.trainableParameters) / double(std::max<int64_t>(1, c.parameters)),
        c.flopsPerToken);
    if (!lora.step) {
        std::cout << "emulated    not planned: " << lora.emulatorError << "\n";
        return;
    }
    const auto& p = *lora.step;
    bool shown[2] = {false, false};
    std::cout << fmt::format(
        "emulated    step {} on {} x {} system(s), the adapters' products {} of it; a full "
        "fine-tune of the same model: {}\n",
        formatSeconds(p.stepS), p.waferName, p.numSystems, formatSeconds(p.adapterS),
        formatSeconds(lora.fullStep->stepS));
    // Per block: the ops that differ from a full fine-tune's (the adapters'), one line.
    for (const auto& layer : p.layers) {
        const bool backward = layer.pass == wafer::Pass::Backward;
        if (layer.layer != "h.0" || shown[backward]) continue;
        shown[backward] = true;
        std::string ops;
        for (const auto& op : layer.ops) {
            if (!op.adapter) continue;
            ops +=
                fmt::format("{}{} {}", ops.empty() ? "" : ", ", op.name, formatSeconds(op.timeS));
        }
        std::cout << fmt::format("            h.0 {}: {}\n", backward ? "backward" : "forward",
                                 ops);
    }
}

// The text report of a valid config.
void printText(const ValidateReport& r, const config::Config& cfg) {
    const auto& facts = r.facts;
    const auto& m = cfg.model;
    std::cout << fmt::format(
        "{}: valid\n"
        "model       {}: {} layers, hidden {}, {} heads, ffn {}, vocab {}, positions {}{}\n"
        "parameters  {} ({}; {} in embeddings)\n"
        "compute     {} training FLOPs per token, {} per step ({} tokens)\n"
        "memory      weights {} + gradients {} + optimizer state {} = {}\n",
        r.configPath, m.name, m.numHiddenLayers, m.hiddenSize, m.numHeads, m.filterSize,
        m.vocabSize, m.maxPositionEmbeddings, m.shareEmbeddingWeights ? ", tied head" : "",
        facts.parameters, formatCount(double(facts.parameters)), facts.embeddingParameters,
        formatCount(facts.trainingFlopsPerToken),
        formatCount(facts.trainingFlopsPerToken * double(facts.tokensPerStep)), facts.tokensPerStep,
        formatBytes(facts.weightBytes), formatBytes(facts.gradientBytes),
        formatBytes(facts.optimizerBytes),
        formatBytes(facts.weightBytes + facts.gradientBytes + facts.optimizerBytes));
    std::cout << fmt::format(
        "streaming   weights as {} ({} bytes each): wafer buffer {} ({} x the largest layer), "
        "{} streamed in per system per forward + backward pass\n",
        facts.streamBytesPerWeight == 2 ? "bf16" : "fp32", facts.streamBytesPerWeight,
        formatBytes(facts.waferBufferBytes), cfg.wafer.weightBufferLayers,
        formatBytes(facts.streamedBytesPerPass));
    if (!r.precision.empty()) std::cout << "precision   " << r.precision << "\n";
    if (cfg.lora)
        std::cout << fmt::format(
            "lora        rank {}, alpha {:g} (scale {:g}), dropout {:g} on {}: {} adapter "
            "parameters ({:.3g}% of the base, which stays frozen)\n",
            cfg.lora->rank, cfg.lora->alpha, cfg.lora->alpha / cfg.lora->rank, cfg.lora->dropout,
            fmt::join(cfg.lora->targets, ", "), facts.adapterParameters,
            facts.parameters > 0
                ? 100.0 * double(facts.adapterParameters) / double(facts.parameters)
                : 0.0);
    if (r.lora) printLora(*r.lora);
    if (!r.shards.empty()) {
        std::cout << fmt::format("memoryx     {} shards (mpirun -np {} or more):", r.shards.size(),
                                 r.shards.size());
        for (size_t k = 0; k < r.shards.size(); ++k)
            std::cout << fmt::format("{} rank {}: {} ({})", k == 0 ? "" : ";", k,
                                     r.shards[k].layers, formatBytes(r.shards[k].bytes));
        std::cout << "\n";
    }
    if (m.mupEnabled())
        std::cout << fmt::format(
            "muP         width multiplier {:.4g} (base {}), MLP {:.4g} (base {}); hidden LR x "
            "{:.4g}, logits x {:.4g}, embeddings x {:.4g}\n",
            double(m.hiddenSize) / m.mupBaseHiddenSize, m.mupBaseHiddenSize,
            double(m.filterSize) / m.mupBaseFilterSize, m.mupBaseFilterSize,
            double(m.mupBaseHiddenSize) / m.hiddenSize,
            m.outputLogitsAlpha * (m.scaleOutputLogitsByD
                                       ? double(m.mupBaseHiddenSize) / m.hiddenSize
                                       : std::sqrt(double(m.mupBaseHiddenSize) / m.hiddenSize)),
            m.embeddingsScale);
}

int runValidate(const ValidateOptions& opt, const CommonOptions& common) {
    auto loaded = config::loadConfigFile(opt.configPath, opt.overrides);
    if (!loaded.ok()) return fail(loaded.error().message);
    const auto& cfg = loaded->config;
    ValidateReport r{.configPath = opt.configPath,
                     .problems = config::validate(cfg),
                     .warnings = loaded->warnings,
                     .facts = model::deriveFacts(cfg),
                     .precision = model::precisionDescription(cfg),
                     .shards = {},
                     .lora = std::nullopt};
    // The data it names, read as a run reads it: a config whose data a run would stop at is not
    // valid (a missing data_dir, a binary file).
    for (std::string& problem : session::checkRunData(cfg))
        r.problems.push_back(std::move(problem));
    if (r.problems.empty()) {
        r.shards = memoryxShards(cfg);
        if (cfg.lora) r.lora = loraFacts(cfg);
    }
    if (common.json) {
        printJson(r, cfg);
        return r.problems.empty() ? 0 : 1;
    }
    for (const auto& w : r.warnings) std::cerr << "warning: " << w << "\n";
    if (!r.problems.empty()) {
        std::cerr << "wafer: error: " << opt.configPath << " has " << r.problems.size()
                  << " problem(s):\n";
        for (const auto& p : r.problems) std::cerr << "  - " << p << "\n";
        return 1;
    }
    printText(r, cfg);
    return 0;
}

}  // namespace

void addValidateCommand(CLI::App& app, CommonOptions& common, int& exitCode) {
    auto opt = std::make_shared<ValidateOptions>();
    CLI::App* cmd =
        app.add_subcommand("validate", "Check a config and print the model it describes");
    cmd->add_option("config", opt->configPath, "YAML config")->required()->check(CLI::ExistingFile);
    cmd->add_option("--set", opt->overrides, "Override a config value (repeatable)");
    cmd->add_flag("--json", common.json, "Print one JSON object");
    cmd->callback([opt, &common, &exitCode] { exitCode = runValidate(*opt, common); });
}

}  // namespace ws::cli
