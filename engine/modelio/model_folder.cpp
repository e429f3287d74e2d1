// SPDX-License-Identifier: GPL-3.0-or-later
// The model folder writer (see model_folder.h).
#include "engine/modelio/model_folder.h"

#include <fmt/format.h>

#include "engine/config/config_yaml.h"
#include "engine/fileio/atomic_file.h"
#include "engine/modelio/checkpoints.h"

namespace ws::modelio {
namespace fs = std::filesystem;

namespace {

Status copyFile(const fs::path& from, const fs::path& to) {
    std::error_code ec;
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    if (ec) {
        return Error{
            fmt::format("cannot copy {} to {}: {}", from.string(), to.string(), ec.message())};
    }
    return Status::success();
}

}  // namespace

Status writeModelFolderFiles(const fs::path& dir, const config::Config& config,
                             const FolderTokenizer& tokenizer) {
    if (Status st =
            fileio::writeFileAtomically(dir / "config.yaml", config::saveConfigYaml(config));
        !st.ok()) {
        return st;
    }
    if (tokenizer.tokenizer) return tokenizer.tokenizer->save(dir);
    if (Status st = copyFile(tokenizer.vocabFile, dir / "vocab.json"); !st.ok()) return st;
    return copyFile(tokenizer.mergesFile, dir / "merges.txt");
}

Status writeModelWeights(const fs::path& dir, const model::ParameterTable& table,
                         const TensorReader& weights, const config::Config& config, int64_t step) {
    return saveWeights(dir / kModelFile, table, weights, config, step);
}

Status writeModelFolder(const fs::path& dir, const model::ParameterTable& table,
                        const float* params, const config::Config& config, int64_t step,
                        const FolderTokenizer& tokenizer) {
    const TensorReader weights = [&](int, size_t t) { return params + table.tensors()[t].offset; };
    if (Status st = writeModelWeights(dir, table, weights, config, step); !st.ok()) return st;
    return writeModelFolderFiles(dir, config, tokenizer);
}

}  // namespace ws::modelio
