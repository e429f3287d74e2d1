#include "engine/streaming/swarmx.h"

#include <algorithm>
#include <cstring>

namespace ws::streaming {

int reduceTreeDepth(int systems) {
    int depth = 0;
    for (int reach = 1; reach < systems; reach *= 4) ++depth;
    return depth;
}

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
    // Level 0 reads the inputs; every later level reads the partial sums of the one before.
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

}  // namespace ws::streaming
