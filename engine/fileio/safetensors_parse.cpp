// SPDX-License-Identifier: GPL-3.0-or-later
// The safetensors header parser and validator: a pure function over the file's bytes, kept apart
// from any I/O so that a fuzzer can drive it directly. Every rejection names the source and says
// what is wrong, so a user can tell a truncated download from a file that is not safetensors.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/fileio/safetensors.h"

namespace ws::fileio {

namespace {
using Json = nlohmann::json;

static_assert(std::endian::native == std::endian::little,
              "safetensors is little-endian; this reader maps the bytes directly");

// Returns the offset of the first byte that breaks UTF-8 (overlong forms, surrogates and code
// points above U+10FFFF included), or nullopt when the text is valid.
std::optional<size_t> firstInvalidUtf8(std::span<const std::byte> text) {
    size_t i = 0;
    const size_t n = text.size();
    auto at = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
    auto continuation = [&](size_t k) { return k < n && (at(k) & 0xc0u) == 0x80u; };
    while (i < n) {
        const uint8_t c = at(i);
        if (c < 0x80u) {
            ++i;
        } else if (c >= 0xc2u && c <= 0xdfu) {
            if (!continuation(i + 1)) return i;
            i += 2;
        } else if (c >= 0xe0u && c <= 0xefu) {
            if (!continuation(i + 1) || !continuation(i + 2)) return i;
            const uint8_t c1 = at(i + 1);
            if (c == 0xe0u && c1 < 0xa0u) return i;   // overlong
            if (c == 0xedu && c1 >= 0xa0u) return i;  // UTF-16 surrogate
            i += 3;
        } else if (c >= 0xf0u && c <= 0xf4u) {
            if (!continuation(i + 1) || !continuation(i + 2) || !continuation(i + 3)) return i;
            const uint8_t c1 = at(i + 1);
            if (c == 0xf0u && c1 < 0x90u) return i;   // overlong
            if (c == 0xf4u && c1 >= 0x90u) return i;  // above U+10FFFF
            i += 4;
        } else {
            return i;
        }
    }
    return std::nullopt;
}

// Thrown from the JSON parser callback to stop parsing a hostile header early.
struct HeaderRejected {
    std::string message;
};

// Parses the header while refusing duplicate keys (which plain JSON parsing would silently
// collapse, hiding a second tensor of the same name) and nesting deeper than the format uses
// (root object > tensor object > shape array > number), which bounds memory on hostile input.
Json parseHeaderJson(std::string_view text) {
    std::vector<std::set<std::string>> keysPerObject;
    auto callback = [&](int depth, Json::parse_event_t event, Json& parsed) {
        if (depth > 3) {
            throw HeaderRejected{"the JSON nests deeper than a safetensors header can"};
        }
        switch (event) {
            case Json::parse_event_t::object_start:
                keysPerObject.emplace_back();
                break;
            case Json::parse_event_t::object_end:
                keysPerObject.pop_back();
                break;
            case Json::parse_event_t::key: {
                const auto& key = parsed.get_ref<const std::string&>();
                if (!keysPerObject.back().insert(key).second) {
                    throw HeaderRejected{
                        depth == 1 ? fmt::format("the tensor name '{}' appears twice", key)
                                   : fmt::format("the key '{}' appears twice in one entry", key)};
                }
                break;
            }
            default:
                break;
        }
        return true;
    };
    return Json::parse(text.begin(), text.end(), callback);
}

Result<uint64_t> nonNegativeInteger(const Json& value) {
    if (!value.is_number_unsigned()) return Error{"not a non-negative integer"};
    return value.get<uint64_t>();
}

}  // namespace

int64_t TensorInfo::elementCount() const {
    int64_t count = 1;
    for (int64_t d : shape) count *= d;  // validated not to overflow when parsed
    return count;
}

namespace {

// The phases of parseSafetensors. Each returns what it read, or the problem as the text after
// "safetensors file <source>: ".

// The 8-byte length and the JSON header after it.
Result<Json> readHeader(std::span<const std::byte> bytes) {
    if (bytes.size() < 8) {
        return Error{fmt::format(
            "the file is only {} bytes; a safetensors file starts with an 8-byte header length",
            bytes.size())};
    }
    uint64_t headerLength = 0;
    std::memcpy(&headerLength, bytes.data(), 8);
    if (headerLength > kMaxHeaderBytes) {
        return Error{
            fmt::format("the header length {} is absurd (the limit is {} bytes): the file "
                        "is corrupted or not a safetensors file",
                        headerLength, kMaxHeaderBytes)};
    }
    const uint64_t afterLength = bytes.size() - 8;
    if (headerLength > afterLength) {
        return Error{
            fmt::format("the header length {} is larger than the rest of the file ({} "
                        "bytes): the file is truncated or not a safetensors file",
                        headerLength, afterLength)};
    }
    const auto headerBytes = bytes.subspan(8, headerLength);
    if (auto bad = firstInvalidUtf8(headerBytes)) {
        return Error{
            fmt::format("the header is not valid UTF-8 (bad byte 0x{:02x} at header "
                        "offset {})",
                        static_cast<unsigned>(headerBytes[*bad]), *bad)};
    }
    const std::string_view headerText(reinterpret_cast<const char*>(headerBytes.data()),
                                      headerBytes.size());
    Json header;
    try {
        header = parseHeaderJson(headerText);
    } catch (const HeaderRejected& e) {
        return Error{"invalid header: " + e.message};
    } catch (const Json::exception& e) {
        return Error{fmt::format("the header is not valid JSON: {}", e.what())};
    }
    if (!header.is_object()) return Error{"the header JSON is not an object"};
    return header;
}

// One tensor's entry {dtype, shape, data_offsets}, checked against the data region's size; the
// problem is the text after "tensor '<name>': ".
Result<TensorInfo> readTensorEntry(const std::string& name, const Json& entry, uint64_t dataSize,
                                   const std::byte* dataStart) {
    if (!entry.is_object()) return Error{"the entry is not an object"};
    const auto dtypeIt = entry.find("dtype");
    const auto shapeIt = entry.find("shape");
    const auto offsetsIt = entry.find("data_offsets");
    if (dtypeIt == entry.end() || shapeIt == entry.end() || offsetsIt == entry.end()) {
        return Error{"needs the keys dtype, shape and data_offsets"};
    }
    if (!dtypeIt->is_string()) return Error{"dtype is not a string"};
    const auto dtype = dtypeFromName(dtypeIt->get_ref<const std::string&>());
    if (!dtype) {
        return Error{fmt::format("unknown dtype '{}' (known: {})",
                                 dtypeIt->get_ref<const std::string&>(), knownDtypeNames())};
    }
    if (!shapeIt->is_array()) return Error{"shape is not an array"};
    TensorInfo info;
    info.name = name;
    info.dtype = *dtype;
    uint64_t elements = 1;
    for (const auto& dim : *shapeIt) {
        auto d = nonNegativeInteger(dim);
        if (!d) return Error{fmt::format("shape entry {} is {}", dim.dump(), d.error().message)};
        if (*d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
            __builtin_mul_overflow(elements, *d, &elements) ||
            elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            return Error{fmt::format("the shape {} has more elements than can be addressed",
                                     shapeIt->dump())};
        }
        info.shape.push_back(static_cast<int64_t>(*d));
    }
    uint64_t expectedBytes = 0;
    if (__builtin_mul_overflow(elements, dtypeSize(*dtype), &expectedBytes)) {
        return Error{fmt::format("the shape {} of {} overflows a byte count", shapeIt->dump(),
                                 dtypeName(*dtype))};
    }
    if (!offsetsIt->is_array() || offsetsIt->size() != 2) {
        return Error{"data_offsets is not an array [begin, end]"};
    }
    auto begin = nonNegativeInteger((*offsetsIt)[0]);
    auto end = nonNegativeInteger((*offsetsIt)[1]);
    if (!begin || !end) {
        return Error{
            fmt::format("data_offsets {} must hold two non-negative integers", offsetsIt->dump())};
    }
    if (*end < *begin) {
        return Error{fmt::format("data_offsets {} end before they begin", offsetsIt->dump())};
    }
    if (*end > dataSize) {
        return Error{fmt::format(
            "data_offsets {} run past the end of the data region ({} bytes): the file is "
            "truncated or corrupted",
            offsetsIt->dump(), dataSize)};
    }
    if (*end - *begin != expectedBytes) {
        return Error{fmt::format("shape {} of {} needs {} bytes but data_offsets {} span {}",
                                 shapeIt->dump(), dtypeName(*dtype), expectedBytes,
                                 offsetsIt->dump(), *end - *begin)};
    }
    info.dataBegin = *begin;
    info.bytes = static_cast<size_t>(expectedBytes);
    info.data = dataStart + *begin;
    return info;
}

// The tensors must tile the data region exactly: no overlaps (two tensors sharing bytes), no
// gaps and no trailing bytes (data a reader would silently ignore). "" when they do.
std::string tilingProblem(const ParsedSafetensors& parsed, uint64_t dataSize) {
    std::vector<const TensorInfo*> byOffset;
    byOffset.reserve(parsed.tensors.size());
    for (const auto& [name, info] : parsed.tensors) byOffset.push_back(&info);
    std::sort(byOffset.begin(), byOffset.end(), [](const TensorInfo* a, const TensorInfo* b) {
        return a->dataBegin != b->dataBegin ? a->dataBegin < b->dataBegin : a->bytes < b->bytes;
    });
    uint64_t covered = 0;
    const TensorInfo* previous = nullptr;
    for (const TensorInfo* t : byOffset) {
        if (t->dataBegin < covered) {
            return fmt::format("tensors '{}' and '{}' overlap (bytes {}..{} of the data region)",
                               previous ? previous->name : std::string(), t->name, t->dataBegin,
                               covered);
        }
        if (t->dataBegin > covered) {
            return fmt::format(
                "bytes {}..{} of the data region belong to no tensor (before "
                "tensor '{}')",
                covered, t->dataBegin, t->name);
        }
        covered = t->dataBegin + t->bytes;
        previous = t;
    }
    if (covered != dataSize) {
        return fmt::format(
            "the data region has {} bytes but the tensors cover only {}: "
            "trailing bytes belong to no tensor",
            dataSize, covered);
    }
    return {};
}

}  // namespace

Result<ParsedSafetensors> parseSafetensors(std::span<const std::byte> bytes,
                                           std::string_view source) {
    auto fail = [&](const std::string& what) {
        return Error{fmt::format("safetensors file {}: {}", source, what)};
    };
    auto header = readHeader(bytes);
    if (!header.ok()) return fail(header.error().message);
    uint64_t headerLength = 0;
    std::memcpy(&headerLength, bytes.data(), 8);
    ParsedSafetensors parsed;
    parsed.headerBytes = headerLength;
    const uint64_t dataSize = bytes.size() - 8 - headerLength;
    const std::byte* dataStart = bytes.data() + 8 + headerLength;

    for (const auto& [name, entry] : header->items()) {
        if (name == "__metadata__") {
            if (!entry.is_object()) return fail("__metadata__ is not an object of strings");
            for (const auto& [key, value] : entry.items()) {
                if (!value.is_string()) {
                    return fail(fmt::format("__metadata__ value of '{}' is not a string", key));
                }
                parsed.metadata.emplace(key, value.get<std::string>());
            }
            continue;
        }
        auto info = readTensorEntry(name, entry, dataSize, dataStart);
        if (!info.ok()) return fail(fmt::format("tensor '{}': {}", name, info.error().message));
        parsed.tensors.emplace(name, std::move(info).value());
    }
    if (std::string problem = tilingProblem(parsed, dataSize); !problem.empty())
        return fail(problem);
    return parsed;
}

}  // namespace ws::fileio
