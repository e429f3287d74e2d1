// SPDX-License-Identifier: GPL-3.0-or-later
// safetensors writer and reader: round trips of every dtype, the on-disk layout, float
// conversion, atomic replacement on failure, and a file written by an independent Python writer.
#include "engine/fileio/safetensors.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <fstream>
#include <numeric>

#include "engine/core/hash.h"
#include "engine/fileio/dtype.h"
#include "support/file_size_limit.h"
#include "support/temp_dir.h"

namespace ws::fileio {
namespace {

namespace fs = std::filesystem;
using ws::testing::TempDir;

std::string readBytes(const fs::path& path) {
    std::string bytes(fs::file_size(path), '\0');
    std::ifstream(path, std::ios::binary)
        .read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return bytes;
}

std::vector<std::string> folderEntries(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

// One tensor per dtype, each with a distinct byte pattern, so a mix-up of offsets shows.
struct AllDtypes {
    std::vector<std::vector<unsigned char>> storage;
    std::vector<TensorView> views;
    AllDtypes() {
        const DType all[] = {DType::Bool, DType::U8,  DType::I8,  DType::F8E5M2, DType::F8E4M3,
                             DType::I16,  DType::U16, DType::F16, DType::BF16,   DType::I32,
                             DType::U32,  DType::F32, DType::F64, DType::I64,    DType::U64};
        int seed = 1;
        for (DType d : all) {
            const std::vector<int64_t> shape{2, 3};
            std::vector<unsigned char> bytes(6 * dtypeSize(d));
            for (size_t i = 0; i < bytes.size(); ++i) {
                bytes[i] = static_cast<unsigned char>(seed * 31 + static_cast<int>(i) * 7);
            }
            if (d == DType::Bool) {
                for (auto& b : bytes) b &= 1;
            }
            ++seed;
            storage.push_back(std::move(bytes));
            views.push_back({"t_" + std::string(dtypeName(d)), d, shape, storage.back().data(),
                             storage.back().size()});
        }
    }
};

TEST(Safetensors, RoundTripsEveryDtypeWithMetadata) {
    TempDir dir("st_roundtrip");
    AllDtypes tensors;
    const std::map<std::string, std::string> metadata{{"format", "pt"},
                                                      {"config", "model:\n  n_layer: 2\n"}};
    const auto path = dir / "all.safetensors";
    std::string digest;
    ASSERT_TRUE(writeSafetensors(path, tensors.views, metadata, &digest).ok());

    auto file = SafetensorsFile::open(path);
    ASSERT_TRUE(file.ok()) << file.error().message;
    EXPECT_EQ(file->metadata(), metadata);
    EXPECT_EQ(file->names().size(), tensors.views.size());
    for (const auto& view : tensors.views) {
        const TensorInfo* info = file->find(view.name);
        ASSERT_NE(info, nullptr) << view.name;
        EXPECT_EQ(info->dtype, view.dtype);
        EXPECT_EQ(info->shape, view.shape);
        ASSERT_EQ(info->bytes, view.bytes);
        EXPECT_EQ(std::memcmp(info->data, view.data, view.bytes), 0) << view.name;
        // Largest element size first keeps every tensor aligned to its element size.
        EXPECT_EQ(info->dataBegin % dtypeSize(info->dtype), 0u) << view.name;
    }
    EXPECT_EQ(file->find("missing"), nullptr);

    auto expected = sha256File(path);
    ASSERT_TRUE(expected.ok());
    EXPECT_EQ(digest, *expected);
}

TEST(Safetensors, HeaderIsPaddedWithSpacesToEightBytes) {
    TempDir dir("st_layout");
    const float values[3] = {1, 2, 3};
    const auto path = dir / "pad.safetensors";
    ASSERT_TRUE(writeSafetensors(path, {{"abc", DType::F32, {3}, values, sizeof values}}, {}).ok());
    const std::string bytes = readBytes(path);
    ASSERT_GE(bytes.size(), 8u);
    uint64_t headerLength = 0;
    std::memcpy(&headerLength, bytes.data(), 8);
    EXPECT_EQ(headerLength % 8, 0u);
    EXPECT_EQ(bytes.size(), 8 + headerLength + sizeof values);
    const std::string header = bytes.substr(8, headerLength);
    EXPECT_EQ(header.find("__metadata__"), std::string::npos);  // omitted when empty
    EXPECT_EQ(header.find_last_not_of(' '), header.rfind('}'));
    auto file = SafetensorsFile::open(path);
    ASSERT_TRUE(file.ok()) << file.error().message;
    EXPECT_TRUE(file->metadata().empty());
}

TEST(Safetensors, ScalarsAndEmptyTensorsRoundTrip) {
    TempDir dir("st_empty");
    const double scalar = 2.5;
    const std::vector<TensorView> tensors{{"scalar", DType::F64, {}, &scalar, sizeof scalar},
                                          {"empty", DType::F32, {0, 4}, nullptr, 0}};
    const auto path = dir / "e.safetensors";
    ASSERT_TRUE(writeSafetensors(path, tensors, {{"k", "v"}}).ok());
    auto file = SafetensorsFile::open(path);
    ASSERT_TRUE(file.ok()) << file.error().message;
    auto s = file->readAsFloat("scalar");
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(*s, std::vector<float>{2.5f});
    auto e = file->readAsFloat("empty");
    ASSERT_TRUE(e.ok());
    EXPECT_TRUE(e->empty());
    EXPECT_EQ(file->find("empty")->shape, (std::vector<int64_t>{0, 4}));
}

TEST(Safetensors, ReadAsFloatConvertsFloatingDtypes) {
    TempDir dir("st_float");
    const std::vector<float> f32{0.5f, -1.25f, 1e-3f, 65504.0f};
    const std::vector<double> f64{1.5, -2.25, 1e-3, 1e300};
    std::vector<uint16_t> f16, bf16;
    for (float v : f32) {
        f16.push_back(floatToHalf(v));
        bf16.push_back(floatToBf16(v));
    }
    const int32_t ints[2] = {1, 2};
    const auto path = dir / "f.safetensors";
    ASSERT_TRUE(writeSafetensors(path,
                                 {{"f32", DType::F32, {4}, f32.data(), 16},
                                  {"f64", DType::F64, {2, 2}, f64.data(), 32},
                                  {"f16", DType::F16, {4}, f16.data(), 8},
                                  {"bf16", DType::BF16, {4}, bf16.data(), 8},
                                  {"i32", DType::I32, {2}, ints, 8}},
                                 {})
                    .ok());
    auto file = SafetensorsFile::open(path);
    ASSERT_TRUE(file.ok()) << file.error().message;
    EXPECT_EQ(*file->readAsFloat("f32"), f32);
    auto d = file->readAsFloat("f64");
    ASSERT_TRUE(d.ok());
    EXPECT_EQ((*d)[0], 1.5f);
    EXPECT_EQ((*d)[2], 1e-3f);
    EXPECT_TRUE(std::isinf((*d)[3]));  // beyond float range
    auto h = file->readAsFloat("f16");
    ASSERT_TRUE(h.ok());
    EXPECT_EQ(*h, (std::vector<float>{0.5f, -1.25f, halfToFloat(floatToHalf(1e-3f)), 65504.0f}));
    auto b = file->readAsFloat("bf16");
    ASSERT_TRUE(b.ok());
    EXPECT_EQ((*b)[0], 0.5f);
    EXPECT_EQ((*b)[1], -1.25f);
    EXPECT_EQ((*b)[3], 65536.0f);  // 65504 has no bf16 form; the nearest is 2^16

    auto i = file->readAsFloat("i32");
    ASSERT_FALSE(i.ok());
    EXPECT_NE(i.error().message.find("I32"), std::string::npos);
    EXPECT_NE(i.error().message.find(path.string()), std::string::npos);
    auto missing = file->readAsFloat("nope");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("'nope'"), std::string::npos);
}

TEST(Safetensors, WriterRejectsInconsistentTensorsWithoutTouchingDisk) {
    TempDir dir("st_badwrite");
    const float v[2] = {1, 2};
    const auto path = dir / "bad.safetensors";
    auto mismatch = writeSafetensors(path, {{"a", DType::F32, {3}, v, sizeof v}}, {});
    ASSERT_FALSE(mismatch.ok());
    EXPECT_NE(mismatch.error().message.find("'a'"), std::string::npos);
    auto duplicate = writeSafetensors(
        path, {{"a", DType::F32, {2}, v, sizeof v}, {"a", DType::F32, {2}, v, sizeof v}}, {});
    ASSERT_FALSE(duplicate.ok());
    EXPECT_NE(duplicate.error().message.find("two tensors"), std::string::npos);
    auto reserved = writeSafetensors(path, {{"__metadata__", DType::F32, {2}, v, sizeof v}}, {});
    EXPECT_FALSE(reserved.ok());
    auto negative = writeSafetensors(path, {{"n", DType::F32, {-1}, v, 0}}, {});
    EXPECT_FALSE(negative.ok());
    auto badUtf8 = writeSafetensors(path, {{"a", DType::F32, {2}, v, sizeof v}},
                                    {{"note", std::string("\xff\xfe")}});
    ASSERT_FALSE(badUtf8.ok());
    EXPECT_NE(badUtf8.error().message.find("UTF-8"), std::string::npos);
    EXPECT_TRUE(folderEntries(dir.path()).empty());
}

TEST(Safetensors, SuccessfulWriteReplacesTheOldFile) {
    TempDir dir("st_replace");
    const float one[1] = {1}, two[2] = {2, 3};
    const auto path = dir / "w.safetensors";
    ASSERT_TRUE(writeSafetensors(path, {{"x", DType::F32, {1}, one, 4}}, {}).ok());
    ASSERT_TRUE(writeSafetensors(path, {{"y", DType::F32, {2}, two, 8}}, {}).ok());
    auto file = SafetensorsFile::open(path);
    ASSERT_TRUE(file.ok());
    EXPECT_EQ(file->names(), std::vector<std::string>{"y"});
    EXPECT_EQ(folderEntries(dir.path()), std::vector<std::string>{"w.safetensors"});
}

using ws::testing::FileSizeLimit;

TEST(Safetensors, FailedWriteLeavesTheOldFileIntactAndNoTempFile) {
    TempDir dir("st_atomic");
    const auto path = dir / "model.safetensors";
    const float small[4] = {1, 2, 3, 4};
    ASSERT_TRUE(writeSafetensors(path, {{"w", DType::F32, {4}, small, sizeof small}}, {}).ok());
    const std::string before = readBytes(path);

    // A write that runs into a full disk (simulated by a 64 KiB file-size limit).
    std::vector<float> big(1 << 20, 0.5f);
    Status failed;
    {
        FileSizeLimit limit(64 * 1024);
        failed = writeSafetensors(
            path, {{"w", DType::F32, {1 << 20}, big.data(), big.size() * sizeof(float)}}, {});
    }
    ASSERT_FALSE(failed.ok());
    EXPECT_NE(failed.error().message.find(path.string()), std::string::npos);
    EXPECT_EQ(readBytes(path), before);
    EXPECT_EQ(folderEntries(dir.path()), std::vector<std::string>{"model.safetensors"});

    // A rename that fails: the target is a folder.
    fs::create_directory(dir / "taken.safetensors");
    auto renameFails =
        writeSafetensors(dir / "taken.safetensors", {{"w", DType::F32, {4}, small, 16}}, {});
    ASSERT_FALSE(renameFails.ok());
    EXPECT_TRUE(fs::is_directory(dir / "taken.safetensors"));
    EXPECT_EQ(folderEntries(dir.path()),
              (std::vector<std::string>{"model.safetensors", "taken.safetensors"}));

    // A folder that does not exist.
    auto noFolder = writeSafetensors(dir / "missing" / "m.safetensors",
                                     {{"w", DType::F32, {4}, small, 16}}, {});
    ASSERT_FALSE(noFolder.ok());
    EXPECT_NE(noFolder.error().message.find("missing"), std::string::npos);
}

TEST(Safetensors, OpenReportsMissingFiles) {
    auto missing = SafetensorsFile::open("/nonexistent/wafer/none.safetensors");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("/nonexistent/wafer/none.safetensors"),
              std::string::npos);
}

// An independent writer: Python's struct + json, following the format description rather than
// this project's writer (insertion order, unaligned F64 in the unpadded variant).
constexpr const char* kPythonWriter = R"PY(
import json, struct, sys

def write(path, pad):
    tensors = [
        ("w_f32", "F32", [2, 3], struct.pack("<6f", 0.5, -1.25, 3.0, 0.001, 65504.0, -0.0)),
        ("h_f16", "F16", [4], struct.pack("<4e", 1.0, -2.5, 0.0999755859375, 6.103515625e-05)),
        ("b_bf16", "BF16", [3], b"".join(struct.pack("<f", v)[2:] for v in (1.0, -3.140625, 0.00390625))),
        ("d_f64", "F64", [2], struct.pack("<2d", 1.5, -2.25)),
        ("i_i64", "I64", [2], struct.pack("<2q", 7, -9)),
        ("u_u8", "U8", [3], bytes([0, 128, 255])),
    ]
    header = {"__metadata__": {"format": "pt", "note": "written by python"}}
    offset = 0
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header).encode("utf-8")
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, _, _, data in tensors:
            f.write(data)

