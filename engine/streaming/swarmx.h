// SPDX-License-Identifier: GPL-3.0-or-later
// SwarmX: the broadcast/reduce fabric between MemoryX and the systems. Broadcast is a copy of a
// layer's weights into every system's wafer buffer (weight_streamer.h); reduce sums the systems'
// gradients of a layer in a fixed tree (fan-in 4, as SwarmX nodes), so results are deterministic
// and independent of thread timing. Thread-safe: pure functions over the buffers passed in.
#pragma once

#include <cstddef>
#include <vector>

namespace ws::streaming {

// Depth of a fan-in-4 tree over n leaves: ceil(log4 n), 0 for one system.
int reduceTreeDepth(int systems);

// out[j] (=, or += when accumulate) sum over systems of inputs[s][j], summed pairwise in groups
// of four, level by level, in system order. `scratch` is resized as needed.
// Each node sums its children in one pass; same bits as reference::treeReduce.
void treeReduce(const std::vector<const float*>& inputs, size_t count, float* out, bool accumulate,
                std::vector<float>& scratch);

// One node of the tree over the first n (1..4) children: out = ((c0 + c1) + c2) + c3, the sum
// treeReduce forms for a group of four systems. With more than four inputs, treeReduce over the
// groups' sums (reduceGroup of inputs 4g..4g+3, in order) gives treeReduce's bits over the
// inputs, so a group can be summed where its systems are (a process) and sent as one slice.
void reduceGroup(const float* const* children, size_t n, size_t count, float* out);

namespace reference {
// The first implementation (a copy, then one read-modify-write pass per child), kept as the
// reference the tests and wafer_kernel_bench compare against.
void treeReduce(const std::vector<const float*>& inputs, size_t count, float* out, bool accumulate,
                std::vector<float>& scratch);
}  // namespace reference

}  // namespace ws::streaming
