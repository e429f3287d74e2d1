// SPDX-License-Identifier: GPL-3.0-or-later
// `wafer import HF_FOLDER_OR_WEIGHTS_FILE [--out DIR]` and `wafer export RUN_ID_OR_FOLDER --format
// hf --out DIR`: Hugging Face GPT-2 and Llama-family folders (or model ids in the local Hugging
// Face cache, listed by `wafer import --list-cached`) in and out (engine/interop/hf_import.h,
// hf_export.h); LoRA adapters in PEFT's layout in and out (`wafer import BASE --adapter PEFT_DIR`,
// `wafer export RUN --format peft`; GPT-2's layout for a GPT-2 base, PEFT's Llama layout with
// q/k/v/o/gate/up/down_proj for a Llama-family one) and merged into the plain model (`wafer
// export RUN --merge`), peft_adapter.h.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/output.h"
#include "engine/core/paths.h"
#include "engine/core/units.h"
#include "engine/interop/hf_export.h"
#include "engine/interop/hf_import.h"
#include "engine/interop/model_ref.h"
#include "engine/interop/peft_adapter.h"
#include "engine/modelio/hf_cache.h"

namespace ws::cli {
namespace {

struct ImportOptions {
    std::string folder;
    std::string adapter;
    std::string out;
    bool listCached = false;
};

// `wafer import --list-cached`: the models of the local Hugging Face cache, and whether this
// version computes them.
int runListCached(const CommonOptions& common) {
    const modelio::HfHub hub = modelio::hfHubCache();
    const auto models = modelio::listCachedHfModels(hub.dir);
    if (common.json) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& m : models) {
            list.push_back({{"id", m.id},
                            {"revision", m.revision},
                            {"snapshot", m.snapshot.string()},
                            {"architecture", m.architecture},
                            {"bytes", m.bytes},
                            {"parameters", m.parameters},
                            {"usable", m.usable()},
                            {"problem", m.problem}});
        }
        std::cout << nlohmann::json{{"event", "cached_models"},
                                    {"hub", hub.dir.string()},
                                    {"hub_from", hub.source},
                                    {"models", list}}
                         .dump()
                  << std::endl;
        return 0;
    }
    std::cout << fmt::format("Hugging Face cache: {} ({})\n", hub.dir.string(),
                             hub.source == "the default" ? hub.source : "from " + hub.source);
    if (models.empty()) {
        std::cout << "no models cached; download one with `huggingface-cli download ORG/NAME`\n";
        return 0;
    }
    for (const auto& m : models) {
        std::cout << fmt::format(
            "{}  {}  {}{}  {}\n", m.id, m.architecture.empty() ? "-" : m.architecture,
            formatBytes(double(m.bytes)),
            m.parameters > 0 ? fmt::format(", {} parameters", m.parameters) : "",
            m.usable() ? "usable" : "not usable: " + m.problem);
    }
    return 0;
}

// The folder `wafer import SOURCE` reads: an existing path, else a model id's snapshot in the
// Hugging Face cache, else the path as given (the import names what is missing).
Result<std::filesystem::path> importSource(const std::string& given) {
    std::error_code ec;
    if (std::filesystem::exists(given, ec)) return std::filesystem::path(given);
    if (const auto id = modelio::parseHfModelId(given)) return modelio::resolveHfSnapshot(*id);
    return std::filesystem::path(given);
}

int runAdapterImport(const ImportOptions& opt, const CommonOptions& common) {
    std::string baseRef = opt.folder;
    if (baseRef.empty()) {
        // No base given: the one the adapter names (base_model_name_or_path), found here.
        auto found = interop::findPeftBase(opt.adapter);
        if (!found.ok()) return fail(found.error().message);
        baseRef = found->string();
    }
    auto base = interop::resolveModelRef(baseRef, common.dbPath);
    if (!base.ok()) return fail(base.error().message);
    std::filesystem::path out(opt.out);
    if (out.empty()) {
        const std::string name = absoluteNormal(opt.adapter).filename().string();
        out = userDataDir() / "models" / (name.empty() ? std::string("adapter") : name);
    }
    auto imported = interop::importPeftAdapter(base->path, opt.adapter, out);
    if (!imported.ok()) return fail(imported.error().message);
    const auto& r = *imported;
    if (common.json) {
        std::cout << nlohmann::json{{"event", "imported_adapter"},
                                    {"out", r.outDir.string()},
                                    {"base", r.base.string()},
                                    {"rank", r.adapter.rank},
                                    {"alpha", r.adapter.alpha},
                                    {"targets", r.adapter.targetNames()},
                                    {"adapter_parameters", r.adapterParameters},
                                    {"parameters", r.parameters},
                                    {"notes", r.notes}}
                         .dump()
                  << std::endl;
        return 0;
    }
    std::cout << fmt::format(
        "imported LoRA adapter {} (rank {}, alpha {:g}, on {}: {} adapter parameters) onto {}\n",
        opt.adapter, r.adapter.rank, r.adapter.alpha, fmt::join(r.adapter.targetNames(), ", "),
        r.adapterParameters, r.base.string());
    for (const auto& note : r.notes) std::cout << "note: " << note << "\n";
    std::cout << fmt::format("model folder: {}\n", r.outDir.string());
    return 0;
}

