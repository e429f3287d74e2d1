// SPDX-License-Identifier: GPL-3.0-or-later
// The training text: what a config's data_dir names, read into one string.
//
// Rules (the contract other tools can rely on):
// - data_dir is a list; entries are taken in the order given. Relative paths are relative to
//   the process's working folder (the config loader makes them absolute against the YAML's
//   folder where it knows it).
// - A file named directly is read whatever its extension.
// - A folder contributes every regular file below it (recursively) whose extension is .txt or
//   .text (any letter case), sorted by path (byte order of the path string) so the order never
//   depends on the file system. Hidden entries (name starting with '.') are skipped and
//   symbolic links to folders are not followed. Other files (README.md, LICENSE, scripts) are
//   ignored: a folder of text files often carries its documentation beside it.
// - A file reached twice (named and inside a named folder) is read once, at its first place.
// - Files are joined with kCorpusFileSeparator ("\n\n") so one file's last line never runs into
//   the next file's first.
// - Every file's content must look like plain text (text_check.h): an executable, a PDF, a DOCX,
//   an image or an archive is refused, naming the file and what it looks like, unless
//   CorpusOptions::allowNonText (the user insisted).
// Errors name the entry and the fix: empty list, missing path, folder without text files,
// unreadable file, a file that is not text, no text at all. Files are only read; nothing is written
// beside them. Thread-safety: free functions without shared state.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/result.h"

namespace ws::data {

inline constexpr std::string_view kCorpusFileSeparator = "\n\n";

// The files readCorpus() reads, in its order.
Result<std::vector<std::filesystem::path>> listCorpusFiles(const std::vector<std::string>& dataDir);

struct CorpusOptions {
    bool allowNonText = false;  // read files that do not look like text (text_check.h) anyway
    // Appended to the refusal of such a file: how the user can insist.
    std::string allowHint = "set train_input.allow_binary: true to train on it anyway";
};

Result<std::string> readCorpus(const std::vector<std::string>& dataDir,
                               const CorpusOptions& options = {});

// readCorpus's text with where each file (document) starts in it: documentStarts[i] is the byte
// offset of file i's first byte (the separators belong to the file before them).
struct CorpusDocuments {
    std::string text;
    std::vector<size_t> documentStarts;
};
Result<CorpusDocuments> readCorpusDocuments(const std::vector<std::string>& dataDir,
                                            const CorpusOptions& options = {});

}  // namespace ws::data
