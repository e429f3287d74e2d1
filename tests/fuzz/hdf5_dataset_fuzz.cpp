// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for ModelZoo's HDF5 samples (engine/data: Hdf5Files -> Hdf5Dataset), fuzzed
// structure-aware: libhdf5 is not ours and is known to misbehave on arbitrary bytes, so the input
// is a small program that writes real HDF5 files with the HDF5 C API into a scratch folder
// (dataset present, absent, misnamed, a group, a dangling soft link or an external link; any
// rank, dims from 0 to 2^62, int, float and string types, chunked, gzip, fill values;
// n_examples right, wrong, negative, a string, an array, on the dataset; samples valid or not:
// token ids out of range, negative values, broken VSL position_ids, empty data sets; several
// files, cut-short files, non-HDF5 .h5 files, other files and folders beside them), then opens
// the folder as session/hdf5_run_data.h does and pulls a few training and validation batches.
// Every outcome must be an Error with a message, or batches equal to what the files hold (read
// back here independently, value for value); never a crash, undefined behaviour, a leak or an
// HDF5 object left open (H5Fget_obj_count after the reader is gone).
//
// The input, byte by byte (missing bytes read as 0):
//   0  flags: 1 use_vsl, 2 shuffle, 4 name each file in data_dir instead of the folder,
//      8 name the folder twice (and a file of it), 16 add a missing path, 96 max_sequence_length
//      (0: from the files, 32: the first file's, 64: that + 1, 96: 4)
//   1  validation fraction (a table: 0, 0.25, 1, NaN, ...)   2  vocab size (1..240, then a table)
//   3  batch rows B = 1 + b % 8, steps 1 + (b >> 3) % 4, step stride 1 + (b >> 5)
//   4  shuffle seed   5  files: 1 + b % 4, then per file:
//   kind (b % 8: 0-3 HDF5, 4 HDF5 cut short, 5 raw bytes, 6 empty file, 7 a folder; name (b >> 3)
//   % 8 from a table), then for HDF5: type, rank and layout, one byte per dim, link, n_examples,
//   fill value, content (valid samples from a seed, raw bytes, or unwritten), corruptions
//   (position u16, value from a table). See Generator below.
#include <hdf5.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/data/hdf5_dataset.h"
#include "fuzz_support.h"

