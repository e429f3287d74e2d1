// SPDX-License-Identifier: GPL-3.0-or-later
// `wafer predict CONFIG`: the emulated hardware's predicted step time, throughput, MFU and where
// the time goes, without training; `--sweep-systems` prints the scaling table.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "app/cli/commands.h"
#include "app/cli/output.h"
#include "engine/config/config_yaml.h"
#include "engine/core/units.h"
#include "engine/model/model_facts.h"
#include "engine/model/parameters.h"
#include "engine/optim/sparse_masks.h"
#include "engine/wafer/activation_plan.h"
#include "engine/wafer/cycle_model.h"
#include "engine/wafer/sparsity.h"

namespace ws::cli {
namespace {

struct PredictOptionsCli {
    std::string configPath;
    std::vector<std::string> overrides;
    std::string wafer;  // empty: the config's wafer.spec
    std::vector<std::string> waferOverrides;
    int numCsx = 0;  // 0: the config's runconfig.num_csx
    std::string sweep;
    bool weakScaling = false;
    double sparsity = 0;
};

std::string percent(double part, double whole) {
    return fmt::format("{:.1f}%", whole > 0 ? 100.0 * part / whole : 0.0);
}

// MoE: how the prediction routed the tokens.
nlohmann::json moeJson(const wafer::StepPrediction& p) {
    nlohmann::json blocks = nlohmann::json::array();
    for (size_t b = 0; b < p.expertTokens.size(); ++b)
        if (!p.expertTokens[b].empty())
            blocks.push_back({{"block", b}, {"tokens_per_expert", p.expertTokens[b]}});
    return {{"experts", p.moeExperts},
            {"top_k", p.moeTopK},
            {"routing", p.uniformRouting ? "uniform (assumed)" : "given"},
            {"blocks", blocks}};
}

nlohmann::json activationCountsJson(const std::vector<wafer::BlockActivation>& blocks) {
    const auto c = wafer::countsOf(blocks);
    return {{"keep", c.keep},
            {"offload", c.offload},
            {"recompute", c.recompute},
            {"recompute_offload", c.recomputeOffload}};
}

// The contention model's rates and every kind of link's load (cluster_links.h).
nlohmann::json linksJson(const wafer::StepPrediction& p) {
    nlohmann::json loads = nlohmann::json::array();
    for (const auto& l : p.links)
        loads.push_back({{"name", l.name},
                         {"count", l.count},
                         {"capacity_bytes_per_s", l.capacityBytesPerS},
                         {"bytes_down", l.bytesDown},
                         {"bytes_up", l.bytesUp},
                         {"utilization", l.utilization},
                         {"wait_s", l.waitS}});
    return {{"lockstep", p.lockstep},
            {"stream_bytes_per_s", p.swarmxBytesPerS},
            {"binding", p.linkBinding},
            {"loads", loads}};
}

nlohmann::json predictionJson(const wafer::StepPrediction& p, double speedup) {
    const auto& s = p.split;
    nlohmann::json j = {{"event", "predict"},
                        {"wafer", p.waferName},
                        {"num_csx", p.numSystems},
                        {"batch_per_system", p.batchPerSystem},
                        {"micro_batch", p.microBatch},
                        {"seq_len", p.seqLen},
                        {"step_time_s", p.stepS},
                        {"tokens_per_s", p.tokensPerS},
                        {"samples_per_s", p.samplesPerS},
                        {"speedup", speedup},
                        {"mfu", p.mfu},
                        {"forward_s", p.forwardS},
                        {"backward_s", p.backwardS},
                        {"tree_depth", p.treeDepth},
                        {"time_split",
                         {{"compute_s", s.compute},
                          {"streaming_s", s.streaming},
                          {"fabric_s", s.fabric},
                          {"reduce_s", s.reduce},
                          {"bubble_s", s.bubble},
                          {"queueing_s", s.queueing}}},
                        {"links", linksJson(p)},
                        {"weight_streaming_hidden", p.weightStreamingHidden},
                        {"activations",
                         {{"stored_bytes", p.activations.storedBytes},
                          {"minimal_bytes", p.activations.minimalBytes},
                          {"available_bytes", p.activations.availableBytes},
                          {"fit", p.activations.fits},
                          {"fit_with_recompute", p.activations.fitsWithRecompute},
                          {"max_sequences", p.activations.maxSequences}}},
                        {"activation_plan",
                         {{"note", p.activationPlan},
                          {"blocks", activationCountsJson(p.blockActivations)},
                          {"resident_bytes", p.residentActivationBytes},
                          {"offload_bytes_per_step", p.offloadBytesPerStep},
                          {"offload_link_s", p.offloadS},
                          {"recompute_flops_per_step", 2 * p.recomputeFmacsPerStep},
                          {"recompute_s", p.recomputeS},
                          {"hfu", p.hfu}}},
                        {"lora_rank", p.loraRank},
                        {"adapter_s", p.adapterS}};
    if (p.moeExperts > 0) j["moe"] = moeJson(p);
    return j;
}

// The links: the rate weights and gradients moved at, what set it, and each link's load.
void printLinks(const wafer::StepPrediction& p) {
    std::cout << fmt::format(
        "links        weights and gradients at {} per system ({}; SwarmX lockstep x{:.3f})\n",
        formatSi(p.swarmxBytesPerS, "B/s"), p.linkBinding, p.lockstep);
    for (const auto& l : p.links)
        std::cout << fmt::format(
            "             {:<24} {:>5} x {:>10}: {:>5.1f}% busy{}\n", l.name, l.count,
            formatSi(l.capacityBytesPerS, "B/s"), 100 * l.utilization,
            l.waitS > 0 ? fmt::format(", {:.4g} s of waits", l.waitS) : std::string());
}

void printPrediction(const wafer::StepPrediction& p, const wafer::WaferSpec& spec,
                     const std::string& name) {
    const auto& s = p.split;
    const auto& a = p.activations;
    std::cout << fmt::format(
        "{} on {} x {} ({} x {} cores, {} dense fp16 peak each)\n"
        "batch        {} sequences x {} tokens per system in micro-batches of {}; SwarmX tree "
        "depth {}\n"
        "step time    {:.4g} s (forward {:.4g} s, backward {:.4g} s)\n"
        "throughput   {:.4g} tokens/s, {:.4g} samples/s\n"
        "MFU          {:.1f}%\n"
        "time split   compute {} | streaming {} | fabric {} | reduce {} | bubble {} | "
        "queueing {}\n"
        "streaming    weight streaming {} behind compute\n"
        "activations  {} kept for backward vs {} SRAM: {}; with block recompute {} ({}); "
        "at most {} sequences per system fit\n",
        name, p.numSystems, spec.name, spec.gridRows, spec.gridCols,
        formatSi(spec.peakFlopsPerS(), "FLOP/s"), p.batchPerSystem, p.seqLen, p.microBatch,
        p.treeDepth, p.stepS, p.forwardS, p.backwardS, p.tokensPerS, p.samplesPerS, 100 * p.mfu,
        percent(s.compute, p.stepS), percent(s.streaming, p.stepS), percent(s.fabric, p.stepS),
        percent(s.reduce, p.stepS), percent(s.bubble, p.stepS), percent(s.queueing, p.stepS),
        p.weightStreamingHidden ? "hidden" : "NOT hidden", formatBytes(a.storedBytes),
        formatBytes(a.availableBytes), a.fits ? "fit" : "do NOT fit", formatBytes(a.minimalBytes),
        a.fitsWithRecompute ? "fit" : "do not fit", a.maxSequences);
    printLinks(p);
    if (!p.activationPlan.empty()) std::cout << "plan         " << p.activationPlan << "\n";
    if (!p.blockActivations.empty())
        std::cout << fmt::format(
            "             recompute adds {} ({:.4g} s of the step); offload moves {} each way "
            "({:.4g} s on the MemoryX link, overlapped); HFU {:.1f}%\n",
            formatSi(2 * p.recomputeFmacsPerStep, "FLOP"), p.recomputeS,
            formatBytes(p.offloadBytesPerStep), p.offloadS, 100 * p.hfu);
    if (!a.fits && p.blockActivations.empty())
        std::cout << "             (the predicted time assumes the activations stay on the wafer "
                     "anyway; set train_input.micro_batch_size to split the batch)\n";
    if (p.loraRank > 0)
        std::cout << fmt::format(
            "lora         rank {}: the adapters' products take {:.4g} s of the step; the frozen "
            "base forms no weight gradients\n",
            p.loraRank, p.adapterS);
    if (p.moeExperts > 0) {
        int moeBlocks = 0;
        int64_t perExpert = 0;
        for (const auto& b : p.expertTokens)
            if (!b.empty()) {
                ++moeBlocks;
                perExpert = b.front();
            }
        std::cout << fmt::format(
            "moe          {} MoE block(s) of {} experts, top-{}: routing {}{}; each expert runs "
            "on its own rectangle (~1/{} of the cores), the busiest sets the MLP's time\n",
            moeBlocks, p.moeExperts, p.moeTopK,
            p.uniformRouting ? "assumed UNIFORM (no run to take counts from)" : "as given",
            p.uniformRouting ? fmt::format(", {} tokens per expert per micro-batch", perExpert)
                             : std::string(),
            p.moeExperts);
    }
}

std::vector<int> parseSweep(const std::string& text, std::string& error) {
    std::vector<int> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
        try {
            size_t used = 0;
            const int v = std::stoi(item, &used);
            if (used != item.size() || v < 1) throw std::invalid_argument(item);
            out.push_back(v);
        } catch (const std::exception&) {
            error = fmt::format(
                "--sweep-systems: \"{}\" is not a positive whole number "
                "(expected e.g. 1,2,4,8,16)",
                item);
            return {};
        }
    }
    if (out.empty()) error = "--sweep-systems: give at least one system count, e.g. 1,2,4";
    return out;
}

int runPredict(const PredictOptionsCli& opt, const CommonOptions& common) {
    auto loaded = config::loadConfigFile(opt.configPath, opt.overrides);
    if (!loaded.ok()) return fail(loaded.error().message);
    const auto& cfg = loaded->config;
    // The config's spec with its wafer:/cluster: overrides (--wafer picks another spec); system
    // counts are checked below, for every count asked for.
    config::Config specConfig = cfg;
    if (!opt.wafer.empty()) specConfig.wafer.spec = opt.wafer;
    specConfig.runconfig.numCsx = 1;
    auto spec = wafer::specForConfig(specConfig);
    if (!spec.ok()) return fail(spec.error().message);
    for (const auto& o : opt.waferOverrides)
        if (Status s = wafer::overrideField(*spec, o); !s.ok()) return fail(s.error().message);
    std::vector<int> systems = {opt.numCsx > 0 ? opt.numCsx : cfg.runconfig.numCsx};
    if (!opt.sweep.empty()) {
        std::string error;
        systems = parseSweep(opt.sweep, error);
        if (!error.empty()) return fail(error);
    }
    // Check every system count before any work.
    for (int n : systems)
        if (Status s = spec->checkSystems(n); !s.ok()) return fail(s.error().message);

    const int globalBatch = cfg.trainInput.batchSize;
    wafer::StepInput in;
    in.shape = model::GptShape::fromConfig(cfg.model);
    in.shape.applyLora(cfg.lora);  // a LoRA run: adapter products, no frozen weight gradients
    in.seqLen = cfg.trainInput.maxSequenceLength;
    in.updatesAfterNorm = cfg.optimizer.maxGradientNorm > 0;
    in.weightBytesPerValue = model::streamedBytesPerWeight(in.shape);  // as a run streams them
    in.weightBufferLayers = cfg.wafer.weightBufferLayers;
    // Uniform static sparsity of the block matmuls (--sparsity: all four; else the config's
    // model.sparsity and its targets): every column keeps (1 - level) of its weights, what
    // magnitude pruning of typical weights gives on average.
    double level = opt.sparsity > 0 ? opt.sparsity : cfg.model.sparsity.level;
    std::vector<std::string> targets =
        opt.sparsity > 0 ? std::vector<std::string>{} : cfg.model.sparsity.targets;
    // The top-level sparsity section (gmp: its final level) on the matrices its patterns select,
    // block by block: patterns may select some blocks' matrices and not others'.
    std::vector<wafer::BlockSparsity> perBlock;
    if (opt.sparsity <= 0 && cfg.sparsity && cfg.sparsity->sparsity > 0) {
        level = 0;  // the uniform path below stays dense; perBlock carries the section
        auto selected = optim::selectMaskedMatrices(model::ParameterTable(in.shape),
                                                    cfg.sparsity->paramNamePatterns);
        if (!selected.ok()) return fail(selected.error().message);
        const double s = cfg.sparsity->sparsity;
        const int64_t C = in.shape.channels, F = in.shape.ffn;
        perBlock.assign(size_t(in.shape.layers), {});
        bool any = false;
        for (const auto& m : *selected) {
            int block = -1, read = 0;
            if (std::sscanf(m.name.c_str(), "h.%d.%n", &block, &read) != 1 || block < 0 ||
                block >= in.shape.layers)
                continue;
            const std::string rest = m.name.substr(size_t(read));
            wafer::BlockSparsity& b = perBlock[size_t(block)];
            if (rest == "attn.c_attn.weight")
                b.qkv = wafer::uniformColumnNonzeros(C, 3 * C, s);
            else if (rest == "attn.c_proj.weight")
                b.attnProj = wafer::uniformColumnNonzeros(C, C, s);
            else if (rest == "mlp.c_fc.weight")
                b.fc = wafer::uniformColumnNonzeros(C, F, s);
            else if (rest == "mlp.c_proj.weight")
                b.fcProj = wafer::uniformColumnNonzeros(F, C, s);
            else
                continue;  // only matrices the cycle model plans dense
            any = true;
        }
        if (any) in.perBlockSparsity = perBlock;
    }
    auto pruned = [&](const char* target) {
        return targets.empty() ||
               std::find(targets.begin(), targets.end(), target) != targets.end();
    };
    wafer::BlockSparsity sparsity;
    if (level > 0) {
        const int64_t C = in.shape.channels, F = in.shape.ffn;
        if (pruned("qkv")) sparsity.qkv = wafer::uniformColumnNonzeros(C, 3 * C, level);
        if (pruned("attn_proj")) sparsity.attnProj = wafer::uniformColumnNonzeros(C, C, level);
        if (pruned("fc")) sparsity.fc = wafer::uniformColumnNonzeros(C, F, level);
        if (pruned("fc_proj")) sparsity.fcProj = wafer::uniformColumnNonzeros(F, C, level);
        in.sparsity = &sparsity;
    }
    const bool single = systems.size() == 1;
    double baseTokensPerS = 0;
    if (!common.json && !single)
        std::cout << fmt::format("{} on {} ({} scaling, batch {} {})\n", cfg.model.name, spec->name,
                                 opt.weakScaling ? "weak" : "strong", globalBatch,
                                 opt.weakScaling ? "per system" : "global")
                  << fmt::format("{:>7} {:>7} {:>11} {:>13} {:>8} {:>10} {:>6}  {}\n", "num_csx",
                                 "batch", "step s", "tokens/s", "speedup", "efficiency", "MFU",
                                 "streaming hidden");
    for (int n : systems) {
        if (!opt.weakScaling && globalBatch % n != 0)
            return fail(fmt::format(
                "train_input.batch_size {} does not split evenly over {} systems; choose a "
                "multiple of {} or use --weak-scaling",
                globalBatch, n, n));
        in.batchPerSystem = opt.weakScaling ? globalBatch : globalBatch / n;
        in.numSystems = n;
        // train_input.micro_batch_size: auto (largest that fits), none, or a number.
        const std::string& micro = cfg.trainInput.microBatchSize;
        // auto: the activation planner (activation_plan.h) - the whole batch when it fits,
        // else the fastest of micro-batching, recompute and offload to MemoryX that fits.
        if (micro == "auto") {
            in.microBatch = 0;
            in.blockActivations.clear();
            auto plan = wafer::planActivations(*spec, in, double(cfg.wafer.sramBytes));
            if (!plan.ok()) return fail(plan.error().message);
            wafer::applyActivationPlan(*plan, in);
        } else if (micro == "none")
            in.microBatch = 0;
        else
            in.microBatch = std::atoi(micro.c_str());
        wafer::PredictOptions popt;
        popt.frames = false;
        auto p = wafer::predictStep(*spec, in, popt);
        if (!p.ok()) return fail(p.error().message);
        if (baseTokensPerS == 0) baseTokensPerS = p->tokensPerS / systems.front();
        const double speedup = p->tokensPerS / (baseTokensPerS * systems.front());
        if (common.json) {
            std::cout << predictionJson(*p, speedup).dump() << std::endl;
        } else if (single) {
            printPrediction(*p, *spec, cfg.model.name);
        } else {
            std::cout << fmt::format(
                "{:>7} {:>7} {:>11.4g} {:>13.4g} {:>8.2f} {:>9.2f}% {:>5.1f}%  {}\n", n,
                in.batchPerSystem, p->stepS, p->tokensPerS, speedup,
                100 * speedup * systems.front() / n, 100 * p->mfu,
                p->weightStreamingHidden ? "yes" : "no");
        }
    }
    return 0;
}

}  // namespace

