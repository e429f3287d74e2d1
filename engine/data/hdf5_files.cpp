// SPDX-License-Identifier: GPL-3.0-or-later
// Hdf5Files (hdf5_files.h): listing a data_dir's .h5 files, checking each one's "data" dataset,
// and reading samples, through the HDF5 C API under one lock.
#include "engine/data/hdf5_files.h"

#include <fmt/format.h>
#include <hdf5.h>

#include <algorithm>
#include <array>
#include <mutex>

namespace ws::data {
namespace fs = std::filesystem;

namespace {

// The serial HDF5 library keeps global state (its error stack, its caches): one lock for all;
// recursive, since handles are closed under it when an open() that holds it fails.
std::recursive_mutex& hdf5Lock() {
    static std::recursive_mutex lock;
    return lock;
}

// HDF5 prints its error stack to stderr on every failed call unless told not to; errors become
// messages here instead. Called under hdf5Lock().
void silenceHdf5() {
    static bool done = false;
    if (done) return;
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    done = true;
}

// The innermost messages of HDF5's error stack (the cause, e.g. "truncated file: eof = 1024,
// ..."), then the stack cleared. Called under hdf5Lock().
std::string hdf5Reason() {
    std::vector<std::string> lines;
    H5Ewalk2(
        H5E_DEFAULT, H5E_WALK_DOWNWARD,
        [](unsigned, const H5E_error2_t* e, void* data) -> herr_t {
            if (e->desc && *e->desc)
                static_cast<std::vector<std::string>*>(data)->push_back(e->desc);
            return 0;
        },
        &lines);
    H5Eclear2(H5E_DEFAULT);
    if (lines.empty()) return "no reason given";
    // The last entries are the deepest (the cause); two of them say what and why.
    const size_t first = lines.size() > 2 ? lines.size() - 2 : 0;
    std::string out;
    for (size_t i = lines.size(); i-- > first;) {
        if (!out.empty()) out += "; ";
        out += lines[i];
    }
    return out;
}

// A handle closed by its deleter: H5Fclose, H5Dclose, ...
class Handle {
public:
    using Closer = herr_t (*)(hid_t);
    Handle() = default;
    Handle(hid_t id, Closer close) : m_id(id), m_close(close) {}
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    Handle(Handle&& o) noexcept
        : m_id(std::exchange(o.m_id, H5I_INVALID_HID)), m_close(o.m_close) {}
    Handle& operator=(Handle&& o) noexcept {
        std::swap(m_id, o.m_id);
        std::swap(m_close, o.m_close);
        return *this;
    }
    ~Handle() {
        if (m_id >= 0 && m_close) m_close(m_id);
    }
    hid_t get() const { return m_id; }
    bool valid() const { return m_id >= 0; }

private:
    hid_t m_id = H5I_INVALID_HID;
    Closer m_close = nullptr;
};

std::string shapeText(const std::vector<hsize_t>& dims) {
    std::string out = "(";
    for (size_t i = 0; i < dims.size(); ++i)
        out += (i ? ", " : "") + std::to_string(dims[i]) + (dims.size() == 1 ? "," : "");
    return out + ")";
}

std::string typeText(hid_t type) {
    switch (H5Tget_class(type)) {
        case H5T_INTEGER:
            return fmt::format("{}-byte {} integers", H5Tget_size(type),
                               H5Tget_sign(type) == H5T_SGN_NONE ? "unsigned" : "signed");
        case H5T_FLOAT:
            return fmt::format("{}-byte floats", H5Tget_size(type));
        case H5T_STRING:
            return "strings";
        case H5T_COMPOUND:
            return "compound records";
        default:
            return "values of a non-numeric type";
    }
}

// The names in a file's root group, for "it holds ...".
std::vector<std::string> rootNames(hid_t file) {
    std::vector<std::string> names;
    H5Literate(
        file, H5_INDEX_NAME, H5_ITER_INC, nullptr,
        [](hid_t, const char* name, const H5L_info_t*, void* data) -> herr_t {
            static_cast<std::vector<std::string>*>(data)->push_back(name);
            return 0;
        },
        &names);
    H5Eclear2(H5E_DEFAULT);
    return names;
}

bool isH5Name(const fs::path& path) {
    const std::string name = path.filename().string();
    return !name.empty() && name[0] != '.' && path.extension() == ".h5";
}

// The .h5 files a data_dir entry names: a folder's "*.h5" (not recursive), or the file itself.
Status listEntry(const std::string& key, const std::string& entry, std::vector<fs::path>& out) {
    const fs::path path(entry);
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) {
        if (!isH5Name(path))
            return Error{fmt::format(
                "{}: '{}' is not a .h5 file: ModelZoo's HDF5 processors read the .h5 files its "
                "preprocessing writes; name their folder, or set data_processor: "
                "TextFileDataProcessor to train on text",
                key, entry)};
        out.push_back(path);
        return {};
    }
    if (!fs::is_directory(path, ec))
        return Error{
            fmt::format("{}: '{}' does not exist: name the folder of .h5 files that "
                        "ModelZoo's preprocessing wrote (its output_dir)",
                        key, entry)};
    std::vector<fs::path> found;
    std::vector<std::string> others;
    fs::directory_iterator it(path, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
        if (!it->is_regular_file(ec)) continue;
        if (isH5Name(it->path())) {
            found.push_back(it->path());
        } else if (it->path().filename().string()[0] != '.') {
            others.push_back(it->path().filename().string());
        }
    }
    if (ec) return Error{fmt::format("{}: cannot list '{}': {}", key, entry, ec.message())};
    if (found.empty()) {
        std::sort(others.begin(), others.end());
        const std::string holds = others.empty() ? "is empty"
                                                 : fmt::format("holds {} other file(s), e.g. '{}'",
                                                               others.size(), others.front());
        return Error{fmt::format(
            "{}: the folder '{}' holds no .h5 files (it {}): ModelZoo's HDF5 processors read "
            "the .h5 files its preprocessing writes (e.g. examples_0.h5, output_chunk_0_0.h5); "
            "name the folder they were written to, or set data_processor: "
            "TextFileDataProcessor to train on text",
            key, entry, holds)};
    }
    out.insert(out.end(), found.begin(), found.end());
    return {};
}

}  // namespace

