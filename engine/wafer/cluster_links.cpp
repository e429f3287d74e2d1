// SPDX-License-Identifier: GPL-3.0-or-later
// The contention model's rates (cluster_links.h).
#include "engine/wafer/cluster_links.h"

#include <algorithm>

namespace ws::wafer {

double harmonicNumber(int n) {
    double h = 0;
    for (int k = 1; k <= n; ++k) h += 1.0 / k;
    return h;
}

ClusterRates clusterRates(const WaferSpec& spec, int systems) {
    const ClusterSpec& c = spec.cluster;
    ClusterRates r;
    r.systems = std::max(1, systems);
    r.treeDepth = c.treeDepth(r.systems);
    r.treeLinks = c.treeLinks(r.systems);
    r.lockstep = 1 + c.swarmxPortJitter * (harmonicNumber(r.treeLinks) - 1);
    const double links = c.systemLinkBytesPerS();
    const double io = spec.ioBytesPerS();
    const double memoryx = c.memoryxGbPerS * 1e9;
    // The job's share of the fabric, split over every stream on its tree's links (each lane's
    // treeLinks links, both directions), expressed per system stream (all lanes together).
    const double fabric = c.aggregateTbitPerS * 1e12 / 8 * r.systems / std::max(1, c.maxSystems);
    r.fabricBytesPerS = fabric / (2.0 * r.treeLinks);
    if (r.systems == 1) {
        // Wired straight to MemoryX: the wafer's I/O is the whole path (no SwarmX, no fabric to
        // share), so a spec that raises io_gb_per_s alone gets it on one system.
        r.lineBytesPerS = r.lockstepBytesPerS = r.swarmxBytesPerS = io;
        r.offloadBytesPerS = io;
        r.inputBytesPerS = c.hostInputGbPerS * 1e9;
        r.binding = "wafer I/O";
        return r;
    }
    r.lineBytesPerS = std::min({io, links, r.fabricBytesPerS, memoryx});
    r.lockstepBytesPerS = links / r.lockstep;
    r.swarmxBytesPerS = std::min(r.lineBytesPerS, r.lockstepBytesPerS);
    r.waitFraction = 1 - r.swarmxBytesPerS / r.lineBytesPerS;
    if (r.swarmxBytesPerS == io)
        r.binding = "wafer I/O";
    else if (r.swarmxBytesPerS == r.lockstepBytesPerS)
        r.binding = "SwarmX lockstep";
    else if (r.swarmxBytesPerS == links)
        r.binding = "system links";
    else if (r.swarmxBytesPerS == r.fabricBytesPerS)
        r.binding = "fabric aggregate";
    else
        r.binding = "MemoryX";
    r.offloadBytesPerS = std::min({io, links, memoryx / r.systems});
    r.inputBytesPerS = c.hostInputGbPerS * 1e9 / r.systems;
    return r;
}

}  // namespace ws::wafer
