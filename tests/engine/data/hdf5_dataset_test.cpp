// SPDX-License-Identifier: GPL-3.0-or-later
// Hdf5Files / Hdf5Dataset: ModelZoo's preprocessed HDF5 samples, written by h5py (an independent
// writer: make_hdf5_fixture.py, which writes as ModelZoo's preprocessing does and records every
// sample in expected.json), read by the engine and checked token for token: the committed fixture
// always, freshly written files when python3-h5py is installed. Then the documented order (file
// sort, wrap, seeded shuffle), the split, and every bad input (written here with the HDF5 C API)
// refused with a message naming the file and the fix, with nothing printed by HDF5 itself.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "engine/data/hdf5_dataset.h"
#include "support/temp_dir.h"

namespace ws::data {
namespace {
namespace fs = std::filesystem;

const fs::path kFixture = fs::path(WAFER_DATA_FIXTURES) / "hdf5";

nlohmann::json readJson(const fs::path& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
}

std::unique_ptr<Hdf5Dataset> openOrFail(const fs::path& dir, Hdf5DatasetOptions options) {
    auto ds = Hdf5Dataset::open({dir.string()}, options);
    EXPECT_TRUE(ds.ok()) << ds.error().message;
    return ds.ok() ? std::move(ds).value() : nullptr;
}

std::string openError(const std::vector<std::string>& dirs, Hdf5DatasetOptions options = {}) {
    if (options.vocabSize == 0) options.vocabSize = 64;
    auto ds = Hdf5Dataset::open(dirs, options);
    EXPECT_FALSE(ds.ok());
    return ds.ok() ? std::string() : ds.error().message;
}

struct Row {
    std::vector<int32_t> inputs, targets, positions;
};

Row trainRow(const Hdf5Dataset& ds, int64_t step, int B, int row, bool shuffle, uint64_t seed) {
    const size_t T = size_t(ds.sequenceLength());
    std::vector<int32_t> in(size_t(B) * T), tg(size_t(B) * T), pos(size_t(B) * T, -7);
    const auto trained = ds.trainBatch(step, B, shuffle, seed, {in.data(), tg.data(), pos.data()});
    EXPECT_TRUE(trained.ok()) << trained.error().message;
    if (trained.ok()) {
        EXPECT_EQ(*trained, std::count_if(tg.begin(), tg.end(), [](int32_t t) { return t >= 0; }));
    }
    auto slice = [&](const std::vector<int32_t>& v) {
        return std::vector<int32_t>(v.begin() + long(size_t(row) * T),
                                    v.begin() + long(size_t(row + 1) * T));
    };
    return {slice(in), slice(tg), slice(pos)};
}

// Checks every sample of `set` (expected.json's "plain" or "vsl") against batches of one row
// read in order: inputs = input_ids, targets = labels where the mask is 1 and -1 elsewhere.
void expectTokenForToken(const fs::path& root, const std::string& set, bool useVsl,
                         bool someMasked = true) {
    const nlohmann::json expected = readJson(root / "expected.json");
    Hdf5DatasetOptions options;
    options.vocabSize = expected["vocab_size"];
    options.useVsl = useVsl;
    auto ds = openOrFail(root / set, options);
    ASSERT_TRUE(ds);
    const nlohmann::json& want = expected[set];
    ASSERT_EQ(ds->files().files().size(), want["files"].size());
    for (size_t i = 0; i < want["files"].size(); ++i)
        EXPECT_EQ(ds->files().files()[i].path.filename(), want["files"][i].get<std::string>());
    EXPECT_EQ(ds->sequenceLength(), expected["max_sequence_length"].get<int>());
    ASSERT_EQ(ds->trainSamples(), int64_t(want["samples"].size()));
    int64_t masked = 0;
    for (size_t k = 0; k < want["samples"].size(); ++k) {
        SCOPED_TRACE("sample " + std::to_string(k));
        const nlohmann::json& s = want["samples"][k];
        const auto [file, row] = ds->files().locate(int64_t(k));
        EXPECT_EQ(ds->files().files()[file].path.filename(), s["file"].get<std::string>());
        EXPECT_EQ(row, s["row"].get<int64_t>());
        const Row got = trainRow(*ds, int64_t(k), 1, 0, false, 0);
        EXPECT_EQ(got.inputs, s["input_ids"].get<std::vector<int32_t>>());
        const auto mask = s["loss_mask"].get<std::vector<int>>();
        const auto labels = s["labels"].get<std::vector<int32_t>>();
        std::vector<int32_t> targets(labels.size());
        for (size_t t = 0; t < labels.size(); ++t) {
            targets[t] = mask[t] ? labels[t] : -1;
            masked += mask[t] == 0;
        }
        EXPECT_EQ(got.targets, targets);
        if (useVsl) {
            EXPECT_EQ(got.positions, s["position_ids"].get<std::vector<int32_t>>());
        } else {
            EXPECT_EQ(got.positions, std::vector<int32_t>(labels.size(), -7)) << "left alone";
        }
    }
    if (someMasked) {
        EXPECT_GT(masked, 0) << "the fixture must exercise the mask";
    } else {
        EXPECT_EQ(masked, 0) << "full/ trains on every position";
    }
}

TEST(Hdf5Dataset, CommittedH5pyFilesReadTokenForToken) {
    expectTokenForToken(kFixture, "plain", false);
    expectTokenForToken(kFixture, "full", false, false);
}

TEST(Hdf5Dataset, CommittedVslFilesGivePositionIds) {
    expectTokenForToken(kFixture, "vsl", true);
    expectTokenForToken(kFixture, "vsl", false);  // ModelZoo reads the first three rows
    expectTokenForToken(kFixture, "vslfull", true, false);
}

bool h5pyPresent() {
    return std::system(WAFER_PYTHON3 " -c 'import h5py' >/dev/null 2>&1") == 0;
}

TEST(Hdf5Dataset, FreshlyWrittenH5pyFilesReadTokenForToken) {
    if (!h5pyPresent())
        GTEST_SKIP() << WAFER_PYTHON3
            " has no h5py: install python3-h5py (installer/deps.sh) to "
            "write fresh files; the committed ones were checked above";
    ws::testing::TempDir dir("hdf5");
    const std::string command = std::string(WAFER_PYTHON3 " ") + WAFER_HDF5_FIXTURE_SCRIPT + " " +
                                dir.path().string() + " --seed 7";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    EXPECT_NE(readJson(dir / "expected.json")["plain"]["samples"][0],
              readJson(kFixture / "expected.json")["plain"]["samples"][0])
        << "another seed, other samples";
    expectTokenForToken(dir.path(), "plain", false);
    expectTokenForToken(dir.path(), "vsl", true);
}

Hdf5DatasetOptions fixtureOptions() {
    Hdf5DatasetOptions o;
    o.vocabSize = 64;
    return o;
}

TEST(Hdf5Dataset, UnshuffledRowsFollowTheFileOrderAndWrap) {
    auto ds = openOrFail(kFixture / "plain", fixtureOptions());
    ASSERT_TRUE(ds);
    ASSERT_EQ(ds->trainSamples(), 8);
    // Step s row i reads sample (s * B + i) mod 8.
    for (int64_t step = 0; step < 5; ++step)
        for (int i = 0; i < 3; ++i)
            EXPECT_EQ(ds->trainSampleIndex(step, 3, i, false, 0), (step * 3 + i) % 8);
    EXPECT_EQ(trainRow(*ds, 3, 3, 1, false, 0).inputs, trainRow(*ds, 2, 1, 0, false, 0).inputs);
}

TEST(Hdf5Dataset, ShuffleVisitsEverySampleOncePerEpochReproducibly) {
    auto ds = openOrFail(kFixture / "plain", fixtureOptions());
    ASSERT_TRUE(ds);
    const int64_t n = ds->trainSamples();
    std::vector<std::vector<int64_t>> epochs;
    for (int64_t e = 0; e < 3; ++e) {
        std::vector<int64_t> order;
        for (int64_t k = e * n; k < (e + 1) * n; ++k)
            order.push_back(ds->trainSampleIndex(k, 1, 0, true, 42));
        EXPECT_EQ(std::set<int64_t>(order.begin(), order.end()).size(), size_t(n)) << e;
        epochs.push_back(order);
    }
    EXPECT_NE(epochs[0], epochs[1]);
    std::vector<int64_t> identity(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) identity[size_t(k)] = k;
    EXPECT_NE(epochs[0], identity);
    // The same sample for the same k whatever B, and another order for another seed.
    bool seedMatters = false;
    for (int64_t k = 0; k < 2 * n; ++k) {
        EXPECT_EQ(ds->trainSampleIndex(k / 4, 4, int(k % 4), true, 42),
                  epochs[size_t(k / n)][size_t(k % n)]);
        seedMatters |=
            ds->trainSampleIndex(k, 1, 0, true, 43) != epochs[size_t(k / n)][size_t(k % n)];
    }
    EXPECT_TRUE(seedMatters);
    // A fresh dataset, asked from two threads at once in other epoch orders, agrees.
    auto other = openOrFail(kFixture / "plain", fixtureOptions());
    ASSERT_TRUE(other);
    std::vector<int64_t> a(size_t(3 * n)), b(size_t(3 * n));
    std::thread backwards([&] {
        for (int64_t k = 3 * n; k-- > 0;) a[size_t(k)] = other->trainSampleIndex(k, 1, 0, true, 42);
    });
    for (int64_t k = 0; k < 3 * n; ++k) b[size_t(k)] = other->trainSampleIndex(k, 1, 0, true, 42);
    backwards.join();
    EXPECT_EQ(a, b);
    for (int64_t k = 0; k < 3 * n; ++k)
        EXPECT_EQ(a[size_t(k)], epochs[size_t(k / n)][size_t(k % n)]);
    // The batch holds the shuffled sample's tokens.
    EXPECT_EQ(trainRow(*ds, 5, 1, 0, true, 42).inputs,
              trainRow(*ds, epochs[0][5], 1, 0, false, 0).inputs);
}

TEST(Hdf5Dataset, ValidationHoldsOutTheLastSamples) {
    Hdf5DatasetOptions o = fixtureOptions();
    o.validationFraction = 0.25;
    auto ds = openOrFail(kFixture / "plain", o);
    ASSERT_TRUE(ds);
    EXPECT_EQ(ds->trainSamples(), 6);
    EXPECT_EQ(ds->validationSamples(), 2);
    EXPECT_EQ(ds->validationBatches(2), 1);
    EXPECT_EQ(ds->validationBatches(4), 1);
    EXPECT_EQ(ds->validationSampleIndex(0, 4, 1), 7);
    EXPECT_EQ(ds->validationSampleIndex(0, 4, 2), -1) << "a padding row";
    for (int64_t k = 0; k < 20; ++k) EXPECT_LT(ds->trainSampleIndex(k, 1, 0, true, 5), 6);
    // Batch rows equal the samples read by index; the padding rows train nothing.
    auto all = openOrFail(kFixture / "plain", fixtureOptions());
    const int T = ds->sequenceLength();
    std::vector<int32_t> in(size_t(4 * T), 9), tg(size_t(4 * T), 9);
    auto trained = ds->validationBatch(0, 4, {in.data(), tg.data(), nullptr});
    ASSERT_TRUE(trained.ok()) << trained.error().message;
    const Row six = trainRow(*all, 6, 1, 0, false, 0), seven = trainRow(*all, 7, 1, 0, false, 0);
    EXPECT_EQ(std::vector<int32_t>(in.begin() + T, in.begin() + 2 * T), seven.inputs);
    EXPECT_EQ(std::vector<int32_t>(tg.begin() + T, tg.begin() + 2 * T), seven.targets);
    EXPECT_EQ(std::vector<int32_t>(tg.begin() + 2 * T, tg.end()),
              std::vector<int32_t>(size_t(2 * T), -1));
    auto counted = [](const std::vector<int32_t>& t) {
        return std::count_if(t.begin(), t.end(), [](int32_t x) { return x >= 0; });
    };
    EXPECT_EQ(*trained, counted(six.targets) + counted(seven.targets));
    // A separate eval data_dir: every sample evaluates, in ceil(8 / 3) batches.
    o.validationFraction = 1.0;
    auto eval = openOrFail(kFixture / "plain", o);
    EXPECT_EQ(eval->validationSamples(), 8);
    EXPECT_EQ(eval->validationBatches(3), 3);
    EXPECT_EQ(eval->trainSamples(), 0);
    // A small fraction still holds out one sample.
    o.validationFraction = 0.01;
    EXPECT_EQ(openOrFail(kFixture / "plain", o)->validationSamples(), 1);
    // A batch larger than the training samples would repeat one in a step.
    EXPECT_TRUE(ds->checkBatch(6).ok());
    const Status big = ds->checkBatch(7);
    ASSERT_FALSE(big.ok());
    EXPECT_NE(big.error().message.find("6 training sample(s) but train_input.batch_size 7"),
              std::string::npos)
        << big.error().message;
}

TEST(Hdf5Dataset, SequenceLengthMustMatchTheFiles) {
    Hdf5DatasetOptions o = fixtureOptions();
    o.maxSequenceLength = 12;
    EXPECT_TRUE(openOrFail(kFixture / "plain", o));
    o.maxSequenceLength = 16;
    const std::string e = openError({(kFixture / "plain").string()}, o);
    EXPECT_NE(e.find("train_input.max_sequence_length is 16"), std::string::npos) << e;
    EXPECT_NE(e.find("sequences of 12 tokens"), std::string::npos) << e;
    EXPECT_NE(e.find("leave it out"), std::string::npos) << e;
}

TEST(Hdf5Dataset, SeveralFoldersAreSortedTogether) {
    ws::testing::TempDir dir("hdf5");
    fs::create_directories(dir / "b");
    fs::create_directories(dir / "a");
    fs::copy_file(kFixture / "plain" / "examples_0.h5", dir / "b" / "examples_0.h5");
    fs::copy_file(kFixture / "plain" / "examples_2.h5", dir / "a" / "examples_2.h5");
    // All paths sorted together, as ModelZoo's readers sort them: a/examples_2 before b/examples_0.
    auto ds = Hdf5Dataset::open({(dir / "b").string(), (dir / "a").string()}, fixtureOptions());
    ASSERT_TRUE(ds.ok()) << ds.error().message;
    ASSERT_EQ((*ds)->files().files().size(), 2u);
    EXPECT_EQ((*ds)->files().files()[0].path, dir / "a" / "examples_2.h5");
    EXPECT_EQ((*ds)->trainSamples(), 5);
    EXPECT_EQ((*ds)->files().locate(2), std::make_pair(size_t(1), int64_t(0)));
    // A single .h5 file names itself.
    auto one = Hdf5Dataset::open({(dir / "a" / "examples_2.h5").string()}, fixtureOptions());
    ASSERT_TRUE(one.ok()) << one.error().message;
    EXPECT_EQ((*one)->trainSamples(), 2);
}

// Bad files, written with the HDF5 C API.
void writeH5(const fs::path& path, const char* name, hid_t fileType,
             const std::vector<hsize_t>& dims, const std::vector<int64_t>& values,
             std::optional<long long> nExamples) {
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    const hid_t space = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
    const hid_t set =
        H5Dcreate2(file, name, fileType, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(set, 0);
    if (!values.empty()) {
        ASSERT_GE(H5Dwrite(set, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
    }
    if (nExamples) {
        const hid_t scalar = H5Screate(H5S_SCALAR);
        const hid_t attr =
            H5Acreate2(file, "n_examples", H5T_STD_I64LE, scalar, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(attr, H5T_NATIVE_LLONG, &*nExamples);
        H5Aclose(attr);
        H5Sclose(scalar);
    }
    H5Dclose(set);
    H5Sclose(space);
    H5Fclose(file);
}

// One sample (3 or 5 rows of T) as the int64 values of a (1, F, T) dataset.
std::vector<int64_t> sample(std::initializer_list<std::vector<int64_t>> rows) {
    std::vector<int64_t> out;
    for (const auto& r : rows) out.insert(out.end(), r.begin(), r.end());
    return out;
}

class Hdf5BadInput : public ::testing::Test {
protected:
    std::string folderWith(const std::string& file, const char* name, hid_t type,
                           const std::vector<hsize_t>& dims, const std::vector<int64_t>& values,
                           std::optional<long long> nExamples) {
        const fs::path folder = m_dir / file;
        fs::create_directories(folder);
        writeH5(folder / (file + ".h5"), name, type, dims, values, nExamples);
        return folder.string();
    }
    // A batch error from a file that opens: the sample is checked when read.
    std::string batchError(const std::string& folder, bool useVsl = false) {
        Hdf5DatasetOptions o = fixtureOptions();
        o.useVsl = useVsl;
        auto ds = Hdf5Dataset::open({folder}, o);
        EXPECT_TRUE(ds.ok()) << ds.error().message;
        if (!ds.ok()) return {};
        const size_t T = size_t((*ds)->sequenceLength());
        std::vector<int32_t> in(T), tg(T), pos(T);
        const auto s = (*ds)->trainBatch(0, 1, false, 0, {in.data(), tg.data(), pos.data()});
        EXPECT_FALSE(s.ok());
        return s.ok() ? std::string() : s.error().message;
    }
    ws::testing::TempDir m_dir{"hdf5-bad"};
};

#define EXPECT_MENTIONS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

TEST_F(Hdf5BadInput, EachIsAnErrorNamingTheFileAndTheFix) {
    ::testing::internal::CaptureStderr();
    const fs::path notHdf5 = m_dir / "text";
    fs::create_directories(notHdf5);
    std::ofstream(notHdf5 / "notes.h5") << "not an HDF5 file at all\n";
    std::string e = openError({notHdf5.string()});
    EXPECT_MENTIONS(e, "notes.h5' is not an HDF5 file");
    EXPECT_MENTIONS(e, "train_input.data_dir: ");

    e = openError({folderWith("tokens", "tokens", H5T_STD_I32LE, {2, 3, 4}, {}, 2)});
    EXPECT_MENTIONS(e, "tokens.h5' has no \"data\" dataset (it holds 'tokens')");
    EXPECT_MENTIONS(e, "preprocess");

    e = openError({folderWith("floats", "data", H5T_IEEE_F32LE, {2, 3, 4}, {}, 2)});
    EXPECT_MENTIONS(e, "floats.h5': \"data\" holds 4-byte floats");

    e = openError({folderWith("rank2", "data", H5T_STD_I32LE, {2, 12}, {}, 2)});
    EXPECT_MENTIONS(e, "rank2.h5': \"data\" has shape (2, 12)");

    e = openError({folderWith("corpus", "data", H5T_STD_I32LE, {100}, {}, std::nullopt)});
    EXPECT_MENTIONS(e, "has shape (100,), ModelZoo's \"corpus\" format");

    e = openError({folderWith("four", "data", H5T_STD_I32LE, {2, 4, 12}, {}, 2)});
    EXPECT_MENTIONS(e, "four.h5': \"data\" has shape (2, 4, 12)");

    e = openError({folderWith("count", "data", H5T_STD_I32LE, {2, 3, 4}, {}, 5)});
    EXPECT_MENTIONS(e, "count.h5': the attribute n_examples says 5 samples but \"data\" holds 2");

    const fs::path cut = m_dir / "cut";
    fs::create_directories(cut);
    fs::copy_file(kFixture / "plain" / "examples_0.h5", cut / "examples_0.h5");
    fs::resize_file(cut / "examples_0.h5", fs::file_size(cut / "examples_0.h5") / 2);
    e = openError({cut.string()});
    EXPECT_MENTIONS(e, "examples_0.h5");
    EXPECT_MENTIONS(e, "cut short");

    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "") << "HDF5 printed its error stack";
}

TEST_F(Hdf5BadInput, FoldersWithoutH5FilesAndMissingPaths) {
    const fs::path text = m_dir / "texts";
    fs::create_directories(text);
    std::ofstream(text / "a.txt") << "hello";
    std::string e = openError({text.string()});
    EXPECT_MENTIONS(e, "holds no .h5 files (it holds 1 other file(s), e.g. 'a.txt')");
    EXPECT_MENTIONS(e, "TextFileDataProcessor");
    fs::create_directories(m_dir / "empty");
    EXPECT_MENTIONS(openError({(m_dir / "empty").string()}), "(it is empty)");
    EXPECT_MENTIONS(openError({(m_dir / "nowhere").string()}), "nowhere' does not exist");
    EXPECT_MENTIONS(openError({(text / "a.txt").string()}), "a.txt' is not a .h5 file");
}

TEST_F(Hdf5BadInput, MixedShapesAndVslWithoutItsRows) {
    std::string e = openError({(kFixture / "plain").string(), (kFixture / "vsl").string()});
    EXPECT_MENTIONS(e, "output_chunk_0_0.h5' holds samples of shape (5, 12) but");
    EXPECT_MENTIONS(e, "holds (3, 12)");
    Hdf5DatasetOptions o = fixtureOptions();
    o.useVsl = true;
    e = openError({(kFixture / "plain").string()}, o);
    EXPECT_MENTIONS(e, "train_input.use_vsl is on, but the HDF5 files");
    EXPECT_MENTIONS(e, "3 rows per sample");
}

TEST_F(Hdf5BadInput, SamplesAreCheckedBeforeTheyAreUsed) {
    const std::string vocab = folderWith("vocab", "data", H5T_STD_I32LE, {1, 3, 4},
                                         sample({{5, 6, 99, 7}, {1, 1, 1, 0}, {6, 8, 7, 0}}), 1);
    std::string e = batchError(vocab);
    EXPECT_MENTIONS(e,
                    "vocab.h5', sample 0 (row 0 of the file), position 2: input token id 99 is "
                    "outside the model's vocabulary of 64");
    EXPECT_MENTIONS(e, "model's tokenizer");

    const std::string label = folderWith("label", "data", H5T_STD_I32LE, {1, 3, 4},
                                         sample({{5, 6, 8, 7}, {1, 1, 0, 1}, {6, 8, 7, 70}}), 1);
    EXPECT_MENTIONS(batchError(label), "position 3: label token id 70 is outside");
    // A masked label may hold anything (a pad id): no loss is taken there.
    const std::string padded = folderWith("padded", "data", H5T_STD_I32LE, {1, 3, 4},
                                          sample({{5, 6, 8, 7}, {1, 1, 1, 0}, {6, 8, 7, 500}}), 1);
    Hdf5DatasetOptions o = fixtureOptions();
    auto ok = Hdf5Dataset::open({padded}, o);
    ASSERT_TRUE(ok.ok()) << ok.error().message;
    EXPECT_EQ(trainRow(**ok, 0, 1, 0, false, 0).targets, (std::vector<int32_t>{6, 8, 7, -1}));
    // One sample and a held-out fraction: nothing left to train on.
    o.validationFraction = 0.5;
    EXPECT_MENTIONS(openError({padded}, o), "leaves none to train on");

    const std::string mask = folderWith("mask", "data", H5T_STD_I32LE, {1, 3, 4},
                                        sample({{5, 6, 8, 7}, {1, 2, 1, 1}, {6, 8, 7, 9}}), 1);
    EXPECT_MENTIONS(batchError(mask), "position 1: the loss mask is 2");

    const std::string positions = folderWith(
        "positions", "data", H5T_STD_I32LE, {1, 5, 4},
        sample({{5, 6, 8, 7}, {1, 1, 1, 1}, {6, 8, 7, 9}, {3, 2, 1, 0}, {0, 1, 3, 0}}), 1);
    EXPECT_MENTIONS(batchError(positions, true), "position 2: position id 3 follows 1");
}

}  // namespace
}  // namespace ws::data
