// SPDX-License-Identifier: GPL-3.0-or-later
// PEFT folders: reading, writing, and export / import between them and our model folders
// (see peft_adapter.h). The checks themselves are in peft_adapter_parse.cpp.
#include "engine/interop/peft_adapter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "engine/config/config_yaml.h"
#include "engine/core/paths.h"
#include "engine/fileio/atomic_file.h"
#include "engine/fileio/safetensors.h"
#include "engine/interop/hf_import.h"
#include "engine/interop/output_folder.h"
#include "engine/model/parameters.h"
#include "engine/modelio/hf_cache.h"
#include "engine/modelio/hf_llama_weights.h"
#include "engine/modelio/load_model.h"
#include "engine/modelio/model_folder.h"
#include "engine/tokenizer/tokenizer.h"

namespace ws::interop {
namespace fs = std::filesystem;

namespace {

static_assert(kPeftTargetCount == model::kLoraTargetCount, "PEFT targets = model/lora.h's");

PeftBaseShape peftBase(const model::GptShape& s) {
    return {.layers = s.layers,
            .channels = s.channels,
            .ffn = s.ffn,
            .llama = modelio::usesHfLlamaNames(s),
            .qWidth = s.qWidth(),
            .kvWidth = s.kvWidth(),
            .swiglu = s.mlp == model::GptShape::Mlp::SwiGlu};
}

nlohmann::json numberOf(double v) {
    if (std::floor(v) == v && std::abs(v) < 1e15) return int64_t(v);  // PEFT's lora_alpha is an int
    return v;
}

}  // namespace

Result<PeftAdapter> readPeftAdapter(const fs::path& folder, const PeftBaseShape& base) {
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) {
        return Error{
            fmt::format("{}: no such folder; give the folder PEFT's save_pretrained "
                        "wrote (with {} and {})",
                        folder.string(), kPeftConfigFile, kPeftWeightsFile)};
    }
    const fs::path configFile = folder / kPeftConfigFile, weightsFile = folder / kPeftWeightsFile;
    if (!fs::exists(configFile, ec)) {
        return Error{
            fmt::format("{}: {} is missing; this is not a PEFT adapter folder (it needs "
                        "{} and {})",
                        folder.string(), kPeftConfigFile, kPeftConfigFile, kPeftWeightsFile)};
    }
    if (!fs::exists(weightsFile, ec)) {
        return Error{fmt::format(
            "{}: {} is missing{}", folder.string(), kPeftWeightsFile,
            fs::exists(folder / "adapter_model.bin", ec)
                ? " (only adapter_model.bin is here: save the adapter with "
                  "save_pretrained(..., safe_serialization=True) to get the safetensors file)"
                : "; copy it from where the adapter was saved")};
    }
    auto config = fileio::readWholeFile(configFile);
    if (!config.ok()) return config.error();
    auto weights = fileio::readWholeFile(weightsFile);
    if (!weights.ok()) return weights.error();
    return parsePeftAdapter(
        *config, std::span(reinterpret_cast<const std::byte*>(weights->data()), weights->size()),
        base, folder.string());
}

