// SPDX-License-Identifier: GPL-3.0-or-later
// The restricted pytorch_model.bin reader (modelio/torch_pickle.h, torch_checkpoint.h): a state
// dict written opcode by opcode (as torch.save's protocol-2 pickler writes it) into a zip made with
// libzip reads back bit-exact in fp32/fp16/bf16 with views, tied weights and 0-dim tensors; every
// hostile or damaged variant is refused naming the opcode, global, tensor or storage found.
// (tests/app/cli_test.sh torch_import / torch_refusals do the same through `wafer import` with
// files written by Python's standard library, and by real torch.save where PyTorch is installed.)
#include <gtest/gtest.h>
#include <zip.h>

#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "engine/fileio/dtype.h"
#include "engine/modelio/torch_checkpoint.h"
#include "engine/modelio/torch_pickle.h"
#include "support/temp_dir.h"

namespace ws::modelio {
namespace {

using Bytes = std::vector<std::byte>;

Bytes bytesOf(std::string_view s) {
    Bytes b(s.size());
    std::memcpy(b.data(), s.data(), s.size());
    return b;
}

// Pickle opcodes written by hand, as Python's protocol-2 pickler writes a state dict.
class PickleWriter {
public:
    PickleWriter() { raw("\x80\x02"); }
    PickleWriter& raw(std::string_view s) {
        m_out += s;
        return *this;
    }
    PickleWriter& byte(int b) {
        m_out += char(b);
        return *this;
    }
    PickleWriter& put() {
        byte('q').byte(m_memo++);
        return *this;
    }
    PickleWriter& global(std::string_view module, std::string_view name) {
        raw("c").raw(module).raw("\n").raw(name).raw("\n");
        return put();
    }
    PickleWriter& str(std::string_view s) {
        const uint32_t n = uint32_t(s.size());
        raw("X").raw(std::string_view(reinterpret_cast<const char*>(&n), 4)).raw(s);
        return put();
    }
    PickleWriter& integer(int64_t v) {
        if (v >= 0 && v < 256) return byte('K').byte(int(v));
        const int32_t w = int32_t(v);
        return raw("J").raw(std::string_view(reinterpret_cast<const char*>(&w), 4));
    }
    PickleWriter& ints(const std::vector<int64_t>& v) {
        raw("(");
        for (int64_t x : v) integer(x);
        return raw("t").put();
    }
    PickleWriter& orderedDict() { return global("collections", "OrderedDict").raw(")R").put(); }
    PickleWriter& tensor(std::string_view storageType, std::string_view key, int64_t numel,
                         int64_t offset, const std::vector<int64_t>& size,
                         const std::vector<int64_t>& stride) {
        global("torch._utils", "_rebuild_tensor_v2").raw("(");
        raw("(").str("storage").global("torch", storageType).str(key).str("cpu").integer(numel);
        raw("t").put().raw("Q");
        integer(offset).ints(size).ints(stride).byte(0x89).orderedDict();
        return raw("t").put().raw("R").put();
    }
    Bytes bytes() const { return bytesOf(m_out); }

private:
    std::string m_out;
    int m_memo = 0;
};

struct Entry {
    std::string name;
    Bytes data;
};

// A zip of `entries`, stored (as torch.save writes), made with libzip.
void writeZip(const std::filesystem::path& file, const std::vector<Entry>& entries) {
    int error = 0;
    zip_t* z = zip_open(file.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
    ASSERT_NE(z, nullptr);
    for (const auto& e : entries) {
        zip_source_t* src = zip_source_buffer(z, e.data.data(), e.data.size(), 0);
        ASSERT_NE(src, nullptr);
        const zip_int64_t index = zip_file_add(z, e.name.c_str(), src, ZIP_FL_OVERWRITE);
        ASSERT_GE(index, 0);
        ASSERT_EQ(zip_set_file_compression(z, zip_uint64_t(index), ZIP_CM_STORE, 0), 0);
    }
    ASSERT_EQ(zip_close(z), 0);
}

template <typename T>
Bytes rawOf(const std::vector<T>& v) {
    Bytes b(v.size() * sizeof(T));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

// The state dict the tests start from: wte (F32, 4x3), lm_head tied to it, ln weight and bias
// sharing one F16 storage at offsets 0 and 3, a BF16 bias, a 0-dim F32 scalar and a uint8 mask.
struct Fixture {
    std::vector<float> wte = {0.5f, -1.25f, 2.f,  3.5f, -0.125f, 1.f,
                              7.f,  0.25f,  -4.f, 9.f,  1.5f,    0.f};
    std::vector<float> ln = {1.f, 0.5f, -2.f, 0.25f, -0.75f, 3.f};  // weight 0..2, bias 3..5
    std::vector<float> bias = {1.5f, -2.5f, 0.375f};
    float scalar = -10000.f;

    PickleWriter pickle() const {
        PickleWriter p;
        p.orderedDict().raw("(");
        p.str("wte.weight").tensor("FloatStorage", "0", 12, 0, {4, 3}, {3, 1});
        p.str("lm_head.weight").tensor("FloatStorage", "0", 12, 0, {4, 3}, {3, 1});
        p.str("ln.weight").tensor("HalfStorage", "1", 6, 0, {3}, {1});
        p.str("ln.bias").tensor("HalfStorage", "1", 6, 3, {3}, {1});
        p.str("bias").tensor("BFloat16Storage", "2", 3, 0, {1, 3}, {7, 1});  // size-1 dim: any
        p.str("masked_bias").tensor("FloatStorage", "3", 1, 0, {}, {});
        p.str("mask").tensor("ByteStorage", "4", 4, 0, {2, 2}, {2, 1});
        p.raw("u");
        // state_dict()'s _metadata, set through BUILD.
        p.raw("}").put().str("_metadata").orderedDict().raw("(").str("").raw("}").put();
        p.str("version").integer(1).raw("s").raw("u").raw("s").raw("b");
        return p;
    }
    std::vector<Entry> storages() const {
        std::vector<uint16_t> half, bf;
        for (float v : ln) half.push_back(fileio::floatToHalf(v));
        for (float v : bias) bf.push_back(fileio::floatToBf16(v));
        return {{"archive/data/0", rawOf(wte)},
                {"archive/data/1", rawOf(half)},
                {"archive/data/2", rawOf(bf)},
                {"archive/data/3", rawOf(std::vector<float>{scalar})},
                {"archive/data/4", Bytes{std::byte{1}, std::byte{0}, std::byte{1}, std::byte{1}}}};
    }
    std::vector<Entry> archive(const Bytes& pickleBytes) const {
        std::vector<Entry> e = {{"archive/data.pkl", pickleBytes},
                                {"archive/byteorder", bytesOf("little")}};
        for (auto& s : storages()) e.push_back(s);
        e.push_back({"archive/version", bytesOf("3\n")});
        return e;
    }
    std::vector<Entry> archive() const {
        PickleWriter p = pickle();
        p.raw(".");
        return archive(p.bytes());
    }
};

std::string readWhole(const std::filesystem::path& file) {
    std::string whole(std::filesystem::file_size(file), '\0');
    std::ifstream(file, std::ios::binary).read(whole.data(), std::streamsize(whole.size()));
    return whole;
}

std::string openError(const std::filesystem::path& file) {
    auto opened = TorchCheckpoint::open(file);
    return opened.ok() ? std::string("opened") : opened.error().message;
}

std::string parseError(const Bytes& pickle) {
    auto parsed = parseTorchPickle(pickle, "test.pkl");
    return parsed.ok() ? std::string("parsed") : parsed.error().message;
}

TEST(TorchCheckpoint, ReadsAStateDictBitExact) {
    testing::TempDir dir("torch");
    const Fixture f;
    writeZip(dir / "pytorch_model.bin", f.archive());
    ASSERT_TRUE(looksLikeTorchCheckpoint(dir / "pytorch_model.bin"));
    auto ckpt = TorchCheckpoint::open(dir / "pytorch_model.bin");
    ASSERT_TRUE(ckpt.ok()) << ckpt.error().message;
    EXPECT_EQ(ckpt->names(),
              (std::vector<std::string>{"bias", "lm_head.weight", "ln.bias", "ln.weight", "mask",
                                        "masked_bias", "wte.weight"}));
    EXPECT_EQ(ckpt->find("wte.weight")->shape, (std::vector<int64_t>{4, 3}));
    EXPECT_EQ(ckpt->find("bias")->dtype, fileio::DType::BF16);
    EXPECT_EQ(ckpt->find("masked_bias")->shape, std::vector<int64_t>{});
    EXPECT_EQ(*ckpt->readAsFloat("wte.weight"), f.wte);
    EXPECT_EQ(*ckpt->readAsFloat("lm_head.weight"), f.wte);
    EXPECT_EQ(*ckpt->readAsFloat("ln.weight"), std::vector<float>(f.ln.begin(), f.ln.begin() + 3));
    EXPECT_EQ(*ckpt->readAsFloat("ln.bias"), std::vector<float>(f.ln.begin() + 3, f.ln.end()));
    EXPECT_EQ(*ckpt->readAsFloat("bias"), f.bias);
    EXPECT_EQ(*ckpt->readAsFloat("masked_bias"), std::vector<float>{f.scalar});
    auto mask = ckpt->readAsFloat("mask");
    ASSERT_FALSE(mask.ok());
    EXPECT_NE(mask.error().message.find("tensor mask is stored as ByteStorage (U8)"),
              std::string::npos)
        << mask.error().message;
}

TEST(TorchCheckpoint, RefusesAGlobalThatWouldRunCode) {
    PickleWriter p;
    p.global("os", "system").str("touch /tmp/pwned").raw("\x85").put().raw("R.");
    const std::string e = parseError(p.bytes());
    EXPECT_NE(e.find("byte 2 (opcode GLOBAL): global os.system is not part of a PyTorch state "
                     "dict"),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("nothing in it was run"), std::string::npos) << e;
    EXPECT_NE(e.find("convert it to safetensors"), std::string::npos) << e;

    // The same through STACK_GLOBAL (protocol 4) and inside an otherwise valid state dict.
    const Bytes stack = bytesOf(
        "\x80\x04\x8c\x08"
        "builtins\x94\x8c\x04"
        "exec\x94\x93\x94\x8c\x01x\x85R.");
    EXPECT_NE(parseError(stack).find("(opcode STACK_GLOBAL): global builtins.exec"),
              std::string::npos)
        << parseError(stack);
    PickleWriter inside = Fixture().pickle();
    inside.global("subprocess", "call");
    EXPECT_NE(parseError(inside.bytes()).find("global subprocess.call"), std::string::npos);
    // A storage type is named, never called.
    PickleWriter call;
    call.global("torch", "FloatStorage").raw(")R.");
    EXPECT_NE(parseError(call.bytes()).find("torch.FloatStorage is called"), std::string::npos)
        << parseError(call.bytes());
}

TEST(TorchCheckpoint, RefusesOpcodesOutsideTheStateDictSubset) {
    using namespace std::string_literals;  // the pickles hold NUL bytes
    const std::map<std::string, std::string> cases = {
        {"\x80\x02\xff."s, "byte 2 (opcode 0xff): not a pickle opcode"},
        {"\x80\x02(ios\nsystem\n."s, "(opcode INST): it creates an arbitrary object"},
        {"\x80\x02)\x81."s, "(opcode NEWOBJ): it creates an arbitrary object"},
        {"\x80\x02I1\n."s, "(opcode INT): a state dict written by torch.save does not use it"},
        {"\x80\x02h\x05."s, "(opcode BINGET): memo entry 5 was never stored"},
        {"\x80\x02}N"s, "ends at byte 4 without STOP; the file is truncated"},
        {"\x80\x02X\xff\x00\x00\x00"
         "ab"s,
         "(opcode BINUNICODE): its argument runs past"},
        {"\x80\x02R."s, "(opcode REDUCE): the stack is empty"},
        {"\x80\x02]}b."s, "(opcode BUILD): BUILD sets the state of a list"},
        {"\x80\x01."s, "(opcode PROTO): pickle protocol 1"},
        {"\x80\x02]."s, "the pickle holds a list, not a state dict"},
        {"\x80\x02(."s, "STOP leaves 0 values and 1 marks"},
    };
    for (const auto& [pickle, want] : cases) {
        const std::string e = parseError(bytesOf(pickle));
        EXPECT_NE(e.find(want), std::string::npos) << "want: " << want << "\ngot:  " << e;
    }
}

TEST(TorchCheckpoint, RefusesTensorsItsStoragesCannotHold) {
    const auto oneTensor = [](std::string_view type, int64_t numel, int64_t offset,
                              std::vector<int64_t> size, std::vector<int64_t> stride) {
        PickleWriter p;
        p.orderedDict().raw("(").str("h.0.w").tensor(type, "0", numel, offset, size, stride);
        p.raw("u.");
        return parseError(p.bytes());
    };
    // A storage shorter than its tensor.
    EXPECT_NE(oneTensor("FloatStorage", 5, 0, {2, 3}, {3, 1})
                  .find("tensor h.0.w needs elements [0, 6) of storage 0 but the storage "
                        "declares only 5 (FloatStorage)"),
              std::string::npos);
    EXPECT_NE(oneTensor("FloatStorage", 6, 1, {2, 3}, {3, 1}).find("needs elements [1, 7)"),
              std::string::npos);
    EXPECT_NE(oneTensor("FloatStorage", 6, 0, {2, 3}, {1, 2})
                  .find("tensor h.0.w is not contiguous (size [2, 3], stride [1, 2])"),
              std::string::npos);
    EXPECT_NE(oneTensor("ComplexFloatStorage", 6, 0, {6}, {1}).find("global torch.Complex"),
              std::string::npos);
    EXPECT_NE(oneTensor("FloatStorage", 6, 0, {-1}, {1}).find("a tensor of size [-1]"),
              std::string::npos);
    const std::vector<int64_t> ones(17, 1);
    EXPECT_NE(oneTensor("FloatStorage", 1, 0, ones, ones).find("of at most 16 dimensions"),
              std::string::npos);

    // One storage declared with two types.
    PickleWriter p;
    p.orderedDict().raw("(");
    p.str("a").tensor("FloatStorage", "0", 4, 0, {4}, {1});
    p.str("b").tensor("HalfStorage", "0", 4, 0, {4}, {1});
    p.raw("u.");
    EXPECT_NE(parseError(p.bytes()).find("storage 0 is declared as FloatStorage of 4 elements "
                                         "and again as HalfStorage of 4 elements"),
              std::string::npos)
        << parseError(p.bytes());
}

TEST(TorchCheckpoint, RefusesOverlappingStoragesButNotTiedWeights) {
    PickleWriter p;
    p.orderedDict().raw("(");
    p.str("a").tensor("FloatStorage", "0", 8, 0, {4}, {1});
    p.str("tied").tensor("FloatStorage", "0", 8, 0, {4}, {1});
    p.str("b").tensor("FloatStorage", "0", 8, 2, {4}, {1});
    p.raw("u.");
    auto dict = parseTorchPickle(p.bytes(), "test.pkl");
    ASSERT_TRUE(dict.ok()) << dict.error().message;
    const Status st = checkTorchStorages(*dict, {{"0", 32}}, "model.bin");
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("overlap in storage 0"), std::string::npos)
        << st.error().message;
    EXPECT_NE(st.error().message.find("(elements [2, 6))"), std::string::npos);

    PickleWriter tiedOnly;
    tiedOnly.orderedDict().raw("(");
    tiedOnly.str("a").tensor("FloatStorage", "0", 8, 0, {4}, {1});
    tiedOnly.str("tied").tensor("FloatStorage", "0", 8, 0, {4}, {1});
    tiedOnly.str("next").tensor("FloatStorage", "0", 8, 4, {4}, {1});
    tiedOnly.raw("u.");
    auto ok = parseTorchPickle(tiedOnly.bytes(), "test.pkl");
    ASSERT_TRUE(ok.ok());
    EXPECT_TRUE(checkTorchStorages(*ok, {{"0", 32}}, "model.bin").ok());
    // The storage file must hold exactly the declared bytes, and exist.
    EXPECT_NE(checkTorchStorages(*ok, {{"0", 28}}, "model.bin")
                  .error()
                  .message.find("storage 0 holds 28 bytes but the pickle declares 8 elements of "
                                "FloatStorage (32 bytes)"),
              std::string::npos);
    EXPECT_NE(checkTorchStorages(*ok, {}, "model.bin")
                  .error()
                  .message.find("storage 0 (FloatStorage) is missing from the archive"),
              std::string::npos);
}

TEST(TorchCheckpoint, RefusesDamagedArchives) {
    testing::TempDir dir("torch");
    const Fixture f;
    const auto path = dir / "pytorch_model.bin";

    // Truncated: the central directory at the end is gone.
    writeZip(path, f.archive());
    {
        const std::string whole = readWhole(path);
        std::ofstream(path, std::ios::binary | std::ios::trunc)
            .write(whole.data(), std::streamsize(whole.size() * 6 / 10));
    }
    EXPECT_NE(openError(path).find("not a readable zip archive"), std::string::npos)
        << openError(path);

    // A storage file left out.
    auto entries = f.archive();
    entries.erase(entries.begin() + 3);  // archive/data/1
    writeZip(path, entries);
    EXPECT_NE(openError(path).find("storage 1 (HalfStorage) is missing from the archive"),
              std::string::npos)
        << openError(path);

    // Big-endian byte order, and two pickles.
    entries = f.archive();
    entries[1].data = bytesOf("big");
    writeZip(path, entries);
    EXPECT_NE(openError(path).find("byte order \"big\""), std::string::npos) << openError(path);
    entries = f.archive();
    entries.push_back({"other/data.pkl", entries[0].data});
    writeZip(path, entries);
    EXPECT_NE(openError(path).find("holds 2 data.pkl files"), std::string::npos);

    // A flipped storage byte fails the CRC when the tensor is read.
    writeZip(path, f.archive());
    {
        const std::string whole = readWhole(path);
        std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
        const size_t at = whole.find(std::string(reinterpret_cast<const char*>(f.wte.data()), 8));
        ASSERT_NE(at, std::string::npos);
        io.seekp(std::streamoff(at));
        io.put(char(whole[at] ^ 0x40));
    }
    auto opened = TorchCheckpoint::open(path);
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    auto values = opened->readAsFloat("wte.weight");
    ASSERT_FALSE(values.ok());
    EXPECT_NE(values.error().message.find("storage data/0 fails its check"), std::string::npos)
        << values.error().message;

    // The legacy format, a Git LFS pointer, and something else entirely.
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        << std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.", 15);
    EXPECT_NE(openError(path).find("legacy checkpoint format"), std::string::npos);
    std::ofstream(path, std::ios::trunc) << "version https://git-lfs.github.com/spec/v1\n";
    EXPECT_NE(openError(path).find("Git LFS pointer"), std::string::npos) << openError(path);
    std::ofstream(path, std::ios::trunc) << "hello";
    EXPECT_NE(openError(path).find("not a PyTorch checkpoint"), std::string::npos);
}

}  // namespace
}  // namespace ws::modelio
