// SPDX-License-Identifier: GPL-3.0-or-later
// loadModelInfo / loadModel (see load_model.h): config, tokenizer, weights header, weights, each
// failure naming the file.
#include "engine/modelio/load_model.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <system_error>

#include "engine/config/config_yaml.h"
#include "engine/fileio/atomic_file.h"
#include "engine/fileio/safetensors.h"
#include "engine/modelio/checkpoints.h"
#include "engine/modelio/hf_config.h"
#include "engine/modelio/hf_weights.h"
#include "engine/modelio/weights_io.h"
#include "engine/tokenizer/hf_tokenizer.h"
#include "engine/tokenizer/special_tokens.h"

namespace ws::modelio {

namespace fs = std::filesystem;

namespace {

// A Hugging Face GPT-2 folder's config.json, checked as `wafer import` checks it.
Result<config::Config> configFromHuggingFace(const fs::path& file) {
    auto hf = readHfConfig(file);
    if (!hf.ok()) return hf.error();
    config::Config c;
    c.model = std::move(hf->model);
    return c;
}

Result<config::Config> loadRunConfig(const fs::path& folder, const HfWeights& weights,
                                     const fs::path& weightsFile) {
    const fs::path yaml = folder / "config.yaml";
    std::error_code ec;
    if (fs::exists(yaml, ec)) {
        auto loaded = config::loadConfigFile(yaml);
        if (!loaded.ok()) {
            return Error{
                fmt::format("{}: the run's config does not load: {}\n(fix the file, or "
                            "delete it to use the copy inside {})",
                            yaml.string(), loaded.error().message, weightsFile.string())};
        }
        return std::move(loaded)->config;
    }
    const auto it = weights.metadata().find("config_yaml");
    if (it == weights.metadata().end()) {
        if (fs::exists(folder / "config.json", ec))
            return configFromHuggingFace(folder / "config.json");
        return Error{fmt::format(
            "{}: no config.yaml beside the weights, no config_yaml in the file's metadata and no "
            "Hugging Face config.json; put the config the model was trained with into {}",
            weightsFile.string(), yaml.string())};
    }
    auto parsed = config::parseConfig(it->second, weightsFile.string() + ":config_yaml", folder);
    if (!parsed.ok()) {
        return Error{fmt::format("{}: the config stored in the file does not load: {}",
                                 weightsFile.string(), parsed.error().message)};
    }
    return std::move(parsed)->config;
}

bool hasTokenizerFiles(const fs::path& folder) {
    std::error_code ec;
    return fs::exists(folder / "tokenizer.json", ec) || fs::exists(folder / "vocab.json", ec) ||
           fs::exists(folder / "merges.txt", ec);
}

}  // namespace

namespace {

// tokenizer.json: the byte tokenizer's {"type": "byte"} or a Hugging Face tokenizer.json.
Result<std::unique_ptr<tokenizer::Tokenizer>> loadTokenizerJson(const fs::path& file) {
    auto text = fileio::readWholeFile(file);
    if (!text.ok()) return text.error();
    if (tokenizer::isHfTokenizerJson(*text)) {
        return tokenizer::loadHfTokenizer(file, std::move(text).value());
    }
    const auto json = nlohmann::json::parse(*text, nullptr, false);
    if (json.is_object() && json.value("type", std::string()) == "byte") {
        return tokenizer::loadByteTokenizerFolder(file.parent_path());
    }
    return Error{fmt::format(
        "{}: not a tokenizer file this version knows (expected a Hugging Face tokenizer.json "
        "with a \"model\", or {{\"type\": \"byte\"}})",
        file.string())};
}

}  // namespace

Result<std::unique_ptr<tokenizer::Tokenizer>> loadFolderTokenizer(const fs::path& folder) {
    std::error_code ec;
    const fs::path json = folder / "tokenizer.json";
    const fs::path vocab = folder / "vocab.json", merges = folder / "merges.txt";
    const bool hasGpt2Files = fs::exists(vocab, ec) || fs::exists(merges, ec);
    if (fs::exists(json, ec)) {
        auto text = fileio::readWholeFile(json);
        if (!text.ok()) return text.error();
        if (tokenizer::isHfTokenizerJson(*text)) {
            auto hf = tokenizer::loadHfTokenizer(json, std::move(text).value());
            if (!hf.ok()) return hf.error();
            // GPT-2 folders from the Hub carry both; they load as they always did.
            const auto* asHf = dynamic_cast<const tokenizer::HfTokenizer*>(hf->get());
            if (!(hasGpt2Files && asHf != nullptr && asHf->isGpt2Pipeline())) return hf;
        } else if (!hasGpt2Files) {
            return loadTokenizerJson(json);
        }
    }
    if (hasGpt2Files) {
        if (!fs::exists(vocab, ec) || !fs::exists(merges, ec)) {
            return Error{fmt::format(
                "{}: a BPE tokenizer needs both vocab.json and merges.txt, but {} is missing; "
                "copy it from the tokenizer the model was trained with",
                folder.string(), fs::exists(vocab, ec) ? "merges.txt" : "vocab.json")};
        }
        auto bpe = tokenizer::loadGpt2Bpe(vocab, merges);
        if (!bpe.ok()) return Error{bpe.error().message};
        return std::move(bpe).value();
    }
    return Error{fmt::format(
        "{}: no tokenizer files (a Hugging Face tokenizer.json, tokenizer.json for the byte "
        "tokenizer, or vocab.json + merges.txt for GPT-2 BPE); copy the tokenizer the model was "
        "trained with into the folder",
        folder.string())};
}

Result<std::unique_ptr<tokenizer::Tokenizer>> loadTokenizerAt(const fs::path& path) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) return loadFolderTokenizer(path);
    if (!fs::exists(path, ec)) {
        return Error{
            fmt::format("{}: no such file or folder; give a model folder or its tokenizer.json",
                        path.string())};
    }
    if (path.filename() == "vocab.json" || path.filename() == "merges.txt") {
        return loadFolderTokenizer(path.parent_path().empty() ? fs::path(".") : path.parent_path());
    }
    return loadTokenizerJson(path);
}

