// SPDX-License-Identifier: GPL-3.0-or-later
// TorchCheckpoint: torch.save's zip archive through libzip, its pickle through the restricted
// reader (see torch_checkpoint.h).
#include "engine/modelio/torch_checkpoint.h"

#include <fmt/format.h>
#include <zip.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <mutex>
#include <new>
#include <optional>

namespace ws::modelio {
namespace fs = std::filesystem;
using fileio::DType;

namespace {

constexpr std::string_view kRedownload =
    "the file is truncated or damaged: download it again (or convert the model to safetensors "
    "where it is whole)";

// Deflate cannot expand more than about 1032:1; a larger claim is a zip bomb, not a checkpoint.
constexpr uint64_t kMaxExpansion = 1100;

std::string zipErrorText(zip_error_t* error) {
    return zip_error_strerror(error);
}

struct ZipCloser {
    void operator()(zip_t* z) const { zip_discard(z); }
};
struct ZipFileCloser {
    void operator()(zip_file_t* f) const { zip_fclose(f); }
};
using ZipPtr = std::unique_ptr<zip_t, ZipCloser>;
using ZipFilePtr = std::unique_ptr<zip_file_t, ZipFileCloser>;

Error legacyFormat(std::string_view source) {
    return Error{fmt::format(
        "{}: this is PyTorch's legacy checkpoint format (a bare pickle, before PyTorch 1.6), "
        "which this reader does not read; re-save it with a current PyTorch (torch.save("
        "torch.load(f, weights_only=True), f) writes the zip format), or {}",
        source, kTorchConvertHint)};
}

Error notTorch(std::string_view source, std::string_view head) {
    if (head.starts_with("version https://git-lfs")) {
        return Error{fmt::format(
            "{}: this is a Git LFS pointer, not the checkpoint itself; fetch the file (git lfs "
            "pull in the model's repository, or download it from the Hub's web page)",
            source)};
    }
    return Error{fmt::format(
        "{}: not a PyTorch checkpoint (torch.save writes a zip archive starting with \"PK\"); "
        "{}",
        source, kRedownload)};
}

}  // namespace

struct TorchCheckpoint::Archive {
    ZipPtr zip;
    std::string source;
    std::map<std::string, zip_uint64_t> storageIndex;  // key -> entry index
    std::mutex mutex;                                  // libzip archives are not thread-safe
    std::string cachedKey;                             // the last storage read (tied weights)
    std::vector<std::byte> cached;