int runImport(const ImportOptions& opt, const CommonOptions& common) {
    if (opt.listCached) return runListCached(common);
    if (!opt.adapter.empty()) return runAdapterImport(opt, common);
    if (opt.folder.empty())
        return fail(
            "give the Hugging Face folder or cached model id to import (wafer import FOLDER), "
            "or --adapter");
    auto resolved = importSource(opt.folder);
    if (!resolved.ok()) return fail(resolved.error().message);
    const std::filesystem::path source = *resolved;
    std::filesystem::path out(opt.out);
    if (out.empty()) {
        // A weights file given directly is named after its folder; a cached id after its name.
        std::filesystem::path named = absoluteNormal(source);
        std::error_code ec;
        if (std::filesystem::is_regular_file(named, ec)) named = named.parent_path();
        std::string name = named.filename();
        if (const auto id = modelio::parseHfModelId(opt.folder);
            id && !std::filesystem::exists(opt.folder, ec)) {
            name = id->repo.substr(id->repo.find('/') + 1);
        }
        out = userDataDir() / "models" / (name.empty() ? std::string("imported") : name);
    }
    auto imported = interop::importHuggingFace(source, out);
    if (!imported.ok()) return fail(imported.error().message);
    const auto& r = *imported;
    std::vector<std::string> dtypes;
    for (const auto& [dtype, count] : r.source.dtypeCounts)
        dtypes.push_back(fmt::format("{} x {}", count, dtype));
    if (common.json) {
        std::cout << nlohmann::json{{"event", "imported"},
                                    {"out", r.outDir.string()},
                                    {"parameters", r.parameters},
                                    {"tokenizer", !r.source.tokenizerJson.empty() ? "hf"
                                                  : r.source.byteTokenizer        ? "byte"
                                                                                  : "bpe"},
                                    {"notes", r.source.notes}}
                         .dump()
                  << std::endl;
        return 0;
    }
    const auto& m = r.source.model;
    std::cout << fmt::format(
        "imported {}: {} parameters ({} layers x {} wide, {} heads, {} KV heads, vocab {}, {} "
        "positions; "
        "tensors {}), tokenizer {} ({} tokens)\n",
        source.string() == opt.folder ? opt.folder
                                      : fmt::format("{} ({})", opt.folder, source.string()),
        r.parameters, m.numHiddenLayers, m.hiddenSize, m.numHeads,
        m.attentionModule == "multiquery_attention" ? m.extraAttentionParams.numKvGroups
                                                    : m.numHeads,
        m.vocabSize, m.maxPositionEmbeddings, fmt::join(dtypes, ", "),
        !r.source.tokenizerJson.empty() ? "tokenizer.json"
        : r.source.byteTokenizer        ? "byte"
                                        : "GPT-2 BPE",
        r.source.tokenizerVocab);
    for (const auto& note : r.source.notes) std::cout << "note: " << note << "\n";
    std::cout << fmt::format("model folder: {}\n", r.outDir.string());
    return 0;
}

struct ExportOptions {
    std::string source;
    std::string format = "hf";
    std::string out;
    bool merge = false;
    std::string baseModel;
};

int runPeftExport(const ExportOptions& opt, const CommonOptions& common,
                  const std::filesystem::path& source) {
    auto exported = interop::exportPeftAdapter(source, opt.out, opt.baseModel);
    if (!exported.ok()) return fail(exported.error().message);
    const auto& r = *exported;
    const std::string base = r.adapter.baseModel.value_or("");
    if (common.json) {
        std::cout << nlohmann::json{{"event", "exported_adapter"},
                                    {"out", r.outDir.string()},
                                    {"source", r.source.string()},
                                    {"rank", r.adapter.rank},
                                    {"alpha", r.adapter.alpha},
                                    {"targets", r.adapter.targetNames()},
                                    {"adapter_parameters", r.adapterParameters},
                                    {"base_model", base}}
                         .dump()
                  << std::endl;
        return 0;
    }
    std::cout << fmt::format(
        "exported the LoRA adapters of {} (rank {}, alpha {:g}, on {}: {} parameters) as a "
        "PEFT folder: {}\n"
        "files: adapter_config.json, adapter_model.safetensors (fp32)\n"
        "base_model_name_or_path: {}\n",
        r.source.string(), r.adapter.rank, r.adapter.alpha,
        fmt::join(r.adapter.targetNames(), ", "), r.adapterParameters, r.outDir.string(),
        base.empty() ? std::string("null (set it with --base-model)") : base);
    return 0;
}

