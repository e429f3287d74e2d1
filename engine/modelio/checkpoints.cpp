// SPDX-License-Identifier: GPL-3.0-or-later
// Checkpoint folders: writing (atomic), opening (verified), loading tensors, config differences.
#include "engine/modelio/checkpoints.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "engine/config/config_yaml.h"
#include "engine/config/yaml_flow.h"
#include "engine/core/hash.h"
#include "engine/core/kill_points.h"
#include "engine/fileio/atomic_file.h"
#include "engine/model/random.h"
#include "engine/modelio/weights_io.h"

namespace ws::modelio {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kTrainerStateVersion = 1;
constexpr const char* kPartialPrefix = ".checkpoint-";
constexpr const char* kPartialSuffix = ".partial";

// The optimizer state tensors of one parameter, in buffer order (firstMoment, secondMoment).
std::vector<std::string> stateSuffixes(int stateCopies) {
    if (stateCopies >= 2) return {".exp_avg", ".exp_avg_sq"};
    if (stateCopies == 1) return {".momentum_buffer"};
    return {};
}

float* stateBuffer(const optim::OptimizerState& state, size_t index) {
    return index == 0 ? state.firstMoment : state.secondMoment;
}

Status fsyncPath(const fs::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return Error{
            fmt::format("cannot open {} to sync it: {}", path.string(), std::strerror(errno))};
    }
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0) return Error{fmt::format("cannot sync {}: {}", path.string(), std::strerror(err))};
    return Status::success();
}

std::string hexKey(uint64_t key) {
    return fmt::format("{:016x}", key);
}

json stateToJson(const TrainerState& s) {
    json files = json::object();
    for (const auto& [name, sha] : s.fileSha256) files[name] = {{"sha256", sha}};
    return json{
        {"format", kTrainerStateFormat},
        {"version", kTrainerStateVersion},
        {"global_step", s.globalStep},
        {"max_steps", s.maxSteps},
        {"run_id", s.runId},
        {"config_hash", s.configHash},
        {"optimizer", {{"type", s.optimizerType}, {"step", s.globalStep}}},
        {"data_loader",
         {{"next_step", s.globalStep},
          {"batch_size", s.batchSize},
          {"sequence_length", s.sequenceLength},
          {"shuffle", s.shuffle},
          {"shuffle_seed", s.shuffleSeed},
          {"sequences_seen", s.globalStep * s.batchSize},
          {"tokens_seen", s.globalStep * s.batchSize * s.sequenceLength}}},
        {"rng",
         {{"seed", s.seed},
          {"dropout_stream_key", hexKey(s.dropoutStreamKey)},
          {"next_dropout_counter", s.globalStep}}},
        {"lr_schedule", {{"position", s.globalStep}, {"next_learning_rate", s.nextLearningRate}}},
        {"files", files},
    };
}

// Reads one member by JSON pointer with its type checked; the error names file and key.
class JsonReader {
public:
    JsonReader(const json& root, std::string file) : m_root(root), m_file(std::move(file)) {}

    template <class T>
    bool get(const char* pointer, T& out) {
        const json::json_pointer ptr(pointer);
        if (!m_root.contains(ptr)) return fail(fmt::format("{} is missing", pointer + 1));
        const json& value = m_root.at(ptr);
        bool ok = false;
        if constexpr (std::is_same_v<T, bool>) {
            ok = value.is_boolean();
        } else if constexpr (std::is_integral_v<T>) {
            ok = value.is_number_integer();
        } else if constexpr (std::is_floating_point_v<T>) {
            ok = value.is_number();
        } else {
            ok = value.is_string();
        }
        if (!ok) return fail(fmt::format("{} has the wrong type ({})", pointer + 1, value.dump()));
        out = value.get<T>();
        return true;
    }
    bool fail(std::string what) {
        if (m_error.empty()) m_error = fmt::format("{}: {}", m_file, what);
        return false;
    }
    const std::string& error() const { return m_error; }

private:
    const json& m_root;
    std::string m_file;
    std::string m_error;
};

