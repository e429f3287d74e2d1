// SPDX-License-Identifier: GPL-3.0-or-later
// Format detection over JSON records (see record_detect.h).
#include "engine/data/record_detect.h"

#include <algorithm>
#include <array>
#include <map>

#include "engine/data/record_text.h"

namespace ws::data {

namespace {

using nlohmann::json;

constexpr std::array<RecordFormat, 5> kJsonFormats{
    RecordFormat::Messages, RecordFormat::ShareGpt, RecordFormat::Alpaca,
    RecordFormat::PromptCompletion, RecordFormat::TextRecords};

std::string evidenceKeys(RecordFormat format) {
    if (format == RecordFormat::TextRecords)
        return "only a `text` string (trained on whole, no roles)";
    return std::string(recordFormatJsonKeys(format));
}

std::string plural(size_t n, std::string_view one) {
    return std::to_string(n) + " " + std::string(one) + (n == 1 ? "" : "s");
}

std::string formatKeys(const std::vector<RecordFormat>& formats) {
    std::string out;
    for (size_t i = 0; i < formats.size(); ++i) {
        if (i) out += i + 1 == formats.size() ? " or " : ", ";
        out += recordFormatKey(formats[i]);
    }
    return out;
}

}  // namespace

std::vector<RecordFormat> recordShapes(const json& record) {
    std::vector<RecordFormat> shapes;
    if (!record.is_object()) return shapes;
    auto has = [&](const char* key) { return record.contains(key); };
    if (has("messages") && record["messages"].is_array()) shapes.push_back(RecordFormat::Messages);
    if (has("conversations") && record["conversations"].is_array())
        shapes.push_back(RecordFormat::ShareGpt);
    if (has("instruction") && has("output")) shapes.push_back(RecordFormat::Alpaca);
    if (has("prompt") && has("completion")) shapes.push_back(RecordFormat::PromptCompletion);
    if (shapes.empty() && has("text") && record["text"].is_string())
        shapes.push_back(RecordFormat::TextRecords);
    return shapes;
}

Result<Detection> detectJsonFormat(const std::vector<JsonRecord>& records, RecordFormat requested,
                                   std::string_view source) {
    const std::string file(source);
    if (requested == RecordFormat::Columns)
        return Error{file +
                     ": train_input.format is columns, which reads CSV/TSV files; this is a JSON "
                     "file: set the format to auto or to its record format (" +
                     formatKeys({kJsonFormats.begin(), kJsonFormats.end()}) + ")"};
    Detection out;
    if (requested != RecordFormat::Auto) {
        out.format = requested;
        out.evidence = std::string(recordFormatName(requested)) + ": set by train_input.format (" +
                       std::string(recordFormatKey(requested)) + "), " +
                       plural(records.size(), "record");
        return out;
    }

    std::map<RecordFormat, std::vector<size_t>> byShape;  // format -> record indices
    RecordErrors ambiguous, unknown;
    size_t withIgnoredText = 0;
    for (size_t i = 0; i < records.size(); ++i) {
        const auto& r = records[i];
        const auto shapes = recordShapes(r.value);
        if (shapes.size() > 1) {
            ambiguous.add(r.origin + ": the record fits " + formatKeys(shapes) + " (its keys: " +
                          jsonKeys(r.value) + "); set train_input.format to the one to read");
        } else if (shapes.empty()) {
            unknown.add(r.origin + ": a record of no known format (its keys: " + jsonKeys(r.value) +
                        "); records hold `messages`, `conversations`, `instruction` and "
                        "`output`, `prompt` and `completion`, or `text`");
        } else {
            byShape[shapes[0]].push_back(i);
            if (shapes[0] != RecordFormat::TextRecords && r.value.contains("text"))
                ++withIgnoredText;
        }
    }
    if (!ambiguous.empty()) return ambiguous.error();
    if (!unknown.empty()) return unknown.error();
    if (byShape.size() > 1) {
        // The largest shape first; the others named by their first records.
        std::vector<std::pair<RecordFormat, const std::vector<size_t>*>> shapes;
        for (const auto& [format, indices] : byShape) shapes.push_back({format, &indices});
        std::stable_sort(shapes.begin(), shapes.end(), [](const auto& a, const auto& b) {
            return a.second->size() > b.second->size();
        });
        std::string message = file + ": records of different formats: ";
        std::vector<RecordFormat> formats;
        for (size_t s = 0; s < shapes.size(); ++s) {
            const auto& indices = *shapes[s].second;
            formats.push_back(shapes[s].first);
            if (s) message += "; ";
            message += plural(indices.size(), "record") + " of " +
                       std::string(recordFormatName(shapes[s].first)) + " (";
            for (size_t k = 0; k < indices.size() && k < 3; ++k) {
                if (k) message += ", ";
                message += records[indices[k]].origin;
            }
            if (indices.size() > 3) message += ", ...";
            message += ")";
        }
        message +=
            ". A data set holds one format: convert or remove the odd records, or set "
            "train_input.format to " +
            formatKeys(formats) + " (records of another format are then errors)";
        return Error{message};
    }
    out.format = byShape.begin()->first;
    out.evidence = std::string(recordFormatName(out.format)) + ": " +
                   plural(records.size(), "record") + " with " + evidenceKeys(out.format);
    if (withIgnoredText > 0) {
        out.warnings.push_back(plural(withIgnoredText, "record") +
                               (withIgnoredText == 1 ? " also carries" : " also carry") +
                               " `text`, which is ignored (read as " +
                               std::string(recordFormatName(out.format)) +
                               "); set train_input.format: text_records to train on `text` "
                               "instead");
    }
    return out;
}

}  // namespace ws::data
