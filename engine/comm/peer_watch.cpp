// SPDX-License-Identifier: GPL-3.0-or-later
// PeerWatch (see peer_watch.h): heartbeats between rank 0 and every other rank on the Sweep
// channel, and the message naming a peer that fell silent.
#include "engine/comm/peer_watch.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <vector>

namespace ws::comm {

namespace {

// Far above the sweep protocol's tags (engine/sweep/cluster.h), below MPI's guaranteed 32767.
constexpr int kHeartbeat = 32000;
constexpr int kGoodbye = 32001;

}  // namespace

PeerWatch::PeerWatch(Comm& comm, std::chrono::milliseconds timeout, OnSilent onSilent,
                     std::chrono::milliseconds period)
    : m_comm(comm), m_timeout(timeout), m_period(period), m_onSilent(std::move(onSilent)) {
    if (comm.size() > 1 && timeout.count() > 0) m_thread = std::thread([this] { run(); });
}

PeerWatch::~PeerWatch() {
    if (!m_thread.joinable()) return;
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_wake.notify_all();
    m_thread.join();
    const char bye = 0;
    if (m_comm.rank() != 0)
        m_comm.send(Channel::Sweep, 0, kGoodbye, &bye, 1, std::chrono::seconds(1));
}

void PeerWatch::run() {
    using Clock = std::chrono::steady_clock;
    const auto ranks = size_t(m_comm.size());
    const bool root = m_comm.rank() == 0;
    // A rank is judged only once heard from: ranks start their watches at slightly different
    // moments, and one that never answered at all is left to mpirun.
    std::vector<std::optional<Clock::time_point>> lastHeard(ranks);
    std::vector<bool> gone(ranks, false);
    const char beat = 1;
    std::unique_lock lock(m_mutex);
    while (!m_stop) {
        lock.unlock();
        if (!root) m_comm.send(Channel::Sweep, 0, kHeartbeat, &beat, 1, m_period);
        while (root) {
            const auto m = m_comm.tryReceive(Channel::Sweep, kAnySource, kAnyTag);
            if (!m) break;
            if (m->source < 0 || size_t(m->source) >= ranks) continue;
            if (m->tag == kGoodbye) gone[size_t(m->source)] = true;
            lastHeard[size_t(m->source)] = Clock::now();
        }
        const auto now = Clock::now();
        for (size_t r = 1; root && r < ranks; ++r) {
            if (gone[r] || !lastHeard[r]) continue;
            const auto silent =
                std::chrono::duration_cast<std::chrono::milliseconds>(now - *lastHeard[r]);
            if (silent < m_timeout) continue;
            const std::string message = silentPeerMessage(int(r), m_comm.hostOf(int(r)), silent);
            if (m_onSilent) {
                m_onSilent(int(r), message);
            } else {
                std::cerr << fmt::format("wafer: rank 0 on {}: {}\n", m_comm.host(), message)
                          << std::flush;
            }
            gone[r] = true;  // reported once
        }
        lock.lock();
        m_wake.wait_for(lock, m_period, [this] { return m_stop; });
    }
}

Result<std::chrono::milliseconds> peerTimeoutFromEnvironment() {
    const char* text = std::getenv("WAFER_PEER_TIMEOUT");
    if (!text || !*text) return std::chrono::milliseconds(30000);
    char* end = nullptr;
    errno = 0;
    const double seconds = std::strtod(text, &end);
    if (errno != 0 || *end != '\0' || !std::isfinite(seconds) || seconds < 0 || seconds > 1e6) {
        return Error{fmt::format(
            "WAFER_PEER_TIMEOUT is '{}': expected the seconds after which rank 0 names a silent "
            "process of the job (e.g. 30; 0 turns the watch off)",
            text)};
    }
    return std::chrono::milliseconds(std::llround(seconds * 1000.0));
}

std::string silentPeerMessage(int rank, const std::string& host, std::chrono::milliseconds silent) {
    return fmt::format(
        "rank {} on {} has not answered for {:.1f} s: its host is down or the network to it is "
        "cut (or the process is stopped). mpirun ends the job once TCP keepalive gives the host "
        "up (--mca oob_tcp_keepalive_time, _intvl, _probes); `wafer train --resume` then "
        "continues from the newest checkpoint, on the remaining hosts or in one process",
        rank, host, double(silent.count()) / 1000.0);
}

}  // namespace ws::comm
