// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for the JSON Lines and JSON instruction/chat readers (engine/data:
// readRecordBytes on a .jsonl or .json name: json_records, record_detect, json_shapes). The first
// input byte picks the file name and the configured format (bit 0: .json instead of .jsonl;
// bits 1-3: auto, messages, sharegpt, alpaca, prompt_completion, text_records, text, columns);
// the rest is the file. Any bytes must be refused with a message or read into records that keep
// the readers' promises (record_fuzz_support.h); never a crash, hang or undefined behaviour.
#include <array>
#include <cstddef>
#include <cstdint>

#include "record_fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    using ws::data::RecordFormat;
    constexpr std::array<RecordFormat, 8> kFormats{
        RecordFormat::Auto,   RecordFormat::Messages,         RecordFormat::ShareGpt,
        RecordFormat::Alpaca, RecordFormat::PromptCompletion, RecordFormat::TextRecords,
        RecordFormat::Text,   RecordFormat::Columns};
    ws::data::RecordOptions options;
    options.format = kFormats[(data[0] >> 1) & 7];
    const char* name = (data[0] & 1) ? "data.json" : "data.jsonl";
    const auto read =
        ws::data::readRecordBytes(ws::fuzz::asText(data + 1, size - 1), name, options);
    ws::fuzz::checkRecordRead("chat_json_records_fuzz", read);
    return 0;
}
