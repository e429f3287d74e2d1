// SPDX-License-Identifier: GPL-3.0-or-later
// Hugging Face GPT-2 folder -> our model folder (see hf_import.h).
#include "engine/interop/hf_import.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <regex>
#include <set>

#include "engine/config/config_yaml.h"
#include "engine/fileio/atomic_file.h"
#include "engine/fileio/safetensors.h"
#include "engine/interop/output_folder.h"
#include "engine/modelio/hf_config.h"
#include "engine/modelio/hf_llama_weights.h"
#include "engine/modelio/hf_weights.h"
#include "engine/modelio/load_model.h"
#include "engine/modelio/model_folder.h"
#include "engine/tokenizer/bpe_tokenizer.h"
#include "engine/tokenizer/hf_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"

namespace ws::interop {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kPrefix = "transformer.";

std::string canonicalName(std::string_view name) {
    if (name.starts_with(kPrefix)) name.remove_prefix(kPrefix.size());
    return std::string(name);
}

bool isAttentionBuffer(const std::string& canonical) {
    static const std::regex buffer(R"(h\.\d+\.attn\.(bias|masked_bias))");
    return std::regex_match(canonical, buffer);
}

// canonical name -> name in the file, after checking there is nothing we do not understand.
Result<std::map<std::string, std::string>> mapTensors(const modelio::HfWeights& file,
                                                      const model::ParameterTable& table,
                                                      std::vector<std::string>& notes) {
    std::map<std::string, std::string> byCanonical;
    int buffers = 0;
    for (const std::string& name : file.names()) {
        const std::string canonical = canonicalName(name);
        if (isAttentionBuffer(canonical)) {
            ++buffers;
            continue;
        }
        if (!table.find(canonical) && canonical != "lm_head.weight") {
            return Error{fmt::format(
                "{}: tensor {} is not part of a GPT-2 language model (GPT2LMHeadModel); this "
                "file holds another head or architecture, which cannot be imported",
                file.find(name)->file.string(), name)};
        }
        if (auto [it, fresh] = byCanonical.emplace(canonical, name); !fresh) {
            return Error{fmt::format("{}: tensor {} is stored twice (as {} and {})",
                                     file.path().string(), canonical, it->second, name)};
        }
    }
    if (buffers > 0) {
        notes.push_back(fmt::format(
            "ignored {} attention buffer tensor(s) (attn.bias / attn.masked_bias: the causal "
            "mask constants, not weights)",
            buffers));
    }
    for (const auto& t : table.tensors()) {
        const auto it = byCanonical.find(t.name);
        if (it == byCanonical.end()) {
            return Error{fmt::format(
                "{}: tensor {} (or transformer.{}) is missing; config.json describes a model "
                "with it (n_layer {}, tie_word_embeddings {})",
                file.path().string(), t.name, t.name, table.shape().layers,
                table.shape().tiedEmbedding)};
        }
        const auto* info = file.find(it->second);
        if (info->shape != t.shape) {
            const bool transposed = t.shape.size() == 2 && info->shape.size() == 2 &&
                                    info->shape[0] == t.shape[1] && info->shape[1] == t.shape[0];
            return Error{fmt::format(
                "{}: tensor {} has shape [{}] but config.json implies [{}]{}", info->file.string(),
                it->second, fmt::join(info->shape, ", "), fmt::join(t.shape, ", "),
                transposed ? "; it looks transposed (nn.Linear's (out, in) layout), while GPT-2 "
                             "stores Conv1D weights as (in, out)"
                           : "; the weights do not belong to this config.json")};
        }
    }
    return byCanonical;
}

// A Llama-family file's tensors: every one the config implies, present with its shape (the mapping
// checks), and nothing else but the rotary inv_freq buffers older checkpoints saved (ignored with
// a note) and a tied lm_head.weight. Gives the names to read, for the dtype count.
template <typename WeightsFile>
Result<std::vector<std::string>> checkLlamaTensors(const WeightsFile& file,
                                                   const model::ParameterTable& table,
                                                   std::vector<std::string>& notes) {
    if (Status st = modelio::matchHfLlamaWeights(file, table); !st.ok()) return st.error();
    auto maps = modelio::hfLlamaTensorMap(table);
    std::set<std::string> expected;
    for (const auto& map : *maps)
        for (const auto& part : map.parts) expected.insert(part.name);
    static const std::regex invFreq(R"(model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq)");
    int buffers = 0;
    for (const std::string& name : file.names()) {
        if (expected.count(name)) continue;
        if (std::regex_match(name, invFreq)) {
            ++buffers;
        } else if (name == "lm_head.weight" && table.shape().tiedEmbedding) {
            notes.push_back(
                "lm_head.weight is ignored: config.json ties it to model.embed_tokens.weight "
                "(tie_word_embeddings), as transformers does when loading");
        } else {
            return Error{fmt::format(
                "{}: tensor {} is not part of this Llama-family language model (config.json's "
                "architecture); this file holds another head or variant, which cannot be imported",
                file.path().string(), name)};
        }
    }
    if (buffers > 0)
        notes.push_back(fmt::format(
            "ignored {} rotary_emb.inv_freq buffer(s) (constants recomputed from rope_theta)",
            buffers));
    return std::vector<std::string>(expected.begin(), expected.end());
}

}  // namespace