Result<fs::path> writePeftAdapter(const PeftAdapter& adapter, const PeftBaseShape& base,
                                  const fs::path& outDir) {
    if (Status st = checkOutputFolderFree(outDir); !st.ok()) return st.error();
    // PEFT's Llama layout has no fused q|k|v or gate|up module to put such an adapter on.
    for (size_t t = 0; t < kPeftTargetCount; ++t) {
        if (!adapter.targets[t]) continue;
        if (base.llama && kPeftLlamaNames[t].empty())
            return Error{fmt::format(
                "the adapters sit on {} (the fused {}), which PEFT's Llama layout has no module "
                "for; train the adapters with lora.targets {} instead to export them for PEFT",
                kPeftTargetNames[t], t == 0 ? "[q | k | v] linear" : "[gate | up] linear",
                t == 0 ? "[q_proj, k_proj, v_proj]" : "[gate_proj, up_proj]")};
        if (!base.llama && t >= 4)
            return Error{fmt::format(
                "the adapters sit on {}, which PEFT's GPT-2 layout has no module for (only "
                "c_attn, attn.c_proj, c_fc, mlp.c_proj)",
                kPeftTargetNames[t])};
    }
    // PEFT's layout: the transposes of ours, kept alive while the file is written.
    std::vector<std::vector<float>> peft;
    std::vector<fileio::TensorView> views;
    for (int l = 0; l < base.layers; ++l) {
        for (size_t t = 0; t < kPeftTargetCount; ++t) {
            if (!adapter.targets[t]) continue;
            const auto [IN, OUT] = peftLinearSize(t, base);
            for (const bool isA : {true, false}) {
                const std::string ours =
                    fmt::format("h.{}.{}.lora_{}.weight", l, kPeftModules[t], isA ? 'A' : 'B');
                const auto it = adapter.tensors.find(ours);
                // ours: A (IN, R), B (R, OUT); theirs (R, IN), (OUT, R).
                const int64_t rows = isA ? IN : adapter.rank, cols = isA ? adapter.rank : OUT;
                if (it == adapter.tensors.end() || int64_t(it->second.size()) != rows * cols)
                    return Error{
                        fmt::format("the adapter has no {} of {} x {} values", ours, rows, cols)};
                std::vector<float> transposed(it->second.size());
                for (int64_t i = 0; i < rows; ++i)
                    for (int64_t j = 0; j < cols; ++j)
                        transposed[size_t(j * rows + i)] = it->second[size_t(i * cols + j)];
                peft.push_back(std::move(transposed));
                const std::string theirs =
                    base.llama ? fmt::format("{}{}.{}.lora_{}.weight", kPeftLlamaPrefix, l,
                                             kPeftLlamaModules[t], isA ? 'A' : 'B')
                               : std::string(kPeftPrefix) + ours;
                views.push_back({theirs,
                                 fileio::DType::F32,
                                 {cols, rows},
                                 nullptr,
                                 size_t(rows * cols) * sizeof(float)});
            }
        }
    }
    for (size_t i = 0; i < views.size(); ++i) views[i].data = peft[i].data();

    nlohmann::json cfg = {
        {"alpha_pattern", nlohmann::json::object()},
        {"auto_mapping", nullptr},
        {"base_model_name_or_path",
         adapter.baseModel ? nlohmann::json(*adapter.baseModel) : nlohmann::json(nullptr)},
        {"bias", "none"},
        // GPT-2's linears are Conv1D: weight (in, out); Llama's are nn.Linear: (out, in).
        {"fan_in_fan_out", !base.llama},
        {"inference_mode", true},
        {"init_lora_weights", true},
        {"layer_replication", nullptr},
        {"layers_pattern", nullptr},
        {"layers_to_transform", nullptr},
        {"loftq_config", nlohmann::json::object()},
        {"lora_alpha", numberOf(adapter.alpha)},
        {"lora_dropout", adapter.dropout},
        {"megatron_config", nullptr},
        {"megatron_core", "megatron.core"},
        {"modules_to_save", nullptr},
        {"peft_type", "LORA"},
        {"r", adapter.rank},
        {"rank_pattern", nlohmann::json::object()},
        {"revision", nullptr},
        {"target_modules", adapter.targetNames(base.llama)},
        {"task_type", "CAUSAL_LM"},
        {"use_dora", false},
        {"use_rslora", false},
    };
    auto build = [&](const fs::path& temp) -> Status {
        if (Status st =
                fileio::writeSafetensors(temp / kPeftWeightsFile, views, {{"format", "pt"}});
            !st.ok()) {
            return st;
        }
        return fileio::writeFileAtomically(temp / kPeftConfigFile, cfg.dump(2) + "\n");
    };
    return buildOutputFolder(outDir, "export", build);
}

std::string portableBaseName(const fs::path& base) {
    fs::path folder = base.lexically_normal();
    const std::string ext = folder.extension().string();
    if (ext == ".safetensors" || ext == ".bin" || ext == ".pt" || ext == ".pth")
        folder = folder.parent_path();                          // the weights file in the folder
    if (!folder.has_filename()) folder = folder.parent_path();  // "a/b/" -> "a/b"
    std::error_code ec;
    if (fs::is_regular_file(folder / "config.json", ec)) {
        auto text = fileio::readWholeFile(folder / "config.json");
        if (text.ok()) {
            const auto j = nlohmann::json::parse(*text, nullptr, false);
            if (j.is_object() && j.contains("_name_or_path") && j["_name_or_path"].is_string()) {
                const std::string id = j["_name_or_path"].get<std::string>();
                // transformers writes the path it loaded from when that was a folder.
                const bool isPath = id.empty() || id.front() == '/' || id.front() == '.' ||
                                    id.front() == '~' || id.find('\\') != std::string::npos ||
                                    (id.size() > 1 && id[1] == ':');
                if (!isPath) return id;
            }
        }
    }
    // A Hugging Face cache folder: .../models--org--name/snapshots/<hash>.
    for (const auto& part : folder) {
        const std::string name = part.string();
        if (name.rfind("models--", 0) != 0 || name.size() <= 8) continue;
        // "org--name" -> "org/name" (built anew: GCC 12 misreads replace() in a loop).
        std::string id;
        for (size_t at = 8; at < name.size(); ++at) {
            if (name.compare(at, 2, "--") == 0) {
                id += '/';
                ++at;
            } else {
                id += name[at];
            }
        }
        return id;
    }
    return folder.filename().string();
}