Result<TrainerState> readTrainerState(const fs::path& file) {
    std::string text;
    {
        std::error_code ec;
        if (!fs::is_regular_file(file, ec)) {
            return Error{fmt::format("{}: missing; a checkpoint folder holds {}, {} and {}",
                                     file.string(), kModelFile, kOptimizerFile, kTrainerStateFile)};
        }
        FILE* f = std::fopen(file.c_str(), "rb");
        if (!f) return Error{fmt::format("{}: cannot read: {}", file.string(), strerror(errno))};
        char buffer[4096];
        size_t n = 0;
        while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) text.append(buffer, n);
        std::fclose(f);
    }
    const json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (root.is_discarded() || !root.is_object()) {
        return Error{fmt::format("{}: not a valid JSON object ({} bytes; truncated or damaged?)",
                                 file.string(), text.size())};
    }
    std::string format;
    if (!root.contains("format") || !root["format"].is_string() ||
        (format = root["format"].get<std::string>()) != kTrainerStateFormat) {
        return Error{fmt::format(
            "{}: not a Wafer Studio trainer state (format is {}, expected \"{}\"); a foreign "
            "checkpoint cannot be resumed",
            file.string(), root.contains("format") ? root["format"].dump() : "missing",
            kTrainerStateFormat)};
    }
    JsonReader r(root, file.string());
    int version = 0;
    if (!r.get("/version", version)) return Error{r.error()};
    if (version != kTrainerStateVersion) {
        return Error{fmt::format("{}: version {} is not one this build reads (it reads {})",
                                 file.string(), version, kTrainerStateVersion)};
    }
    TrainerState s;
    std::string streamKey;
    int64_t optimizerStep = 0, nextStep = 0, dropoutCounter = 0;
    const bool ok = r.get("/global_step", s.globalStep) && r.get("/max_steps", s.maxSteps) &&
                    r.get("/run_id", s.runId) && r.get("/config_hash", s.configHash) &&
                    r.get("/optimizer/type", s.optimizerType) &&
                    r.get("/optimizer/step", optimizerStep) &&
                    r.get("/data_loader/next_step", nextStep) &&
                    r.get("/data_loader/batch_size", s.batchSize) &&
                    r.get("/data_loader/sequence_length", s.sequenceLength) &&
                    r.get("/data_loader/shuffle", s.shuffle) &&
                    r.get("/data_loader/shuffle_seed", s.shuffleSeed) &&
                    r.get("/rng/seed", s.seed) && r.get("/rng/dropout_stream_key", streamKey) &&
                    r.get("/rng/next_dropout_counter", dropoutCounter) &&
                    r.get("/lr_schedule/next_learning_rate", s.nextLearningRate);
    if (!ok) return Error{r.error()};
    if (s.globalStep < 0 || optimizerStep != s.globalStep || nextStep != s.globalStep ||
        dropoutCounter != s.globalStep) {
        return Error{fmt::format(
            "{}: inconsistent positions (global_step {}, optimizer.step {}, data_loader.next_step "
            "{}, rng.next_dropout_counter {}); the file was edited or damaged",
            file.string(), s.globalStep, optimizerStep, nextStep, dropoutCounter)};
    }
    try {
        s.dropoutStreamKey = std::stoull(streamKey, nullptr, 16);
    } catch (const std::exception&) {
        return Error{fmt::format("{}: rng.dropout_stream_key '{}' is not a hex number",
                                 file.string(), streamKey)};
    }
    for (const char* name : {kModelFile, kOptimizerFile}) {
        std::string sha;
        if (!r.get(fmt::format("/files/{}/sha256", name).c_str(), sha)) return Error{r.error()};
        s.fileSha256[name] = sha;
    }
    return s;
}

Status checkTensor(const fileio::SafetensorsFile& file, const std::string& name,
                   const std::vector<int64_t>& shape) {
    const auto* info = file.find(name);
    if (!info) {
        return Error{fmt::format("{}: tensor {} is missing; the checkpoint is not of this model",
                                 file.path().string(), name)};
    }
    if (info->shape != shape) {
        return Error{fmt::format("{}: tensor {} has shape [{}], the model needs [{}]",
                                 file.path().string(), name, fmt::join(info->shape, ", "),
                                 fmt::join(shape, ", "))};
    }
    if (info->dtype != fileio::DType::F32) {
        return Error{fmt::format(
            "{}: tensor {} is {}, not F32; a training checkpoint keeps fp32 master values (to "
            "start from other weights use runconfig.checkpoint_path instead)",
            file.path().string(), name, fileio::dtypeName(info->dtype))};
    }
    return Status::success();
}