bool looksLikeHfFolder(const fs::path& folder) {
    std::error_code ec;
    return fs::exists(folder / "config.json", ec) && !fs::exists(folder / "config.yaml", ec);
}

Result<HfFolder> inspectHfFolder(const fs::path& source) {
    std::error_code ec;
    // The weights file itself (model.safetensors or pytorch_model.bin) names its folder.
    const bool weightsGiven = fs::is_regular_file(source, ec);
    const fs::path folder =
        weightsGiven ? (source.parent_path().empty() ? fs::path(".") : source.parent_path())
                     : source;
    if (!fs::is_directory(folder, ec)) {
        return Error{
            fmt::format("{}: not a folder; give the folder holding model.safetensors (or "
                        "pytorch_model.bin), config.json, vocab.json and merges.txt",
                        folder.string())};
    }
    HfFolder hf;
    hf.folder = folder;
    if (weightsGiven) {
        hf.weightsFile = source;
    } else {
        auto found = modelio::findHfWeightsFile(folder);
        hf.weightsFile = found.ok() ? *found : folder / "model.safetensors";
    }
    hf.configFile = folder / "config.json";
    hf.vocabFile = folder / "vocab.json";
    hf.mergesFile = folder / "merges.txt";
    // The tokenizer: GPT-2's slow files (vocab.json + merges.txt), or else a fast tokenizer's
    // tokenizer.json (Llama, Mistral, Qwen2, SmolLM folders ship only that).
    // A tokenizer.json wins unless it is GPT-2's own pipeline beside GPT-2's files (as
    // modelio::loadFolderTokenizer decides): SmolLM-style folders ship both, and their vocab.json
    // + merges.txt alone would tokenize differently. One the engine cannot read is refused here.
    if (fs::exists(folder / "tokenizer.json", ec)) {
        auto folderTokenizer = modelio::loadFolderTokenizer(folder);
        if (!folderTokenizer.ok()) return folderTokenizer.error();
        if ((*folderTokenizer)->kind() == "hf") hf.tokenizerJson = folder / "tokenizer.json";
    }
    std::vector<fs::path> required = {hf.configFile, hf.weightsFile};
    if (hf.tokenizerJson.empty()) required.insert(required.end(), {hf.vocabFile, hf.mergesFile});
    for (const fs::path& f : required) {
        if (fs::exists(f, ec)) continue;
        return Error{
            fmt::format("{}: {} is missing; a Hugging Face folder holds model.safetensors (or "
                        "its shards with model.safetensors.index.json, or pytorch_model.bin), "
                        "config.json and its tokenizer (tokenizer.json, or GPT-2's vocab.json "
                        "and merges.txt)",
                        folder.string(), f.filename().string())};
    }
    auto cfg = modelio::readHfConfig(hf.configFile);
    if (!cfg.ok()) return cfg.error();
    hf.model = std::move(cfg->model);
    hf.notes = std::move(cfg->notes);
    const model::GptShape shape = model::GptShape::fromConfig(hf.model);
    if (Status st = shape.validate(); !st.ok()) {
        return Error{
            fmt::format("{}: not a usable model: {}", hf.configFile.string(), st.error().message)};
    }

    if (!hf.tokenizerJson.empty()) {
        auto fast = tokenizer::loadHfTokenizer(hf.tokenizerJson);
        if (!fast.ok()) return fast.error();
        hf.tokenizerVocab = (*fast)->vocabSize();
    } else {
        auto bpe = tokenizer::BpeTokenizer::load(hf.vocabFile, hf.mergesFile);
        if (!bpe.ok()) return bpe.error();
        hf.tokenizerVocab = (*bpe)->vocabSize();
        hf.byteTokenizer = (*bpe)->merges().empty() && hf.tokenizerVocab == 256;
        for (int b = 0; b < 256 && hf.byteTokenizer; ++b) {
            hf.byteTokenizer = (*bpe)->byteToken(uint8_t(b)) == b;
        }
    }
    if (hf.tokenizerVocab > hf.model.vocabSize) {
        return Error{fmt::format(
            "{}: the tokenizer has {} tokens but config.json's vocab_size is {}; the tokenizer "
            "files do not belong to this model",
            (hf.tokenizerJson.empty() ? hf.vocabFile : hf.tokenizerJson).string(),
            hf.tokenizerVocab, hf.model.vocabSize)};
    }

    const model::ParameterTable table(shape);
    auto file = modelio::HfWeights::open(hf.weightsFile);
    if (!file.ok()) return file.error();
    // A tensor's dtype must be one the reader converts; counted for the import summary.
    const auto countDtype = [&](const std::string& name) -> Status {
        const auto* info = file->find(name);
        if (info->dtype != fileio::DType::F32 && info->dtype != fileio::DType::F16 &&
            info->dtype != fileio::DType::BF16 && info->dtype != fileio::DType::F64) {
            return Error{
                fmt::format("{}: tensor {} is stored as {}; only F32, F16, BF16 and F64 "
                            "weights can be imported (quantized files cannot)",
                            info->file.string(), name, dtypeName(info->dtype))};
        }
        ++hf.dtypeCounts[std::string(dtypeName(info->dtype))];
        return Status::success();
    };
    if (modelio::usesHfLlamaNames(shape)) {
        auto names = checkLlamaTensors(*file, table, hf.notes);
        if (!names.ok()) return names.error();
        for (const std::string& name : *names)
            if (Status st = countDtype(name); !st.ok()) return st.error();
    } else {
        auto mapped = mapTensors(*file, table, hf.notes);
        if (!mapped.ok()) return mapped.error();
        for (const auto& [canonical, name] : *mapped)
            if (Status st = countDtype(name); !st.ok()) return st.error();
        if (shape.tiedEmbedding && mapped->count("lm_head.weight")) {
            hf.notes.push_back(
                "lm_head.weight is ignored: config.json ties it to wte.weight "
                "(tie_word_embeddings), as transformers does when loading");
        }
    }
    const std::vector<fs::path> files = file->files();
    if (file->sharded()) {
        hf.notes.push_back(fmt::format("weights read from {} shard(s) named by {}", files.size(),
                                       hf.weightsFile.filename().string()));
    }
    if (std::any_of(files.begin(), files.end(),
                    [](const fs::path& f) { return f.extension() != ".safetensors"; })) {
        hf.notes.push_back(fmt::format(
            "weights read from {} (torch.save's zip format) by a restricted reader: its pickle "
            "was checked opcode by opcode and nothing in it was executed",
            files.size() == 1 ? files.front().filename().string()
                              : hf.weightsFile.filename().string()));
    }
    return hf;
}

