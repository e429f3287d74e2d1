// SPDX-License-Identifier: GPL-3.0-or-later
// Run control requests across processes (see run_control.h).
#include "engine/session/run_control.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <system_error>

#include "engine/fileio/atomic_file.h"
#include "engine/session/folder_lock.h"
#include "engine/session/session.h"

namespace ws::session {
namespace fs = std::filesystem;

namespace {

constexpr std::pair<ControlCommand, const char*> kCommandNames[] = {
    {ControlCommand::Pause, "pause"},
    {ControlCommand::Continue, "continue"},
    {ControlCommand::StepLayer, "step-layer"},
    {ControlCommand::Checkpoint, "checkpoint"},
    {ControlCommand::Stop, "stop"}};

fs::path controlFile(const fs::path& modelDir) {
    return modelDir / std::string(kControlFileName);
}

}  // namespace

const char* controlCommandName(ControlCommand command) {
    for (const auto& [c, name] : kCommandNames)
        if (c == command) return name;
    return "unknown";
}

std::optional<ControlCommand> parseControlCommand(std::string_view name) {
    for (const auto& [c, n] : kCommandNames)
        if (name == n) return c;
    return std::nullopt;
}

Result<std::optional<ControlRequest>> readControlRequest(const fs::path& modelDir) {
    const fs::path file = controlFile(modelDir);
    std::error_code ec;
    if (!fs::exists(file, ec)) return std::optional<ControlRequest>{};
    auto text = fileio::readWholeFile(file);
    if (!text.ok()) {
        // Gone between the check and the read (a session cleared it): no request.
        if (!fs::exists(file, ec)) return std::optional<ControlRequest>{};
        return text.error();
    }
    try {
        const nlohmann::json j = nlohmann::json::parse(*text);
        ControlRequest r;
        r.runId = j.at("run").get<int64_t>();
        r.sequence = j.at("sequence").get<int64_t>();
        r.paused = j.at("paused").get<bool>();
        r.stop = j.at("stop").get<bool>();
        r.checkpoints = j.at("checkpoints").get<int64_t>();
        r.layerSteps = j.at("layer_steps").get<int64_t>();
        return std::optional<ControlRequest>(r);
    } catch (const nlohmann::json::exception& e) {
        return Error{fmt::format("{} is not a run control request: {}", file.string(), e.what())};
    }
}

Status writeControlRequest(const fs::path& modelDir, const ControlRequest& r) {
    const nlohmann::ordered_json j = {
        {"run", r.runId}, {"sequence", r.sequence},       {"paused", r.paused},
        {"stop", r.stop}, {"checkpoints", r.checkpoints}, {"layer_steps", r.layerSteps}};
    return fileio::writeFileAtomically(controlFile(modelDir), j.dump() + "\n");
}

void clearControlRequest(const fs::path& modelDir) {
    std::error_code ec;
    fs::remove(controlFile(modelDir), ec);
}

Result<ControlRequest> sendRunControl(const fs::path& modelDir, int64_t runId,
                                      ControlCommand command) {
    if (modelDir.empty()) return Error{fmt::format("run {} has no model folder", runId)};
    if (!FolderLock::isHeld(modelDir)) {
        return Error{fmt::format("run {} is not training (no process holds {}), so it cannot {}",
                                 runId, modelDir.string(), controlCommandName(command))};
    }
    ControlRequest r;
    if (auto old = readControlRequest(modelDir); old.ok() && old->has_value()) {
        if ((*old)->runId == runId) r = **old;
        r.sequence = (*old)->sequence;  // another run's file: only its sequence goes on
    }
    r.runId = runId;
    ++r.sequence;
    switch (command) {
        case ControlCommand::Pause:
            r.paused = true;
            break;
        case ControlCommand::Continue:
            r.paused = false;
            break;
        case ControlCommand::StepLayer:
            ++r.layerSteps;
            break;
        case ControlCommand::Checkpoint:
            ++r.checkpoints;
            break;
        case ControlCommand::Stop:
            r.stop = true;
            break;
    }
    if (Status st = writeControlRequest(modelDir, r); !st.ok()) return st.error();
    return r;
}

RunControlFollower::RunControlFollower(Session& session, std::chrono::milliseconds interval)
    : m_session(session), m_interval(interval) {}

std::vector<std::string> RunControlFollower::poll() {
    std::vector<std::string> applied;
    const auto now = std::chrono::steady_clock::now();
    if (m_readOnce && now - m_lastRead < m_interval) return applied;
    const auto place = m_session.place();
    if (!place) return applied;  // no folder yet: nobody can have asked this session anything
    m_readOnce = true;
    m_lastRead = now;
    auto read = readControlRequest(place->modelDir);
    if (!read.ok()) {
        if (read.error().message != m_lastError) applied.push_back(read.error().message);
        m_lastError = read.error().message;
        return applied;
    }
    m_lastError.clear();
    if (!read->has_value()) return applied;
    const ControlRequest& r = **read;
    if (r.runId != place->runId || r.sequence == m_applied.sequence) return applied;
    if (r.paused != m_applied.paused) {
        m_session.setPaused(r.paused);
        applied.push_back(r.paused ? "pause requested (between layers)" : "continue requested");
    }
    for (int64_t i = m_applied.layerSteps; i < r.layerSteps; ++i) m_session.stepOnePhase();
    if (r.layerSteps > m_applied.layerSteps) {
        applied.push_back(fmt::format("{} layer phase{} requested",
                                      r.layerSteps - m_applied.layerSteps,
                                      r.layerSteps - m_applied.layerSteps == 1 ? "" : "s"));
    }
    if (r.checkpoints > m_applied.checkpoints) {
        m_session.requestCheckpoint();
        applied.push_back("checkpoint requested (after the step in flight)");
    }
    if (r.stop && !m_applied.stop) {
        m_session.requestStop();
        applied.push_back("stop requested (after the step in flight)");
    }
    m_applied = r;
    return applied;
}

}  // namespace ws::session