struct Hdf5Files::Open {
    std::vector<Handle> files, datasets;
    ~Open() {
        const std::lock_guard lock(hdf5Lock());
        datasets.clear();
        files.clear();
    }
};

namespace {

// The longest sample read, in tokens: 2^20, beyond any context a model here trains at.
constexpr hsize_t kMaxSequenceLength = hsize_t(1) << 20;

// a * b, or the largest hsize_t when that overflows.
hsize_t saturatingProduct(hsize_t a, hsize_t b) {
    hsize_t out = 0;
    return __builtin_mul_overflow(a, b, &out) ? ~hsize_t(0) : out;
}

// Whether storage was written for every element of "data" (shape dims): ModelZoo writes every
// sample it declares, while unwritten storage reads as fill values, which are not samples, and
// a shape claiming more samples than the file could hold would otherwise be believed. Chunked
// (ModelZoo's layout): a chunk for every block of the shape (compression makes the storage size
// no measure); contiguous: the whole size. Under hdf5Lock().
bool allWritten(hid_t dataset, const std::vector<hsize_t>& dims) {
    const Handle plist(H5Dget_create_plist(dataset), H5Pclose);
    switch (H5Pget_layout(plist.get())) {
        case H5D_CHUNKED: {
            std::array<hsize_t, 3> chunk{};
            if (H5Pget_chunk(plist.get(), 3, chunk.data()) != 3) return false;
            hsize_t want = 1;
            for (size_t i = 0; i < 3; ++i) {
                if (chunk[i] == 0) return false;
                want = saturatingProduct(want, dims[i] / chunk[i] + (dims[i] % chunk[i] != 0));
            }
            const Handle space(H5Dget_space(dataset), H5Sclose);  // all of it selected
            hsize_t have = 0;
            return H5Dget_num_chunks(dataset, space.get(), &have) >= 0 && have >= want;
        }
        case H5D_CONTIGUOUS: {
            const Handle type(H5Dget_type(dataset), H5Tclose);
            hsize_t want = H5Tget_size(type.get());
            for (const hsize_t d : dims) want = saturatingProduct(want, d);
            return H5Dget_storage_size(dataset) >= want;
        }
        default:  // compact: stored with the dataset's header
            return true;
    }
}

struct CheckedFile {
    Handle file, dataset;
    std::vector<hsize_t> dims;
};

// Opens one file and checks its "data" dataset: integers, rank 3, F = 3 or 5, n_examples.
// Under hdf5Lock().
Result<CheckedFile> openChecked(const std::string& key, const fs::path& path) {
    const std::string name = path.string();
    const htri_t isHdf5 = H5Fis_hdf5(name.c_str());
    if (isHdf5 <= 0) {
        const std::string why = isHdf5 < 0 ? " (" + hdf5Reason() + ")" : "";
        return Error{fmt::format(
            "{}: '{}' is not an HDF5 file{}: ModelZoo's HDF5 processors read the .h5 files its "
            "preprocessing scripts write; remove or rename this file, or re-run the "
            "preprocessing if it was cut short",
            key, name, why)};
    }
    CheckedFile f;
    f.file = Handle(H5Fopen(name.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!f.file.valid())
        return Error{
            fmt::format("{}: cannot open '{}' as HDF5 ({}): the file is damaged or cut "
                        "short (a copy that did not finish?); copy or preprocess it "
                        "again",
                        key, name, hdf5Reason())};
    if (H5Lexists(f.file.get(), "data", H5P_DEFAULT) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        const std::vector<std::string> names = rootNames(f.file.get());
        std::string holds = names.empty() ? "nothing" : "";
        for (size_t i = 0; i < names.size(); ++i) holds += (i ? ", '" : "'") + names[i] + "'";
        return Error{fmt::format(
            "{}: '{}' has no \"data\" dataset (it holds {}): ModelZoo's GPT preprocessing writes "
            "its samples to \"data\"; this file was written by something else, so preprocess the "
            "text with ModelZoo's scripts (e.g. create_hdf5_dataset.py) or remove the file",
            key, name, holds)};
    }
    f.dataset = Handle(H5Dopen2(f.file.get(), "data", H5P_DEFAULT), H5Dclose);
    if (!f.dataset.valid())
        return Error{
            fmt::format("{}: '{}': \"data\" is not a dataset ({}): preprocess the data "
                        "again with ModelZoo's scripts",
                        key, name, hdf5Reason())};
    const Handle type(H5Dget_type(f.dataset.get()), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_INTEGER)
        return Error{fmt::format(
            "{}: '{}': \"data\" holds {}, but ModelZoo's preprocessing writes token ids as int32 "
            "(\"i4\"): this is not a tokenized data set; preprocess the text with ModelZoo's "
            "scripts",
            key, name, typeText(type.get()))};
    const Handle space(H5Dget_space(f.dataset.get()), H5Sclose);
    const int rank = H5Sget_simple_extent_ndims(space.get());
    f.dims.assign(size_t(std::max(rank, 0)), 0);
    if (rank > 0) H5Sget_simple_extent_dims(space.get(), f.dims.data(), nullptr);
    if (rank == 1)
        return Error{fmt::format(
            "{}: '{}': \"data\" has shape {}, ModelZoo's \"corpus\" format (documents "
            "concatenated, cut into sequences when read), which Wafer Studio does not read: "
            "preprocess into samples (shape (n, 3, max_sequence_length)) with ModelZoo's "
            "create_hdf5_dataset.py, or train on the text with data_processor: "
            "TextFileDataProcessor",
            key, name, shapeText(f.dims))};
    if (rank != 3 || (f.dims[1] != 3 && f.dims[1] != 5) || f.dims[2] < 2)
        return Error{fmt::format(
            "{}: '{}': \"data\" has shape {}, but GPT samples have shape (n, 3, msl) (input_ids, "
            "loss mask, labels) or (n, 5, msl) with variable sequence length (plus "
            "attention_span, position_ids): this is not a GPT data set; preprocess it with "
            "ModelZoo's GPT scripts",
            key, name, shapeText(f.dims))};
    // The length is an int downstream and a sample's rows are read into memory whole: a length
    // far beyond any model's context is a damaged or foreign file, not gigabytes to allocate.
    if (f.dims[2] > kMaxSequenceLength)
        return Error{fmt::format(
            "{}: '{}': \"data\" has shape {}, sequences of {} tokens, beyond the {} tokens "
            "Wafer Studio reads per sample: the file is damaged or not a GPT data set; "
            "preprocess the text again with ModelZoo's scripts and a max_seq_length a model can "
            "take",
            key, name, shapeText(f.dims), f.dims[2], kMaxSequenceLength)};
    if (H5Aexists(f.file.get(), "n_examples") > 0) {
        const Handle attr(H5Aopen(f.file.get(), "n_examples", H5P_DEFAULT), H5Aclose);
        const Handle attrSpace(H5Aget_space(attr.get()), H5Sclose);
        long long n = -1;
        if (H5Sget_simple_extent_npoints(attrSpace.get()) != 1 ||
            H5Aread(attr.get(), H5T_NATIVE_LLONG, &n) < 0) {
            H5Eclear2(H5E_DEFAULT);
            return Error{
                fmt::format("{}: '{}': the attribute n_examples is not one integer: "
                            "preprocess the data again with ModelZoo's scripts",
                            key, name)};
        }
        if (n != static_cast<long long>(f.dims[0]))
            return Error{fmt::format(
                "{}: '{}': the attribute n_examples says {} samples but \"data\" holds {} (shape "
                "{}): the file was cut short or changed after writing; preprocess it again",
                key, name, n, f.dims[0], shapeText(f.dims))};
    }
    if (f.dims[0] > 0 && !allWritten(f.dataset.get(), f.dims)) {
        H5Eclear2(H5E_DEFAULT);
        return Error{fmt::format(
            "{}: '{}': \"data\" has shape {} but not all of its samples were ever written (the "
            "writing stopped early, or the file was made by something else): preprocess the "
            "data again with ModelZoo's scripts",
            key, name, shapeText(f.dims))};
    }
    H5Eclear2(H5E_DEFAULT);
    return f;
}

Status readRows(hid_t dataset, int64_t row, int features, int length, int64_t* out) {
    const Handle space(H5Dget_space(dataset), H5Sclose);
    const std::array<hsize_t, 3> start{hsize_t(row), 0, 0};
    const std::array<hsize_t, 3> count{1, hsize_t(features), hsize_t(length)};
    if (H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                            nullptr) < 0)
        return Error{hdf5Reason()};
    const Handle memory(H5Screate_simple(3, count.data(), nullptr), H5Sclose);
    if (H5Dread(dataset, H5T_NATIVE_INT64, memory.get(), space.get(), H5P_DEFAULT, out) < 0)
        return Error{hdf5Reason()};
    return {};
}

Error unreadable(const std::string& key, const fs::path& path, int64_t row,
                 const std::string& why) {
    return Error{
        fmt::format("{}: '{}': sample {} cannot be read ({}): the file is damaged or cut "
                    "short; copy or preprocess it again",
                    key, path.string(), row, why)};
}

}  // namespace

