// The data a run reads (see run_data.h).
#include "engine/session/run_data.h"

#include "engine/session/hdf5_run_data.h"
#include "engine/session/run_data_read.h"

namespace ws::session {

std::vector<RunDataInput> runDataInputs(const config::Config& cfg) {
    std::vector<RunDataInput> inputs;
    inputs.push_back({"train_input.data_dir", cfg.trainInput.dataDir, cfg.trainInput.allowBinary,
                      "set train_input.allow_binary: true to train on it anyway"});
    if (!cfg.evalInput.dataDir.empty())
        inputs.push_back({"eval_input.data_dir", cfg.evalInput.dataDir, cfg.evalInput.allowBinary,
                          "set eval_input.allow_binary: true to evaluate on it anyway"});
    return inputs;
}

Result<data::CorpusDocuments> readRunData(const RunDataInput& input) {
    auto documents =
        data::readCorpusDocuments(input.dataDir, {input.allowNonText, input.allowHint});
    if (!documents.ok()) return Error{input.key + ": " + documents.error().message};
    return documents;
}

std::vector<std::string> checkRunData(const config::Config& cfg) {
    std::vector<std::string> problems;
    if (readsHdf5(cfg.trainInput)) {
        if (auto data = openHdf5RunData(cfg); !data.ok()) problems.push_back(data.error().message);
        return problems;
    }
    for (const RunDataInput& input : runDataInputs(cfg)) {
        if (auto read = readRunData(input); !read.ok()) problems.push_back(read.error().message);
    }
    return problems;
}

}  // namespace ws::session