// Visits a config and lists "key: value" for every leaf field, for configDifferences().
class FlattenVisitor {
public:
    explicit FlattenVisitor(std::vector<std::pair<std::string, std::string>>& out,
                            std::string prefix = {})
        : m_out(out), m_prefix(std::move(prefix)) {}
    template <class T>
    void field(T& member, const config::FieldInfo& info) {
        m_out.emplace_back(m_prefix + std::string(info.key), config::formatFlow(member));
    }
    template <class S>
    void section(S& member, const config::FieldInfo& info) {
        FlattenVisitor inner(m_out, m_prefix + std::string(info.key) + ".");
        member.visit(inner);
    }
    template <class S>
    void optionalSection(std::optional<S>& member, const config::FieldInfo& info) {
        if (member) {
            section(*member, info);
        } else {
            m_out.emplace_back(m_prefix + std::string(info.key), "(not set)");
        }
    }

private:
    std::vector<std::pair<std::string, std::string>>& m_out;
    std::string m_prefix;
};

std::vector<std::pair<std::string, std::string>> flatten(config::Config config) {
    std::vector<std::pair<std::string, std::string>> out;
    FlattenVisitor visitor(out);
    config.visit(visitor);
    return out;
}

}  // namespace

TrainerState TrainerState::forRun(const config::Config& config, int64_t step, int64_t runId,
                                  double nextLearningRate) {
    TrainerState s;
    s.globalStep = step;
    s.maxSteps = config.runconfig.maxSteps;
    s.runId = runId;
    s.configHash = config::hashConfig(config);
    s.optimizerType = config.optimizer.optimizerType;
    s.batchSize = config.trainInput.batchSize;
    s.sequenceLength = config.trainInput.maxSequenceLength;
    s.shuffle = config.trainInput.shuffle;
    s.shuffleSeed = config.trainInput.shuffleSeed;
    s.seed = config.runconfig.seed;
    // The key dropoutSeedForStep(seed, step) derives per step, i.e. the stream at counter 0.
    s.dropoutStreamKey =
        model::rng::deriveKey(static_cast<uint64_t>(config.runconfig.seed), 0xD50F0D50ull);
    s.nextLearningRate = nextLearningRate;
    return s;
}

std::string checkpointFolderName(int64_t step) {
    return fmt::format("checkpoint-{}", step);
}

std::optional<int64_t> checkpointStep(const fs::path& folder) {
    const std::string name = folder.filename().string();
    constexpr std::string_view prefix = "checkpoint-";
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return {};
    int64_t step = 0;
    for (size_t i = prefix.size(); i < name.size(); ++i) {
        if (name[i] < '0' || name[i] > '9' || step > (INT64_MAX - 9) / 10) return {};
        step = step * 10 + (name[i] - '0');
    }
    return step;
}

std::vector<std::pair<int64_t, fs::path>> listCheckpoints(const fs::path& modelDir) {
    std::vector<std::pair<int64_t, fs::path>> out;
    std::error_code ec;
    for (fs::directory_iterator it(modelDir, ec), end; !ec && it != end; it.increment(ec)) {
        if (!it->is_directory(ec)) continue;
        if (auto step = checkpointStep(it->path())) out.emplace_back(*step, it->path());
    }
    std::sort(out.begin(), out.end());
    return out;
}

Result<WrittenCheckpoint> writeCheckpoint(const fs::path& modelDir,
                                          const model::ParameterTable& table, const float* weights,
                                          const optim::OptimizerState& optimizer, int stateCopies,
                                          const config::Config& config, const TrainerState& state) {
    return writeCheckpoint(
        modelDir, table,
        [&](int buffer, size_t t) -> const float* {
            const size_t offset = table.tensors()[t].offset;
            return buffer == 0 ? weights + offset
                               : stateBuffer(optimizer, size_t(buffer - 1)) + offset;
        },
        stateCopies, config, state);
}