namespace {

namespace fs = std::filesystem;
using ws::data::Hdf5Dataset;
using ws::data::Hdf5DatasetOptions;

[[noreturn]] void fail(const std::string& what) {
    std::fprintf(stderr, "hdf5_dataset_fuzz: %s\n", what.c_str());
    std::abort();
}

// The fuzz input read front to back; past its end every byte is 0.
class Bytes {
public:
    Bytes(const uint8_t* data, size_t size) : m_data(data), m_size(size) {}
    uint8_t byte() { return m_at < m_size ? m_data[m_at++] : 0; }
    uint16_t u16() { return uint16_t(byte() | (byte() << 8)); }
    size_t left() const { return m_size - m_at; }

private:
    const uint8_t* m_data;
    size_t m_size;
    size_t m_at = 0;
};

constexpr int64_t kMaxWritten = 1 << 14;      // values written (and read back) per file at most
constexpr int64_t kMaxBatchValues = 1 << 20;  // B * T for the batches pulled

int64_t valueFor(uint8_t code, int64_t vocab) {
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
    const std::array<int64_t, 16> table{
        -1,        0,         1,    2,    vocab - 1,        vocab,
        INT32_MAX, INT32_MIN, kMax, kMin, int64_t(1) << 31, int64_t(1) << 32,
        -2,        3,         100,  255};
    return table[code % table.size()];
}

double fractionFor(uint8_t b) {
    const std::array<double, 16> table{0.0,  0.0, 0.25,         0.5,      1.0, 0.1,  0.999, 1e-9,
                                       -0.5, 1.5, std::nan(""), INFINITY, 0.0, 0.25, 0.75,  0.01};
    return table[b % table.size()];
}

int vocabFor(uint8_t b) {
    if (b < 240) return b + 1;
    const std::array<int, 16> table{0,   -1,   2,     50257, 65536, INT32_MAX, 256, 1,
                                    300, 1000, 32000, 7,     13,    128,       64,  512};
    return table[b - 240];
}

hsize_t dimFor(uint8_t b) {
    if (b < 232) return b % 9;  // 0..8: 3 and 5 rows, short sequences
    const std::array<hsize_t, 24> table{16,
                                        64,
                                        255,
                                        1024,
                                        65536,
                                        (hsize_t(1) << 31) - 1,
                                        hsize_t(1) << 31,
                                        (hsize_t(1) << 32) + 3,
                                        hsize_t(1) << 40,
                                        hsize_t(1) << 62,
                                        (hsize_t(1) << 63) + 1,
                                        std::numeric_limits<hsize_t>::max() - 1,
                                        3,
                                        5,
                                        2,
                                        1,
                                        12,
                                        100,
                                        1000,
                                        4096,
                                        1 << 20,
                                        (hsize_t(1) << 30) + 1,
                                        10,
                                        32};
    return table[b - 232];
}

// File types the generator writes "data" as.
hid_t typeFor(uint8_t b, hid_t& owned) {
    owned = H5I_INVALID_HID;
    switch (b % 16) {
        case 0:
        case 1:
        case 2:
            return H5T_STD_I32LE;
        case 3:
            return H5T_STD_I32BE;
        case 4:
            return H5T_STD_I64LE;
        case 5:
            return H5T_STD_I8LE;
        case 6:
            return H5T_STD_U8LE;
        case 7:
            return H5T_STD_I16BE;
        case 8:
            return H5T_STD_U16LE;
        case 9:
            return H5T_STD_U32LE;
        case 10:
            return H5T_STD_U64LE;
        case 11:
            return H5T_IEEE_F32LE;
        case 12:
            return H5T_IEEE_F64BE;
        case 13:
            owned = H5Tcopy(H5T_C_S1);
            H5Tset_size(owned, 4);
            return owned;
        case 14:
            return H5T_STD_B8LE;
        default:
            return H5T_STD_I64BE;
    }
}

// What a generated file holds, as read back with the HDF5 C API (when small enough).
struct Written {
    fs::path path;
    bool hdf5 = false;
    std::vector<hsize_t> dims;                   // as created (rank 3 when readable as samples)
    std::optional<std::vector<int64_t>> values;  // (n, F, T), read back; nullopt: unknown
    bool linked = false;                         // "data" is an external link to examples_0.h5's
};

// Writes the files the input describes into `dir`.
class Generator {
public:
    Generator(Bytes& in, const fs::path& dir, int vocab) : m_in(in), m_dir(dir), m_vocab(vocab) {}

    void file(int index) {
        const uint8_t kind = m_in.byte();
        const std::string name = nameFor(kind >> 3, index);
        const fs::path path = m_dir / name;
        std::error_code ec;
        fs::remove_all(path, ec);
        m_written.erase(name);
        switch (kind % 8) {
            case 5: {  // raw bytes, never with HDF5's signature (libhdf5's parsing is not fuzzed)
                std::string bytes(m_in.byte(), '\0');
                for (char& c : bytes) c = char(m_in.byte());
                for (size_t at; (at = bytes.find("HDF")) != std::string::npos;) bytes[at] = 'h';
                ws::fuzz::writeFile(path, bytes);
                m_written[name] = {path, false, {}, std::nullopt};
                return;
            }
            case 6:
                ws::fuzz::writeFile(path, "");
                m_written[name] = {path, false, {}, std::nullopt};
                return;
            case 7:
                fs::create_directories(path / "examples_0.h5", ec);
                return;
            default:
                break;
        }
        Written w = hdf5(path);
        if (kind % 8 == 4) {  // cut short, as a copy that did not finish
            const auto size = fs::file_size(path, ec);
            if (!ec) fs::resize_file(path, size * m_in.byte() / 256, ec);
            w.values.reset();
        }
        if (!m_firstLength && w.dims.size() == 3) m_firstLength = w.dims[2];
        m_written[name] = std::move(w);
    }

