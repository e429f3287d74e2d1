// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for a whole training checkpoint folder (modelio/checkpoints.h, what `wafer
// train --resume` opens): the input is trainer_state.json, model.safetensors and
// optimizer.safetensors joined by the line "\n--wafer-fuzz-file--\n"; they are written as
// checkpoint-<n>/ in a scratch folder, then opened and loaded as a resume does. A piece that is
// missing leaves its file out. Before writing, the SHA-256 digests trainer_state.json records for
// the two tensor files are set to the digests of the bytes written (when it is a JSON object with
// a "files" object), as fuzzers fix up checksums, so mutated tensor files reach the checks behind
// the digest. Any input must be loaded or refused with an Error, never crash, hang or hit
// undefined behaviour (ASan + UBSan).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "checkpoint_fuzz_support.h"
#include "engine/core/hash.h"
#include "fuzz_support.h"

namespace {

const ws::fuzz::ScratchDir& scratch() {
    static const ws::fuzz::ScratchDir dir("checkpoint-folder");
    return dir;
}

std::string fixDigests(std::string_view stateText, std::string_view model,
                       std::string_view optimizer) {
    auto root = nlohmann::json::parse(stateText, nullptr, /*allow_exceptions=*/false);
    if (root.is_discarded() || !root.is_object() || !root.contains("files") ||
        !root["files"].is_object()) {
        return std::string(stateText);
    }
    root["files"][ws::modelio::kModelFile] = {{"sha256", ws::sha256Hex(model)}};
    root["files"][ws::modelio::kOptimizerFile] = {{"sha256", ws::sha256Hex(optimizer)}};
    return root.dump(2);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto parts =
        ws::fuzz::splitInput(ws::fuzz::asText(data, size), "\n--wafer-fuzz-file--\n", 3);
    scratch().clear();
    const auto folder = scratch().path() / "checkpoint-4";
    std::filesystem::create_directories(folder);
    const std::string_view model = parts.size() > 1 ? parts[1] : std::string_view{};
    const std::string_view optimizer = parts.size() > 2 ? parts[2] : std::string_view{};
    bool ok = ws::fuzz::writeFile(folder / ws::modelio::kTrainerStateFile,
                                  fixDigests(parts[0], model, optimizer));
    if (parts.size() > 1) ok = ok && ws::fuzz::writeFile(folder / ws::modelio::kModelFile, model);
    if (parts.size() > 2) {
        ok = ok && ws::fuzz::writeFile(folder / ws::modelio::kOptimizerFile, optimizer);
    }
    if (!ok) std::abort();
    ws::fuzz::exerciseCheckpoint(folder);
    return 0;
}
