// SPDX-License-Identifier: GPL-3.0-or-later
// The reader against hostile and broken files: each must be rejected with a message naming the
// file and the problem, never crash or hand out a tensor that points outside the file.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "engine/fileio/safetensors.h"
#include "support/temp_dir.h"

namespace ws::fileio {
namespace {

// The bytes of a safetensors file: the given header length (default: the real one), the header
// text and `dataBytes` bytes of data.
std::vector<std::byte> image(const std::string& header, size_t dataBytes,
                             std::optional<uint64_t> headerLength = std::nullopt) {
    const uint64_t n = headerLength.value_or(header.size());
    std::vector<std::byte> out;
    out.reserve(8 + header.size() + dataBytes);
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::byte>((n >> (8 * i)) & 0xff));
    for (char c : header) out.push_back(static_cast<std::byte>(c));
    out.insert(out.end(), dataBytes, std::byte{0x5a});
    return out;
}

// Parses `bytes` and expects a rejection whose message names the source and contains `what`.
void expectRejected(const std::vector<std::byte>& bytes, const std::string& what) {
    auto parsed = parseSafetensors(bytes, "hostile.safetensors");
    ASSERT_FALSE(parsed.ok()) << "accepted a file that should fail with: " << what;
    const std::string& message = parsed.error().message;
    EXPECT_NE(message.find("hostile.safetensors"), std::string::npos) << message;
    EXPECT_NE(message.find(what), std::string::npos) << message;
}

const std::string kOneTensor = R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})";

TEST(SafetensorsHostile, AcceptsAWellFormedFileWithoutMetadata) {
    auto parsed = parseSafetensors(image(kOneTensor, 8), "ok.safetensors");
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_TRUE(parsed->metadata.empty());
    ASSERT_EQ(parsed->tensors.size(), 1u);
    EXPECT_EQ(parsed->tensors.at("a").bytes, 8u);
}

TEST(SafetensorsHostile, TooSmallForAHeaderLength) {
    expectRejected(std::vector<std::byte>(5), "only 5 bytes");
    expectRejected({}, "only 0 bytes");
}

TEST(SafetensorsHostile, HeaderLengthLargerThanTheFile) {
    expectRejected(image(kOneTensor, 8, 4096), "larger than the rest of the file");
}

TEST(SafetensorsHostile, AbsurdHeaderLength) {
    expectRejected(image(kOneTensor, 8, uint64_t{1} << 40), "absurd");
    expectRejected(image(kOneTensor, 8, ~uint64_t{0}), "absurd");
}

TEST(SafetensorsHostile, InvalidJson) {
    expectRejected(image(R"({"a": {"dtype": )", 0), "not valid JSON");
    expectRejected(image("", 0), "not valid JSON");
    expectRejected(image("[1, 2]", 0), "not an object");
}

TEST(SafetensorsHostile, NonUtf8Header) {
    expectRejected(image("{\"a\xff\": {}}", 0), "not valid UTF-8");
    expectRejected(image("{\"\xc0\xaf\": {}}", 0), "not valid UTF-8");      // overlong '/'
    expectRejected(image("{\"\xed\xa0\x80\": {}}", 0), "not valid UTF-8");  // surrogate
    auto ok = parseSafetensors(image(R"({"__metadata__": {"note": "caf)"
                                     "\xc3\xa9"
                                     R"("}})",
                                     0),
                               "utf8.safetensors");
    ASSERT_TRUE(ok.ok()) << ok.error().message;
    EXPECT_EQ(ok->metadata.at("note"), "caf\xc3\xa9");
}

TEST(SafetensorsHostile, UnknownDtype) {
    expectRejected(image(R"({"a": {"dtype": "F33", "shape": [2], "data_offsets": [0, 8]}})", 8),
                   "unknown dtype 'F33'");
    expectRejected(image(R"({"a": {"dtype": 32, "shape": [2], "data_offsets": [0, 8]}})", 8),
                   "dtype is not a string");
}

