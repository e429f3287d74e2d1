// Buffer versions of the bf16 conversions in bf16.h, written branch-free so they vectorize.
#include "engine/tensor/bf16.h"

#include <cstring>

#include "engine/tensor/threads.h"

namespace ws::tensor {
namespace {

inline uint32_t roundedBits(uint32_t bits) {
    const bool isNan = (bits & 0x7FFFFFFFu) > 0x7F800000u;
    const uint32_t nearestEven = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
    const uint32_t quietNan = (bits | 0x00400000u) & 0xFFFF0000u;
    return isNan ? quietNan : nearestEven;
}

int threadsFor(size_t count) {
    return threadsForWork(static_cast<int64_t>(count));
}

}  // namespace

void roundToBf16(float* data, size_t count) {
    parallelFor(int64_t(count), threadsFor(count), [=](int64_t begin, int64_t end) {
#pragma omp simd
        for (int64_t i = begin; i < end; ++i) {
            uint32_t bits;
            std::memcpy(&bits, &data[i], sizeof bits);
            bits = roundedBits(bits);
            std::memcpy(&data[i], &bits, sizeof bits);
        }
    });
}

void floatToBf16(const float* src, uint16_t* dst, size_t count) {
    parallelFor(int64_t(count), threadsFor(count), [=](int64_t begin, int64_t end) {
#pragma omp simd
        for (int64_t i = begin; i < end; ++i) {
            uint32_t bits;
            std::memcpy(&bits, &src[i], sizeof bits);
            dst[i] = static_cast<uint16_t>(roundedBits(bits) >> 16);
        }
    });
}

void bf16ToFloat(const uint16_t* src, float* dst, size_t count) {
    parallelFor(int64_t(count), threadsFor(count), [=](int64_t begin, int64_t end) {
#pragma omp simd
        for (int64_t i = begin; i < end; ++i) {
            const uint32_t bits = static_cast<uint32_t>(src[i]) << 16;
            std::memcpy(&dst[i], &bits, sizeof bits);
        }
    });
}

}  // namespace ws::tensor
