// SPDX-License-Identifier: GPL-3.0-or-later
// Our model folder -> Hugging Face GPT-2 folder (see hf_export.h).
#include "engine/interop/hf_export.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "engine/fileio/atomic_file.h"
#include "engine/fileio/safetensors.h"
#include "engine/interop/output_folder.h"
#include "engine/model/lora_merge.h"
#include "engine/modelio/hf_config.h"
#include "engine/modelio/hf_llama_weights.h"
#include "engine/modelio/load_model.h"
#include "engine/tokenizer/bpe_tokenizer.h"
#include "engine/tokenizer/byte_level.h"

namespace ws::interop {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kEndOfText = "<|endoftext|>";

Status writeByteVocabulary(const fs::path& dir) {
    nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
    for (int b = 0; b < 256; ++b) vocab[tokenizer::bytesToByteLevel(std::string(1, char(b)))] = b;
    if (Status st = fileio::writeFileAtomically(dir / "vocab.json", vocab.dump() + "\n");
        !st.ok()) {
        return st;
    }
    // transformers skips the first line of merges.txt unconditionally: keep the version header.
    return fileio::writeFileAtomically(dir / "merges.txt", "#version: 0.2\n");
}

std::optional<int> endOfTextId(const tokenizer::Tokenizer& tok) {
    const auto* bpe = dynamic_cast<const tokenizer::BpeTokenizer*>(&tok);
    if (!bpe) return std::nullopt;
    for (int32_t id = 0; id < bpe->vocabSize(); ++id) {
        if (bpe->token(id).key == kEndOfText) return id;
    }
    return std::nullopt;
}

}  // namespace