TEST(SafetensorsHostile, ShapeProductOverflow) {
    expectRejected(
        image(
            R"({"a": {"dtype": "U8", "shape": [4294967296, 4294967296, 16], "data_offsets": [0, 8]}})",
            8),
        "more elements than can be addressed");
    expectRejected(
        image(R"({"a": {"dtype": "F64", "shape": [4611686018427387904], "data_offsets": [0, 8]}})",
              8),
        "overflows a byte count");
}

TEST(SafetensorsHostile, ShapeNotMatchingBytes) {
    expectRejected(image(R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 8),
                   "needs 12 bytes but data_offsets [0,8] span 8");
    expectRejected(image(R"({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", 8),
                   "non-negative integer");
    expectRejected(image(R"({"a": {"dtype": "F32", "shape": [2.0], "data_offsets": [0, 8]}})", 8),
                   "non-negative integer");
    expectRejected(image(R"({"a": {"dtype": "F32", "shape": 2, "data_offsets": [0, 8]}})", 8),
                   "shape is not an array");
}

TEST(SafetensorsHostile, OffsetsOutOfRange) {
    expectRejected(image(kOneTensor, 4), "run past the end of the data region (4 bytes)");
    expectRejected(image(R"({"a": {"dtype": "U8", "shape": [0], "data_offsets": [8, 0]}})", 8),
                   "end before they begin");
    expectRejected(image(R"({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0]}})", 1),
                   "[begin, end]");
    expectRejected(image(R"({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, -1]}})", 1),
                   "two non-negative integers");
}

TEST(SafetensorsHostile, OverlappingTensors) {
    expectRejected(image(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                             "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                         12),
                   "'a' and 'b' overlap");
    expectRejected(image(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                             "b": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})",
                         8),
                   "overlap");
}

TEST(SafetensorsHostile, DataRegionNotCovered) {
    expectRejected(image(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                             "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})",
                         12),
                   "bytes 4..8 of the data region belong to no tensor");
    expectRejected(image(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 8),
                   "trailing bytes");
    expectRejected(image("{}", 4), "trailing bytes");
}

TEST(SafetensorsHostile, DuplicateNames) {
    expectRejected(image(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                             "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                         8),
                   "tensor name 'a' appears twice");
    expectRejected(
        image(R"({"a": {"dtype": "F32", "dtype": "F16", "shape": [1], "data_offsets": [0, 4]}})",
              4),
        "'dtype' appears twice");
}

TEST(SafetensorsHostile, MalformedEntriesAndMetadata) {
    expectRejected(image(R"({"a": 3})", 0), "tensor 'a': the entry is not an object");
    expectRejected(image(R"({"a": {"dtype": "F32", "shape": [1]}})", 4),
                   "needs the keys dtype, shape and data_offsets");
    expectRejected(image(R"({"__metadata__": {"epoch": 3}})", 0),
                   "__metadata__ value of 'epoch' is not a string");
    expectRejected(image(R"({"__metadata__": ["x"]})", 0), "__metadata__ is not an object");
    expectRejected(
        image(R"({"a": {"dtype": "F32", "shape": [[[[1]]]], "data_offsets": [0, 4]}})", 4),
        "nests deeper");
}

TEST(SafetensorsHostile, OpenNamesTheFileOnDisk) {
    ws::testing::TempDir dir("st_hostile");
    const auto path = dir / "truncated.safetensors";
    const auto bytes = image(kOneTensor, 4);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    auto file = SafetensorsFile::open(path);
    ASSERT_FALSE(file.ok());
    EXPECT_NE(file.error().message.find(path.string()), std::string::npos) << file.error().message;
    EXPECT_NE(file.error().message.find("truncated"), std::string::npos) << file.error().message;

    std::ofstream(dir / "empty.safetensors", std::ios::binary).flush();
    auto empty = SafetensorsFile::open(dir / "empty.safetensors");
    ASSERT_FALSE(empty.ok());
    EXPECT_NE(empty.error().message.find("only 0 bytes"), std::string::npos);

    auto folder = SafetensorsFile::open(dir.path());
    ASSERT_FALSE(folder.ok());
    EXPECT_NE(folder.error().message.find("not a regular file"), std::string::npos);
}

}  // namespace
}  // namespace ws::fileio