    Result<std::vector<std::byte>> readEntry(zip_uint64_t index, uint64_t bytes,
                                             std::string_view what) {
        ZipFilePtr file(zip_fopen_index(zip.get(), index, 0));
        if (!file) {
            return Error{fmt::format("{}: cannot open {}: {}; {}", source, what,
                                     zip_strerror(zip.get()), kRedownload)};
        }
        std::vector<std::byte> out;
        try {
            out.resize(size_t(bytes));
        } catch (const std::bad_alloc&) {
            return Error{fmt::format("{}: {} is {} bytes, more than this machine can hold", source,
                                     what, bytes)};
        }
        uint64_t done = 0;
        while (done < bytes) {
            const zip_int64_t n = zip_fread(file.get(), out.data() + done, bytes - done);
            if (n <= 0) {
                return Error{fmt::format("{}: reading {} failed after {} of {} bytes: {}; {}",
                                         source, what, done, bytes,
                                         n < 0 ? zip_error_strerror(zip_file_get_error(file.get()))
                                               : "unexpected end of data",
                                         kRedownload)};
            }
            done += uint64_t(n);
        }
        // One more read reaches the end of the entry, where libzip compares the CRC.
        std::byte extra{};
        const zip_int64_t n = zip_fread(file.get(), &extra, 1);
        if (n != 0) {
            return Error{
                fmt::format("{}: {} {}; {}", source, what,
                            n < 0 ? fmt::format("fails its check: {}",
                                                zip_error_strerror(zip_file_get_error(file.get())))
                                  : std::string("is longer than its directory entry"),
                            kRedownload)};
        }
        return out;
    }
};

Status checkTorchStorages(const TorchStateDict& dict,
                          const std::map<std::string, uint64_t>& storageBytes,
                          std::string_view source) {
    for (const auto& [key, s] : dict.storages) {
        const auto it = storageBytes.find(key);
        if (it == storageBytes.end()) {
            return Error{fmt::format(
                "{}: storage {} ({}) is missing from the archive (data/{}); the file is "
                "incomplete: download it again",
                source, key, s.typeName, key)};
        }
        const uint64_t want = s.elements * fileio::dtypeSize(s.dtype);
        if (it->second != want) {
            return Error{fmt::format(
                "{}: storage {} holds {} bytes but the pickle declares {} elements of {} ({} "
                "bytes); the file is damaged: download it again",
                source, key, it->second, s.elements, s.typeName, want)};
        }
    }
    // Tensors sharing storage elements must be the same view (a tied weight such as lm_head and
    // wte); a partial overlap means one tensor's values would be another's.
    std::map<std::string, std::vector<const TorchTensorInfo*>> byStorage;
    for (const auto& t : dict.tensors) {
        if (t.elementCount() > 0) byStorage[t.storageKey].push_back(&t);
    }
    for (auto& [key, tensors] : byStorage) {
        std::sort(tensors.begin(), tensors.end(), [](const auto* a, const auto* b) {
            return std::pair(a->storageOffset, a->elementCount()) <
                   std::pair(b->storageOffset, b->elementCount());
        });
        const TorchTensorInfo* reach = nullptr;  // the tensor ending furthest so far
        for (const TorchTensorInfo* t : tensors) {
            if (reach &&
                t->storageOffset < reach->storageOffset + uint64_t(reach->elementCount())) {
                const bool same = t->storageOffset == reach->storageOffset &&
                                  t->elementCount() == reach->elementCount() &&
                                  t->shape == reach->shape;
                if (!same) {
                    return Error{fmt::format(
                        "{}: tensors {} (elements [{}, {})) and {} (elements [{}, {})) overlap "
                        "in storage {}; only identical views (tied weights) may share "
                        "elements; {}",
                        source, reach->name, reach->storageOffset,
                        reach->storageOffset + uint64_t(reach->elementCount()), t->name,
                        t->storageOffset, t->storageOffset + uint64_t(t->elementCount()), key,
                        kTorchConvertHint)};
                }
            }
            if (!reach || t->storageOffset + uint64_t(t->elementCount()) >
                              reach->storageOffset + uint64_t(reach->elementCount())) {
                reach = t;
            }
        }
    }
    return Status::success();
}

TorchCheckpoint::TorchCheckpoint(fs::path path, std::unique_ptr<Archive> archive,
                                 TorchStateDict dict)
    : m_path(std::move(path)), m_archive(std::move(archive)), m_dict(std::move(dict)) {}
TorchCheckpoint::TorchCheckpoint(TorchCheckpoint&&) noexcept = default;
TorchCheckpoint& TorchCheckpoint::operator=(TorchCheckpoint&&) noexcept = default;
TorchCheckpoint::~TorchCheckpoint() = default;

bool looksLikeTorchCheckpoint(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::array<char, 4> head{};
    if (!in.read(head.data(), head.size())) return false;
    return std::memcmp(head.data(), "PK\x03\x04", 4) == 0 ||
           (uint8_t(head[0]) == 0x80 && uint8_t(head[1]) <= 5 && uint8_t(head[2]) == 0x8a);
}

Result<TorchCheckpoint> TorchCheckpoint::open(const fs::path& path) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
        return Error{fmt::format("{}: no such file", path.string())};
    }
    std::ifstream in(path, std::ios::binary);
    std::array<char, 32> head{};
    in.read(head.data(), head.size());
    const std::string_view start(head.data(), size_t(in.gcount()));
    if (!start.empty() && uint8_t(start[0]) == 0x80) return legacyFormat(path.string());
    if (!start.starts_with("PK\x03\x04")) return notTorch(path.string(), start);
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t* src = zip_source_file_create(path.c_str(), 0, -1, &error);
    if (!src) {
        const std::string text = zipErrorText(&error);
        zip_error_fini(&error);
        return Error{fmt::format("{}: cannot open: {}", path.string(), text)};
    }
    zip_error_fini(&error);
    auto archive = std::make_unique<Archive>();
    archive->source = path.string();
    return finishOpen(src, path, std::move(archive));
}

