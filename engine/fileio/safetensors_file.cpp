// SPDX-License-Identifier: GPL-3.0-or-later
// SafetensorsFile: maps a checkpoint read-only, validates it with parseSafetensors and converts
// floating tensors to f32. The mapping stays valid for the object's lifetime even if the file is
// replaced meanwhile, because writers rename a new file over it rather than rewriting it in place.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/fileio/safetensors.h"

namespace ws::fileio {

// The file's bytes: an mmap when the file system supports it, else a heap copy.
struct SafetensorsFile::Mapping {
    void* address = nullptr;
    size_t size = 0;
    std::vector<std::byte> copy;

    ~Mapping() {
        if (address) munmap(address, size);
    }
    std::span<const std::byte> bytes() const {
        if (address) return {static_cast<const std::byte*>(address), size};
        return copy;
    }
};

namespace {
std::string errnoText() {
    return std::strerror(errno);
}

struct FileDescriptor {
    int fd = -1;
    ~FileDescriptor() {
        if (fd >= 0) ::close(fd);
    }
};
}  // namespace

SafetensorsFile::SafetensorsFile(std::filesystem::path path, std::unique_ptr<Mapping> mapping,
                                 ParsedSafetensors parsed)
    : m_path(std::move(path)), m_mapping(std::move(mapping)), m_parsed(std::move(parsed)) {}
SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;
SafetensorsFile::~SafetensorsFile() = default;

Result<SafetensorsFile> SafetensorsFile::open(const std::filesystem::path& path) {
    FileDescriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (file.fd < 0) {
        return Error{
            fmt::format("cannot open safetensors file {}: {}", path.string(), errnoText())};
    }
    struct stat info {};
    if (fstat(file.fd, &info) != 0) {
        return Error{
            fmt::format("cannot read safetensors file {}: {}", path.string(), errnoText())};
    }
    if (!S_ISREG(info.st_mode)) {
        return Error{fmt::format("safetensors file {} is not a regular file", path.string())};
    }
    auto mapping = std::make_unique<Mapping>();
    const auto size = static_cast<size_t>(info.st_size);
    if (size > 0) {
        void* address = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, file.fd, 0);
        if (address != MAP_FAILED) {
            mapping->address = address;
            mapping->size = size;
        } else {
            mapping->copy.resize(size);
            size_t done = 0;
            while (done < size) {
                const ssize_t n = ::pread(file.fd, mapping->copy.data() + done, size - done,
                                          static_cast<off_t>(done));
                if (n < 0 && errno == EINTR) continue;
                if (n <= 0) {
                    return Error{fmt::format("cannot read safetensors file {}: {}", path.string(),
                                             n == 0 ? "it shrank while being read" : errnoText())};
                }
                done += static_cast<size_t>(n);
            }
        }
    }
    auto parsed = parseSafetensors(mapping->bytes(), path.string());
    if (!parsed) return parsed.error();
    return SafetensorsFile(path, std::move(mapping), std::move(parsed).value());
}

std::vector<std::string> SafetensorsFile::names() const {
    std::vector<std::string> out;
    out.reserve(m_parsed.tensors.size());
    for (const auto& [name, info] : m_parsed.tensors) out.push_back(name);
    return out;
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
    const auto it = m_parsed.tensors.find(name);
    return it == m_parsed.tensors.end() ? nullptr : &it->second;
}

Result<std::vector<float>> SafetensorsFile::readAsFloat(std::string_view name) const {
    const TensorInfo* info = find(name);
    if (!info) {
        return Error{
            fmt::format("safetensors file {} has no tensor named '{}'", m_path.string(), name)};
    }
    const auto count = static_cast<size_t>(info->elementCount());
    const auto* src = static_cast<const std::byte*>(info->data);
    std::vector<float> out(count);
    // Element-wise memcpy: the data may be unaligned (see TensorInfo).
    switch (info->dtype) {
        case DType::F32:
            if (count > 0) std::memcpy(out.data(), src, count * sizeof(float));
            break;
        case DType::F64:
            for (size_t i = 0; i < count; ++i) {
                double v = 0;
                std::memcpy(&v, src + i * sizeof(double), sizeof(double));
                out[i] = static_cast<float>(v);
            }
            break;
        case DType::F16:
        case DType::BF16: {
            const bool isHalf = info->dtype == DType::F16;
            for (size_t i = 0; i < count; ++i) {
                uint16_t bits = 0;
                std::memcpy(&bits, src + i * 2, 2);
                out[i] = isHalf ? halfToFloat(bits) : bf16ToFloat(bits);
            }
            break;
        }
        default:
            return Error{fmt::format(
                "tensor '{}' in {} has dtype {}; only F32, F16, BF16 and F64 tensors convert to "
                "float",
                name, m_path.string(), dtypeName(info->dtype))};
    }
    return out;
}

}  // namespace ws::fileio
