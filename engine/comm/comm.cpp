// The one-process Comm and the helpers every Comm shares (see comm.h).
#include "engine/comm/comm.h"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>

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
    [[noreturn]] void abort(int code, const std::string& message) override {
        std::cerr << "wafer: " << message << "\n";
        std::exit(code);
    }
};

}  // namespace

std::unique_ptr<Comm> singleProcess() {
    return std::make_unique<SingleProcess>();
}

bool launchedByMpirun() {
    return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

int rankFromEnvironment() {
    const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
    return rank ? std::atoi(rank) : 0;
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