Result<TorchCheckpoint> TorchCheckpoint::openBytes(std::span<const std::byte> bytes,
                                                   std::string_view source) {
    if (!bytes.empty() && uint8_t(bytes[0]) == 0x80) return legacyFormat(source);
    const std::string_view start(reinterpret_cast<const char*>(bytes.data()),
                                 std::min<size_t>(bytes.size(), 32));
    if (!start.starts_with("PK\x03\x04")) return notTorch(source, start);
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t* src = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
    if (!src) {
        const std::string text = zipErrorText(&error);
        zip_error_fini(&error);
        return Error{fmt::format("{}: cannot open: {}", source, text)};
    }
    zip_error_fini(&error);
    auto archive = std::make_unique<Archive>();
    archive->source = std::string(source);
    return finishOpen(src, fs::path(source), std::move(archive));
}

Result<TorchCheckpoint> TorchCheckpoint::finishOpen(void* sourceHandle, fs::path path,
                                                    std::unique_ptr<Archive> archive) {
    auto* src = static_cast<zip_source_t*>(sourceHandle);
    const std::string& source = archive->source;
    zip_error_t error;
    zip_error_init(&error);
    zip_t* opened = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &error);
    if (!opened) {
        zip_source_free(src);
        const std::string text = zipErrorText(&error);
        zip_error_fini(&error);
        return Error{
            fmt::format("{}: not a readable zip archive ({}); {}", source, text, kRedownload)};
    }
    zip_error_fini(&error);
    archive->zip.reset(opened);

    // torch.save puts everything under one folder (archive/ or the file's stem): find data.pkl.
    const zip_int64_t count = zip_get_num_entries(opened, 0);
    std::string prefix;
    zip_uint64_t pickleIndex = 0;
    int pickles = 0;
    for (zip_int64_t i = 0; i < count; ++i) {
        const char* name = zip_get_name(opened, zip_uint64_t(i), 0);
        if (!name) continue;
        const std::string_view n(name);
        const size_t slash = n.find('/');
        if (slash != std::string_view::npos && n.substr(slash + 1) == "data.pkl") {
            prefix = std::string(n.substr(0, slash + 1));
            pickleIndex = zip_uint64_t(i);
            ++pickles;
        }
    }
    if (pickles != 1) {
        return Error{fmt::format(
            "{}: the archive holds {} data.pkl files (one expected: <folder>/data.pkl, as "
            "torch.save writes); it is not a PyTorch checkpoint this reader knows. {}",
            source, pickles, kTorchConvertHint)};
    }

    std::map<std::string, uint64_t> storageBytes;
    std::optional<zip_uint64_t> byteOrder;
    uint64_t byteOrderBytes = 0;
    uint64_t pickleBytes = 0;
    for (zip_int64_t i = 0; i < count; ++i) {
        zip_stat_t st;
        zip_stat_init(&st);
        if (zip_stat_index(opened, zip_uint64_t(i), 0, &st) != 0 || !st.name) continue;
        const std::string_view n(st.name);
        if (!n.starts_with(prefix)) continue;
        const std::string_view rest = n.substr(prefix.size());
        if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE) {
            return Error{fmt::format("{}: {} is encrypted; a checkpoint never is. {}", source, n,
                                     kRedownload)};
        }
        if ((st.valid & ZIP_STAT_SIZE) && (st.valid & ZIP_STAT_COMP_SIZE) &&
            st.size > (st.comp_size + 1) * kMaxExpansion) {
            return Error{fmt::format(
                "{}: {} claims to expand {} compressed bytes to {} bytes, more than any "
                "compression can; the archive is damaged or hostile",
                source, n, st.comp_size, st.size)};
        }
        if (zip_uint64_t(i) == pickleIndex) pickleBytes = st.size;
        if (rest == "byteorder") {
            byteOrder = zip_uint64_t(i);
            byteOrderBytes = st.size;
        }
        if (rest.starts_with("data/") && rest.size() > 5 &&
            rest.find('/', 5) == std::string_view::npos) {
            const std::string key(rest.substr(5));
            storageBytes[key] = st.size;
            archive->storageIndex[key] = zip_uint64_t(i);
        }
    }
    if (byteOrder) {
        // "little" or "big"; older writers leave the file out (and were little-endian).
        auto text = byteOrderBytes <= 16
                        ? archive->readEntry(*byteOrder, byteOrderBytes, prefix + "byteorder")
                        : Result<std::vector<std::byte>>(std::vector<std::byte>{});
        if (!text.ok()) return text.error();
        const std::string_view order(reinterpret_cast<const char*>(text->data()), text->size());
        if (order != "little") {
            return Error{fmt::format(
                "{}: the checkpoint was saved with byte order \"{}\"; only little-endian "
                "checkpoints are read. {}",
                source, order, kTorchConvertHint)};
        }
    }
    if (pickleBytes > kMaxTorchPickleBytes) {
        return Error{
            fmt::format("{}: {}data.pkl is {} bytes, more than a state dict needs "
                        "(limit {}); {}",
                        source, prefix, pickleBytes, kMaxTorchPickleBytes, kTorchConvertHint)};
    }
    auto pickle = archive->readEntry(pickleIndex, pickleBytes, prefix + "data.pkl");
    if (!pickle.ok()) return pickle.error();
    auto dict = parseTorchPickle(*pickle, fmt::format("{} ({}data.pkl)", source, prefix));
    if (!dict.ok()) return dict.error();
    if (Status st = checkTorchStorages(*dict, storageBytes, source); !st.ok()) return st.error();
    return TorchCheckpoint(std::move(path), std::move(archive), std::move(dict).value());
}