write(sys.argv[1] + "/padded.safetensors", True)
write(sys.argv[1] + "/unpadded.safetensors", False)
)PY";

TEST(Safetensors, ReadsAFileWrittenByAnIndependentPythonWriter) {
    const fs::path python = "/usr/bin/python3";
    if (!fs::exists(python)) GTEST_SKIP() << "needs /usr/bin/python3";
    TempDir dir("st_python");
    std::ofstream(dir / "writer.py") << kPythonWriter;
    const std::string command =
        python.string() + " " + (dir / "writer.py").string() + " " + dir.path().string();
    ASSERT_EQ(std::system(command.c_str()), 0) << command;

    for (const char* name : {"padded.safetensors", "unpadded.safetensors"}) {
        SCOPED_TRACE(name);
        auto file = SafetensorsFile::open(dir / name);
        ASSERT_TRUE(file.ok()) << file.error().message;
        EXPECT_EQ(file->metadata().at("note"), "written by python");
        EXPECT_EQ(file->names().size(), 6u);
        EXPECT_EQ(*file->readAsFloat("w_f32"),
                  (std::vector<float>{0.5f, -1.25f, 3.0f, 0.001f, 65504.0f, -0.0f}));
        EXPECT_EQ(file->find("w_f32")->shape, (std::vector<int64_t>{2, 3}));
        EXPECT_EQ(*file->readAsFloat("h_f16"),
                  (std::vector<float>{1.0f, -2.5f, 0.0999755859375f, 6.103515625e-05f}));
        EXPECT_EQ(*file->readAsFloat("b_bf16"),
                  (std::vector<float>{1.0f, -3.140625f, 0.00390625f}));
        EXPECT_EQ(*file->readAsFloat("d_f64"), (std::vector<float>{1.5f, -2.25f}));
        const TensorInfo* i64 = file->find("i_i64");
        ASSERT_NE(i64, nullptr);
        EXPECT_EQ(i64->dtype, DType::I64);
        int64_t ints[2];
        std::memcpy(ints, i64->data, sizeof ints);
        EXPECT_EQ(ints[0], 7);
        EXPECT_EQ(ints[1], -9);
        const TensorInfo* u8 = file->find("u_u8");
        ASSERT_NE(u8, nullptr);
        EXPECT_EQ(static_cast<const unsigned char*>(u8->data)[2], 255);
    }
}

}  // namespace
}  // namespace ws::fileio