Result<WrittenCheckpoint> writeCheckpoint(const fs::path& modelDir,
                                          const model::ParameterTable& table,
                                          const TensorReader& read, int stateCopies,
                                          const config::Config& config, const TrainerState& state,
                                          const std::vector<bool>& frozen,
                                          const MaskReader& masks) {
    assert(frozen.empty() || frozen.size() == table.tensors().size());
    auto isFrozen = [&](size_t t) { return !frozen.empty() && frozen[t]; };
    const fs::path folder = modelDir / checkpointFolderName(state.globalStep);
    std::error_code ec;
    if (fs::exists(folder, ec)) {
        return Error{
            fmt::format("{} already exists; a checkpoint is never overwritten", folder.string())};
    }
    // A partial folder of this step is what a killed writer left behind: never a checkpoint.
    const fs::path partial =
        modelDir / fmt::format("{}{}{}", kPartialPrefix, state.globalStep, kPartialSuffix);
    fs::remove_all(partial, ec);
    if (!fs::create_directory(partial, ec) || ec) {
        return Error{
            fmt::format("cannot create {}: {}", partial.string(), ec ? ec.message() : "it exists")};
    }
    struct Cleanup {
        fs::path path;
        bool keep = false;
        ~Cleanup() {
            std::error_code ignored;
            if (!keep) fs::remove_all(path, ignored);
        }
    } cleanup{partial};

    WrittenCheckpoint written;
    TrainerState finalState = state;
    {
        std::string sha;
        if (Status st =
                saveWeights(partial / kModelFile, table, read, config, state.globalStep, &sha);
            !st.ok()) {
            return st.error();
        }
        written.fileSha256[kModelFile] = sha;
    }
    {
        const std::vector<std::string> suffixes = stateSuffixes(stateCopies);
        // Optimizer state of the tensors that train only: a frozen tensor has none.
        std::vector<fileio::TensorView> views;
        std::vector<std::pair<int, size_t>> source;  // (buffer, tensor) of each view
        for (size_t copy = 0; copy < suffixes.size(); ++copy) {
            for (size_t i = 0; i < table.tensors().size(); ++i) {
                if (isFrozen(i)) continue;
                const auto& t = table.tensors()[i];
                views.push_back({t.name + suffixes[copy], fileio::DType::F32, t.shape, nullptr,
                                 t.size * sizeof(float)});
                source.push_back({int(copy) + 1, i});
            }
        }
        // Sparsity masks beside the optimizer state (buffer -1 in `source`).
        for (size_t i = 0; masks && i < table.tensors().size(); ++i) {
            if (!masks(i)) continue;
            const auto& t = table.tensors()[i];
            views.push_back({t.name + kMaskSuffix, fileio::DType::U8, t.shape, nullptr, t.size});
            source.push_back({-1, i});
        }
        const std::map<std::string, std::string> metadata = {
            {"format", "pt"},
            {"producer", "wafer-studio"},
            {"optimizer_type", config.optimizer.optimizerType},
            {"step", std::to_string(state.globalStep)},
            {"config_hash", state.configHash},
        };
        std::string sha;
        if (Status st = fileio::writeSafetensors(
                partial / kOptimizerFile, views, metadata, &sha,
                [&](size_t view) {
                    if (source[view].first < 0)
                        return static_cast<const void*>(masks(source[view].second));
                    return static_cast<const void*>(read(source[view].first, source[view].second));
                });
            !st.ok()) {
            return st.error();
        }
        written.fileSha256[kOptimizerFile] = sha;
    }
    finalState.fileSha256 = written.fileSha256;
    {
        const std::string text = stateToJson(finalState).dump(2) + "\n";
        auto writer = fileio::AtomicFileWriter::create(partial / kTrainerStateFile);
        if (!writer.ok()) return writer.error();
        if (Status st = writer->write(text.data(), text.size()); !st.ok()) return st.error();
        if (Status st = writer->commit(); !st.ok()) return st.error();
        written.fileSha256[kTrainerStateFile] = sha256Hex(text);
    }
    if (Status st = fsyncPath(partial); !st.ok()) return st.error();
    killPoint("checkpoint-rename");
    fs::rename(partial, folder, ec);
    if (ec) {
        return Error{fmt::format("cannot rename {} to {}: {}", partial.string(), folder.string(),
                                 ec.message())};
    }
    cleanup.keep = true;
    if (Status st = fsyncPath(modelDir); !st.ok()) return st.error();
    written.folder = folder;
    return written;
}