std::vector<std::string> TorchCheckpoint::names() const {
    std::vector<std::string> out;
    out.reserve(m_dict.tensors.size());
    for (const auto& t : m_dict.tensors) out.push_back(t.name);
    std::sort(out.begin(), out.end());
    return out;
}

const TorchTensorInfo* TorchCheckpoint::find(std::string_view name) const {
    const auto it = std::find_if(m_dict.tensors.begin(), m_dict.tensors.end(),
                                 [&](const TorchTensorInfo& t) { return t.name == name; });
    return it == m_dict.tensors.end() ? nullptr : &*it;
}

Result<std::vector<float>> TorchCheckpoint::readAsFloat(std::string_view name) const {
    const TorchTensorInfo* t = find(name);
    if (!t) {
        return Error{fmt::format("{}: no tensor named {}", m_archive->source, name)};
    }
    const TorchStorageInfo& storage = m_dict.storages.at(t->storageKey);
    if (t->dtype != DType::F32 && t->dtype != DType::F16 && t->dtype != DType::BF16 &&
        t->dtype != DType::F64) {
        return Error{
            fmt::format("{}: tensor {} is stored as {} ({}); only Float, Half, BFloat16 and Double "
                        "tensors can be read as weights",
                        m_archive->source, t->name, storage.typeName, fileio::dtypeName(t->dtype))};
    }
    const size_t elementSize = fileio::dtypeSize(t->dtype);
    const size_t n = size_t(t->elementCount());
    std::vector<float> out(n);
    std::lock_guard lock(m_archive->mutex);
    if (m_archive->cachedKey != t->storageKey) {
        m_archive->cachedKey.clear();
        m_archive->cached.clear();
        auto bytes =
            m_archive->readEntry(m_archive->storageIndex.at(t->storageKey),
                                 storage.elements * elementSize, "storage data/" + t->storageKey);
        if (!bytes.ok()) return bytes.error();
        m_archive->cached = std::move(bytes).value();
        m_archive->cachedKey = t->storageKey;
    }
    const std::byte* p = m_archive->cached.data() + t->storageOffset * elementSize;
    switch (t->dtype) {
        case DType::F32:
            std::memcpy(out.data(), p, n * sizeof(float));
            break;
        case DType::F64:
            for (size_t i = 0; i < n; ++i) {
                double v;
                std::memcpy(&v, p + i * 8, 8);
                out[i] = static_cast<float>(v);
            }
            break;
        default:
            for (size_t i = 0; i < n; ++i) {
                uint16_t bits;
                std::memcpy(&bits, p + i * 2, 2);
                out[i] =
                    t->dtype == DType::F16 ? fileio::halfToFloat(bits) : fileio::bf16ToFloat(bits);
            }
            break;
    }
    return out;
}

}  // namespace ws::modelio
