// SPDX-License-Identifier: GPL-3.0-or-later
// AtomicFileWriter (see atomic_file.h): temp file + fsync + rename + fsync of the folder, and
// the whole-file helpers built on it.
#include "engine/fileio/atomic_file.h"
#include "engine/core/kill_points.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

namespace ws::fileio {

namespace {
constexpr size_t kBufferBytes = size_t{1} << 20;

std::filesystem::path folderOf(const std::filesystem::path& path) {
    auto parent = path.parent_path();
    return parent.empty() ? std::filesystem::path(".") : parent;
}
}  // namespace

AtomicFileWriter::AtomicFileWriter(std::filesystem::path finalPath, std::filesystem::path tempPath,
                                   int fd)
    : m_finalPath(std::move(finalPath)), m_tempPath(std::move(tempPath)), m_fd(fd) {
    m_buffer.reserve(kBufferBytes);
}

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter&& other) noexcept
    : m_finalPath(std::move(other.m_finalPath)),
      m_tempPath(std::move(other.m_tempPath)),
      m_fd(std::exchange(other.m_fd, -1)),
      m_failed(other.m_failed),
      m_buffer(std::move(other.m_buffer)) {
    other.m_tempPath.clear();
}

AtomicFileWriter::~AtomicFileWriter() {
    discard();
}

Result<AtomicFileWriter> AtomicFileWriter::create(const std::filesystem::path& finalPath) {
    if (finalPath.filename().empty()) {
        return Error{fmt::format("cannot write {}: the path names a folder, not a file",
                                 finalPath.string())};
    }
    // A hidden name in the same folder: same file system (atomic rename), and not mistaken for a
    // checkpoint by anything listing "*.safetensors".
    std::string tempName = ".";
    tempName.append(finalPath.filename().string()).append(".tmp-XXXXXX");
    std::string pattern = (folderOf(finalPath) / tempName).string();
    const int fd = ::mkostemp(pattern.data(), O_CLOEXEC);
    if (fd < 0) {
        return Error{
            fmt::format("cannot write {}: creating a temp file in {} failed: {} (does "
                        "the folder exist and is it writable?)",
                        finalPath.string(), folderOf(finalPath).string(), std::strerror(errno))};
    }
    // mkstemp creates 0600; checkpoints are ordinary user files.
    (void)::fchmod(fd, 0644);
    return AtomicFileWriter(finalPath, pattern, fd);
}

Status AtomicFileWriter::fail(const char* step, int error) {
    m_failed = true;
    discard();
    return Error{
        fmt::format("cannot write {}: {} failed: {}{}; the previous file, if any, is "
                    "unchanged",
                    m_finalPath.string(), step, std::strerror(error),
                    error == ENOSPC || error == EFBIG || error == EDQUOT
                        ? " (free some disk space or raise the file size limit)"
                        : "")};
}

void AtomicFileWriter::discard() {
    if (m_fd >= 0) {
        ::close(m_fd);
        m_fd = -1;
    }
    if (!m_tempPath.empty()) {
        ::unlink(m_tempPath.c_str());
        m_tempPath.clear();
    }
}

Status AtomicFileWriter::flushBuffer() {
    size_t done = 0;
    while (done < m_buffer.size()) {
        const ssize_t n = ::write(m_fd, m_buffer.data() + done, m_buffer.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail("writing", errno);
        done += static_cast<size_t>(n);
    }
    m_buffer.clear();
    return {};
}

Status AtomicFileWriter::write(const void* data, size_t size) {
    if (m_failed || m_fd < 0)
        return Error{
            fmt::format("cannot write {}: the writer already failed", m_finalPath.string())};
    const auto* bytes = static_cast<const std::byte*>(data);
    while (size > 0) {
        const size_t room = kBufferBytes - m_buffer.size();
        const size_t take = std::min(room, size);
        m_buffer.insert(m_buffer.end(), bytes, bytes + take);
        bytes += take;
        size -= take;
        if (m_buffer.size() == kBufferBytes) {
            if (auto s = flushBuffer(); !s) return s;
        }
    }
    return {};
}

Status AtomicFileWriter::commit() {
    if (m_failed || m_fd < 0)
        return Error{
            fmt::format("cannot write {}: the writer already failed", m_finalPath.string())};
    if (auto s = flushBuffer(); !s) return s;
    if (::fsync(m_fd) != 0) return fail("fsync of the temp file", errno);
    if (::close(m_fd) != 0) {
        m_fd = -1;
        return fail("closing the temp file", errno);
    }
    m_fd = -1;
    killPoint("atomic-commit");
    if (::rename(m_tempPath.c_str(), m_finalPath.c_str()) != 0) {
        return fail("renaming the temp file over it", errno);
    }
    m_tempPath.clear();  // now the final file: nothing to discard
    const int dirFd = ::open(folderOf(m_finalPath).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirFd < 0 || ::fsync(dirFd) != 0) {
        const int error = errno;
        if (dirFd >= 0) ::close(dirFd);
        m_failed = true;
        return Error{
            fmt::format("wrote {} completely, but syncing its folder failed: {}; the file "
                        "may not survive a power loss",
                        m_finalPath.string(), std::strerror(error))};
    }
    ::close(dirFd);
    return {};
}

Status writeFileAtomically(const std::filesystem::path& path, std::string_view contents) {
    auto writer = AtomicFileWriter::create(path);
    if (!writer.ok()) return writer.error();
    if (Status st = writer->write(contents.data(), contents.size()); !st.ok()) return st;
    return writer->commit();
}

Result<std::string> readWholeFile(const std::filesystem::path& path) {
    // Paths read from files (configs, lessons, model folders) may name anything: a path the
    // system refuses (a component past 255 bytes) says why, and only a file is read (a device
    // or a pipe would never end).
    std::error_code ec;
    const std::filesystem::file_status status = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(status)) {
        if (ec && ec != std::errc::no_such_file_or_directory)
            return Error{fmt::format("'{}' cannot be read ({})", path.string(), ec.message())};
        return Error{fmt::format("'{}' does not exist", path.string())};
    }
    if (std::filesystem::is_directory(status)) {
        return Error{fmt::format("'{}' is a folder, expected a file", path.string())};
    }
    if (!std::filesystem::is_regular_file(status))
        return Error{fmt::format("'{}' is not a regular file (a device or a pipe), expected a file",
                                 path.string())};
    std::ifstream in(path, std::ios::binary);
    if (!in) return Error{fmt::format("cannot read '{}': {}", path.string(), std::strerror(errno))};
    std::ostringstream buffer;
    buffer << in.rdbuf();
    if (in.bad()) return Error{fmt::format("read error in '{}'", path.string())};
    return std::move(buffer).str();
}

}  // namespace ws::fileio