Result<fs::path> findPeftBase(const fs::path& adapterDir) {
    auto text = fileio::readWholeFile(adapterDir / kPeftConfigFile);
    if (!text.ok()) return text.error();
    const auto j = nlohmann::json::parse(*text, nullptr, false);
    const auto it = j.is_object() ? j.find("base_model_name_or_path") : j.end();
    if (!j.is_object() || it == j.end() || !it->is_string() || it->get<std::string>().empty())
        return Error{fmt::format(
            "{}: base_model_name_or_path names no base; give the base model folder: wafer "
            "import BASE --adapter {}",
            (adapterDir / kPeftConfigFile).string(), adapterDir.string())};
    const std::string name = it->get<std::string>();
    std::vector<fs::path> candidates;
    candidates.emplace_back(name);
    const fs::path beside = fs::absolute(adapterDir).lexically_normal();
    candidates.push_back((beside.has_filename() ? beside : beside.parent_path()).parent_path() /
                         name);
    candidates.push_back(userDataDir() / "models" / name);
    candidates.push_back(appDataDir() / "resources" / name);
    std::error_code ec;
    for (const fs::path& c : candidates)
        if (!name.empty() && fs::is_directory(c, ec)) return c;
    // A Hugging Face id in the Hugging Face cache: the snapshot refs/main names, else the newest.
    if (const auto hfId = modelio::parseHfModelId(name)) {
        if (auto snapshot = modelio::resolveHfSnapshot(*hfId); snapshot.ok()) return *snapshot;
    }
    std::string cacheName = "models--";
    for (char c : name) {
        if (c == '/')
            cacheName += "--";
        else
            cacheName += c;
    }
    const fs::path snapshots = modelio::hfHubCache().dir / cacheName / "snapshots";
    fs::path newest;
    fs::file_time_type newestTime{};
    if (fs::is_directory(snapshots, ec)) {
        for (const auto& entry : fs::directory_iterator(snapshots, ec)) {
            const auto time = entry.last_write_time(ec);
            if (entry.is_directory(ec) && (newest.empty() || time > newestTime)) {
                newest = entry.path();
                newestTime = time;
            }
        }
    }
    if (!newest.empty()) return newest;
    std::string looked;
    for (const fs::path& c : candidates) looked += "\n  " + c.string();
    looked += "\n  " + snapshots.string();
    return Error{fmt::format(
        "the adapter's base \"{}\" (base_model_name_or_path in {}) is not on this machine; "
        "looked in:{}\nGive the base model folder: wafer import BASE --adapter {}",
        name, (adapterDir / kPeftConfigFile).string(), looked, adapterDir.string())};
}

Result<PeftExportResult> exportPeftAdapter(const fs::path& modelPath, const fs::path& outDir,
                                           const std::string& baseModel) {
    if (Status st = checkOutputFolderFree(outDir); !st.ok()) return st.error();
    auto loaded = modelio::loadModel(modelPath);
    if (!loaded.ok()) return loaded.error();
    const modelio::LoadedModel& m = *loaded;
    if (!m.shape.hasLora() || !m.config.lora) {
        return Error{fmt::format(
            "{}: this model has no LoRA adapters (its config has no lora: section); export it "
            "as a whole model with --format hf",
            m.weightsFile.string())};
    }
    // The rows of tokens a fine-tune added (a chat template's) trained beside the adapters and
    // live in the grown embedding, which a base model of the old vocabulary lacks: an adapter
    // folder without them would answer with untrained rows, so it is refused.
    if (m.config.lora->trainableTokensFrom > 0) {
        return Error{fmt::format(
            "{}: this LoRA run also trained the embedding rows of the tokens it added to the "
            "vocabulary (ids {} to {}, lora.trainable_tokens_from), which a PEFT adapter folder "
            "cannot carry here; export the whole model with the adapters merged instead: wafer "
            "export {} --merge --out DIR",
            m.weightsFile.string(), m.config.lora->trainableTokensFrom,
            m.config.model.vocabSize - 1, modelPath.string())};
    }
    PeftExportResult result;
    result.source = m.weightsFile;
    PeftAdapter& a = result.adapter;
    a.rank = m.shape.loraRank;
    a.alpha = m.config.lora->alpha;
    a.dropout = m.config.lora->dropout;
    a.targets = m.shape.loraTargets;
    if (!baseModel.empty()) {
        a.baseModel = baseModel;
    } else if (!m.config.runconfig.checkpointPath.empty()) {
        a.baseModel = portableBaseName(m.config.runconfig.checkpointPath);
    }
    const model::ParameterTable table(m.shape);
    for (const model::TensorSlice& t : table.tensors()) {
        if (t.name.find(".lora_") == std::string::npos) continue;
        a.tensors.emplace(t.name,
                          std::vector<float>(m.params.begin() + std::ptrdiff_t(t.offset),
                                             m.params.begin() + std::ptrdiff_t(t.offset + t.size)));
        result.adapterParameters += t.size;
    }
    auto written = writePeftAdapter(a, peftBase(m.shape), outDir);
    if (!written.ok()) return written.error();
    result.outDir = *written;
    return result;
}

