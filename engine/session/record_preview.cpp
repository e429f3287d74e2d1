// SPDX-License-Identifier: GPL-3.0-or-later
// Record preview: see record_preview.h. The pipeline of previewRecords: columns -> records ->
// template -> examples (all of them, and the first few as segments) -> data set (rows, stats,
// steps, warnings).
#include "engine/session/record_preview.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "engine/data/chat_examples.h"
#include "engine/data/chat_records.h"
#include "engine/data/csv_table.h"
#include "engine/data/example_dataset.h"
#include "engine/data/record_text.h"
#include "engine/data/zip_records.h"
#include "engine/fileio/atomic_file.h"
#include "engine/session/chat_run_data.h"

namespace ws::session {

namespace fs = std::filesystem;

namespace {

std::string lowerExtension(const fs::path& file) {
    std::string ext = file.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    return ext;
}

// ',' for CSV, a tab for TSV, 0 for other names (as chat_records.h picks the reader).
char tableSeparator(const fs::path& name) {
    const std::string ext = lowerExtension(name);
    if (ext == ".csv") return ',';
    if (ext == ".tsv" || ext == ".tab") return '\t';
    return 0;
}

Result<std::vector<std::string>> tableColumns(std::string_view bytes, std::string_view name,
                                              char separator) {
    auto text = data::checkRecordText(bytes, name);
    if (!text.ok()) return text.error();
    auto table = data::readCsvTable(*text, separator, name);
    if (!table.ok()) return table.error();
    return table->columns;
}

bool isByte(unsigned char c, unsigned char mask, unsigned char value) {
    return (c & mask) == value;
}

// `pos` moved forward past UTF-8 continuation bytes, so a segment never splits a character.
size_t characterBoundary(const std::string& text, size_t pos) {
    while (pos < text.size() && isByte(static_cast<unsigned char>(text[pos]), 0xC0, 0x80)) ++pos;
    return pos;
}

// Phase 1: the CSV/TSV header of the first table among data_dir's files.
void readColumns(const config::InputConfig& input, RecordPreview& out) {
    for (const std::string& entry : input.dataDir) {
        auto columns = recordColumns(entry);
        if (columns.ok() && !columns->empty()) {
            out.columns = std::move(columns).value();
            return;
        }
    }
}

std::string templateReason(const config::InputConfig& input, const chat::ChatTemplate& t) {
    if (input.chatTemplate == "auto") {
        if (!t.isBuiltin()) return "the base model's own chat template";
        return tokenizerFolder(input.tokenizer).empty()
                   ? "built in: the byte tokenizer has no model folder with a chat template"
                   : "built in: the base model has no chat template of its own "
                     "(tokenizer_config.json or chat_template.jinja beside its tokenizer)";
    }
    if (input.chatTemplate.ends_with(".jinja")) return "the file train_input.chat_template names";
    return "as train_input.chat_template sets it";
}

// Phase 4b: the first few training records rendered, with their token masks as segments.
Result<std::vector<PreviewExample>> shownExamples(const data::RecordSet& train,
                                                  const chat::ChatTemplate& chatTemplate,
                                                  const tokenizer::Tokenizer& tokenizer,
                                                  const data::ChatMaskOptions& mask, int T,
                                                  size_t count) {
    std::vector<PreviewExample> out;
    auto add = [&](const std::string& text, const data::Example& example) -> Status {
        auto offsets = tokenizer.encodeWithOffsets(text, false);
        if (!offsets.ok()) return Error{example.origin + ": " + offsets.error().message};
        if (offsets->ids != example.ids)
            return Error{example.origin +
                         ": the tokens of the rendered text differ from the example's (a bug: "
                         "please report it)"};
        PreviewExample shown;
        shown.origin = example.origin;
        shown.tokens = int64_t(example.ids.size());
        const size_t fits = std::min(example.ids.size(), size_t(T) + 1);
        for (size_t i = 1; i < fits; ++i) shown.trainedTokens += example.mask[i] ? 1 : 0;
        shown.segments = previewSegments(text, offsets->offsets, example.mask, T);
        out.push_back(std::move(shown));
        return Status::success();
    };
    for (size_t i = 0; i < train.conversations.size() && out.size() < count; ++i) {
        auto one = data::renderExample(train.conversations[i], chatTemplate, tokenizer, mask);
        if (!one.ok()) return one.error();
        if (Status st = add(one->text, one->example); !st.ok()) return st.error();
    }
    for (size_t i = 0; i < train.texts.size() && out.size() < count; ++i) {
        data::RecordSet one;
        one.texts.push_back(train.texts[i]);
        auto example = data::makeExamples(one, chatTemplate, tokenizer, mask);
        if (!example.ok()) return example.error();
        if (Status st = add(train.texts[i].text, example->front()); !st.ok()) return st.error();
    }
    return out;
}

// Phase 5: rows, statistics, steps and warnings of the data set the run builds.
void buildDataset(const RecordPreviewRequest& request, std::vector<data::Example> train,
                  std::vector<data::Example> heldOut, const data::ExampleOptions& options,
                  RecordPreview& out) {
    const int B = request.config.trainInput.batchSize;
    // Kept for the statistics when the data set is refused (they say why).
    std::vector<data::Example> copy = train;
    auto dataset = data::ExampleDataset::create(std::move(train), std::move(heldOut), options);
    if (!dataset.ok()) {
        out.blocking = "train_input.data_dir: " + dataset.error().message;
        out.stats = data::prepareExamples(std::move(copy), options.T).stats;
        return;
    }
    out.stats = dataset->trainStats();
    out.rows = dataset->trainRows().rows();
    if (Status st = dataset->checkBatch(B); !st.ok())
        out.blocking = "train_input.batch_size: " + st.error().message;
    out.steps = request.steps;
    if (out.steps <= 0 && out.rows > 0 && B > 0) {
        out.stepsCounted = true;
        out.steps = std::max(1, request.epochs) * ((out.rows + B - 1) / B);
        out.steps = std::max(out.steps, request.minSteps);
        if (request.maxSteps > 0) out.steps = std::min(out.steps, request.maxSteps);
    }
    out.epochs = out.rows > 0 ? dataset->epochs(out.steps, B) : 0.0;
    for (data::DataWarning& w : dataset->warnings(out.steps, B))
        out.warnings.push_back(std::move(w.message));
}

}  // namespace

Result<std::vector<std::string>> recordColumns(const fs::path& file) {
    const std::string ext = lowerExtension(file);
    if (ext != ".zip" && tableSeparator(file) == 0) return std::vector<std::string>{};
    auto bytes = fileio::readWholeFile(file);
    if (!bytes.ok()) return bytes.error();
    if (ext != ".zip") return tableColumns(*bytes, file.string(), tableSeparator(file));
    auto contents = data::readZipRecordFiles(*bytes, file.string());
    if (!contents.ok()) return contents.error();
    for (const data::ZipEntry& entry : contents->files) {
        if (const char sep = tableSeparator(entry.name); sep != 0)
            return tableColumns(entry.bytes, file.string() + "/" + entry.name, sep);
    }
    return std::vector<std::string>{};
}

std::vector<PreviewSegment> previewSegments(const std::string& text,
                                            const std::vector<tokenizer::ByteSpan>& offsets,
                                            const std::vector<uint8_t>& mask, int T) {
    std::vector<PreviewSegment> out;
    auto append = [&out](std::string piece, PreviewSegment::Kind kind) {
        if (piece.empty()) return;
        if (!out.empty() && out.back().kind == kind)
            out.back().text += piece;
        else
            out.push_back({std::move(piece), kind});
    };
    size_t pos = 0;
    PreviewSegment::Kind kind = PreviewSegment::Kind::Context;
    for (size_t i = 0; i < offsets.size(); ++i) {
        kind = i >= size_t(T) + 1                    ? PreviewSegment::Kind::Cut
               : i > 0 && i < mask.size() && mask[i] ? PreviewSegment::Kind::Trained
                                                     : PreviewSegment::Kind::Context;
        // Ranges may overlap or leave gaps (hf): each token takes the text up to its end.
        const size_t end =
            characterBoundary(text, std::min(text.size(), std::max(pos, offsets[i].end)));
        append(text.substr(pos, end - pos), kind);
        pos = end;
    }
    append(text.substr(pos), kind);
    return out;
}

RecordPreview previewRecords(const RecordPreviewRequest& request) {
    const config::InputConfig& input = request.config.trainInput;
    RecordPreview out;
    out.T = input.maxSequenceLength;
    out.batchSize = input.batchSize;
    out.options = recordOptions(input);
    out.trainOnInputs = input.trainOnInputs;
    out.maskHistory = input.maskHistory;
    readColumns(input, out);

    auto records = readRunRecords(request.config);
    if (!records.ok()) {
        out.error = records.error().message;
        return out;
    }
    out.report = records->report;
    out.warnings = records->report.warnings;
    out.trainRecords = records->train.conversations.size() + records->train.texts.size();
    out.heldOutRecords = records->heldOut.conversations.size() + records->heldOut.texts.size();

    auto chatTemplate = chatTemplateFor(input);
    if (!chatTemplate.ok()) {
        out.error = chatTemplate.error().message;
        return out;
    }
    out.templateName = chatTemplate->name();
    out.templateReason = templateReason(input, *chatTemplate);
    auto tokens = templateTokenizer(*chatTemplate, request.tokenizer);
    if (!tokens.ok()) {
        out.error = tokens.error().message;
        return out;
    }
    const tokenizer::Tokenizer& tok = **tokens;

    const data::ChatMaskOptions mask = chatMaskOptions(input);
    auto shown =
        shownExamples(records->train, *chatTemplate, tok, mask, out.T, request.examplesShown);
    if (!shown.ok()) {
        out.error = shown.error().message;
        return out;
    }
    out.examples = std::move(shown).value();
    auto train = data::makeExamples(records->train, *chatTemplate, tok, mask);
    if (!train.ok()) {
        out.error = train.error().message;
        return out;
    }
    auto heldOut = data::makeExamples(records->heldOut, *chatTemplate, tok, mask);
    if (!heldOut.ok()) {
        out.error = heldOut.error().message;
        return out;
    }
    buildDataset(request, std::move(train).value(), std::move(heldOut).value(),
                 exampleOptions(input, *chatTemplate, tok), out);
    return out;
}

}  // namespace ws::session
