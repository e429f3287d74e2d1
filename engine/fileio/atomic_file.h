// SPDX-License-Identifier: GPL-3.0-or-later
// The engine's one crash-safe file writer. AtomicFileWriter writes a file so that readers only
// ever see the old complete file or the new complete file. Bytes go to a temp file in the
// target's folder (same file system, so rename is atomic); commit() fsyncs it, renames it over
// the target and fsyncs the folder so the rename survives a power loss. Destroying an uncommitted
// writer (an error, an exception) removes the temp file. writeFileAtomically is the same for a
// small file held in memory (vocab.json, config.json, ...), readWholeFile its reading side.
// Errors name the file and the system's reason.
// Thread-safety: one AtomicFileWriter per file, used by one thread; the free functions are
// thread-safe (concurrent writers of one path each leave a complete file, the last rename wins).
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/result.h"

namespace ws::fileio {

class AtomicFileWriter {
public:
    // Creates the temp file next to `finalPath`; the folder must exist.
    static Result<AtomicFileWriter> create(const std::filesystem::path& finalPath);

    AtomicFileWriter(AtomicFileWriter&& other) noexcept;
    AtomicFileWriter& operator=(AtomicFileWriter&&) = delete;
    AtomicFileWriter(const AtomicFileWriter&) = delete;
    ~AtomicFileWriter();  // discards the temp file unless commit() succeeded

    // Buffered; an error (disk full, file too large) names the final file. After an error the
    // writer is spent: only destruction remains, which removes the temp file.
    Status write(const void* data, size_t size);
    Status commit();

    const std::filesystem::path& tempPath() const { return m_tempPath; }

private:
    AtomicFileWriter(std::filesystem::path finalPath, std::filesystem::path tempPath, int fd);
    Status flushBuffer();
    Status fail(const char* step, int error);
    void discard();

    std::filesystem::path m_finalPath;
    std::filesystem::path m_tempPath;
    int m_fd = -1;
    bool m_failed = false;
    std::vector<std::byte> m_buffer;  // pending bytes, capacity kBufferBytes
};

// `contents` as the whole of `path`, through an AtomicFileWriter (the folder must exist).
Status writeFileAtomically(const std::filesystem::path& path, std::string_view contents);

// The whole file as bytes; an error says whether it is missing, a folder or unreadable.
Result<std::string> readWholeFile(const std::filesystem::path& path);

}  // namespace ws::fileio
