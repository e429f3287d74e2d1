// SPDX-License-Identifier: GPL-3.0-or-later
// Record files out of a zip archive (see zip_records.h).
#include "engine/data/zip_records.h"

#include <zip.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <memory>

namespace ws::data {

namespace {

// Deflate expands at most about 1032:1; a larger claim is a zip bomb.
constexpr uint64_t kMaxExpansion = 1100;

struct ZipCloser {
    void operator()(zip_t* z) const { zip_discard(z); }
};
struct ZipFileCloser {
    void operator()(zip_file_t* f) const { zip_fclose(f); }
};

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& ch : out) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    return out;
}

std::string_view baseName(std::string_view name) {
    const size_t slash = name.rfind('/');
    return slash == std::string_view::npos ? name : name.substr(slash + 1);
}

constexpr std::string_view kDamaged =
    "the archive is damaged or incomplete: download or zip it again";

Result<std::string> readEntry(zip_t* zip, zip_uint64_t index, const zip_stat_t& stat,
                              const std::string& where) {
    if ((stat.valid & ZIP_STAT_SIZE) && (stat.valid & ZIP_STAT_COMP_SIZE) &&
        (stat.size > kMaxZipEntryBytes ||
         stat.size > std::max<uint64_t>(stat.comp_size, 1) * kMaxExpansion + 4096))
        return Error{where + ": claims " + std::to_string(stat.size) +
                     " bytes, more than its compressed size can expand to or than a data file "
                     "read here may be; " +
                     std::string(kDamaged)};
    std::unique_ptr<zip_file_t, ZipFileCloser> file(zip_fopen_index(zip, index, 0));
    if (!file)
        return Error{where + ": cannot be read (" + std::string(zip_strerror(zip)) +
                     "); an encrypted archive must be unpacked first, otherwise " +
                     std::string(kDamaged)};
    std::string out;
    std::array<char, 65536> chunk{};
    while (true) {
        const zip_int64_t n = zip_fread(file.get(), chunk.data(), chunk.size());
        if (n < 0)
            return Error{where + ": " +
                         std::string(zip_error_strerror(zip_file_get_error(file.get()))) + "; " +
                         std::string(kDamaged)};
        if (n == 0) break;
        out.append(chunk.data(), size_t(n));
        if (out.size() > stat.size || out.size() > kMaxZipEntryBytes)
            return Error{where + ": longer than its directory entry says; " +
                         std::string(kDamaged)};
    }
    if (out.size() != stat.size)
        return Error{where + ": shorter than its directory entry says; " + std::string(kDamaged)};
    return out;
}

}  // namespace

bool isZipRecordName(std::string_view name) {
    const std::string n = lower(name);
    for (std::string_view ext : {".csv", ".tsv", ".jsonl", ".ndjson", ".json"})
        if (n.size() > ext.size() && n.ends_with(ext)) return true;
    return false;
}

Result<ZipContents> readZipRecordFiles(std::string_view bytes, std::string_view source) {
    const std::string file(source);
    if (!bytes.starts_with("PK\x03\x04") && !bytes.starts_with("PK\x05\x06"))
        return Error{file + ": not a zip archive (it does not start with \"PK\"); " +
                     std::string(kDamaged)};
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t* src = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
    if (!src) {
        const std::string text = zip_error_strerror(&error);
        zip_error_fini(&error);
        return Error{file + ": cannot open: " + text};
    }
    zip_t* opened = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &error);
    if (!opened) {
        zip_source_free(src);
        const std::string text = zip_error_strerror(&error);
        zip_error_fini(&error);
        return Error{file + ": not a readable zip archive (" + text + "); " +
                     std::string(kDamaged)};
    }
    zip_error_fini(&error);
    std::unique_ptr<zip_t, ZipCloser> zip(opened);

    ZipContents out;
    const zip_int64_t count = zip_get_num_entries(opened, 0);
    for (zip_int64_t i = 0; i < count; ++i) {
        zip_stat_t stat;
        zip_stat_init(&stat);
        if (zip_stat_index(opened, zip_uint64_t(i), 0, &stat) != 0 ||
            !(stat.valid & ZIP_STAT_NAME) || !(stat.valid & ZIP_STAT_SIZE))
            return Error{file + ": entry " + std::to_string(i + 1) + " cannot be read (" +
                         std::string(zip_strerror(opened)) + "); " + std::string(kDamaged)};
        const std::string name = stat.name;
        if (name.empty() || name.ends_with('/')) continue;  // a folder
        const std::string_view base = baseName(name);
        if (name.starts_with("__MACOSX/") || base.starts_with(".")) continue;
        if (!isZipRecordName(name)) {
            out.skipped.push_back(name);
            continue;
        }
        auto content = readEntry(opened, zip_uint64_t(i), stat, file + "/" + name);
        if (!content) return content.error();
        out.files.push_back({name, std::move(*content)});
    }
    if (out.files.empty()) {
        std::string found;
        for (const auto& s : out.skipped) found += (found.empty() ? "" : ", ") + s;
        return Error{file + ": the archive holds no data file (.csv, .tsv, .jsonl, .json)" +
                     (found.empty() ? std::string(" (it is empty)") : "; it holds: " + found) +
                     "; put the data set's files in it, or name the file itself"};
    }
    std::sort(out.files.begin(), out.files.end(),
              [](const ZipEntry& a, const ZipEntry& b) { return a.name < b.name; });
    return out;
}

}  // namespace ws::data
