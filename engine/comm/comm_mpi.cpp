// SPDX-License-Identifier: GPL-3.0-or-later
// The Open MPI Comm (see comm.h): MPI_COMM_WORLD, duplicated once per channel. Messages larger
// than MPI's int counts are sent in pieces of 1 GiB. Built without MPI, fromEnvironment() gives
// the one-process Comm, or an error when mpirun (or srun) started more than one process. Either
// way an srun step of several tasks without PMIx is refused (see srunWithoutPmix).
#include "engine/comm/comm.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#ifdef WAFER_HAVE_MPI
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace ws::comm {

namespace {

// An srun step of several tasks that started wafer without PMIx (no --mpi=pmix and the cluster's
// MpiDefault none): every task would join no job, run alone and write the same run folder and
// store. The refusal names the fix; empty when this process is not such a task. The batch script
// itself runs in no step with tasks (no SLURM_STEP_NUM_TASKS), so one `wafer` there runs alone.
std::string srunWithoutPmix() {
    if (launchedByMpirun()) return {};
    const char* tasks = std::getenv("SLURM_STEP_NUM_TASKS");
    if (!tasks || std::atoi(tasks) <= 1) return {};
    return fmt::format(
        "srun started {} tasks of wafer without PMIx, so each would train alone on the same "
        "files: start them with `srun --mpi=pmix wafer ...` (or MpiDefault=pmix in slurm.conf), "
        "or run `mpirun wafer ...` inside the batch job",
        tasks);
}

}  // namespace

#ifdef WAFER_HAVE_MPI

namespace {

constexpr size_t kPiece = size_t(1) << 30;
constexpr int kNameBytes = 256;  // a host name or a program identity, as exchanged at start

// Waits for a non-blocking operation without spinning a core: Open MPI's blocking calls poll
// flat out, and a job has a loader and a MemoryX thread per process waiting most of the time,
// which starves the compute threads as soon as processes share cores. Polls at once a few times
// (a short message is there within microseconds), then every 20-100 µs; each MPI_Test also moves
// the transfer on.
// With a deadline: false when the operation has not completed by then (or failed).
bool waitFor(MPI_Request& request, std::chrono::steady_clock::time_point deadline =
                                       std::chrono::steady_clock::time_point::max()) {
    for (int polls = 0;; ++polls) {
        int done = 0;
        if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
        if (done) return true;
        if (polls < 64) continue;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::microseconds(polls < 1024 ? 20 : 100));
    }
}

// Every rank's `text` (cut to kNameBytes - 1), in rank order.
std::vector<std::string> allGather(const std::string& text, int ranks) {
    std::vector<char> mine(kNameBytes, 0), all(size_t(ranks) * kNameBytes, 0);
    std::copy_n(text.data(), std::min(text.size(), size_t(kNameBytes - 1)), mine.data());
    MPI_Allgather(mine.data(), kNameBytes, MPI_CHAR, all.data(), kNameBytes, MPI_CHAR,
                  MPI_COMM_WORLD);
    std::vector<std::string> out;
    for (int r = 0; r < ranks; ++r) out.emplace_back(all.data() + size_t(r) * kNameBytes);
    return out;
}

class MpiComm final : public Comm {
public:
    explicit MpiComm(const std::string& identity) {
        MPI_Comm_rank(MPI_COMM_WORLD, &m_rank);
        MPI_Comm_size(MPI_COMM_WORLD, &m_size);
        for (MPI_Comm& c : m_channels) MPI_Comm_dup(MPI_COMM_WORLD, &c);
        // A sweep goes on without a worker that died: errors on its channel are returned.
        MPI_Comm_set_errhandler(comm(Channel::Sweep), MPI_ERRORS_RETURN);
        char name[MPI_MAX_PROCESSOR_NAME] = {};
        int length = 0;
        MPI_Get_processor_name(name, &length);
        m_host.assign(name, size_t(std::max(0, length)));
        m_hosts = allGather(m_host, m_size);
        m_identities = allGather(identity, m_size);
    }

    // The first rank whose program differs from rank 0's, described; empty when all agree.
    std::string identityMismatch() const {
        for (int r = 1; r < m_size; ++r) {
            if (m_identities[size_t(r)] == m_identities[0]) continue;
            return fmt::format(
                "rank {} on {} runs '{}' but rank 0 on {} runs '{}': every process of the job "
                "must run the same build (install the same wafer on every host)",
                r, m_hosts[size_t(r)], m_identities[size_t(r)], m_hosts[0], m_identities[0]);
        }
        return {};
    }
    ~MpiComm() override {
        for (MPI_Comm& c : m_channels) MPI_Comm_free(&c);
        MPI_Finalize();
    }
    MpiComm(const MpiComm&) = delete;
    MpiComm& operator=(const MpiComm&) = delete;

    int rank() const override { return m_rank; }
    int size() const override { return m_size; }
    std::string host() const override { return m_host; }
    std::string hostOf(int rank) const override { return m_hosts[size_t(rank)]; }

    void broadcast(Channel channel, void* data, size_t bytes, int root) override {
        auto* p = static_cast<char*>(data);
        for (size_t done = 0; done < bytes; done += kPiece) {
            const size_t n = std::min(kPiece, bytes - done);
            MPI_Request request;
            MPI_Ibcast(p + done, int(n), MPI_BYTE, root, comm(channel), &request);
            waitFor(request);
        }
    }

    void gather(Channel channel, const void* send, size_t sendBytes, void* recv,
                const std::vector<size_t>& recvBytes, int root) override {
        // In rounds of at most kPiece bytes per rank; round k carries bytes [k*kPiece, ...) of
        // every rank's message, placed at that rank's offset in recv.
        size_t largest = 0;
        for (size_t b : recvBytes) largest = std::max(largest, b);
        const auto ranks = static_cast<size_t>(m_size);
        std::vector<int> counts(ranks), displs(ranks);
        for (size_t done = 0; done == 0 || done < largest; done += kPiece) {
            const auto piece = [&](size_t total) {
                return int(total > done ? std::min(kPiece, total - done) : 0);
            };
            std::vector<char> staging;
            char* out = nullptr;
            if (m_rank == root) {
                size_t offset = 0;
                bool contiguous = true;
                for (int r = 0; r < m_size; ++r) {
                    counts[size_t(r)] = piece(recvBytes[size_t(r)]);
                    displs[size_t(r)] = int(offset);
                    contiguous = contiguous && (recvBytes[size_t(r)] <= kPiece);
                    offset += size_t(counts[size_t(r)]);
                }
                if (contiguous) {
                    out = static_cast<char*>(recv);
                } else {
                    staging.resize(offset);
                    out = staging.data();
                }
            }
            MPI_Request request;
            MPI_Igatherv(static_cast<const char*>(send) + std::min(done, sendBytes),
                         piece(sendBytes), MPI_BYTE, out, counts.data(), displs.data(), MPI_BYTE,
                         root, comm(channel), &request);
            waitFor(request);
            if (m_rank == root && out != recv) {
                size_t base = 0;
                for (int r = 0; r < m_size; ++r) {
                    std::copy_n(
                        staging.data() + displs[size_t(r)], counts[size_t(r)],
                        static_cast<char*>(recv) + base + std::min(done, recvBytes[size_t(r)]));
                    base += recvBytes[size_t(r)];
                }
            }
            if (largest == 0) break;
        }
    }

    void barrier() override { MPI_Barrier(comm(Channel::Control)); }

    bool send(Channel channel, int dest, int tag, const void* data, size_t bytes,
              std::chrono::milliseconds timeout) override {
        if (bytes > size_t(std::numeric_limits<int>::max())) return false;
        MPI_Request request;
        if (MPI_Isend(data, int(bytes), MPI_BYTE, dest, tag, comm(channel), &request) !=
            MPI_SUCCESS)
            return false;
        if (waitFor(request, std::chrono::steady_clock::now() + timeout)) return true;
        MPI_Cancel(&request);
        MPI_Request_free(&request);
        return false;
    }

    void sendExact(Channel channel, int dest, int tag, const void* data, size_t bytes) override {
        const auto* p = static_cast<const char*>(data);
        for (size_t done = 0; done == 0 || done < bytes; done += kPiece) {
            const size_t n = std::min(kPiece, bytes - done);
            MPI_Request request;
            MPI_Isend(p + done, int(n), MPI_BYTE, dest, tag, comm(channel), &request);
            waitFor(request);
            if (bytes == 0) break;
        }
    }

    void receiveExact(Channel channel, int source, int tag, void* data, size_t bytes) override {
        auto* p = static_cast<char*>(data);
        for (size_t done = 0; done == 0 || done < bytes; done += kPiece) {
            const size_t n = std::min(kPiece, bytes - done);
            MPI_Request request;
            MPI_Irecv(p + done, int(n), MPI_BYTE, source, tag, comm(channel), &request);
            waitFor(request);
            if (bytes == 0) break;
        }
    }

    std::optional<Message> tryReceive(Channel channel, int source, int tag) override {
        int found = 0;
        MPI_Message handle;
        MPI_Status status;
        if (MPI_Improbe(source == kAnySource ? MPI_ANY_SOURCE : source,
                        tag == kAnyTag ? MPI_ANY_TAG : tag, comm(channel), &found, &handle,
                        &status) != MPI_SUCCESS ||
            !found)
            return std::nullopt;
        int count = 0;
        MPI_Get_count(&status, MPI_BYTE, &count);
        Message m{status.MPI_SOURCE, status.MPI_TAG, std::string(size_t(std::max(0, count)), '\0')};
        MPI_Request request;
        if (MPI_Imrecv(m.bytes.data(), count, MPI_BYTE, &handle, &request) != MPI_SUCCESS)
            return std::nullopt;
        waitFor(request);
        return m;
    }

    [[noreturn]] void abort(int code, const std::string& message) override {
        std::cerr << fmt::format("wafer: rank {} on {}: {}\n", m_rank, m_host, message)
                  << std::flush;
        MPI_Abort(MPI_COMM_WORLD, code);
        std::exit(code);
    }

private:
    MPI_Comm comm(Channel channel) const { return m_channels[size_t(channel)]; }

    int m_rank = 0;
    int m_size = 1;
    std::string m_host;
    std::vector<std::string> m_hosts, m_identities;  // (ranks)
    MPI_Comm m_channels[4] = {};                     // one per Channel
};

}  // namespace

