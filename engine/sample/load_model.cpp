// loadModel (see load_model.h): config, tokenizer, weights, each failure naming the file.
#include "engine/sample/load_model.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <system_error>

#include "engine/checkpoint/safetensors.h"
#include "engine/config/config_yaml.h"
#include "engine/session/weights_io.h"
#include "engine/tokenizer/file_io.h"

namespace ws::sample {

namespace fs = std::filesystem;

namespace {

// A Hugging Face GPT-2 folder's config.json (GPT2Config keys), for checkpoints downloaded from
// the Hub (GPT-2, Cerebras-GPT) that carry no Wafer Studio config.
Result<config::Config> configFromHuggingFace(const fs::path& file) {
    auto text = tokenizer::readWholeFile(file);
    if (!text.ok()) return text.error();
    const auto j = nlohmann::json::parse(*text, nullptr, false);
    if (!j.is_object()) return Error{file.string() + ": not a JSON object"};
    const std::string type = j.value("model_type", std::string("gpt2"));
    if (type != "gpt2") {
        return Error{
            fmt::format("{}: model_type \"{}\" is not GPT-2; only GPT-2-architecture "
                        "checkpoints (GPT-2, Cerebras-GPT) can be loaded",
                        file.string(), type)};
    }
    const std::string activation = j.value("activation_function", std::string("gelu_new"));
    if (activation != "gelu_new" && activation != "gelu_pytorch_tanh") {
        return Error{
            fmt::format("{}: activation_function \"{}\" is not GPT-2's tanh GELU "
                        "(gelu_new), which is the only one the engine computes",
                        file.string(), activation)};
    }
    auto integer = [&](const char* key, int fallback) {
        const auto it = j.find(key);
        return it != j.end() && it->is_number_integer() ? it->get<int>() : fallback;
    };
    config::Config c;
    config::ModelConfig& m = c.model;
    m.vocabSize = integer("vocab_size", 50257);
    m.hiddenSize = integer("n_embd", 768);
    m.numHiddenLayers = integer("n_layer", 12);
    m.numHeads = integer("n_head", 12);
    m.filterSize = integer("n_inner", 4 * m.hiddenSize);  // null in GPT-2's files: 4 x n_embd
    m.maxPositionEmbeddings = integer("n_positions", integer("n_ctx", 1024));
    m.layerNormEpsilon = j.value("layer_norm_epsilon", 1e-5);
    m.shareEmbeddingWeights = j.value("tie_word_embeddings", true);
    m.dropoutRate = 0.0;
    m.attentionDropoutRate = 0.0;
    return c;
}

Result<config::Config> loadRunConfig(const fs::path& folder,
                                     const checkpoint::SafetensorsFile& weights,
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

}  // namespace

Result<std::unique_ptr<tokenizer::Tokenizer>> loadFolderTokenizer(const fs::path& folder) {
    std::error_code ec;
    const fs::path byteFile = folder / "tokenizer.json";
    const fs::path vocab = folder / "vocab.json", merges = folder / "merges.txt";
    if (fs::exists(vocab, ec) || fs::exists(merges, ec)) {
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
    if (fs::exists(byteFile, ec)) {
        auto text = tokenizer::readWholeFile(byteFile);
        if (!text.ok()) return text.error();
        const auto json = nlohmann::json::parse(*text, nullptr, false);
        if (json.is_object() && json.value("type", std::string()) == "byte") {
            return tokenizer::makeByteTokenizer();
        }
        return Error{
            fmt::format("{}: not a tokenizer file this version knows (expected "
                        "{{\"type\": \"byte\"}})",
                        byteFile.string())};
    }
    return Error{fmt::format(
        "{}: no tokenizer files (tokenizer.json for the byte tokenizer, or vocab.json + "
        "merges.txt for BPE); copy the tokenizer the model was trained with into the folder",
        folder.string())};
}

Result<LoadedModel> loadModel(const fs::path& path) {
    std::error_code ec;
    LoadedModel m;
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
    if (!fs::exists(m.weightsFile, ec)) {
        return Error{
            fmt::format("{}: no model.safetensors in this folder; has the run written "
                        "its weights yet? (a run writes them when it ends)",
                        m.folder.string())};
    }
    auto file = checkpoint::SafetensorsFile::open(m.weightsFile);
    if (!file.ok()) return file.error();
    auto cfg = loadRunConfig(m.folder, *file, m.weightsFile);
    if (!cfg.ok()) return cfg.error();
    m.config = std::move(cfg).value();
    m.shape = model::GptShape::fromConfig(m.config.model);
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

    // A checkpoint-<step> folder holds no tokenizer: the run folder around it does.
    const fs::path parent = m.folder.parent_path();
    const bool checkpointFolder = m.folder.filename().string().starts_with("checkpoint-") &&
                                  !fs::exists(m.folder / "tokenizer.json", ec) &&
                                  !fs::exists(m.folder / "vocab.json", ec);
    auto tok = loadFolderTokenizer(checkpointFolder ? parent : m.folder);
    if (!tok.ok()) return tok.error();
    if ((*tok)->vocabSize() > m.shape.vocab) {
        return Error{fmt::format(
            "{}: the tokenizer has {} tokens but the model's vocabulary has only {} rows; the "
            "tokenizer files do not belong to this model (copy the ones it was trained with)",
            m.folder.string(), (*tok)->vocabSize(), m.shape.vocab)};
    }
    m.tokenizer = std::shared_ptr<const tokenizer::Tokenizer>(std::move(tok).value());

    const model::ParameterTable table(m.shape);
    m.params.resize(table.totalSize());
    if (Status st = session::loadWeights(m.weightsFile, table, m.params.data()); !st.ok()) {
        return st.error();
    }
    return m;
}

}  // namespace ws::sample
