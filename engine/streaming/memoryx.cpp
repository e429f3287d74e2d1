// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/streaming/memoryx.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cassert>
#include <cerrno>
#include <cstring>

#include "engine/core/units.h"

namespace ws::streaming {
namespace fs = std::filesystem;

namespace {
// The file starts with a page-sized header so the float data stays page aligned. Then: weights
// (paramCount floats), gradients and each optimizer state copy (trainableCount floats each), then
// the undo journal. A store written before frozen tensors lost their gradients has zeros where
// `layout`, trainableCount and the journal's state range are: trainableCount = paramCount.
constexpr size_t kHeaderBytes = 4096;
constexpr char kMagic[8] = {'W', 'A', 'F', 'E', 'R', 'M', 'X', '1'};

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

struct MemoryX::Header {
    char magic[8];
    uint64_t paramCount;
    uint64_t stateCopies;
    uint64_t dataFloats;
    uint64_t journalFloats;
    uint64_t journalValid;        // 1 while a layer update is in progress
    uint64_t journalOffset;       // the layer being updated: first parameter
    uint64_t journalCount;        // and how many
    uint64_t trainableCount;      // gradients and each state copy (when layout is 1)
    uint64_t journalStateOffset;  // the layer's optimizer state: first float
    uint64_t journalStateCount;   // and how many (older stores: journalOffset, journalCount)
    uint64_t layout;              // 1; 0 in older stores (trainableCount = paramCount)
    uint64_t maskBytes;           // sparsity masks after the journal; 0 in older stores
};

MemoryX::Header* MemoryX::header() const {
    return static_cast<Header*>(m_mapped);
}
float* MemoryX::journal() const {
    return m_base + m_floats;
}

optim::OptimizerState MemoryX::optimizerState() {
    optim::OptimizerState state;
    float* s = m_base + m_paramCount + m_trainableCount;
    if (m_stateCopies >= 1) state.firstMoment = s;
    if (m_stateCopies >= 2) state.secondMoment = s + m_trainableCount;
    return state;
}

namespace {
// Where state copy c starts in a store's data.
size_t stateStart(size_t paramCount, size_t trainableCount, int c) {
    return paramCount + (1 + size_t(c)) * trainableCount;
}
}  // namespace

// The journal holds the layer's weights followed by each optimizer state buffer's slice.
void MemoryX::beginUpdate(size_t offset, size_t count, size_t stateOffset, size_t stateCount) {
    if (!m_mapped) return;
    assert(stateCount <= count);
    float* j = journal();
    std::memcpy(j, m_base + offset, count * sizeof(float));
    for (int c = 0; c < m_stateCopies; ++c) {
        std::memcpy(j + size_t(c + 1) * count,
                    m_base + stateStart(m_paramCount, m_trainableCount, c) + stateOffset,
                    stateCount * sizeof(float));
    }
    Header* h = header();
    h->journalOffset = offset;
    h->journalCount = count;
    h->journalStateOffset = stateOffset;
    h->journalStateCount = stateCount;
    std::atomic_thread_fence(std::memory_order_release);  // journal complete before the mark
    h->journalValid = 1;
    std::atomic_thread_fence(std::memory_order_release);  // mark before the first new value
}

void MemoryX::endUpdate() {
    if (!m_mapped) return;
    std::atomic_thread_fence(std::memory_order_release);
    header()->journalValid = 0;
}

Result<std::unique_ptr<MemoryX>> MemoryX::create(const config::MemoryXConfig& config,
                                                 size_t paramCount, int stateCopies,
                                                 size_t largestUpdate, size_t trainableCount,
                                                 size_t maskBytes) {
    std::unique_ptr<MemoryX> mx(new MemoryX());
    if (trainableCount == kEveryParameter) trainableCount = paramCount;
    assert(trainableCount <= paramCount);
    mx->m_paramCount = paramCount;
    mx->m_trainableCount = trainableCount;
    mx->m_stateCopies = stateCopies;
    // weights, then the trainable parameters' gradients and state
    mx->m_floats = paramCount + trainableCount * size_t(1 + stateCopies);
    mx->m_maskBytes = maskBytes;
    if (config.backing != "file") {
        mx->m_ram.reset(new float[mx->m_floats]());
        mx->m_base = mx->m_ram.get();
        if (maskBytes > 0) {
            mx->m_ramMask.reset(new uint8_t[maskBytes]());
            mx->m_mask = mx->m_ramMask.get();
        }
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
    mx->m_journalFloats = largestUpdate * size_t(1 + stateCopies);
    const size_t bytes =
        kHeaderBytes + (mx->m_floats + mx->m_journalFloats) * sizeof(float) + maskBytes;
    struct statvfs fsInfo {};
    if (::statvfs(folder.c_str(), &fsInfo) == 0) {
        const double available = double(fsInfo.f_bavail) * double(fsInfo.f_frsize);
        if (available < double(bytes)) {
            return Error{
                fmt::format("memoryx.path {}: the store needs {} (weights, gradients, "
                            "optimizer state and an undo journal) but {} has only {} "
                            "free; free space or choose another folder",
                            path.string(), formatBytes(double(bytes)), folder.string(),
                            formatBytes(available))};
        }
    }
    // The file is built without a name (O_TMPFILE) and linked in once its header is written, so
    // a process killed while it reserves gigabytes leaves nothing behind. Where the file system
    // cannot (O_TMPFILE unsupported), a named `<path>.creating` stands in for it.
    const fs::path temp = path.string() + ".creating";
    int fd = ::open(folder.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
    const bool unnamed = fd >= 0;
    if (!unnamed) fd = ::open(temp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        return Error{
            fmt::format("memoryx.path {}: cannot create the store file: {}; choose a "
                        "writable folder",
                        path.string(), std::strerror(errno))};
    }
    void* map = MAP_FAILED;
    auto failWith = [&](const char* what) -> Error {
        const int err = errno;
        if (map != MAP_FAILED) ::munmap(map, bytes);
        ::close(fd);
        if (!unnamed) fs::remove(temp, ec);
        return Error{
            fmt::format("memoryx.path {}: {} failed: {}", path.string(), what, std::strerror(err))};
    };
    // Reserve the blocks now, so a full disk is an error here rather than a crash mid-run.
    if (int err = ::posix_fallocate(fd, 0, off_t(bytes)); err != 0) {
        errno = err;
        return failWith("reserving disk space");
    }
    map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) return failWith("mapping the file");
    auto* h = static_cast<Header*>(map);
    std::memcpy(h->magic, kMagic, sizeof kMagic);
    h->paramCount = paramCount;
    h->layout = 1;
    h->trainableCount = trainableCount;
    h->stateCopies = uint64_t(stateCopies);
    h->dataFloats = mx->m_floats;
    h->journalFloats = mx->m_journalFloats;
    h->maskBytes = maskBytes;
    if (unnamed) {
        // A new path gets the file directly; an old store at it is replaced in one rename, from
        // a name the file gets only now that it is whole.
        const std::string self = fmt::format("/proc/self/fd/{}", fd);
        const bool replacing = fs::exists(path, ec);
        const fs::path linkAs = replacing ? temp : path;
        if (replacing) fs::remove(temp, ec);  // one a killed process left before this fix
        if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, linkAs.c_str(), AT_SYMLINK_FOLLOW) != 0)
            return failWith("giving the new store its name");
        if (!replacing) {
            ::close(fd);
            fd = -1;
        }
    }
    if (fd >= 0) {
        ::close(fd);
        fs::rename(temp, path, ec);
        if (ec) {
            ::munmap(map, bytes);
            fs::remove(temp, ec);
            return Error{fmt::format("memoryx.path {}: cannot move the new store into place: {}",
                                     path.string(), ec.message())};
        }
    }
    mx->m_mapped = map;
    mx->m_mappedBytes = bytes;
    mx->m_base = reinterpret_cast<float*>(static_cast<char*>(map) + kHeaderBytes);
    mx->m_mask = reinterpret_cast<uint8_t*>(mx->m_base + mx->m_floats + mx->m_journalFloats);
    mx->m_path = path;
    return mx;
}

Result<std::unique_ptr<MemoryX>> MemoryX::open(const fs::path& path) {
    int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        return Error{
            fmt::format("cannot open MemoryX store {}: {}", path.string(), std::strerror(errno))};
    }
    struct stat st {};
    ::fstat(fd, &st);
    const size_t bytes = size_t(st.st_size);
    Header h{};
    if (bytes < kHeaderBytes || ::pread(fd, &h, sizeof h, 0) != ssize_t(sizeof h) ||
        std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) {
        ::close(fd);
        return Error{fmt::format("{} is not a MemoryX store (bad header)", path.string())};
    }
    if (h.layout == 0) {  // a store from before the Trainable layout
        h.trainableCount = h.paramCount;
        h.journalStateOffset = h.journalOffset;
        h.journalStateCount = h.journalCount;
    }
    if (h.stateCopies > 2 || h.trainableCount > h.paramCount ||
        h.dataFloats != h.paramCount + h.trainableCount * (1 + h.stateCopies) ||
        kHeaderBytes + (h.dataFloats + h.journalFloats) * sizeof(float) + h.maskBytes != bytes ||
        (h.journalValid && (h.journalOffset + h.journalCount > h.paramCount ||
                            h.journalStateOffset + h.journalStateCount > h.trainableCount ||
                            h.journalStateCount > h.journalCount ||
                            h.journalCount * (1 + h.stateCopies) > h.journalFloats))) {
        ::close(fd);
        return Error{
            fmt::format("MemoryX store {} is damaged: its header does not match its size "
                        "({} bytes); it cannot be used",
                        path.string(), bytes)};
    }
    void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) {
        return Error{
            fmt::format("cannot map MemoryX store {}: {}", path.string(), std::strerror(errno))};
    }
    std::unique_ptr<MemoryX> mx(new MemoryX());
    mx->m_paramCount = h.paramCount;
    mx->m_trainableCount = h.trainableCount;
    mx->m_stateCopies = int(h.stateCopies);
    mx->m_floats = h.dataFloats;
    mx->m_journalFloats = h.journalFloats;
    mx->m_mapped = map;
    mx->m_mappedBytes = bytes;
    mx->m_base = reinterpret_cast<float*>(static_cast<char*>(map) + kHeaderBytes);
    mx->m_maskBytes = h.maskBytes;
    mx->m_mask = reinterpret_cast<uint8_t*>(mx->m_base + mx->m_floats + mx->m_journalFloats);
    mx->m_path = path;
    Header* live = mx->header();
    if (live->journalValid) {
        // Undo the interrupted update: the layer gets back its values from before that step.
        const size_t offset = live->journalOffset, count = live->journalCount;
        const size_t stateOffset = h.journalStateOffset, stateCount = h.journalStateCount;
        const float* j = mx->journal();
        std::memcpy(mx->m_base + offset, j, count * sizeof(float));
        for (int c = 0; c < mx->m_stateCopies; ++c) {
            std::memcpy(
                mx->m_base + stateStart(mx->m_paramCount, mx->m_trainableCount, c) + stateOffset,
                j + size_t(c + 1) * count, stateCount * sizeof(float));
        }
        std::atomic_thread_fence(std::memory_order_release);
        live->journalValid = 0;
        ::msync(map, bytes, MS_SYNC);
        mx->m_rolledBack = true;
        mx->m_rolledBackOffset = offset;
    }
    return mx;
}

MemoryX::~MemoryX() {
    if (m_mapped) ::munmap(m_mapped, m_mappedBytes);
}

}  // namespace ws::streaming