bool mpiAvailable() {
    return true;
}

Result<std::unique_ptr<Comm>> fromEnvironment(int* argc, char*** argv,
                                              const std::string& programIdentity) {
    if (std::string refusal = srunWithoutPmix(); !refusal.empty()) return Error{refusal};
    if (!launchedByMpirun()) return singleProcess();
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        return Error{"MPI_Init_thread failed"};
    }
    if (provided < MPI_THREAD_MULTIPLE) {
        MPI_Finalize();
        return Error{
            "this Open MPI has no MPI_THREAD_MULTIPLE support, which wafer needs across "
            "processes (the weight and gradient streams run on their own threads)"};
    }
    auto comm = std::make_unique<MpiComm>(programIdentity);
    if (std::string mismatch = comm->identityMismatch(); !mismatch.empty()) return Error{mismatch};
    return std::unique_ptr<Comm>(std::move(comm));
}

#else  // no MPI in this build

bool mpiAvailable() {
    return false;
}

Result<std::unique_ptr<Comm>> fromEnvironment(int*, char***, const std::string&) {
    if (std::string refusal = srunWithoutPmix(); !refusal.empty()) return Error{refusal};
    // mpirun states the job's size; srun --mpi=pmix only in Slurm's variable.
    const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
    if (!size) size = std::getenv("SLURM_STEP_NUM_TASKS");
    if (launchedByMpirun() && size && std::atoi(size) > 1) {
        return Error{
            "started by mpirun or srun with several processes, but this wafer was built without "
            "Open MPI: install openmpi-bin and libopenmpi-dev (installer/deps.sh) and rebuild"};
    }
    return singleProcess();
}

#endif

}  // namespace ws::comm