Result<PeftImportResult> importPeftAdapter(const fs::path& basePath, const fs::path& adapterDir,
                                           const fs::path& outDir) {
    if (Status st = checkOutputFolderFree(outDir); !st.ok()) return st.error();
    auto loaded = modelio::loadModel(basePath);
    if (!loaded.ok()) return loaded.error();
    const modelio::LoadedModel& m = *loaded;
    if (m.shape.hasLora()) {
        return Error{fmt::format(
            "{}: the base already holds LoRA adapters (rank {}); merge them first (wafer export "
            "{} --merge --out DIR) and give that folder as the base",
            m.weightsFile.string(), m.shape.loraRank, m.folder.string())};
    }
    auto adapter = readPeftAdapter(adapterDir, peftBase(m.shape));
    if (!adapter.ok()) return adapter.error();
    PeftImportResult result;
    result.base = absoluteNormal(m.weightsFile);

    config::Config cfg = m.config;
    bool byteVocabulary = false;        // an HF folder's 256 byte symbols: our byte tokenizer
    if (looksLikeHfFolder(m.folder)) {  // config.json holds only the model: add GPT-2's defaults
        auto hf = inspectHfFolder(m.folder);
        if (!hf.ok()) return hf.error();
        cfg = importedRunConfig(*hf);
        byteVocabulary = hf->byteTokenizer;
    }
    cfg.lora = config::LoraConfig{.rank = adapter->rank,
                                  .alpha = adapter->alpha,
                                  .dropout = adapter->dropout,
                                  .targets = adapter->targetNames(peftBase(m.shape).llama)};
    cfg.runconfig.checkpointPath = result.base.string();
    // The adapter's own values were checked against the base by the parser (rank within the
    // hidden size, alpha, dropout, one entry per target); what is left is the adapted shape.
    model::GptShape shape = model::GptShape::fromConfig(cfg.model);
    shape.applyLora(cfg.lora);
    if (Status st = shape.validate(); !st.ok()) {
        return Error{fmt::format("{}: the adapted model is not valid: {}", adapterDir.string(),
                                 st.error().message)};
    }
    const model::ParameterTable table(shape), baseTable(m.shape);
    std::vector<float> params(table.totalSize());
    for (const model::TensorSlice& t : table.tensors()) {
        const float* from = nullptr;
        if (const model::TensorSlice* b = baseTable.find(t.name)) {
            from = m.params.data() + b->offset;
        } else if (const auto it = adapter->tensors.find(t.name); it != adapter->tensors.end()) {
            from = it->second.data();
            result.adapterParameters += t.size;
        } else {
            return Error{fmt::format("{}: no values for {} (a bug: the adapter was checked)",
                                     adapterDir.string(), t.name)};
        }
        std::copy(from, from + t.size, params.begin() + std::ptrdiff_t(t.offset));
    }
    if (adapter->baseModel)
        result.notes.push_back(fmt::format("the adapter names its base \"{}\"; its shapes fit {}",
                                           *adapter->baseModel, m.folder.string()));
    // As wafer import writes the base's tokenizer (hf_import.h).
    const auto byteTokenizer = byteVocabulary ? tokenizer::makeByteTokenizer() : nullptr;
    const modelio::FolderTokenizer tokenizerFiles{
        byteVocabulary ? byteTokenizer.get() : m.tokenizer.get(), {}, {}};
    auto build = [&](const fs::path& temp) -> Status {
        return modelio::writeModelFolder(temp, table, params.data(), cfg, 0, tokenizerFiles);
    };
    auto target = buildOutputFolder(outDir, "import", build);
    if (!target.ok()) return target.error();
    result.outDir = *target;
    result.adapter = std::move(adapter).value();
    result.parameters = table.totalSize();
    return result;
}

}  // namespace ws::interop