Result<std::vector<float>> readHfWeights(const HfFolder& hf, const model::ParameterTable& table) {
    auto file = modelio::HfWeights::open(hf.weightsFile);
    if (!file.ok()) return file.error();
    if (modelio::usesHfLlamaNames(table.shape())) {
        std::vector<float> params(table.totalSize());
        if (Status st = modelio::readHfLlamaWeights(*file, table, params.data()); !st.ok())
            return st.error();
        return params;
    }
    std::vector<std::string> ignored;
    auto mapped = mapTensors(*file, table, ignored);
    if (!mapped.ok()) return mapped.error();
    std::vector<float> params(table.totalSize());
    for (const auto& t : table.tensors()) {
        auto values = file->readAsFloat(mapped->at(t.name));
        if (!values.ok()) return values.error();
        std::copy(values->begin(), values->end(), params.begin() + ptrdiff_t(t.offset));
    }
    return params;
}

config::Config importedRunConfig(const HfFolder& hf) {
    config::Config c;
    c.model = hf.model;
    c.optimizer.optimizerType = "adamw";
    c.optimizer.betas = {0.9, 0.95};
    c.optimizer.weightDecay = 0.1;
    c.optimizer.maxGradientNorm = 1.0;
    c.optimizer.learningRate.constant = 6e-4;
    for (config::InputConfig* input : {&c.trainInput, &c.evalInput}) {
        input->batchSize = 8;
        input->maxSequenceLength = std::min(128, hf.model.maxPositionEmbeddings);
        if (hf.model.attentionSlidingWindowLength > 0)
            input->maxSequenceLength =
                std::min(input->maxSequenceLength, hf.model.attentionSlidingWindowLength);
        if (!hf.tokenizerJson.empty()) {
            input->tokenizer.type = "hf";
            input->tokenizer.tokenizerFile = "tokenizer.json";
        } else if (hf.byteTokenizer) {
            input->tokenizer.type = "byte";
        } else {
            input->tokenizer.type = "bpe";
            input->tokenizer.vocabFile = "vocab.json";
            input->tokenizer.mergesFile = "merges.txt";
        }
    }
    return c;
}

