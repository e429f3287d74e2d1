#include "engine/streaming/memoryx.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ws::streaming {
namespace fs = std::filesystem;

namespace {
// The file starts with a page-sized header so the float data stays page aligned.
constexpr size_t kHeaderBytes = 4096;
constexpr char kMagic[8] = {'W', 'A', 'F', 'E', 'R', 'M', 'X', '1'};

std::string gib(double bytes) {
    return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024));
}

// True when `path` exists and is not a MemoryX store (so it must never be overwritten).
bool isForeignFile(const fs::path& path) {
    std::error_code ec;
    if (!fs::exists(path, ec)) return false;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return true;
    char magic[8] = {};
    const bool ours = ::read(fd, magic, sizeof magic) == sizeof magic &&
                      std::memcmp(magic, kMagic, sizeof magic) == 0;
    ::close(fd);
    return !ours;
}
}  // namespace

optim::OptimizerState MemoryX::optimizerState() {
    optim::OptimizerState state;
    float* s = m_base + 2 * m_paramCount;
    if (m_stateCopies >= 1) state.firstMoment = s;
    if (m_stateCopies >= 2) state.secondMoment = s + m_paramCount;
    return state;
}

Result<std::unique_ptr<MemoryX>> MemoryX::create(const config::MemoryXConfig& config,
                                                 size_t paramCount, int stateCopies) {
    std::unique_ptr<MemoryX> mx(new MemoryX());
    mx->m_paramCount = paramCount;
    mx->m_stateCopies = stateCopies;
    mx->m_floats = paramCount * size_t(2 + stateCopies);  // weights, gradients, state
    if (config.backing != "file") {
        mx->m_ram.reset(new float[mx->m_floats]());
        mx->m_base = mx->m_ram.get();
        return mx;
    }

    const fs::path path = config.path;
    const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) {
        return Error{
            fmt::format("memoryx.path {}: the folder {} does not exist; create it or "
                        "choose another path",
                        path.string(), folder.string())};
    }
    if (isForeignFile(path)) {
        return Error{
            fmt::format("memoryx.path {} already exists and is not a MemoryX store; "
                        "it is left untouched: choose another path",
                        path.string())};
    }
    const size_t bytes = kHeaderBytes + mx->m_floats * sizeof(float);
    struct statvfs fsInfo {};
    if (::statvfs(folder.c_str(), &fsInfo) == 0) {
        const double available = double(fsInfo.f_bavail) * double(fsInfo.f_frsize);
        if (available < double(bytes)) {
            return Error{
                fmt::format("memoryx.path {}: the store needs {} (weights, gradients and "
                            "optimizer state) but {} has only {} free; free space or "
                            "choose another folder",
                            path.string(), gib(double(bytes)), folder.string(), gib(available))};
        }
    }
    const fs::path temp = path.string() + ".creating";
    int fd = ::open(temp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        return Error{
            fmt::format("memoryx.path {}: cannot create the store file: {}; choose a "
                        "writable folder",
                        path.string(), std::strerror(errno))};
    }
    auto failWith = [&](const char* what) -> Error {
        const int err = errno;
        ::close(fd);
        fs::remove(temp, ec);
        return Error{
            fmt::format("memoryx.path {}: {} failed: {}", path.string(), what, std::strerror(err))};
    };
    // Reserve the blocks now, so a full disk is an error here rather than a crash mid-run.
    if (int err = ::posix_fallocate(fd, 0, off_t(bytes)); err != 0) {
        errno = err;
        return failWith("reserving disk space");
    }
    void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) return failWith("mapping the file");
    ::close(fd);
    std::memcpy(map, kMagic, sizeof kMagic);
    const uint64_t header[3] = {paramCount, uint64_t(stateCopies), uint64_t(mx->m_floats)};
    std::memcpy(static_cast<char*>(map) + sizeof kMagic, header, sizeof header);
    fs::rename(temp, path, ec);
    if (ec) {
        ::munmap(map, bytes);
        fs::remove(temp, ec);
        return Error{fmt::format("memoryx.path {}: cannot move the new store into place: {}",
                                 path.string(), ec.message())};
    }
    mx->m_mapped = map;
    mx->m_mappedBytes = bytes;
    mx->m_base = reinterpret_cast<float*>(static_cast<char*>(map) + kHeaderBytes);
    mx->m_path = path;
    return mx;
}

MemoryX::~MemoryX() {
    if (m_mapped) ::munmap(m_mapped, m_mappedBytes);
}

}  // namespace ws::streaming
