// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for a .zip of data files (engine/data: readRecordBytes on a .zip name:
// zip_records through libzip, then each record file inside through its own reader). Two modes:
// - an input starting with "PK" is the archive itself (damaged headers, lying sizes, bad CRCs);
// - any other input is cut at NUL bytes into name, content, name, content, ... (up to four
//   files), which this target zips with libzip first, so the mutations reach the readers inside
//   (random bytes in a compressed entry would only ever fail its CRC).
// Either way the read must be refused with a message or return records that keep the readers'
// promises (record_fuzz_support.h); never a crash, hang, a read past a lying directory entry or
// undefined behaviour.
#include <zip.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "record_fuzz_support.h"

namespace {

// The files zipped into an archive in memory (stored, or deflated when `deflate`); empty when
// libzip refuses them (an empty or repeated name).
std::string zipFiles(const std::vector<std::string_view>& parts, bool deflate) {
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t* buffer = zip_source_buffer_create(nullptr, 0, 0, &error);
    zip_error_fini(&error);
    if (!buffer) return {};
    zip_source_keep(buffer);
    zip_t* archive = zip_open_from_source(buffer, ZIP_TRUNCATE, nullptr);
    if (!archive) {
        zip_source_free(buffer);
        return {};
    }
    for (size_t i = 0; i + 1 < parts.size(); i += 2) {
        const std::string name(parts[i]);
        zip_source_t* content =
            zip_source_buffer(archive, parts[i + 1].data(), parts[i + 1].size(), 0);
        if (!content) continue;
        const zip_int64_t index = zip_file_add(archive, name.c_str(), content, ZIP_FL_ENC_UTF_8);
        if (index < 0) {
            zip_source_free(content);
            continue;
        }
        zip_set_file_compression(archive, zip_uint64_t(index),
                                 deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
    }
    std::string out;
    if (zip_close(archive) != 0) {
        zip_discard(archive);
    } else if (zip_source_open(buffer) == 0) {
        char chunk[4096];
        zip_int64_t n;
        while ((n = zip_source_read(buffer, chunk, sizeof chunk)) > 0) out.append(chunk, size_t(n));
        zip_source_close(buffer);
    }
    zip_source_free(buffer);
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view input = ws::fuzz::asText(data, size);
    std::string archive;
    if (input.starts_with("PK")) {
        archive = std::string(input);
    } else {
        const auto parts = ws::fuzz::splitInput(input, std::string_view("\0", 1), 8);
        archive = zipFiles(parts, size % 2 == 1);
        if (archive.empty()) return 0;
        ws::fuzz::note("zipped " + std::to_string(parts.size() / 2) + " files");
    }
    const auto read = ws::data::readRecordBytes(archive, "data.zip");
    ws::fuzz::checkRecordRead("zip_records_fuzz", read);
    return 0;
}