namespace {

// loadModelInfo, keeping the weights file open for loadModel. A Hugging Face folder's weights may
// be sharded or in pytorch_model.bin (hf_weights.h); a run folder's are its model.safetensors.
Result<HfWeights> openModel(const fs::path& path, ModelInfo& m) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
        m.folder = path;
        m.weightsFile = path / "model.safetensors";
    } else if (fs::exists(path, ec)) {
        m.folder = path.parent_path().empty() ? fs::path(".") : path.parent_path();
        m.weightsFile = path;
    } else {
        return Error{
            fmt::format("{}: no such run folder or model file; give a run folder "
                        "(runconfig.model_dir) or the model.safetensors inside one",
                        path.string())};
    }
    if (!fs::exists(m.weightsFile, ec) && fs::exists(m.folder / "config.json", ec) &&
        !fs::exists(m.folder / "config.yaml", ec)) {
        // A Hugging Face folder whose weights are sharded or in pytorch_model.bin.
        if (auto other = findHfWeightsFile(m.folder); other.ok()) m.weightsFile = *other;
    }
    if (!fs::exists(m.weightsFile, ec)) {
        return Error{
            fmt::format("{}: no model.safetensors in this folder; has the run written "
                        "its weights yet? (a run writes them when it ends)",
                        m.folder.string())};
    }
    auto file = HfWeights::open(m.weightsFile);
    if (!file.ok()) return file.error();
    auto cfg = loadRunConfig(m.folder, *file, m.weightsFile);
    if (!cfg.ok()) return cfg.error();
    m.config = std::move(cfg).value();
    m.shape = model::GptShape::fromConfig(m.config.model);
    m.shape.applyLora(m.config.lora);  // a LoRA run's weights hold its adapters
    if (Status st = m.shape.validate(); !st.ok()) {
        return Error{fmt::format("{}: the run's config is not a valid model: {}", m.folder.string(),
                                 st.error().message)};
    }
    const auto stepIt = file->metadata().find("step");
    if (stepIt != file->metadata().end()) {
        try {
            m.step = std::stoll(stepIt->second);
        } catch (...) {  // a foreign file's odd metadata is not worth failing for
            m.step = -1;
        }
    }

    // A training checkpoint (checkpoint-<step>/ inside a run folder) holds weights and optimizer
    // state only; its tokenizer is the run's, one folder up.
    m.tokenizerFolder = m.folder;
    if (checkpointStep(m.folder) && !hasTokenizerFiles(m.folder)) {
        m.tokenizerFolder = m.folder.parent_path();
    }
    auto tok = loadFolderTokenizer(m.tokenizerFolder);
    if (!tok.ok()) return tok.error();
    if ((*tok)->vocabSize() > m.shape.vocab) {
        return Error{fmt::format(
            "{}: the tokenizer has {} tokens but the model's vocabulary has only {} rows; the "
            "tokenizer files do not belong to this model (copy the ones it was trained with)",
            m.folder.string(), (*tok)->vocabSize(), m.shape.vocab)};
    }
    m.tokenizer = std::shared_ptr<const tokenizer::Tokenizer>(std::move(tok).value());

    if (auto names = matchWeights(*file, model::ParameterTable(m.shape)); !names.ok()) {
        return names.error();
    }
    m.facts = model::deriveFacts(m.config);
    return file;
}

}  // namespace

Result<ModelInfo> loadModelInfo(const fs::path& path) {
    ModelInfo m;
    auto file = openModel(path, m);
    if (!file.ok()) return file.error();
    return m;
}

Result<LoadedModel> loadModel(const fs::path& path) {
    LoadedModel m;
    auto file = openModel(path, m);
    if (!file.ok()) return file.error();
    const model::ParameterTable table(m.shape);
    m.params.resize(table.totalSize());
    if (Status st = readWeights(*file, table, m.params.data()); !st.ok()) return st.error();
    return m;
}

}  // namespace ws::modelio
