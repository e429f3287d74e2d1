// SPDX-License-Identifier: GPL-3.0-or-later
// The one-process Comm and the helpers every Comm shares (see comm.h).
#include "engine/comm/comm.h"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iostream>
#include <mutex>
#include <thread>

namespace ws::comm {

namespace {

class SingleProcess final : public Comm {
public:
    int rank() const override { return 0; }
    int size() const override { return 1; }
    std::string host() const override {
        char name[256] = {};
        gethostname(name, sizeof name - 1);
        return name;
    }
    std::string hostOf(int) const override { return host(); }
    void broadcast(Channel, void*, size_t, int) override {}
    void gather(Channel, const void* send, size_t sendBytes, void* recv, const std::vector<size_t>&,
                int) override {
        if (sendBytes > 0 && send != recv) std::memcpy(recv, send, sendBytes);
    }
    void barrier() override {}
    // Messages to rank 0 (itself) wait in a mailbox: a one-process job can run the same
    // message-passing code as a real one (tests, a sweep whose "workers" are rank 0).
    bool send(Channel channel, int dest, int tag, const void* data, size_t bytes,
              std::chrono::milliseconds) override {
        if (dest != 0) return false;
        std::lock_guard lock(m_mutex);
        m_mailbox.push_back(
            {channel, {0, tag, std::string(static_cast<const char*>(data), bytes)}});
        return true;
    }
    std::optional<Message> tryReceive(Channel channel, int source, int tag) override {
        if (source != kAnySource && source != 0) return std::nullopt;
        std::lock_guard lock(m_mutex);
        for (auto it = m_mailbox.begin(); it != m_mailbox.end(); ++it) {
            if (it->first != channel || (tag != kAnyTag && it->second.tag != tag)) continue;
            Message m = std::move(it->second);
            m_mailbox.erase(it);
            return m;
        }
        return std::nullopt;
    }
    // Through the mailbox too: a message to itself must be sent before it is received.
    void sendExact(Channel channel, int dest, int tag, const void* data, size_t bytes) override {
        if (!send(channel, dest, tag, data, bytes, {}))
            abort(1, "a one-process job has no rank " + std::to_string(dest) + " to send to");
    }
    void receiveExact(Channel channel, int source, int tag, void* data, size_t bytes) override {
        auto m = tryReceive(channel, source, tag);
        if (!m || m->bytes.size() != bytes)
            abort(1, "a one-process job received no message of the size it expected from itself");
        std::memcpy(data, m->bytes.data(), bytes);
    }
    [[noreturn]] void abort(int code, const std::string& message) override {
        std::cerr << "wafer: " << message << "\n";
        std::exit(code);
    }

private:
    std::mutex m_mutex;
    std::deque<std::pair<Channel, Message>> m_mailbox;
};

}  // namespace

std::optional<Message> Comm::receive(Channel channel, int source, int tag,
                                     std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (int polls = 0;; ++polls) {
        if (auto m = tryReceive(channel, source, tag)) return m;
        if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
        if (polls < 64) continue;
        std::this_thread::sleep_for(std::chrono::microseconds(polls < 1024 ? 20 : 200));
    }
}

std::unique_ptr<Comm> singleProcess() {
    return std::make_unique<SingleProcess>();
}

// mpirun (also mpirun inside a Slurm batch job, which starts its daemons with srun) sets
// OMPI_COMM_WORLD_*; `srun --mpi=pmix` starts the ranks itself and sets only PMIX_RANK (and
// SLURM_*), which Open MPI's MPI_Init joins just the same.
bool launchedByMpirun() {
    return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

// In that order: mpirun's rank, srun --mpi=pmix's, and a plain srun task's (SLURM_PROCID, so
// that of the tasks of an srun without PMIx, which fromEnvironment refuses, one says why).
int rankFromEnvironment() {
    for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"}) {
        if (const char* rank = std::getenv(name)) return std::atoi(rank);
    }
    return 0;
}

void broadcastString(Comm& comm, Channel channel, std::string& text, int root) {
    uint64_t size = text.size();
    comm.broadcast(channel, &size, sizeof size, root);
    text.resize(size_t(size));
    if (size > 0) comm.broadcast(channel, text.data(), size_t(size), root);
}

void transfer(Comm& comm, Channel channel, const void* send, void* recv, size_t bytes, int from,
              int to) {
    std::vector<size_t> sizes(size_t(comm.size()), 0);
    sizes[size_t(from)] = bytes;
    const bool sender = comm.rank() == from;
    comm.gather(channel, sender ? send : nullptr, sender ? bytes : 0, recv, sizes, to);
}

SystemRange systemsOfRank(int systems, int ranks, int rank) {
    const int64_t n = systems, p = ranks, r = rank;
    const int first = int(r * n / p), end = int((r + 1) * n / p);
    return {first, end - first};
}

}  // namespace ws::comm
