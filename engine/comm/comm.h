// SPDX-License-Identifier: GPL-3.0-or-later
// Comm: the processes of one training job and the few collective operations the streamed step
// needs between them (Open MPI underneath, but no MPI type leaves comm_mpi.cpp). A job that was
// not started by `mpirun` is one process (rank 0 of 1) and every operation is a no-op or a copy.
//
// Channels: each operation names the channel it travels on (its own MPI communicator), so the
// weight broadcasts of the streamer's loader thread, the gradient gathers of MemoryX's thread and
// the step orders of the session's thread never interleave. Within a channel every rank must
// issue the same operations in the same order (MPI's rule for collectives).
// Thread-safety: any thread may use any channel, one thread per channel at a time.
// Failure: an MPI error ends the job (MPI's default handler), except for point-to-point messages
// (send, receive), which report a dead peer to the caller; abort() ends it on purpose.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/result.h"

namespace ws::comm {

enum class Channel {
    Control,    // the session's step orders (rank 0 -> all)
    Weights,    // each layer visit's weights (MemoryX on rank 0 -> all)
    Gradients,  // each layer's gradient slices and the step's losses (all -> rank 0)
    Sweep,      // point-to-point: sweep trials out, their records back (engine/sweep/cluster.h)
};

// Point-to-point messages (send / tryReceive / receive) match any source or tag with these.
inline constexpr int kAnySource = -1;
inline constexpr int kAnyTag = -1;

struct Message {
    int source = 0;
    int tag = 0;
    std::string bytes;
};

class Comm {
public:
    virtual ~Comm() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    virtual std::string host() const = 0;
    virtual std::string hostOf(int rank) const = 0;  // every rank's host, known from the start

    // Copies `bytes` at `data` on rank `root` to `data` on every rank.
    virtual void broadcast(Channel channel, void* data, size_t bytes, int root) = 0;
    // Rank r sends sendBytes (== recvBytes[r]); `root` receives them all back to back in rank
    // order into `recv` (read on root only). recvBytes, every rank's size, is the same on all.
    virtual void gather(Channel channel, const void* send, size_t sendBytes, void* recv,
                        const std::vector<size_t>& recvBytes, int root) = 0;
    virtual void barrier() = 0;

    // Point-to-point, unlike the collectives free of MPI's same-order rule: any thread may send,
    // one thread per channel receives. Messages from one sender with one tag arrive in order.
    // Errors on these (a peer that died) are returned, never fatal: the Sweep channel reports
    // them to its caller instead of ending the job.
    // Sends `bytes` to `dest` with `tag` (>= 0). False when it was not delivered within
    // `timeout` (a dead or stuck peer); the message is then withdrawn.
    virtual bool send(Channel channel, int dest, int tag, const void* data, size_t bytes,
                      std::chrono::milliseconds timeout = std::chrono::hours(24 * 365)) = 0;
    // The next message from `source` with `tag` (kAnySource, kAnyTag: any) if one has arrived.
    virtual std::optional<Message> tryReceive(Channel channel, int source, int tag) = 0;
    // Waits for one, polling without spinning a core (as the collectives do); nullopt after
    // `timeout`.
    std::optional<Message> receive(Channel channel, int source, int tag,
                                   std::chrono::milliseconds timeout);
    // Point-to-point for operations built from messages (the tree reduce, rank_tree.h): sends
    // exactly `bytes` to `dest` / receives exactly `bytes` from `source`, with `tag`, in pieces
    // of at most 1 GiB, waiting without spinning a core. Like the collectives, every rank pairs
    // its sends and receives in the same order, and an error ends the job.
    virtual void sendExact(Channel channel, int dest, int tag, const void* data, size_t bytes) = 0;
    virtual void receiveExact(Channel channel, int source, int tag, void* data, size_t bytes) = 0;
    // Ends every process of the job with `code` after writing `message` (naming this rank and
    // host) to stderr. For failures that leave other ranks waiting inside a collective.
    [[noreturn]] virtual void abort(int code, const std::string& message) = 0;
};

// The one-process job.
std::unique_ptr<Comm> singleProcess();

// True when this build has Open MPI.
bool mpiAvailable();

// True when this process was started by mpirun or by `srun --mpi=pmix` (Open MPI's or PMIx's
// environment says so).
bool launchedByMpirun();

// The job this process belongs to: the MPI world when launched by mpirun (MPI is initialised
// here, with MPI_THREAD_MULTIPLE, and finalised when the Comm is destroyed), else one process.
// Every rank states its program identity (e.g. "wafer 0.1.0 (abc123)"); all ranks learn all
// identities and hosts at once, so when one differs every rank fails alike, with one message
// naming the rank, its host and both identities. Also fails when launched by mpirun but built
// without MPI, or when MPI lacks thread support.
Result<std::unique_ptr<Comm>> fromEnvironment(int* argc, char*** argv,
                                              const std::string& programIdentity = {});

// This process's rank as mpirun's environment states it (0 outside mpirun): who reports an
// error when fromEnvironment failed and there is no Comm to ask.
int rankFromEnvironment();

// Convenience: sends a string as a message.
inline bool sendString(Comm& comm, Channel channel, int dest, int tag, const std::string& text,
                       std::chrono::milliseconds timeout = std::chrono::hours(24 * 365)) {
    return comm.send(channel, dest, tag, text.data(), text.size(), timeout);
}

// Convenience: broadcasts a string (its size, then its bytes) from root.
void broadcastString(Comm& comm, Channel channel, std::string& text, int root);

// Moves `bytes` from `send` on rank `from` to `recv` on rank `to` (a gather in which only `from`
// sends): every rank of the job calls it alike. send is read on `from`, recv written on `to`.
void transfer(Comm& comm, Channel channel, const void* send, void* recv, size_t bytes, int from,
              int to);

// The systems rank r of P computes out of N: the contiguous block [r*N/P, (r+1)*N/P), so each
// rank gets at least one system when P <= N and the blocks follow system order.
struct SystemRange {
    int first = 0;
    int count = 0;
};
SystemRange systemsOfRank(int systems, int ranks, int rank);

}  // namespace ws::comm