void addPredictCommand(CLI::App& app, CommonOptions& common, int& exitCode) {
    auto opt = std::make_shared<PredictOptionsCli>();
    CLI::App* cmd = app.add_subcommand(
        "predict", "Predict step time, throughput and MFU on the emulated hardware (no training)");
    cmd->add_option("config", opt->configPath, "YAML config")->required()->check(CLI::ExistingFile);
    cmd->add_option("--set", opt->overrides, "Override a config value (repeatable)");
    cmd->add_option("--wafer", opt->wafer,
                    "Wafer spec: a name in presets/wafers or a YAML path (default: wafer.spec)");
    cmd->add_option("--wafer-set", opt->waferOverrides,
                    "Override a spec figure, e.g. wafer.grid_rows=64 (repeatable)");
    cmd->add_option("--num-csx", opt->numCsx, "Systems (default: runconfig.num_csx)")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--sweep-systems", opt->sweep, "Scaling table over system counts, e.g. 1,2,4");
    cmd->add_flag("--weak-scaling", opt->weakScaling,
                  "Keep train_input.batch_size per system instead of splitting it");
    cmd->add_option("--sparsity", opt->sparsity,
                    "Static unstructured weight sparsity of the block matmuls, in [0, 1)")
        ->check(CLI::Range(0.0, 0.99));
    cmd->add_flag("--json", common.json, "One JSON object per system count");
    cmd->callback([opt, &common, &exitCode] { exitCode = runPredict(*opt, common); });
}

}  // namespace ws::cli