Result<Hdf5Files> Hdf5Files::open(const std::vector<std::string>& dataDirs,
                                  const std::string& key) {
    if (dataDirs.empty())
        return Error{
            fmt::format("{}: empty: name the folder of .h5 files that ModelZoo's "
                        "preprocessing wrote",
                        key)};
    std::vector<fs::path> paths;
    for (const std::string& entry : dataDirs)
        if (Status s = listEntry(key, entry, paths); !s.ok()) return s.error();
    std::sort(paths.begin(), paths.end());
    paths.erase(std::unique(paths.begin(), paths.end()), paths.end());

    const std::lock_guard lock(hdf5Lock());
    silenceHdf5();
    auto open = std::make_shared<Open>();
    Hdf5Files out;
    out.m_key = key;
    std::vector<int64_t> sample;
    for (const fs::path& path : paths) {
        auto f = openChecked(key, path);
        if (!f.ok()) return f.error();
        const int F = int(f->dims[1]), T = int(f->dims[2]);
        if (out.m_files.empty()) {
            out.m_features = F;
            out.m_sequenceLength = T;
        } else if (F != out.m_features || T != out.m_sequenceLength) {
            return Error{fmt::format(
                "{}: '{}' holds samples of shape ({}, {}) but '{}' holds ({}, {}): every file of "
                "a data set must have the same rows and max_sequence_length; keep the files of "
                "one preprocessing run in the folder",
                key, path.string(), F, T, out.m_files.front().path.string(), out.m_features,
                out.m_sequenceLength)};
        }
        const auto rows = int64_t(f->dims[0]);
        sample.resize(size_t(F) * size_t(T));
        for (const int64_t row : {int64_t(0), rows - 1}) {
            if (rows == 0) break;
            if (Status s = readRows(f->dataset.get(), row, F, T, sample.data()); !s.ok())
                return unreadable(key, path, row, s.error().message);
        }
        out.m_files.push_back({path, rows, out.m_samples});
        out.m_samples += rows;
        open->files.push_back(std::move(f->file));
        open->datasets.push_back(std::move(f->dataset));
    }
    if (out.m_samples == 0)
        return Error{fmt::format("{}: the {} .h5 file(s) hold no samples: preprocess more data",
                                 key, out.m_files.size())};
    out.m_open = std::move(open);
    return out;
}

std::pair<size_t, int64_t> Hdf5Files::locate(int64_t index) const {
    const auto after =
        std::upper_bound(m_files.begin(), m_files.end(), index,
                         [](int64_t i, const Hdf5FileInfo& f) { return i < f.firstSample; });
    const auto file = size_t(after - m_files.begin()) - 1;
    return {file, index - m_files[file].firstSample};
}

Status Hdf5Files::readSample(int64_t index, int64_t* out) const {
    const auto [file, row] = locate(index);
    const std::lock_guard lock(hdf5Lock());
    Status s = readRows(m_open->datasets[file].get(), row, m_features, m_sequenceLength, out);
    if (!s.ok()) return unreadable(m_key, m_files[file].path, row, s.error().message);
    return {};
}

}  // namespace ws::data
