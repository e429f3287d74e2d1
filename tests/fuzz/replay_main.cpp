// SPDX-License-Identifier: GPL-3.0-or-later
// Corpus replay for the fuzz targets in the ordinary (gcc) build: a main() that feeds every file
// of the folders (or files) named on its command line to the target's LLVMFuzzerTestOneInput,
// in name order, and prints how many it ran. A crash, abort or sanitizer report fails the ctest
// that runs it (label "fuzz"), so the committed corpora and regression inputs stay green
// without clang or libFuzzer. An empty or missing folder is an error (a mistyped path would
// otherwise pass silently).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

int main(int argc, char** argv) {
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s CORPUS_FOLDER_OR_FILE...\n", argv[0]);
        return 2;
    }
    namespace fs = std::filesystem;
    size_t replayed = 0;
    for (int a = 1; a < argc; ++a) {
        std::vector<fs::path> files;
        std::error_code ec;
        if (fs::is_directory(argv[a], ec)) {
            for (const auto& entry : fs::directory_iterator(argv[a], ec)) {
                if (entry.is_regular_file()) files.push_back(entry.path());
            }
            std::sort(files.begin(), files.end());
        } else if (fs::is_regular_file(argv[a], ec)) {
            files.emplace_back(argv[a]);
        }
        if (files.empty()) {
            std::fprintf(stderr, "%s: no input files\n", argv[a]);
            return 2;
        }
        for (const auto& file : files) {
            std::ifstream in(file, std::ios::binary);
            const std::vector<char> bytes{std::istreambuf_iterator<char>(in),
                                          std::istreambuf_iterator<char>()};
            std::fprintf(stderr, "replaying %s (%zu bytes)\n", file.c_str(), bytes.size());
            // A non-null pointer even for an empty file, as libFuzzer passes.
            const char empty = 0;
            LLVMFuzzerTestOneInput(
                reinterpret_cast<const uint8_t*>(bytes.empty() ? &empty : bytes.data()),
                bytes.size());
            ++replayed;
        }
    }
    std::printf("replayed %zu inputs\n", replayed);
    return 0;
}