int runExport(const ExportOptions& opt, const CommonOptions& common) {
    if (opt.format == "peft" && opt.merge)
        return fail(
            "--merge writes a whole model (--format hf); --format peft writes the adapters "
            "alone: choose one");
    auto ref = interop::resolveModelRef(opt.source, common.dbPath);
    if (!ref.ok()) return fail(ref.error().message);
    if (opt.format == "peft") return runPeftExport(opt, common, ref->path);
    auto exported = interop::exportHuggingFace(ref->path, opt.out, opt.merge);
    if (!exported.ok()) return fail(exported.error().message);
    const auto& r = *exported;
    if (common.json) {
        std::cout << nlohmann::json{{"event", "exported"},
                                    {"out", r.outDir.string()},
                                    {"source", r.source.string()},
                                    {"parameters", r.parameters},
                                    {"merged_lora_rank", r.mergedAdapterRank},
                                    {"tokenizer", r.tokenizerKind},
                                    {"architecture", r.architecture}}
                         .dump()
                  << std::endl;
        return 0;
    }
    std::cout << fmt::format(
        "exported {} ({} parameters) as a Hugging Face {} folder: {}\n"
        "files: model.safetensors (fp32), config.json ({}), {}, tokenizer_config.json\n"
        "tokenizer: {}\n",
        r.source.string(), r.parameters,
        r.architecture == "GPT2LMHeadModel" ? "GPT-2" : r.architecture, r.outDir.string(),
        r.architecture, r.tokenizerKind == "hf" ? "tokenizer.json" : "vocab.json, merges.txt",
        r.tokenizerNote);
    if (r.mergedAdapterRank > 0)
        std::cout << fmt::format(
            "LoRA adapters (rank {}) merged into the weights: W + (alpha / rank) A B\n",
            r.mergedAdapterRank);
    return 0;
}

}  // namespace

void addInteropCommands(CLI::App& app, CommonOptions& common, int& exitCode) {
    auto imp = std::make_shared<ImportOptions>();
    CLI::App* cmd = app.add_subcommand(
        "import",
        "Import a Hugging Face GPT-2 / Cerebras-GPT folder (model.safetensors, sharded "
        "model-0000N-of-0000M.safetensors with model.safetensors.index.json, or "
        "pytorch_model.bin, single or sharded; config.json, vocab.json, merges.txt) as a Wafer "
        "Studio model folder; a pytorch_model.bin is read without executing its pickle. A model "
        "id (org/name[@revision]) is read from the local Hugging Face cache (HF_HUB_CACHE, else "
        "HF_HOME/hub, else XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub), never "
        "from the network; --list-cached "
        "lists what is there");
    cmd->add_option("folder", imp->folder,
                    "The Hugging Face folder, the weights file or shard index in one, or a model "
                    "id in the Hugging Face cache such as HuggingFaceTB/SmolLM2-135M or "
                    "org/name@revision (an existing path wins over an id; with --adapter: the "
                    "base; left out, the base the adapter names)");
    cmd->add_flag("--list-cached", imp->listCached,
                  "List the models in the local Hugging Face cache (id, architecture, size on "
                  "disk, parameters, whether Wafer Studio computes it) and import nothing");
    cmd->add_option("--adapter", imp->adapter,
                    "A PEFT LoRA adapter folder (adapter_config.json, adapter_model.safetensors) "
                    "to put on the base given as `folder` (a Hugging Face folder, run id or run "
                    "folder)");
    cmd->add_option("--out", imp->out,
                    "Model folder to create (default: <data dir>/models/<folder name>)");
    cmd->add_option("--db", common.dbPath, "Run store (SQLite file) for a base given as a run id");
    cmd->add_flag("--json", common.json, "One JSON object on stdout");
    cmd->callback([imp, &common, &exitCode] { exitCode = runImport(*imp, common); });

    auto exp = std::make_shared<ExportOptions>();
    CLI::App* ecmd =
        app.add_subcommand("export",
                           "Export a run or model folder as a Hugging Face folder (GPT-2 or Llama "
                           "family; a LoRA "
                           "run: --merge, or its adapters with --format peft)");
    ecmd->add_option("source", exp->source,
                     "A run id, a run folder, a checkpoint-<step> folder, a model.safetensors, "
                     "`base` (the shipped base model) or a model id in the Hugging Face cache")
        ->required();
    ecmd->add_option("--format", exp->format,
                     "Output format (hf: Hugging Face GPT-2 or Llama family; peft: a LoRA run's "
                     "adapters as a PEFT adapter folder, in PEFT's GPT-2 or Llama layout)")
        ->check(CLI::IsMember({"hf", "peft"}));
    ecmd->add_flag("--merge", exp->merge,
                   "A LoRA run: merge the adapters into the weights (W + alpha/rank A B; a "
                   "q/k/v/gate/up_proj adapter into its columns of the fused weight) and write "
                   "a plain Hugging Face folder");
    ecmd->add_option("--base-model", exp->baseModel,
                     "--format peft: base_model_name_or_path to record (default: the base's "
                     "Hugging Face id, or its folder's name)");
    ecmd->add_option("--out", exp->out, "Folder to create (must not exist or be empty)")
        ->required();
    ecmd->add_option("--db", common.dbPath, "Run store (SQLite file) for run ids");
    ecmd->add_flag("--json", common.json, "One JSON object on stdout");
    ecmd->callback([exp, &common, &exitCode] { exitCode = runExport(*exp, common); });
}

}  // namespace ws::cli
