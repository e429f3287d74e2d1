// SPDX-License-Identifier: GPL-3.0-or-later
// A Hugging Face folder's weights through one reader (modelio/hf_weights.h): sharded safetensors
// (model.safetensors.index.json + model-0000N-of-0000M.safetensors) and sharded pytorch_model.bin
// (pytorch_model.bin.index.json) read back bit for bit in F32, F16 and BF16; the folder search
// order; every broken index or shard refused naming the index, the shard and the tensor. The
// shards are written by the engine's safetensors writer and, for torch, by a zip made with libzip
// around a pickle written opcode by opcode here (no engine code writes them).
#include <gtest/gtest.h>
#include <zip.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/fileio/dtype.h"
#include "engine/fileio/safetensors.h"
#include "engine/model/parameters.h"
#include "engine/modelio/hf_weights.h"
#include "engine/modelio/weights_io.h"
#include "support/temp_dir.h"

namespace ws::modelio {
namespace {

namespace fs = std::filesystem;
using fileio::DType;

// A tensor as a test stores it: its values (exactly representable in `dtype`) and their bits.
struct StoredTensor {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    std::vector<float> values;
    std::vector<std::byte> bytes;
};

StoredTensor makeTensor(std::string name, DType dtype, std::vector<int64_t> shape, float seed) {
    StoredTensor t{std::move(name), dtype, std::move(shape), {}, {}};
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    for (int64_t i = 0; i < n; ++i) {
        // Values with bits below bf16's precision, so a lossy decode would show.
        const float v = seed * (1.0f + float(i) * 0.0078125f) - 0.3f * float(i % 5) + 1e-3f;
        if (dtype == DType::F32) {
            t.values.push_back(v);
            const auto* p = reinterpret_cast<const std::byte*>(&v);
            t.bytes.insert(t.bytes.end(), p, p + 4);
        } else {
            const uint16_t bits =
                dtype == DType::F16 ? fileio::floatToHalf(v) : fileio::floatToBf16(v);
            t.values.push_back(dtype == DType::F16 ? fileio::halfToFloat(bits)
                                                   : fileio::bf16ToFloat(bits));
            const auto* p = reinterpret_cast<const std::byte*>(&bits);
            t.bytes.insert(t.bytes.end(), p, p + 2);
        }
    }
    return t;
}

std::vector<StoredTensor> fixtureTensors() {
    return {makeTensor("model.embed_tokens.weight", DType::BF16, {8, 4}, 0.75f),
            makeTensor("model.layers.0.mlp.up_proj.weight", DType::F16, {6, 4}, -1.5f),
            makeTensor("model.layers.0.input_layernorm.weight", DType::F32, {4}, 2.25f),
            makeTensor("model.layers.1.self_attn.q_proj.weight", DType::BF16, {4, 4}, 0.125f),
            makeTensor("model.norm.weight", DType::F32, {4}, -0.5f)};
}

void writeShard(const fs::path& file, const std::vector<const StoredTensor*>& tensors) {
    std::vector<fileio::TensorView> views;
    for (const auto* t : tensors)
        views.push_back({t->name, t->dtype, t->shape, t->bytes.data(), t->bytes.size()});
    ASSERT_TRUE(fileio::writeSafetensors(file, views, {{"format", "pt"}}).ok());
}

std::string shardName(size_t i, size_t n, std::string_view ext) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.%s", i + 1, n, std::string(ext).c_str());
    return buf;
}

// Tensor i goes to shard i % shards; the index names them as transformers writes it.
void writeShardedSafetensors(const fs::path& dir, const std::vector<StoredTensor>& tensors,
                             size_t shards) {
    fs::create_directories(dir);
    nlohmann::json map = nlohmann::json::object();
    uint64_t total = 0;
    for (size_t s = 0; s < shards; ++s) {
        std::vector<const StoredTensor*> in;
        for (size_t i = s; i < tensors.size(); i += shards) {
            in.push_back(&tensors[i]);
            map[tensors[i].name] = shardName(s, shards, "safetensors");
            total += tensors[i].bytes.size();
        }
        writeShard(dir / shardName(s, shards, "safetensors"), in);
    }
    std::ofstream(dir / "model.safetensors.index.json")
        << nlohmann::json{{"metadata", {{"total_size", total}}}, {"weight_map", map}}.dump(2);
}

void expectSameTensors(const HfWeights& w, const std::vector<StoredTensor>& tensors) {
    ASSERT_EQ(w.names().size(), tensors.size());
    for (const auto& t : tensors) {
        const HfTensorInfo* info = w.find(t.name);
        ASSERT_NE(info, nullptr) << t.name;
        EXPECT_EQ(info->dtype, t.dtype) << t.name;
        EXPECT_EQ(info->shape, t.shape) << t.name;
        auto values = w.readAsFloat(t.name);
        ASSERT_TRUE(values.ok()) << values.error().message;
        ASSERT_EQ(values->size(), t.values.size());
        // Bit for bit, not within a tolerance.
        EXPECT_EQ(std::memcmp(values->data(), t.values.data(), t.values.size() * sizeof(float)), 0)
            << t.name;
    }
}

std::string openError(const fs::path& path) {
    auto opened = HfWeights::open(path);
    return opened.ok() ? std::string("opened") : opened.error().message;
}

void rewriteIndex(const fs::path& dir, const std::function<void(nlohmann::json&)>& edit) {
    const fs::path index = dir / "model.safetensors.index.json";
    nlohmann::json json = nlohmann::json::parse(std::ifstream(index));
    edit(json);
    std::ofstream(index) << json.dump();
}

TEST(HfWeights, ReadsShardedSafetensorsBitExact) {
    testing::TempDir tmp("hf-weights");
    const auto tensors = fixtureTensors();
    writeShardedSafetensors(tmp / "m", tensors, 3);
    auto w = HfWeights::open(tmp / "m");  // the folder: the index is found
    ASSERT_TRUE(w.ok()) << w.error().message;
    EXPECT_TRUE(w->sharded());
    EXPECT_EQ(w->path(), tmp / "m" / "model.safetensors.index.json");
    EXPECT_EQ(w->files().size(), 3u);
    EXPECT_EQ(w->find("model.layers.0.mlp.up_proj.weight")->file.filename(),
              "model-00002-of-00003.safetensors");
    expectSameTensors(*w, tensors);
    EXPECT_EQ(w->find("no.such.tensor"), nullptr);
    EXPECT_FALSE(w->readAsFloat("no.such.tensor").ok());
}

TEST(HfWeights, FolderSearchOrderAndSingleFile) {
    testing::TempDir tmp("hf-weights");
    const auto tensors = fixtureTensors();
    writeShardedSafetensors(tmp / "m", tensors, 2);
    // model.safetensors beside an index wins, as transformers prefers the single file.
    const StoredTensor one = makeTensor("only", DType::F16, {3}, 4.0f);
    writeShard(tmp / "m" / "model.safetensors", {&one});
    auto w = HfWeights::open(tmp / "m");
    ASSERT_TRUE(w.ok()) << w.error().message;
    EXPECT_FALSE(w->sharded());
    EXPECT_EQ(w->metadata().at("format"), "pt");
    expectSameTensors(*w, {one});
    // The index given directly is read whatever else the folder holds.
    auto viaIndex = HfWeights::open(tmp / "m" / "model.safetensors.index.json");
    ASSERT_TRUE(viaIndex.ok()) << viaIndex.error().message;
    expectSameTensors(*viaIndex, tensors);

    fs::create_directories(tmp / "empty");
    const std::string none = openError(tmp / "empty");
    EXPECT_NE(none.find("no weights file"), std::string::npos) << none;
    EXPECT_NE(none.find("model.safetensors.index.json"), std::string::npos) << none;
    EXPECT_NE(none.find("pytorch_model.bin"), std::string::npos) << none;
}

TEST(HfWeights, RefusesBrokenIndexesNamingIndexShardAndTensor) {
    testing::TempDir tmp("hf-weights");
    const auto tensors = fixtureTensors();
    const fs::path index = tmp / "m" / "model.safetensors.index.json";
    const auto fresh = [&] {
        fs::remove_all(tmp / "m");
        writeShardedSafetensors(tmp / "m", tensors, 3);
    };

    fresh();
    fs::remove(tmp / "m" / "model-00002-of-00003.safetensors");
    std::string e = openError(tmp / "m");
    EXPECT_NE(e.find(index.string()), std::string::npos) << e;
    EXPECT_NE(e.find("shard model-00002-of-00003.safetensors is missing"), std::string::npos) << e;

    fresh();  // the index names a tensor its shard does not hold
    rewriteIndex(tmp / "m", [](nlohmann::json& j) {
        j["weight_map"]["lm_head.weight"] = "model-00001-of-00003.safetensors";
    });
    e = openError(tmp / "m");
    EXPECT_NE(e.find("tensor lm_head.weight in shard model-00001-of-00003.safetensors, which "
                     "does not hold it"),
              std::string::npos)
        << e;

    fresh();  // a shard holds a tensor the index does not name
    rewriteIndex(tmp / "m", [](nlohmann::json& j) { j["weight_map"].erase("model.norm.weight"); });
    e = openError(tmp / "m");
    EXPECT_NE(e.find("holds tensor model.norm.weight, which the index's weight_map does not "
                     "name"),
              std::string::npos)
        << e;

    fresh();  // the index puts a tensor in another shard than the one holding it
    rewriteIndex(tmp / "m", [](nlohmann::json& j) {
        j["weight_map"]["model.norm.weight"] = "model-00003-of-00003.safetensors";
    });
    e = openError(tmp / "m");
    EXPECT_NE(e.find("tensor model.norm.weight is in shard model-00002-of-00003.safetensors, but "
                     "the index's weight_map puts it in model-00003-of-00003.safetensors"),
              std::string::npos)
        << e;

    fresh();  // a tensor stored in two shards
    {
        const StoredTensor dup = tensors[0];
        writeShard(tmp / "m" / "model-00003-of-00003.safetensors", {&tensors[2], &dup});
    }
    e = openError(tmp / "m");
    EXPECT_NE(e.find("tensor model.embed_tokens.weight is in shard"), std::string::npos) << e;

    fresh();  // a shard outside the folder
    rewriteIndex(tmp / "m", [](nlohmann::json& j) {
        j["weight_map"]["model.norm.weight"] = "../model-00002-of-00003.safetensors";
    });
    e = openError(tmp / "m");
    EXPECT_NE(e.find("a shard must be a file name in the index's own folder"), std::string::npos)
        << e;

    fresh();
    rewriteIndex(tmp / "m", [](nlohmann::json& j) { j.erase("weight_map"); });
    e = openError(tmp / "m");
    EXPECT_NE(e.find("no \"weight_map\""), std::string::npos) << e;

    fresh();
    std::ofstream(index) << "{\"weight_map\": ";
    e = openError(tmp / "m");
    EXPECT_NE(e.find("not a JSON object"), std::string::npos) << e;

    fresh();  // a damaged shard: its reader's error, naming the shard
    std::ofstream(tmp / "m" / "model-00001-of-00003.safetensors") << "garbage";
    e = openError(tmp / "m");
    EXPECT_NE(e.find("model-00001-of-00003.safetensors"), std::string::npos) << e;
}

TEST(HfWeights, RefusesADtypeItCannotDecodeNamingFileAndTensor) {
    testing::TempDir tmp("hf-weights");
    auto tensors = fixtureTensors();
    StoredTensor ints{"model.layers.0.quantized", DType::I32, {2}, {}, {}};
    ints.bytes.resize(8);
    tensors.push_back(ints);
    writeShardedSafetensors(tmp / "m", tensors, 2);
    auto w = HfWeights::open(tmp / "m");
    ASSERT_TRUE(w.ok()) << w.error().message;
    auto values = w->readAsFloat("model.layers.0.quantized");
    ASSERT_FALSE(values.ok());
    EXPECT_NE(values.error().message.find("model-00002-of-00002.safetensors"), std::string::npos)
        << values.error().message;
    EXPECT_NE(values.error().message.find("model.layers.0.quantized"), std::string::npos)
        << values.error().message;
    EXPECT_NE(values.error().message.find("I32"), std::string::npos) << values.error().message;
}

// --- pytorch_model.bin shards: torch.save's zip, pickle protocol 2, one storage per tensor.

void pickleString(std::string& out, std::string_view s) {
    const uint32_t n = uint32_t(s.size());
    out += 'X';
    out.append(reinterpret_cast<const char*>(&n), 4);
    out += s;
}

void pickleInt(std::string& out, int64_t v) {
    if (v >= 0 && v < 256) {
        out += 'K';
        out += char(v);
    } else {
        const int32_t w = int32_t(v);
        out += 'J';
        out.append(reinterpret_cast<const char*>(&w), 4);
    }
}

void pickleInts(std::string& out, const std::vector<int64_t>& v) {
    out += '(';
    for (int64_t x : v) pickleInt(out, x);
    out += 't';
}

std::string storageType(DType dtype) {
    return dtype == DType::F32   ? "FloatStorage"
           : dtype == DType::F16 ? "HalfStorage"
                                 : "BFloat16Storage";
}

// OrderedDict{name: _rebuild_tensor_v2(storage, 0, size, stride, False, OrderedDict())}.
std::string statePickle(const std::vector<const StoredTensor*>& tensors) {
    std::string p = "\x80\x02";
    p += "ccollections\nOrderedDict\n)R(";
    for (size_t i = 0; i < tensors.size(); ++i) {
        const StoredTensor& t = *tensors[i];
        pickleString(p, t.name);
        p += "ctorch._utils\n_rebuild_tensor_v2\n(";
        p += '(';
        pickleString(p, "storage");
        p += "ctorch\n" + storageType(t.dtype) + "\n";
        pickleString(p, std::to_string(i));
        pickleString(p, "cpu");
        pickleInt(p, int64_t(t.values.size()));
        p += "tQ";
        pickleInt(p, 0);
        pickleInts(p, t.shape);
        std::vector<int64_t> stride(t.shape.size(), 1);
        for (size_t d = t.shape.size(); d-- > 1;) stride[d - 1] = stride[d] * t.shape[d];
        pickleInts(p, stride);
        p += '\x89';
        p += "ccollections\nOrderedDict\n)R";
        p += "tR";
    }
    p += "u.";
    return p;
}

void writeTorchShard(const fs::path& file, const std::vector<const StoredTensor*>& tensors) {
    const std::string pickle = statePickle(tensors);
    std::vector<std::pair<std::string, std::string>> entries = {{"archive/data.pkl", pickle},
                                                                {"archive/byteorder", "little"}};
    for (size_t i = 0; i < tensors.size(); ++i) {
        entries.push_back({"archive/data/" + std::to_string(i),
                           std::string(reinterpret_cast<const char*>(tensors[i]->bytes.data()),
                                       tensors[i]->bytes.size())});
    }
    entries.push_back({"archive/version", "3\n"});
    int error = 0;
    zip_t* z = zip_open(file.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
    ASSERT_NE(z, nullptr);
    for (const auto& [name, data] : entries) {
        zip_source_t* src = zip_source_buffer(z, data.data(), data.size(), 0);
        ASSERT_NE(src, nullptr);
        const zip_int64_t i = zip_file_add(z, name.c_str(), src, ZIP_FL_OVERWRITE);
        ASSERT_GE(i, 0);
        ASSERT_EQ(zip_set_file_compression(z, zip_uint64_t(i), ZIP_CM_STORE, 0), 0);
    }
    ASSERT_EQ(zip_close(z), 0);
}

TEST(HfWeights, ReadsShardedPytorchBinBitExact) {
    testing::TempDir tmp("hf-weights");
    const auto tensors = fixtureTensors();
    fs::create_directories(tmp / "m");
    nlohmann::json map = nlohmann::json::object();
    for (size_t s = 0; s < 2; ++s) {
        std::vector<const StoredTensor*> in;
        const std::string shard = "pytorch_model-0000" + std::to_string(s + 1) + "-of-00002.bin";
        for (size_t i = s; i < tensors.size(); i += 2) {
            in.push_back(&tensors[i]);
            map[tensors[i].name] = shard;
        }
        writeTorchShard(tmp / "m" / shard, in);
    }
    std::ofstream(tmp / "m" / "pytorch_model.bin.index.json")
        << nlohmann::json{{"metadata", {{"total_size", 0}}}, {"weight_map", map}}.dump();
    auto w = HfWeights::open(tmp / "m");
    ASSERT_TRUE(w.ok()) << w.error().message;
    EXPECT_EQ(w->path().filename(), "pytorch_model.bin.index.json");
    EXPECT_EQ(w->files().size(), 2u);
    expectSameTensors(*w, tensors);

    fs::remove(tmp / "m" / "pytorch_model-00001-of-00002.bin");
    const std::string e = openError(tmp / "m");
    EXPECT_NE(e.find("shard pytorch_model-00001-of-00002.bin is missing"), std::string::npos) << e;
}

// loadWeights (what runconfig.checkpoint_path reads) takes a shard index: a fine-tune can start
// from a sharded Hugging Face folder.
TEST(HfWeights, LoadWeightsReadsAShardIndexIntoATable) {
    testing::TempDir tmp("hf-weights");
    model::GptShape s;
    s.vocab = 16;
    s.maxPositions = 8;
    s.channels = 4;
    s.layers = 1;
    s.heads = 2;
    s.ffn = 8;
    const model::ParameterTable table(s);
    std::vector<StoredTensor> tensors;
    const DType cycle[] = {DType::F32, DType::F16, DType::BF16};
    for (size_t i = 0; i < table.tensors().size(); ++i) {
        const auto& t = table.tensors()[i];
        tensors.push_back(
            makeTensor("transformer." + t.name, cycle[i % 3], t.shape, 0.25f + float(i)));
    }
    writeShardedSafetensors(tmp / "m", tensors, 4);
    std::vector<float> params(table.totalSize(), -7.0f);
    const Status st = loadWeights(tmp / "m" / "model.safetensors.index.json", table, params.data());
    ASSERT_TRUE(st.ok()) << st.error().message;
    for (size_t i = 0; i < table.tensors().size(); ++i) {
        const auto& t = table.tensors()[i];
        EXPECT_EQ(
            std::memcmp(params.data() + t.offset, tensors[i].values.data(), t.size * sizeof(float)),
            0)
            << t.name;
    }
}

}  // namespace
}  // namespace ws::modelio
