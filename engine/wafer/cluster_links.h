// SPDX-License-Identifier: GPL-3.0-or-later
// The links around the systems and the contention model (issue 35): the rate at which one
// system's weights come in and its gradients go out when N systems share SwarmX and MemoryX,
// and the load a step puts on each kind of link.
//
// The model, stated (every figure but one from the spec, cluster section):
// - A system reaches SwarmX over links_per_system links of link_gbit_per_s each; its wafer's
//   I/O is wafer.io_gb_per_s. One SwarmX lane is a tree of fan-out swarmx_fan_out over the N
//   systems, rooted at MemoryX: N system links, each node's uplink, the root's link to MemoryX
//   (ClusterSpec::treeLinks; one system is wired straight to MemoryX: one link).
// - Lockstep: a broadcast node forwards a chunk only when all its children have room, a reduce
//   node sums a chunk only when all its children's copies are in (a lossless reduce needs both),
//   and a port buffers one chunk, so every chunk of a weight broadcast or gradient reduce is done
//   when the slowest of the tree's links has carried it. A chunk's time through one port is
//   mean x (1 + j x (E - 1)), E ~ Exp(1): the link's mean (its line rate) plus a queueing tail
//   whose spread j (coefficient of variation) is swarmx_port_jitter - THE ONE ASSUMED CONSTANT.
//   The slowest of n such links takes mean x (1 + j x (H_n - 1)), H_n = 1 + 1/2 + ... + 1/n
//   (the expected maximum of n exponentials), so the lanes carry links / (1 + j (H_n - 1)) of
//   their line rate: a loss that grows with log N, none for one system (H_1 = 1).
// - The fabric's aggregate (fabric_aggregate_tbit_per_s, for a max_systems cluster, all links
//   both ways) gives an N-system job N / max_systems of it, over 2 x treeLinks x lanes streams.
// - MemoryX's servers (memoryx_gb_per_s each way) feed the broadcast root, take the reduce root
//   and every system's offloaded activations (N copies: offload is per system, not reduced).
// - The input servers (host_input_gb_per_s) feed every system its tokens (ids and labels, 4
//   bytes each), shared by the N systems.
// On several systems a weight or gradient stream runs at the least of: the wafer's I/O, the
// lanes' lockstep rate, the fabric share and MemoryX. One system is wired straight to MemoryX:
// its wafer's I/O is the whole path (and its offload's), so one system's prediction is what it
// was before the model, whatever the link figures (a spec that raises io_gb_per_s alone, as
// presets/teaching-sparsity.yaml does, keeps its effect there; on several systems raise
// link_gbit_per_s, memoryx_gb_per_s and fabric_aggregate_tbit_per_s with it).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "engine/wafer/spec.h"

namespace ws::wafer {

inline constexpr double kInputBytesPerToken = 8;  // int32 token id + int32 label

struct ClusterRates {
    int systems = 1;
    int treeDepth = 0;
    int treeLinks = 1;             // per lane (ClusterSpec::treeLinks)
    double lockstep = 1;           // slowest link's chunk time / a link's mean: 1 + j (H_n - 1)
    double lineBytesPerS = 0;      // one system's stream rate without lockstep: min(io, links)
    double lockstepBytesPerS = 0;  // the lanes' rate under lockstep: links / lockstep
    double fabricBytesPerS = 0;    // the fabric share's rate per stream
    double swarmxBytesPerS = 0;    // weights in / gradients out: the least of all
    double offloadBytesPerS = 0;   // one system's activation offload (MemoryX shared by N)
    double inputBytesPerS = 0;     // one system's share of the input servers
    std::string binding;           // what sets swarmxBytesPerS
    // The fraction of a weight / gradient transfer's time spent waiting on the slowest link:
    // 1 - swarmx / (the same without lockstep); 0 when the lockstep rate does not bind.
    double waitFraction = 0;
};

ClusterRates clusterRates(const WaferSpec& spec, int systems);

// H_n = 1 + 1/2 + ... + 1/n (0 for n < 1).
double harmonicNumber(int n);

}  // namespace ws::wafer
