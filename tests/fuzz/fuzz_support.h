// SPDX-License-Identifier: GPL-3.0-or-later
// Helpers shared by the fuzz targets (tests/fuzz/*_fuzz.cpp): splitting one fuzz input into the
// several files a reader takes, and a private scratch folder where those files are written.
// Built both into the libFuzzer binaries (clang) and the plain corpus-replay tests (gcc).
// Thread-safety: none needed; a fuzz target runs one input at a time.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace ws::fuzz {

inline std::string_view asText(const uint8_t* data, size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

// The input cut at `separator` into at most `parts` pieces (the last piece keeps any further
// separators); missing pieces are absent from the result.
inline std::vector<std::string_view> splitInput(std::string_view input, std::string_view separator,
                                                size_t parts) {
    std::vector<std::string_view> out;
    while (out.size() + 1 < parts) {
        const size_t at = input.find(separator);
        if (at == std::string_view::npos) break;
        out.push_back(input.substr(0, at));
        input.remove_prefix(at + separator.size());
    }
    out.push_back(input);
    return out;
}

// A folder of this process under the system temp folder, removed at exit: the same path for
// every input, so a target that rewrites its files there does no directory churn.
class ScratchDir {
public:
    explicit ScratchDir(std::string_view tag) {
        m_path = std::filesystem::temp_directory_path() /
                 ("wafer-fuzz-" + std::string(tag) + "-" + std::to_string(::getpid()));
        std::filesystem::create_directories(m_path);
    }
    ~ScratchDir() {
        std::error_code ec;
        std::filesystem::remove_all(m_path, ec);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    const std::filesystem::path& path() const { return m_path; }

    // Empties the folder (keeping it).
    void clear() const {
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator(m_path, ec)) {
            std::filesystem::remove_all(entry.path(), ec);
        }
    }

private:
    std::filesystem::path m_path;
};

// With WAFER_FUZZ_VERBOSE set, prints how far an input got (to check that seeds reach the deep
// paths: `WAFER_FUZZ_VERBOSE=1 build/tests/fuzz/replay/fuzz_replay_<target> corpus/<target>`).
inline void note(std::string_view what) {
    static const bool verbose = std::getenv("WAFER_FUZZ_VERBOSE") != nullptr;
    if (verbose) std::fprintf(stderr, "  %.*s\n", int(what.size()), what.data());
}

// Writes `bytes` to `file` (replacing it); false when it could not.
inline bool writeFile(const std::filesystem::path& file, std::string_view bytes) {
    FILE* f = std::fopen(file.c_str(), "wb");
    if (!f) return false;
    const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    return std::fclose(f) == 0 && ok;
}

}  // namespace ws::fuzz
