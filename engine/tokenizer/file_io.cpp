#include "engine/tokenizer/file_io.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ws::tokenizer {
namespace fs = std::filesystem;

namespace {
std::string systemReason() {
    return std::strerror(errno);
}

void fsyncDirectory(const fs::path& dir) {
    const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd < 0) return;  // best effort: the data itself is already durable
    ::fsync(fd);
    ::close(fd);
}
}  // namespace

Result<std::string> readWholeFile(const fs::path& path) {
    std::error_code ec;
    if (!fs::exists(path, ec)) return Error{fmt::format("'{}' does not exist", path.string())};
    if (fs::is_directory(path, ec)) {
        return Error{fmt::format("'{}' is a folder, expected a file", path.string())};
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) return Error{fmt::format("cannot read '{}': {}", path.string(), systemReason())};
    std::ostringstream buffer;
    buffer << in.rdbuf();
    if (in.bad()) return Error{fmt::format("read error in '{}'", path.string())};
    return std::move(buffer).str();
}

Status writeFileAtomically(const fs::path& path, std::string_view contents) {
    static std::atomic<unsigned> counter{0};
    const fs::path temp = fmt::format("{}.tmp.{}.{}", path.string(), ::getpid(), counter++);
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return Error{fmt::format("cannot write '{}': {}", temp.string(), systemReason())};
    const char* p = contents.data();
    size_t left = contents.size();
    while (left > 0) {
        const ssize_t n = ::write(fd, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const std::string reason = systemReason();
            ::close(fd);
            ::unlink(temp.c_str());
            return Error{fmt::format("cannot write '{}': {}", temp.string(), reason)};
        }
        p += n;
        left -= size_t(n);
    }
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
        const std::string reason = systemReason();
        ::unlink(temp.c_str());
        return Error{fmt::format("cannot flush '{}' to disk: {}", temp.string(), reason)};
    }
    if (::rename(temp.c_str(), path.c_str()) != 0) {
        const std::string reason = systemReason();
        ::unlink(temp.c_str());
        return Error{
            fmt::format("cannot rename '{}' to '{}': {}", temp.string(), path.string(), reason)};
    }
    fsyncDirectory(path.parent_path());
    return {};
}

}  // namespace ws::tokenizer
