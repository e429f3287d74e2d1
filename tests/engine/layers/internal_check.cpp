// SPDX-License-Identifier: GPL-3.0-or-later
// isInternalHeader / checkInternals (see internal_check.h).
#include "internal_check.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>

namespace ws::layers {
namespace fs = std::filesystem;

namespace {

bool isSourceFile(const fs::path& p) {
    static const std::set<std::string> kExtensions = {".h", ".hpp", ".cpp", ".cc", ".inc"};
    return kExtensions.count(p.extension().string()) > 0;
}

std::string lower(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    return text;
}

// The engine folder `path` lies in ("" when it is not in one): engine/<folder>/...
std::string engineFolderOf(const fs::path& engineDir, const fs::path& path) {
    const fs::path rel = path.lexically_normal().lexically_relative(engineDir.lexically_normal());
    if (rel.empty() || *rel.begin() == ".." || std::distance(rel.begin(), rel.end()) < 2) return {};
    return rel.begin()->string();
}

// The line without its // comment (string literals are not told apart: none names a detail
// namespace).
std::string codeOf(const std::string& line) {
    const size_t comment = line.find("//");
    return comment == std::string::npos ? line : line.substr(0, comment);
}

}  // namespace

bool isInternalHeader(const fs::path& path) {
    std::ifstream in(path);
    std::string line;
    bool opening = true;  // still in the comment lines the file starts with
    const std::regex detailNamespace(R"(^\s*namespace\s+ws::[a-z_]+::detail\s*\{)");
    while (std::getline(in, line)) {
        const size_t start = line.find_first_not_of(" \t");
        const bool comment = start != std::string::npos && line.compare(start, 2, "//") == 0;
        if (opening && comment) {
            const std::string text = lower(line);
            if (text.find("internal to") != std::string::npos ||
                text.find("not a public header") != std::string::npos)
                return true;
            continue;
        }
        opening = false;
        if (std::regex_search(line, detailNamespace)) return true;
    }
    return false;
}

std::vector<Violation> checkInternals(const fs::path& sourceDir) {
    const fs::path engineDir = sourceDir / "engine";
    std::set<std::string> engineFolders;
    if (fs::is_directory(engineDir)) {
        for (const auto& entry : fs::directory_iterator(engineDir))
            if (entry.is_directory()) engineFolders.insert(entry.path().filename().string());
    }
    std::vector<fs::path> files;
    for (const char* top : {"engine", "app", "ui"}) {
        if (!fs::is_directory(sourceDir / top)) continue;
        for (const auto& entry : fs::recursive_directory_iterator(sourceDir / top))
            if (entry.is_regular_file() && isSourceFile(entry.path()))
                files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());

    std::vector<Violation> found;
    const std::regex include(R"(^\s*#\s*include\s*([<"])([^">]+)[">])");
    const std::regex detailUse(R"(\b([a-z_]+)::detail\b)");
    for (const fs::path& file : files) {
        const std::string own = engineFolderOf(engineDir, file);  // "" in app/ and ui/
        const fs::path shown = file.lexically_relative(sourceDir);
        std::ifstream in(file);
        std::string line;
        for (int number = 1; std::getline(in, line); ++number) {
            const auto report = [&](const std::string& what, const std::string& why) {
                found.push_back(
                    {shown, number,
                     shown.string() + ":" + std::to_string(number) + ": " + what + ": " + why});
            };
            std::smatch m;
            if (line.find("include") != std::string::npos && std::regex_search(line, m, include)) {
                const std::string target = m[2];
                fs::path header;
                if (target.rfind("engine/", 0) == 0) {
                    header = sourceDir / target;
                } else if (m[1] == "\"") {
                    header = file.parent_path() / target;
                }
                const std::string theirs = engineFolderOf(engineDir, header);
                if (!theirs.empty() && theirs != own && fs::is_regular_file(header) &&
                    isInternalHeader(header)) {
                    report(m[0].str().substr(m[0].str().find('#')),
                           "engine/" + theirs + "/" + header.filename().string() +
                               " is internal to " + theirs +
                               "; include its public headers, or make public (in " + theirs +
                               " or a lower layer) what this file needs");
                }
                continue;
            }
            if (line.find("::detail") == std::string::npos) continue;
            const std::string code = codeOf(line);
            for (auto it = std::sregex_iterator(code.begin(), code.end(), detailUse);
                 it != std::sregex_iterator(); ++it) {
                const std::string theirs = (*it)[1];
                if (theirs == own || !engineFolders.count(theirs)) continue;
                report(theirs + "::detail", "the detail namespace is internal to " + theirs +
                                                "; use its public API, or make public (in " +
                                                theirs + " or a lower layer) what this file needs");
            }
        }
    }
    return found;
}

}  // namespace ws::layers