Result<CheckpointContents> openCheckpoint(const fs::path& folder) {
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) {
        return Error{fmt::format("{}: not a checkpoint folder (it does not exist or is a file)",
                                 folder.string())};
    }
    auto state = readTrainerState(folder / kTrainerStateFile);
    if (!state.ok()) return state.error();

    std::map<std::string, std::string> digests;
    auto openTensors = [&](const char* name) -> Result<fileio::SafetensorsFile> {
        const fs::path path = folder / name;
        if (!fs::is_regular_file(path, ec)) {
            return Error{fmt::format("{}: missing from the checkpoint folder", path.string())};
        }
        auto file = fileio::SafetensorsFile::open(path);
        if (!file.ok()) return file.error();
        auto sha = sha256File(path);
        if (!sha.ok()) return sha.error();
        const std::string& recorded = state->fileSha256[name];
        if (*sha != recorded) {
            return Error{fmt::format(
                "{}: SHA-256 {} differs from {} that {} recorded when the checkpoint was written; "
                "the file was changed or damaged since",
                path.string(), *sha, recorded, kTrainerStateFile)};
        }
        digests[name] = *sha;
        return file;
    };
    auto model = openTensors(kModelFile);
    if (!model.ok()) return model.error();
    auto optimizer = openTensors(kOptimizerFile);
    if (!optimizer.ok()) return optimizer.error();
    auto stateSha = sha256File(folder / kTrainerStateFile);
    if (!stateSha.ok()) return stateSha.error();
    digests[kTrainerStateFile] = *stateSha;

    const auto& meta = model->metadata();
    const auto yaml = meta.find("config_yaml");
    if (yaml == meta.end() || meta.count("producer") == 0 ||
        meta.at("producer") != "wafer-studio") {
        return Error{fmt::format(
            "{}: not written by Wafer Studio (no producer/config_yaml in its metadata); a "
            "foreign model file cannot be resumed from (use runconfig.checkpoint_path to start "
            "from its weights)",
            model->path().string())};
    }
    auto parsed =
        config::parseConfig(yaml->second, (folder / kModelFile).string() + " (config)", {});
    if (!parsed.ok()) {
        return Error{fmt::format("{}: the config in its metadata does not load: {}",
                                 model->path().string(), parsed.error().message)};
    }
    // A checkpoint from a build with fewer config fields verifies by its own text's hash.
    const std::string hash = config::hashConfig(parsed->config);
    if (hash != state->configHash &&
        config::hashOfWrittenConfig(yaml->second) != state->configHash) {
        return Error{fmt::format(
            "{}: its config has hash {}, but {} names {}: the files come from different runs",
            model->path().string(), hash, kTrainerStateFile, state->configHash)};
    }
    const auto& optMeta = optimizer->metadata();
    auto metaValue = [&](const char* key) {
        auto it = optMeta.find(key);
        return it == optMeta.end() ? std::string("(missing)") : it->second;
    };
    if (metaValue("step") != std::to_string(state->globalStep) ||
        metaValue("optimizer_type") != state->optimizerType ||
        metaValue("config_hash") != state->configHash) {
        return Error{fmt::format(
            "{}: its metadata (step {}, optimizer_type {}, config_hash {}) does not match {} "
            "(step {}, {}, {}): the files come from different checkpoints",
            optimizer->path().string(), metaValue("step"), metaValue("optimizer_type"),
            metaValue("config_hash"), kTrainerStateFile, state->globalStep, state->optimizerType,
            state->configHash)};
    }
    return CheckpointContents{folder,
                              std::move(state).value(),
                              std::move(parsed).value().config,
                              std::move(digests),
                              std::move(model).value(),
                              std::move(optimizer).value()};
}

Status loadCheckpointTensors(const CheckpointContents& checkpoint,
                             const model::ParameterTable& table, float* weights,
                             const optim::OptimizerState& optimizer, int stateCopies) {
    return loadCheckpointTensors(
        checkpoint, table,
        [&](int buffer, size_t t, const void* data, size_t bytes) {
            const size_t offset = table.tensors()[t].offset;
            float* out = buffer == 0 ? weights + offset
                                     : stateBuffer(optimizer, size_t(buffer - 1)) + offset;
            std::memcpy(out, data, bytes);
        },
        stateCopies);
}