Result<ExportResult> exportHuggingFace(const fs::path& modelPath, const fs::path& outDir,
                                       bool mergeAdapters) {
    if (Status st = checkOutputFolderFree(outDir); !st.ok()) return st.error();
    auto loaded = modelio::loadModel(modelPath);
    if (!loaded.ok()) return loaded.error();
    const modelio::LoadedModel& m = *loaded;
    if (Status st = modelio::checkHfExportable(m.config.model); !st.ok()) {
        return Error{fmt::format("{}: {}", m.weightsFile.string(), st.error().message)};
    }
    if (m.shape.hasLora() && !mergeAdapters) {
        // GPT-2 in transformers has no adapters: they would be dropped without a word.
        return Error{fmt::format(
            "{}: this model holds LoRA adapters (rank {}), which a plain GPT-2 folder cannot "
            "carry; add --merge to fold them into the weights, or export them with --format peft",
            m.weightsFile.string(), m.shape.loraRank)};
    }
    const model::ParameterTable table(model::lora::baseShape(m.shape));
    const std::vector<float> merged = m.shape.hasLora()
                                          ? model::lora::mergeAdapters(m.shape, m.params.data())
                                          : std::vector<float>();
    const float* params = m.shape.hasLora() ? merged.data() : m.params.data();

    ExportResult result;
    result.mergedAdapterRank = m.shape.hasLora() ? m.shape.loraRank : 0;
    result.source = m.weightsFile;
    result.parameters = table.totalSize();
    result.tokenizerKind = m.tokenizer->kind();
    const std::optional<int> eos = endOfTextId(*m.tokenizer);
    const std::string configText = modelio::hfConfigJson(m.config.model, eos);
    result.architecture = nlohmann::json::parse(configText)["architectures"][0].get<std::string>();

    // A Llama-family model leaves in HF's q/k/v/o and gate/up/down names ((out, in) layout).
    std::vector<modelio::HfTensor> llama;
    if (modelio::usesHfLlamaNames(table.shape())) {
        auto tensors = modelio::toHfLlamaTensors(table, params);
        if (!tensors.ok())
            return Error{fmt::format("{}: {}", m.weightsFile.string(), tensors.error().message)};
        llama = std::move(tensors).value();
    }

    auto build = [&](const fs::path& temp) -> Status {
        std::vector<fileio::TensorView> views;
        for (const auto& h : llama) {
            views.push_back({h.name, fileio::DType::F32, h.shape, h.values.data(),
                             h.values.size() * sizeof(float)});
        }
        for (const auto& t : table.tensors()) {
            if (!llama.empty()) break;
            const std::string name = t.name == "lm_head.weight" ? t.name : "transformer." + t.name;
            views.push_back(
                {name, fileio::DType::F32, t.shape, params + t.offset, t.size * sizeof(float)});
        }
        const std::map<std::string, std::string> metadata = {{"format", "pt"}};
        if (Status st = fileio::writeSafetensors(temp / "model.safetensors", views, metadata);
            !st.ok()) {
            return st;
        }
        if (Status st = fileio::writeFileAtomically(temp / "config.json", configText); !st.ok()) {
            return st;
        }
        if (result.tokenizerKind == "hf") {
            // A Hugging Face tokenizer.json goes back as it came, with its own
            // tokenizer_config.json (chat template, special tokens) when it had one.
            if (Status st = m.tokenizer->save(temp); !st.ok()) return st;
            result.tokenizerNote = fmt::format("Hugging Face tokenizer.json ({} tokens), as read",
                                               m.tokenizer->vocabSize());
            std::error_code ec;
            if (std::filesystem::exists(temp / "tokenizer_config.json", ec))
                return Status::success();
            const nlohmann::ordered_json tc = {
                {"tokenizer_class", "PreTrainedTokenizerFast"},
                {"model_max_length", m.config.model.maxPositionEmbeddings},
                {"clean_up_tokenization_spaces", false},
            };
            return fileio::writeFileAtomically(temp / "tokenizer_config.json", tc.dump(2) + "\n");
        }
        if (result.tokenizerKind == "byte") {
            if (Status st = writeByteVocabulary(temp); !st.ok()) return st;
            result.tokenizerNote =
                "byte tokenizer as a GPT-2 vocab.json of the 256 byte symbols (id = byte value) "
                "with no merges: GPT2Tokenizer gives exactly our token ids; it has no "
                "<|endoftext|>, so bos/eos/unk are unset";
            // A chat template's special tokens (ids from 256 on) go where GPT2Tokenizer reads
            // added tokens from, as the bpe tokenizer's save() writes them.
            if (m.tokenizer->vocabSize() > 256) {
                nlohmann::ordered_json added = nlohmann::ordered_json::object();
                for (int32_t id = 256; id < m.tokenizer->vocabSize(); ++id)
                    added[m.tokenizer->tokenName(id)] = id;
                if (Status st = fileio::writeFileAtomically(temp / "added_tokens.json",
                                                            added.dump() + "\n");
                    !st.ok())
                    return st;
                result.tokenizerNote += fmt::format(", and {} added tokens (added_tokens.json)",
                                                    m.tokenizer->vocabSize() - 256);
            }
        } else {
            if (Status st = m.tokenizer->save(temp); !st.ok()) return st;
            result.tokenizerNote =
                eos ? fmt::format(
                          "GPT-2 BPE vocab.json + merges.txt ({} tokens, <|endoftext|> "
                          "= {})",
                          m.tokenizer->vocabSize(), *eos)
                    : fmt::format(
                          "GPT-2 BPE vocab.json + merges.txt ({} tokens; no "
                          "<|endoftext|>, so bos/eos/unk are unset)",
                          m.tokenizer->vocabSize());
        }
        nlohmann::ordered_json tc = {
            {"tokenizer_class", "GPT2Tokenizer"},
            {"model_max_length", m.config.model.maxPositionEmbeddings},
            {"add_prefix_space", false},
            {"clean_up_tokenization_spaces", false},
        };
        for (const char* key : {"bos_token", "eos_token", "unk_token"}) {
            tc[key] = eos ? nlohmann::ordered_json(kEndOfText) : nlohmann::ordered_json(nullptr);
        }
        return fileio::writeFileAtomically(temp / "tokenizer_config.json", tc.dump(2) + "\n");
    };
    auto target = buildOutputFolder(outDir, "export", build);
    if (!target.ok()) return target.error();
    result.outDir = *target;
    return result;
}

}  // namespace ws::interop
