// SPDX-License-Identifier: GPL-3.0-or-later
// SwarmX's reduce (see swarmx.h). Each tree node sums its up-to-four children in one pass over
// memory (read four, write one) instead of a copy and three read-modify-write passes, and the
// root writes straight into the output: the same additions in the same order, so the same bits,
// with about half the memory traffic. The node loops are cloned per CPU (AVX-512, AVX2,
// baseline) and the loader picks the best for the machine.
#include "engine/streaming/swarmx.h"

#include <algorithm>
#include <cstring>

#include "engine/tensor/cpu_clones.h"

namespace ws::streaming {

namespace {

// dst[j] = (or +=) ((c[0][j] + c[1][j]) + c[2][j]) + c[3][j] over the first n children (1..4).
WAFER_CPU_CLONES void sumNode(float* __restrict dst, const float* const* c, size_t n, size_t count,
                              bool accumulate) {
    const float* __restrict a = c[0];
    const float* __restrict b = n > 1 ? c[1] : nullptr;
    const float* __restrict d = n > 2 ? c[2] : nullptr;
    const float* __restrict e = n > 3 ? c[3] : nullptr;
    if (accumulate) {
        switch (n) {
            case 1:
                for (size_t j = 0; j < count; ++j) dst[j] += a[j];
                break;
            case 2:
                for (size_t j = 0; j < count; ++j) dst[j] += a[j] + b[j];
                break;
            case 3:
                for (size_t j = 0; j < count; ++j) dst[j] += (a[j] + b[j]) + d[j];
                break;
            default:
                for (size_t j = 0; j < count; ++j) dst[j] += ((a[j] + b[j]) + d[j]) + e[j];
        }
        return;
    }
    switch (n) {
        case 1:
            std::memcpy(dst, a, count * sizeof(float));
            break;
        case 2:
            for (size_t j = 0; j < count; ++j) dst[j] = a[j] + b[j];
            break;
        case 3:
            for (size_t j = 0; j < count; ++j) dst[j] = (a[j] + b[j]) + d[j];
            break;
        default:
            for (size_t j = 0; j < count; ++j) dst[j] = ((a[j] + b[j]) + d[j]) + e[j];
    }
}

}  // namespace

int reduceTreeDepth(int systems) {
    int depth = 0;
    for (int reach = 1; reach < systems; reach *= 4) ++depth;
    return depth;
}

void treeReduce(const std::vector<const float*>& inputs, size_t count, float* out, bool accumulate,
                std::vector<float>& scratch) {
    // Level by level: a level of more than four nodes writes its partial sums to scratch (two
    // halves, read one and write the other); the level of at most four is the root's children.
    std::vector<const float*> level = inputs, next;
    size_t half = 0;
    int side = 0;
    while (level.size() > 4) {
        const size_t groups = (level.size() + 3) / 4;
        if (half == 0) {
            half = groups * count;
            scratch.resize(2 * half);
        }
        float* dst = scratch.data() + size_t(side) * half;
        next.clear();
        for (size_t g = 0; g < groups; ++g) {
            const size_t first = g * 4, n = std::min<size_t>(4, level.size() - first);
            sumNode(dst + g * count, level.data() + first, n, count, false);
            next.push_back(dst + g * count);
        }
        level.swap(next);
        side ^= 1;
    }
    sumNode(out, level.data(), level.size(), count, accumulate);
}

void reduceGroup(const float* const* children, size_t n, size_t count, float* out) {
    sumNode(out, children, n, count, false);
}

namespace reference {

void treeReduce(const std::vector<const float*>& inputs, size_t count, float* out, bool accumulate,
                std::vector<float>& scratch) {
    const size_t n = inputs.size();
    if (n == 1) {
        if (accumulate) {
            for (size_t j = 0; j < count; ++j) out[j] += inputs[0][j];
        } else {
            std::memcpy(out, inputs[0], count * sizeof(float));
        }
        return;
    }
    const size_t firstGroups = (n + 3) / 4;
    scratch.resize(2 * firstGroups * count);
    float* current = scratch.data();
    float* next = scratch.data() + firstGroups * count;
    size_t groups = 0;
    for (size_t g = 0; g * 4 < n; ++g, ++groups) {
        float* dst = current + g * count;
        const size_t end = std::min(n, g * 4 + 4);
        std::memcpy(dst, inputs[g * 4], count * sizeof(float));
        for (size_t s = g * 4 + 1; s < end; ++s) {
            const float* src = inputs[s];
            for (size_t j = 0; j < count; ++j) dst[j] += src[j];
        }
    }
    while (groups > 1) {
        size_t nextGroups = 0;
        for (size_t g = 0; g * 4 < groups; ++g, ++nextGroups) {
            float* dst = next + g * count;
            const size_t end = std::min(groups, g * 4 + 4);
            std::memcpy(dst, current + g * 4 * count, count * sizeof(float));
            for (size_t s = g * 4 + 1; s < end; ++s) {
                const float* src = current + s * count;
                for (size_t j = 0; j < count; ++j) dst[j] += src[j];
            }
        }
        std::swap(current, next);
        groups = nextGroups;
    }
    if (accumulate) {
        for (size_t j = 0; j < count; ++j) out[j] += current[j];
    } else {
        std::memcpy(out, current, count * sizeof(float));
    }
}

}  // namespace reference

}  // namespace ws::streaming
