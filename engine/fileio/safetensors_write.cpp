// SPDX-License-Identifier: GPL-3.0-or-later
// writeSafetensors: validates the tensors, lays them out like the reference writer (largest
// element size first, then by name, so each tensor is aligned to its element size), pads the
// header with spaces to a multiple of 8 bytes and writes everything through AtomicFileWriter.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/core/hash.h"
#include "engine/fileio/atomic_file.h"
#include "engine/fileio/safetensors.h"

namespace ws::fileio {

namespace {
Status validateTensor(const std::filesystem::path& path, const TensorView& t, bool fetched) {
    auto fail = [&](const std::string& what) {
        return Error{fmt::format("cannot write {}: tensor '{}' {}", path.string(), t.name, what)};
    };
    if (t.name.empty()) {
        return Error{fmt::format("cannot write {}: a tensor has an empty name", path.string())};
    }
    if (t.name == "__metadata__") return fail("uses the name reserved for the metadata");
    uint64_t elements = 1;
    for (int64_t d : t.shape) {
        if (d < 0) return fail(fmt::format("has a negative dimension {}", d));
        if (__builtin_mul_overflow(elements, static_cast<uint64_t>(d), &elements)) {
            return fail("has a shape whose element count overflows");
        }
    }
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(elements, dtypeSize(t.dtype), &bytes) || bytes != t.bytes) {
        return fail(fmt::format("has shape [{}] of {} ({} elements) but {} bytes of data",
                                fmt::join(t.shape, ", "), dtypeName(t.dtype), elements, t.bytes));
    }
    if (t.bytes > 0 && t.data == nullptr && !fetched) return fail("has no data pointer");
    return {};
}
}  // namespace

Status writeSafetensors(const std::filesystem::path& path, const std::vector<TensorView>& tensors,
                        const std::map<std::string, std::string>& metadata,
                        std::string* sha256Out) {
    return writeSafetensors(path, tensors, metadata, sha256Out, TensorFetch{});
}

Status writeSafetensors(const std::filesystem::path& path, const std::vector<TensorView>& tensors,
                        const std::map<std::string, std::string>& metadata, std::string* sha256Out,
                        const TensorFetch& fetch) {
    std::set<std::string_view> names;
    for (const auto& t : tensors) {
        if (auto s = validateTensor(path, t, bool(fetch)); !s) return s;
        if (!names.insert(t.name).second) {
            return Error{
                fmt::format("cannot write {}: two tensors are named '{}'", path.string(), t.name)};
        }
    }
    std::vector<const TensorView*> order;
    order.reserve(tensors.size());
    for (const auto& t : tensors) order.push_back(&t);
    std::sort(order.begin(), order.end(), [](const TensorView* a, const TensorView* b) {
        const size_t sa = dtypeSize(a->dtype), sb = dtypeSize(b->dtype);
        return sa != sb ? sa > sb : a->name < b->name;
    });

    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata.empty()) header["__metadata__"] = metadata;
    uint64_t offset = 0;
    for (const TensorView* t : order) {
        header[t->name] = {{"dtype", dtypeName(t->dtype)},
                           {"shape", t->shape},
                           {"data_offsets", {offset, offset + t->bytes}}};
        offset += t->bytes;
    }
    std::string headerText;
    try {
        headerText = header.dump();
    } catch (const nlohmann::json::exception& e) {
        return Error{
            fmt::format("cannot write {}: a tensor name or metadata string is not valid "
                        "UTF-8 ({})",
                        path.string(), e.what())};
    }
    // Padding keeps the data region 8-byte aligned (8 + N is a multiple of 8).
    headerText.append((8 - headerText.size() % 8) % 8, ' ');
    if (headerText.size() > kMaxHeaderBytes) {
        return Error{
            fmt::format("cannot write {}: the header would be {} bytes, above the {} "
                        "bytes readers accept; use shorter names or less metadata",
                        path.string(), headerText.size(), kMaxHeaderBytes)};
    }

    auto writer = AtomicFileWriter::create(path);
    if (!writer) return writer.error();
    Sha256 digest;
    auto put = [&](const void* data, size_t size) {
        if (sha256Out) digest.update(data, size);
        return writer->write(data, size);
    };
    const uint64_t headerLength = headerText.size();  // little-endian on every supported target
    if (auto s = put(&headerLength, 8); !s) return s;
    if (auto s = put(headerText.data(), headerText.size()); !s) return s;
    for (const TensorView* t : order) {
        if (t->bytes == 0) continue;
        const void* data = t->data ? t->data : fetch(size_t(t - tensors.data()));
        if (auto s = put(data, t->bytes); !s) return s;
    }
    if (auto s = writer->commit(); !s) return s;
    if (sha256Out) *sha256Out = digest.hexDigest();
    return {};
}

}  // namespace ws::fileio
