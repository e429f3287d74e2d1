// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for the CSV/TSV reader with its column mapping and parent-id chains
// (engine/data: readRecordBytes on a .csv or .tsv name: csv_table, column_records). The first
// input byte picks the file and mapping (bit 0: .tsv instead of .csv; bit 1: the short mapping
// prompt q, answer a, system s, id i, parent id p instead of the default names); the rest is the
// file. Any bytes must be refused with a message or read into conversations that keep the
// readers' promises (record_fuzz_support.h); never a crash, hang or undefined behaviour.
#include <cstddef>
#include <cstdint>

#include "record_fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    ws::data::RecordOptions options;
    if (data[0] & 2) {
        options.promptColumn = "q";
        options.answerColumn = "a";
        options.systemColumn = "s";
        options.idColumn = "i";
        options.parentIdColumn = "p";
    }
    const char* name = (data[0] & 1) ? "data.tsv" : "data.csv";
    const auto read =
        ws::data::readRecordBytes(ws::fuzz::asText(data + 1, size - 1), name, options);
    ws::fuzz::checkRecordRead("csv_records_fuzz", read);
    return 0;
}
