// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/data/corpus.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/data/text_check.h"

namespace ws::data {
namespace fs = std::filesystem;

namespace {

bool isTextFileName(const fs::path& path) {
    std::string ext = path.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    return ext == ".txt" || ext == ".text";
}

bool isHidden(const fs::path& path) {
    const std::string name = path.filename().string();
    return !name.empty() && name[0] == '.';
}

Error cannotList(const fs::path& dir, const std::error_code& ec) {
    return Error{fmt::format("cannot list folder '{}': {}", dir.string(), ec.message())};
}

Result<std::vector<fs::path>> textFilesBelow(const fs::path& dir) {
    std::vector<fs::path> files;
    size_t otherFiles = 0;
    std::error_code ec;
    fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec);
    if (ec) return cannotList(dir, ec);
    for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) return cannotList(dir, ec);
        const fs::path& path = it->path();
        if (isHidden(path)) {
            if (it->is_directory(ec)) it.disable_recursion_pending();
            continue;
        }
        if (!it->is_regular_file(ec)) continue;
        if (isTextFileName(path)) {
            files.push_back(path);
        } else {
            ++otherFiles;
        }
    }
    if (ec) return cannotList(dir, ec);
    if (files.empty()) {
        const std::string others = otherFiles == 0
                                       ? std::string()
                                       : fmt::format(
                                             " ({} other files are ignored: name one directly in "
                                             "data_dir or give it a .txt extension)",
                                             otherFiles);
        return Error{fmt::format(
            "folder '{}' holds no .txt or .text files{}: add text files or point data_dir "
            "elsewhere",
            dir.string(), others)};
    }
    std::sort(files.begin(), files.end(),
              [](const fs::path& a, const fs::path& b) { return a.string() < b.string(); });
    return files;
}

}  // namespace

Result<std::vector<fs::path>> listCorpusFiles(const std::vector<std::string>& dataDir) {
    if (dataDir.empty()) {
        return Error{
            "no text given: set data_dir to a text file, a folder of .txt files, or a "
            "list of them"};
    }
    std::vector<fs::path> files;
    std::set<fs::path> seen;
    const auto add = [&](const fs::path& file) {
        std::error_code ec;
        const fs::path key = fs::weakly_canonical(file, ec);
        if (seen.insert(ec ? file : key).second) files.push_back(file);
    };
    for (const std::string& entry : dataDir) {
        if (entry.empty()) return Error{"an entry of data_dir is empty: remove it or name a path"};
        const fs::path path(entry);
        std::error_code ec;
        const fs::file_status status = fs::status(path, ec);
        if (!fs::exists(status)) {
            // Not there, or a path the system refuses (a name past 255 bytes, a file where a
            // folder should be): say which.
            const bool missing = !ec || ec == std::errc::no_such_file_or_directory;
            const std::string why =
                missing ? "does not exist" : "cannot be read (" + ec.message() + ")";
            return Error{
                fmt::format("'{}' {} (working folder '{}'): name an existing text file or folder",
                            entry, why, fs::current_path(ec).string())};
        }
        if (fs::is_directory(status)) {
            auto below = textFilesBelow(path);
            if (!below.ok()) return below.error();
            for (const auto& file : *below) add(file);
        } else if (fs::is_regular_file(status)) {
            add(path);
        } else {
            return Error{fmt::format("'{}' is neither a file nor a folder", entry)};
        }
    }
    return files;
}

Result<std::string> readCorpus(const std::vector<std::string>& dataDir,
                               const CorpusOptions& options) {
    auto documents = readCorpusDocuments(dataDir, options);
    if (!documents.ok()) return documents.error();
    return std::move(documents->text);
}

Result<CorpusDocuments> readCorpusDocuments(const std::vector<std::string>& dataDir,
                                            const CorpusOptions& options) {
    auto files = listCorpusFiles(dataDir);
    if (!files.ok()) return files.error();
    CorpusDocuments documents;
    std::string& corpus = documents.text;
    for (size_t i = 0; i < files->size(); ++i) {
        const fs::path& file = (*files)[i];
        std::ifstream in(file, std::ios::binary);
        if (!in) {
            return Error{fmt::format("cannot read '{}': {}", file.string(), std::strerror(errno))};
        }
        std::ostringstream text;
        text << in.rdbuf();
        if (in.bad()) return Error{fmt::format("read error in '{}'", file.string())};
        std::string content = std::move(text).str();
        if (!options.allowNonText) {
            if (auto what = checkText(content))
                return Error{nonTextMessage(file, *what, options.allowHint)};
        }
        if (i > 0) corpus += kCorpusFileSeparator;
        documents.documentStarts.push_back(corpus.size());
        corpus += content;
    }
    if (corpus.size() == kCorpusFileSeparator.size() * (files->size() - 1)) {
        return Error{fmt::format(
            "the corpus is empty: {} file(s) were found but hold no text; add text to them",
            files->size())};
    }
    return documents;
}

}  // namespace ws::data