    const std::map<std::string, Written>& written() const { return m_written; }
    std::optional<hsize_t> firstLength() const { return m_firstLength; }

private:
    static std::string nameFor(int which, int index) {
        const std::string i = std::to_string(index);
        switch (which % 8) {
            case 0:
                return "examples_" + i + ".h5";
            case 1:
                return "output_chunk_0_" + i + ".h5";
            case 2:
                return "examples_1" + i + ".h5";  // sorts between examples_1 and examples_2
            case 3:
                return ".hidden" + i + ".h5";
            case 4:
                return "notes" + i + ".txt";
            case 5:
                return "X" + i + ".H5";
            case 6:
                return "examples_" + i + ".h5.bak";
            default:
                return "examples_0.h5";  // the same name again: replaces that file
        }
    }

    Written hdf5(const fs::path& path) {
        Written w{path, true, {}, std::nullopt};
        hid_t ownedType;
        const hid_t type = typeFor(m_in.byte(), ownedType);
        const uint8_t layout = m_in.byte();
        const std::array<int, 8> ranks{3, 3, 3, 1, 2, 4, 0, -1};  // 0: scalar, -1: null space
        const int rank = ranks[layout % 8];
        for (int d = 0; d < rank; ++d) w.dims.push_back(dimFor(m_in.byte()));
        const uint8_t link = m_in.byte();
        const uint8_t examples = m_in.byte();
        const uint8_t fill = m_in.byte();
        const uint8_t content = m_in.byte();
        const uint8_t seed = m_in.byte();

        const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        if (file < 0) {
            if (ownedType >= 0) H5Tclose(ownedType);
            return w;
        }
        const hid_t space = rank > 0    ? H5Screate_simple(rank, w.dims.data(), nullptr)
                            : rank == 0 ? H5Screate(H5S_SCALAR)
                                        : H5Screate(H5S_NULL);
        const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        if (rank > 0 && (layout & 8)) {
            std::vector<hsize_t> chunk(w.dims);
            hsize_t elements = 1;
            for (hsize_t& c : chunk) {
                c = std::clamp<hsize_t>(c, 1, 64);
                elements *= c;
            }
            if (elements > 4096) chunk[0] = 1;
            H5Pset_chunk(dcpl, rank, chunk.data());
            if (layout & 16) H5Pset_deflate(dcpl, 1);
        }
        if (fill % 8 != 0) {
            const int64_t value = valueFor(uint8_t(fill >> 3), m_vocab);
            H5Pset_fill_value(dcpl, H5T_NATIVE_INT64, &value);
        }
        const char* dataName = "data";
        switch (link % 8) {
            case 3:
                dataName = "Data";
                break;
            case 4:
                dataName = "input_ids";
                break;
            case 5: {  // a group where the dataset should be
                const hid_t group = H5Gcreate2(file, "data", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
                if (group >= 0) H5Gclose(group);
                dataName = "samples";
                break;
            }
            case 6:  // a soft link to nothing
                H5Lcreate_soft("/missing", file, "data", H5P_DEFAULT, H5P_DEFAULT);
                dataName = "other";
                break;
            case 7:  // an external link to the first file's "data"
                H5Lcreate_external("examples_0.h5", "/data", file, "data", H5P_DEFAULT,
                                   H5P_DEFAULT);
                dataName = "local";
                w.linked = true;
                break;
            default:
                break;
        }
        hid_t set = H5I_INVALID_HID;
        if (space >= 0)
            set = H5Dcreate2(file, dataName, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        if (set >= 0)
            writeValues(set, w.dims,
                        H5Tget_class(type) == H5T_INTEGER || H5Tget_class(type) == H5T_FLOAT,
                        content, seed);
        nExamples(file, set, examples, w.dims);
        if (set >= 0) {
            if ((link % 8) < 3 && H5Tget_class(type) == H5T_INTEGER && rank == 3)
                w.values = readBack(set, w.dims);
            H5Dclose(set);
        }
        H5Pclose(dcpl);
        if (space >= 0) H5Sclose(space);
        if (ownedType >= 0) H5Tclose(ownedType);
        H5Fclose(file);
        H5Eclear2(H5E_DEFAULT);
        return w;
    }

    static int64_t total(const std::vector<hsize_t>& dims) {
        int64_t n = 1;
        for (const hsize_t d : dims) {
            if (d > hsize_t(kMaxWritten)) return kMaxWritten + 1;
            n *= int64_t(d);
            if (n > kMaxWritten) return kMaxWritten + 1;
        }
        return n;
    }

    // content % 4: 0, 1 valid samples from the seed, 2 raw signed bytes, 3 left unwritten
    // (fill values); then corruptions.
    void writeValues(hid_t set, const std::vector<hsize_t>& dims, bool numeric, uint8_t content,
                     uint8_t seed) {
        const int64_t n = total(dims);
        const int corruptions = (content >> 2) % 8;
        if (!numeric || n > kMaxWritten || content % 4 == 3) return;
        std::vector<int64_t> values(size_t(n), 0);
        if (content % 4 == 2) {
            for (int64_t& v : values) v = int8_t(m_in.byte());
        } else if (dims.size() == 3) {
            validSamples(values, dims, seed);
        }
        for (int c = 0; c < corruptions && n > 0; ++c) {
            const uint16_t at = m_in.u16();
            values[size_t(at % uint64_t(n))] = valueFor(m_in.byte(), m_vocab);
        }
        H5Dwrite(set, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
    }

    // ModelZoo's samples: input_ids, loss mask, labels (the ids shifted), and for 5 rows
    // attention_span and position_ids restarting every few tokens.
    void validSamples(std::vector<int64_t>& v, const std::vector<hsize_t>& dims,
                      uint8_t seed) const {
        const auto N = int64_t(dims[0]), F = int64_t(dims[1]), T = int64_t(dims[2]);
        const int64_t vocab = std::max(m_vocab, 1);
        const int64_t doc = 1 + seed % std::max<int64_t>(T, 1);
        auto at = [&](int64_t s, int64_t f, int64_t t) -> int64_t& {
            return v[size_t((s * F + f) * T + t)];
        };
        for (int64_t s = 0; s < N; ++s) {
            for (int64_t t = 0; t < T; ++t) {
                const int64_t id = (seed * 31 + s * 7 + t * 13) % vocab;
                if (F > 0) at(s, 0, t) = id;
                if (F > 1) at(s, 1, t) = (t + s + seed) % 3 != 0 ? 1 : 0;
                if (F > 2) at(s, 2, t) = (id + 1) % vocab;
                if (F > 3) at(s, 3, t) = T - t;
                if (F > 4) at(s, 4, t) = t % doc;
            }
        }
    }

    // examples % 12: 0 absent, 1 right (int64), 2 right (int32), 3 one more, 4 -1, 5 a string,
    // 6 a float, 7 an array of two, 8 on the dataset, 9 a null space, 10 2^64 - 1, 11 right (u8)
    void nExamples(hid_t file, hid_t set, uint8_t examples, const std::vector<hsize_t>& dims) {
        const int mode = examples % 12;
        if (mode == 0) return;
        const int64_t n = dims.empty() ? 0 : int64_t(std::min<hsize_t>(dims[0], INT64_MAX));
        const hsize_t two = 2;
        const hid_t space = mode == 7   ? H5Screate_simple(1, &two, nullptr)
                            : mode == 9 ? H5Screate(H5S_NULL)
                                        : H5Screate(H5S_SCALAR);
        hid_t type = H5T_STD_I64LE;
        hid_t owned = H5I_INVALID_HID;
        if (mode == 2) type = H5T_STD_I32LE;
        if (mode == 6) type = H5T_IEEE_F64LE;
        if (mode == 10) type = H5T_STD_U64LE;
        if (mode == 11) type = H5T_STD_U8LE;
        if (mode == 5) {
            owned = H5Tcopy(H5T_C_S1);
            H5Tset_size(owned, 8);
            type = owned;
        }
        const hid_t on = mode == 8 && set >= 0 ? set : file;
        const hid_t attr = H5Acreate2(on, "n_examples", type, space, H5P_DEFAULT, H5P_DEFAULT);
        if (attr >= 0) {
            if (mode == 5) {
                H5Awrite(attr, owned, "twelve\0\0");
            } else if (mode == 6) {
                const double d = double(n) + 0.5;
                H5Awrite(attr, H5T_NATIVE_DOUBLE, &d);
            } else if (mode == 10) {
                const uint64_t u = std::numeric_limits<uint64_t>::max();
                H5Awrite(attr, H5T_NATIVE_UINT64, &u);
            } else if (mode != 9) {
                const std::array<int64_t, 2> values{mode == 3   ? (n == INT64_MAX ? 0 : n + 1)
                                                    : mode == 4 ? -1
                                                                : n,
                                                    n};
                H5Awrite(attr, H5T_NATIVE_INT64, values.data());
            }
            H5Aclose(attr);
        }
        if (owned >= 0) H5Tclose(owned);
        if (space >= 0) H5Sclose(space);
    }

    static std::optional<std::vector<int64_t>> readBack(hid_t set,
                                                        const std::vector<hsize_t>& dims) {
        const int64_t n = total(dims);
        if (n > kMaxWritten) return std::nullopt;
        std::vector<int64_t> values(static_cast<size_t>(n));
        if (n > 0 &&
            H5Dread(set, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
            return std::nullopt;
        return values;
    }

    Bytes& m_in;
    fs::path m_dir;
    int m_vocab;
    std::map<std::string, Written> m_written;
    std::optional<hsize_t> m_firstLength;
};

// The reader's rules for one sample (hdf5_dataset.h): ok, and the batch row it gives.
struct Expected {
    bool ok = true;
    std::vector<int32_t> inputs, targets, positions;
};

Expected expectedRow(const std::vector<int64_t>& values, int64_t row, int F, int T, int vocab,
                     bool useVsl) {
    Expected e;
    const int64_t* ids = values.data() + row * F * T;
    const int64_t* mask = ids + T;
    const int64_t* labels = mask + T;
    const int64_t* positions = F == 5 ? labels + 2 * T : nullptr;
    for (int t = 0; t < T; ++t) {
        if (mask[t] != 0 && mask[t] != 1) e.ok = false;
        if (ids[t] < 0 || ids[t] >= vocab) e.ok = false;
        if (mask[t] == 1 && (labels[t] < 0 || labels[t] >= vocab)) e.ok = false;
        if (useVsl && positions[t] != 0 &&
            !(t > 0 && positions[t - 1] != INT64_MAX && positions[t] == positions[t - 1] + 1))
            e.ok = false;
        e.inputs.push_back(int32_t(ids[t]));
        e.targets.push_back(mask[t] == 1 ? int32_t(labels[t]) : -1);
        if (useVsl) e.positions.push_back(int32_t(positions[t]));
    }
    return e;
}

struct Run {
    const Hdf5Dataset& ds;
    const Hdf5DatasetOptions& options;
    std::vector<const Written*> files;  // the files read, in the reader's order
    std::vector<int64_t> firstSample;

    // Checks one batch against the files: an error only when one of its rows is bad, else the
    // rows the files hold.
    void check(const ws::Result<int64_t>& got, const std::vector<int64_t>& samples, int B,
               const std::vector<int32_t>& in, const std::vector<int32_t>& tg,
               const std::vector<int32_t>& pos) const {
        const int T = ds.sequenceLength(), F = ds.files().features();
        bool allKnown = true, anyBad = false;
        int64_t count = 0;
        for (int i = 0; i < B; ++i) {
            const int64_t s = samples[size_t(i)];
            const size_t at = size_t(i) * size_t(T);
            if (s < 0) {  // padding
                if (!got.ok()) continue;
                for (int t = 0; t < T; ++t)
                    if (in[at + t] != 0 || tg[at + t] != -1 || (options.useVsl && pos[at + t] != 0))
                        fail("a padding row that is not padding");
                continue;
            }
            const size_t f = size_t(std::upper_bound(firstSample.begin(), firstSample.end(), s) -
                                    firstSample.begin()) -
                             1;
            const auto& values = files[f]->values;
            if (!values) {
                allKnown = false;
                continue;
            }
            const Expected e =
                expectedRow(*values, s - firstSample[f], F, T, options.vocabSize, options.useVsl);
            if (!e.ok) {
                anyBad = true;
                continue;
            }
            if (!got.ok()) continue;
            for (int t = 0; t < T; ++t) {
                if (in[at + t] != e.inputs[size_t(t)] || tg[at + t] != e.targets[size_t(t)] ||
                    (options.useVsl && pos[at + t] != e.positions[size_t(t)]))
                    fail("sample " + std::to_string(s) + " of '" + files[f]->path.string() +
                         "' read differently from what the file holds, at position " +
                         std::to_string(t));
                count += tg[at + t] >= 0;
            }
        }
        if (got.ok()) {
            if (anyBad) fail("a batch with a bad sample was read without an error");
            if (allKnown && *got != count) fail("the batch's count of targets is wrong");
            for (size_t k = 0; k < tg.size(); ++k)
                if (in[k] < 0 || in[k] >= options.vocabSize || tg[k] < -1 ||
                    tg[k] >= options.vocabSize)
                    fail("a token id outside the vocabulary was served");
        } else {
            if (got.error().message.empty()) fail("an error without a message");
            if (allKnown && !anyBad) fail("a good batch was refused: " + got.error().message);
            ws::fuzz::note("batch refused: " + got.error().message.substr(0, 200));
        }
    }
};

void pullBatches(const Hdf5Dataset& ds, const Hdf5DatasetOptions& options,
                 const std::map<std::string, Written>& written, int B, int steps, int stride,
                 bool shuffle, uint64_t seed) {
    const auto& files = ds.files().files();
    Run run{ds, options, {}, {}};
    int64_t total = 0;
    for (size_t i = 0; i < files.size(); ++i) {
        if (i > 0 && !(files[i - 1].path < files[i].path)) fail("the files are not sorted");
        auto w = written.find(files[i].path.filename().string());
        if (w == written.end() || !w->second.hdf5)
            fail("read a file it was not given: " + files[i].path.string());
        if (w->second.linked) {  // what the reader got through the link
            w = written.find("examples_0.h5");
            if (w == written.end() || w->second.linked)
                fail("read \"data\" through a link that leads nowhere");
        }
        if (w->second.dims.size() != 3 || hsize_t(files[i].samples) != w->second.dims[0] ||
            hsize_t(ds.files().features()) != w->second.dims[1] ||
            hsize_t(ds.sequenceLength()) != w->second.dims[2] || files[i].firstSample != total)
            fail("the samples of '" + files[i].path.string() + "' are miscounted");
        run.files.push_back(&w->second);
        run.firstSample.push_back(total);
        total += files[i].samples;
    }
    for (const auto& entry : written) {
        const Written& w = entry.second;
        const bool listed = std::any_of(files.begin(), files.end(),
                                        [&](const auto& f) { return f.path == w.path; });
        if (w.hdf5 && entry.first[0] != '.' && w.path.extension() == ".h5" && !listed)
            fail("left out a .h5 file: " + entry.first);
    }
    if (total != ds.files().samples() || total < 1) fail("the sample count is wrong");
    if (ds.trainSamples() + ds.validationSamples() != total || ds.validationSamples() < 0)
        fail("the split loses or repeats samples");
    const int T = ds.sequenceLength();
    ws::fuzz::note("opened: " + ds.describe());
    if (int64_t(T) * B > kMaxBatchValues) return;
    std::vector<int32_t> in(size_t(B) * size_t(T)), tg(in.size()), pos(in.size());
    std::vector<int64_t> samples(static_cast<size_t>(B));
    if (ds.checkBatch(B).ok() != (ds.trainSamples() >= B)) fail("checkBatch is wrong");
    if (ds.trainSamples() >= B) {
        for (int k = 0; k < steps; ++k) {
            const int64_t step = int64_t(k) * stride;
            for (int i = 0; i < B; ++i) {
                samples[size_t(i)] = ds.trainSampleIndex(step, B, i, shuffle, seed);
                if (samples[size_t(i)] < 0 || samples[size_t(i)] >= ds.trainSamples())
                    fail("a training row outside the training samples");
            }
            const auto got =
                ds.trainBatch(step, B, shuffle, seed, {in.data(), tg.data(), pos.data()});
            run.check(got, samples, B, in, tg, pos);
        }
    }
    const int64_t batches = ds.validationBatches(B);
    if (batches != (ds.validationSamples() + B - 1) / B) fail("validationBatches is wrong");
    for (const int64_t index : {int64_t(0), batches - 1}) {
        if (index < 0 || index >= batches) continue;
        for (int i = 0; i < B; ++i) {
            samples[size_t(i)] = ds.validationSampleIndex(index, B, i);
            const int64_t s = samples[size_t(i)];
            if (s >= 0 && (s < ds.trainSamples() || s >= total))
                fail("a validation row outside the held-out samples");
        }
        const auto got = ds.validationBatch(index, B, {in.data(), tg.data(), pos.data()});
        run.check(got, samples, B, in, tg, pos);
    }
}

struct Fixture {
    ws::fuzz::ScratchDir dir{"hdf5-dataset"};
    Fixture() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static Fixture fixture;
    fixture.dir.clear();
    const fs::path folder = fixture.dir.path() / "data";
    fs::create_directories(folder);

    Bytes in(data, size);
    const uint8_t flags = in.byte();
    Hdf5DatasetOptions options;
    options.validationFraction = fractionFor(in.byte());
    options.vocabSize = vocabFor(in.byte());
    options.useVsl = flags & 1;
    const uint8_t batch = in.byte();
    const int B = 1 + batch % 8, steps = 1 + (batch >> 3) % 4, stride = 1 + (batch >> 5);
    const uint64_t seed = in.byte();
    const int count = 1 + in.byte() % 4;

    Generator generator(in, folder, options.vocabSize);
    for (int i = 0; i < count; ++i) generator.file(i);

    const std::optional<hsize_t> length = generator.firstLength();
    switch ((flags >> 5) % 4) {
        case 1:
            options.maxSequenceLength = length && *length < INT32_MAX ? int(*length) : 0;
            break;
        case 2:
            options.maxSequenceLength = length && *length < INT32_MAX ? int(*length) + 1 : 0;
            break;
        case 3:
            options.maxSequenceLength = 4;
            break;
        default:
            break;
    }
    std::vector<std::string> dirs;
    if (flags & 4) {
        for (const auto& [name, w] : generator.written()) dirs.push_back(w.path.string());
        if (dirs.empty()) dirs.push_back(folder.string());
    } else {
        dirs.push_back(folder.string());
    }
    if (flags & 8) {
        dirs.push_back(folder.string());
        if (!generator.written().empty())
            dirs.push_back(generator.written().begin()->second.path.string());
    }
    if (flags & 16) dirs.push_back((fixture.dir.path() / "missing").string());

    {
        auto opened = Hdf5Dataset::open(dirs, options);
        if (!opened.ok()) {
            if (opened.error().message.empty()) fail("an error without a message");
            ws::fuzz::note("refused: " + opened.error().message.substr(0, 300));
        } else {
            pullBatches(**opened, options, generator.written(), B, steps, stride, flags & 2, seed);
        }
    }
    // The reader is gone: every file and dataset it opened must be closed.
    const ssize_t leftOpen = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
    if (leftOpen != 0) fail(std::to_string(leftOpen) + " HDF5 object(s) left open");
    return 0;
}
