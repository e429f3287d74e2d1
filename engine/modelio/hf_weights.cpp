// SPDX-License-Identifier: GPL-3.0-or-later
// HfWeights (see hf_weights.h): one reader over a Hugging Face folder's weights, single file or
// sharded, safetensors or pytorch_model.bin.
#include "engine/modelio/hf_weights.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <system_error>

#include "engine/fileio/atomic_file.h"
#include "engine/fileio/safetensors.h"
#include "engine/modelio/torch_checkpoint.h"

namespace ws::modelio {
namespace fs = std::filesystem;

// One weights file: safetensors or a torch.save zip.
struct HfWeights::Shard {
    std::optional<fileio::SafetensorsFile> safetensors;
    std::optional<TorchCheckpoint> torch;

    Result<std::vector<float>> readAsFloat(std::string_view name) const {
        return safetensors ? safetensors->readAsFloat(name) : torch->readAsFloat(name);
    }
};

namespace {

bool isSafetensors(const fs::path& file) {
    return file.extension() == ".safetensors";
}

// The weight map of an index: tensor name -> shard file name, every shard a plain file name.
Result<std::map<std::string, std::string>> readWeightMap(const fs::path& index) {
    auto text = fileio::readWholeFile(index);
    if (!text.ok()) return text.error();
    const auto json = nlohmann::json::parse(*text, nullptr, false);
    if (json.is_discarded() || !json.is_object()) {
        return Error{
            fmt::format("{}: not a JSON object; a shard index is {{\"metadata\": ..., "
                        "\"weight_map\": {{tensor name: shard file}}}}",
                        index.string())};
    }
    const auto it = json.find("weight_map");
    if (it == json.end() || !it->is_object() || it->empty()) {
        return Error{fmt::format(
            "{}: no \"weight_map\" object naming each tensor's shard; the index is damaged "
            "(download it again)",
            index.string())};
    }
    std::map<std::string, std::string> map;
    for (const auto& [tensor, shard] : it->items()) {
        if (!shard.is_string()) {
            return Error{fmt::format("{}: weight_map[\"{}\"] is {}, not a shard file name",
                                     index.string(), tensor, shard.type_name())};
        }
        const std::string file = shard.get<std::string>();
        if (file.empty() || file == "." || file == ".." ||
            file.find_first_of("/\\") != std::string::npos) {
            return Error{fmt::format(
                "{}: weight_map[\"{}\"] is \"{}\"; a shard must be a file name in the index's "
                "own folder",
                index.string(), tensor, file)};
        }
        map.emplace(tensor, file);
    }
    return map;
}

}  // namespace

bool isHfWeightsIndex(const fs::path& file) {
    const std::string name = file.filename().string();
    return name.size() > 11 && name.ends_with(".index.json");
}

Result<fs::path> findHfWeightsFile(const fs::path& folder) {
    std::error_code ec;
    for (std::string_view name : kHfWeightsFiles) {
        if (fs::exists(folder / name, ec)) return folder / name;
    }
    return Error{fmt::format(
        "{}: no weights file; a Hugging Face folder holds model.safetensors, "
        "model.safetensors.index.json with its model-0000N-of-0000M.safetensors shards, "
        "pytorch_model.bin or pytorch_model.bin.index.json with its shards",
        folder.string())};
}

HfWeights::HfWeights(HfWeights&&) noexcept = default;
HfWeights& HfWeights::operator=(HfWeights&&) noexcept = default;
HfWeights::~HfWeights() = default;

Status HfWeights::addShard(const fs::path& file, const fs::path& index) {
    auto shard = std::make_unique<Shard>();
    std::vector<std::string> names;
    if (isSafetensors(file)) {
        auto opened = fileio::SafetensorsFile::open(file);
        if (!opened.ok()) return opened.error();
        shard->safetensors.emplace(std::move(opened).value());
        names = shard->safetensors->names();
        for (const std::string& n : names) {
            const auto* t = shard->safetensors->find(n);
            m_tensors[n] = {n, t->dtype, t->shape, file};
        }
        if (index.empty()) m_metadata = shard->safetensors->metadata();
    } else {
        auto opened = TorchCheckpoint::open(file);
        if (!opened.ok()) return opened.error();
        shard->torch.emplace(std::move(opened).value());
        names = shard->torch->names();
        for (const std::string& n : names) {
            const auto* t = shard->torch->find(n);
            m_tensors[n] = {n, t->dtype, t->shape, file};
        }
    }
    for (const std::string& n : names) m_shardOf[n] = m_shards.size();
    m_shards.push_back(std::move(shard));
    return Status::success();
}

Result<HfWeights> HfWeights::open(const fs::path& path) {
    std::error_code ec;
    fs::path file = path;
    if (fs::is_directory(path, ec)) {
        auto found = findHfWeightsFile(path);
        if (!found.ok()) return found.error();
        file = std::move(found).value();
    }
    HfWeights weights;
    weights.m_path = file;
    if (!isHfWeightsIndex(file)) {
        if (!fs::exists(file, ec)) return Error{fmt::format("{}: no such file", file.string())};
        if (Status st = weights.addShard(file, {}); !st.ok()) return st.error();
        return weights;
    }

    auto map = readWeightMap(file);
    if (!map.ok()) return map.error();
    const fs::path folder = file.parent_path().empty() ? fs::path(".") : file.parent_path();
    std::map<std::string, std::vector<std::string>> tensorsOf;  // shard -> tensors it should hold
    for (const auto& [tensor, shard] : *map) tensorsOf[shard].push_back(tensor);
    for (const auto& [shard, tensors] : tensorsOf) {
        const fs::path shardFile = folder / shard;
        if (!fs::exists(shardFile, ec)) {
            return Error{fmt::format(
                "{}: shard {} is missing from {} (the index puts {} tensor(s) in it, e.g. {}); "
                "download the whole folder again",
                file.string(), shard, folder.string(), tensors.size(), tensors.front())};
        }
        if (Status st = weights.addShard(shardFile, file); !st.ok()) return st.error();
    }
    // Each shard holds exactly what the weight map says; a tensor in two shards shows up as one
    // of them holding a tensor the map puts elsewhere.
    for (const auto& [tensor, info] : weights.m_tensors) {
        const auto it = map->find(tensor);
        const std::string holder = info.file.filename().string();
        if (it == map->end()) {
            return Error{fmt::format(
                "{}: shard {} holds tensor {}, which the index's weight_map does not name; the "
                "index does not belong to these shards (download the folder again)",
                file.string(), holder, tensor)};
        }
    }
    for (size_t s = 0; s < weights.m_shards.size(); ++s) {
        const Shard& shard = *weights.m_shards[s];
        const std::vector<std::string> names =
            shard.safetensors ? shard.safetensors->names() : shard.torch->names();
        const fs::path shardFile =
            shard.safetensors ? shard.safetensors->path() : shard.torch->path();
        for (const std::string& n : names) {
            const std::string& mapped = map->at(n);
            if (mapped != shardFile.filename().string()) {
                return Error{fmt::format(
                    "{}: tensor {} is in shard {}, but the index's weight_map puts it in {}; "
                    "the index does not belong to these shards (download the folder again)",
                    file.string(), n, shardFile.filename().string(), mapped)};
            }
        }
    }
    for (const auto& [tensor, shard] : *map) {
        if (!weights.m_tensors.count(tensor)) {
            return Error{fmt::format(
                "{}: the index puts tensor {} in shard {}, which does not hold it; the shard is "
                "damaged or from another download (download the folder again)",
                file.string(), tensor, shard)};
        }
    }
    return weights;
}

std::vector<fs::path> HfWeights::files() const {
    std::vector<fs::path> out;
    for (const auto& s : m_shards)
        out.push_back(s->safetensors ? s->safetensors->path() : s->torch->path());
    return out;
}

std::vector<std::string> HfWeights::names() const {
    std::vector<std::string> out;
    out.reserve(m_tensors.size());
    for (const auto& [name, info] : m_tensors) out.push_back(name);
    return out;
}

const HfTensorInfo* HfWeights::find(std::string_view name) const {
    const auto it = m_tensors.find(name);
    return it == m_tensors.end() ? nullptr : &it->second;
}

Result<std::vector<float>> HfWeights::readAsFloat(std::string_view name) const {
    const auto it = m_shardOf.find(name);
    if (it == m_shardOf.end()) {
        return Error{fmt::format("{}: no tensor {}", m_path.string(), name)};
    }
    return m_shards[it->second]->readAsFloat(name);
}

}  // namespace ws::modelio