Result<ImportResult> importHuggingFace(const fs::path& hfFolder, const fs::path& outDir) {
    if (Status st = checkOutputFolderFree(outDir); !st.ok()) return st.error();
    auto hf = inspectHfFolder(hfFolder);
    if (!hf.ok()) return hf.error();
    const model::ParameterTable table(model::GptShape::fromConfig(hf->model));
    auto params = readHfWeights(*hf, table);
    if (!params.ok()) return params.error();
    const config::Config cfg = importedRunConfig(*hf);

    // A fast tokenizer's tokenizer.json (with its tokenizer_config.json) and the byte tokenizer
    // write themselves; GPT-2's BPE files are copied as published.
    std::unique_ptr<tokenizer::Tokenizer> ownTokenizer;
    if (!hf->tokenizerJson.empty()) {
        auto fast = tokenizer::loadHfTokenizer(hf->tokenizerJson);
        if (!fast.ok()) return fast.error();
        ownTokenizer = std::move(fast).value();
    } else if (hf->byteTokenizer) {
        ownTokenizer = tokenizer::makeByteTokenizer();
    }
    const modelio::FolderTokenizer tokenizerFiles{ownTokenizer.get(), hf->vocabFile,
                                                  hf->mergesFile};
    auto build = [&](const fs::path& temp) -> Status {
        return modelio::writeModelFolder(temp, table, params->data(), cfg, 0, tokenizerFiles);
    };
    auto target = buildOutputFolder(outDir, "import", build);
    if (!target.ok()) return target.error();
    ImportResult result;
    result.outDir = *target;
    result.source = std::move(hf).value();
    result.parameters = table.totalSize();
    return result;
}

}  // namespace ws::interop