Status loadCheckpointTensors(const CheckpointContents& checkpoint,
                             const model::ParameterTable& table, const TensorSink& put,
                             int stateCopies, const std::vector<bool>& frozen) {
    assert(frozen.empty() || frozen.size() == table.tensors().size());
    auto isFrozen = [&](size_t t) { return !frozen.empty() && frozen[t]; };
    const std::vector<std::string> suffixes = stateSuffixes(stateCopies);
    // A frozen tensor has no optimizer state; a checkpoint written before frozen tensors lost
    // theirs holds it (never touched, so zeros), and it is skipped.
    size_t frozenCount = 0, frozenStateFound = 0;
    // Check every tensor first: a refusal leaves the buffers untouched.
    for (size_t i = 0; i < table.tensors().size(); ++i) {
        const auto& t = table.tensors()[i];
        if (Status st = checkTensor(checkpoint.model, t.name, t.shape); !st.ok()) return st;
        if (isFrozen(i)) {
            ++frozenCount;
            for (const auto& suffix : suffixes)
                if (checkpoint.optimizer.find(t.name + suffix)) ++frozenStateFound;
            continue;
        }
        for (const auto& suffix : suffixes) {
            if (Status st = checkTensor(checkpoint.optimizer, t.name + suffix, t.shape); !st.ok()) {
                return st;
            }
        }
    }
    const bool olderLayout = frozenCount > 0 && frozenStateFound == frozenCount * suffixes.size();
    const size_t expected =
        table.tensors().size() +
        (table.tensors().size() - (olderLayout ? 0 : frozenCount)) * suffixes.size();
    size_t maskTensors = 0;  // sparsity masks (loadCheckpointMasks) are not optimizer state
    for (const auto& name : checkpoint.optimizer.names())
        maskTensors += name.size() > std::strlen(kMaskSuffix) &&
                               name.compare(name.size() - std::strlen(kMaskSuffix),
                                            std::string::npos, kMaskSuffix) == 0
                           ? 1
                           : 0;
    const size_t found =
        checkpoint.model.names().size() + checkpoint.optimizer.names().size() - maskTensors;
    if (found != expected) {
        return Error{fmt::format(
            "{}: the checkpoint holds {} tensors, the model and its optimizer state {}; it is of "
            "another model or optimizer",
            checkpoint.folder.string(), found, expected)};
    }
    for (size_t i = 0; i < table.tensors().size(); ++i) {
        const auto& t = table.tensors()[i];
        const auto* info = checkpoint.model.find(t.name);
        put(0, i, info->data, info->bytes);
        if (isFrozen(i)) continue;
        for (size_t copy = 0; copy < suffixes.size(); ++copy) {
            info = checkpoint.optimizer.find(t.name + suffixes[copy]);
            put(int(copy) + 1, i, info->data, info->bytes);
        }
    }
    return Status::success();
}

Result<size_t> loadCheckpointMasks(const CheckpointContents& checkpoint,
                                   const model::ParameterTable& table, const MaskSink& put) {
    std::vector<std::pair<size_t, const fileio::TensorInfo*>> found;
    for (size_t i = 0; i < table.tensors().size(); ++i) {
        const auto& t = table.tensors()[i];
        const auto* info = checkpoint.optimizer.find(t.name + kMaskSuffix);
        if (!info) continue;
        if (info->dtype != fileio::DType::U8 || info->shape != t.shape || info->bytes != t.size)
            return Error{fmt::format(
                "{}: {}{} is not a U8 mask of {}'s shape; the checkpoint is damaged or of "
                "another model",
                checkpoint.optimizer.path().string(), t.name, kMaskSuffix, t.name)};
        found.push_back({i, info});
    }
    for (const auto& [i, info] : found)
        put(i, static_cast<const uint8_t*>(static_cast<const void*>(info->data)), info->bytes);
    return found.size();
}

std::vector<std::string> configDifferences(const config::Config& a, const config::Config& b) {
    const auto left = flatten(a);
    const auto right = flatten(b);
    std::map<std::string, std::string> rightByKey(right.begin(), right.end());
    std::vector<std::string> out;
    for (const auto& [key, value] : left) {
        auto it = rightByKey.find(key);
        const std::string other = it == rightByKey.end() ? "(not set)" : it->second;
        if (other != value) out.push_back(fmt::format("{}: {} -> {}", key, value, other));
        if (it != rightByKey.end()) rightByKey.erase(it);
    }
    for (const auto& [key, value] : right) {
        if (rightByKey.count(key)) out.push_back(fmt::format("{}: (not set) -> {}", key, value));
    }
    return out;
}

bool keyKeepsResumeExact(const std::string& key) {
    static const char* const kHarmless[] = {
        "runconfig.log_steps",
        "runconfig.eval_frequency",
        "runconfig.eval_steps",
        "runconfig.checkpoint_steps",
        "runconfig.max_checkpoints",
        "runconfig.save_initial_checkpoint",
        "runconfig.model_dir",
        "runconfig.check_loss_values",
        "runconfig.checkpoint_path",
        "runconfig.load_checkpoint_states",
        // Where MemoryX lives changes no value (a file-backed MemoryX trains the same model);
        // eval_input.data_dir does: the training split then keeps the corpus's held-out end.
        "memoryx.",
        "eval_input.batch_size",
    };
    for (const char* prefix : kHarmless) {
        if (key.rfind(prefix, 0) == 0) return true;
    }
    return false;
}

}  // namespace ws::modelio
