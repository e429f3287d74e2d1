// SPDX-License-Identifier: GPL-3.0-or-later
// Counter-based random numbers for initialization and dropout. Every value is a pure function of
// (key, counter), so any element can be drawn on any thread in any order and a seed gives the same
// numbers on every platform with IEEE floats: no std::*_distribution (implementation-defined), no
// hidden generator state. The mixer is splitmix64 (Steele, Lea, Flood 2014): a stream `key` read at
// position `counter` is mix64(key + (counter + 1) * golden gamma).
//
// Thread-safety: pure functions.
#pragma once

#include <cmath>
#include <cstdint>

namespace ws::model::rng {

inline constexpr uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ull;

inline constexpr uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// The counter-th 64-bit value of the stream `key`.
inline constexpr uint64_t bits(uint64_t key, uint64_t counter) {
    return mix64(key + (counter + 1) * kGoldenGamma);
}

// A new stream key derived from a parent key and a label (layer index, site, tensor index, step).
inline constexpr uint64_t deriveKey(uint64_t parent, uint64_t label) {
    return mix64(mix64(parent ^ 0x6A09E667F3BCC909ull) + label * kGoldenGamma);
}

// Uniform double in [0, 1) with 53 random bits.
inline double uniform(uint64_t key, uint64_t counter) {
    return static_cast<double>(bits(key, counter) >> 11) * 0x1.0p-53;
}

// Standard normal by Box-Muller from counters 2c and 2c+1 (only the cosine branch, so every
// counter maps to exactly one value). Uses only log, sqrt and cos, which glibc computes the same
// way on every x86-64 build.
inline double standardNormal(uint64_t key, uint64_t counter) {
    const double u1 = static_cast<double>((bits(key, 2 * counter) >> 11) + 1) * 0x1.0p-53;  // (0,1]
    const double u2 = static_cast<double>(bits(key, 2 * counter + 1) >> 11) * 0x1.0p-53;    // [0,1)
    constexpr double kTwoPi = 6.283185307179586476925286766559;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

// Dropout: element `index` of the stream `key` is kept when its 24-bit uniform is >= the
// threshold for rate p (threshold = round(p * 2^24)); both passes recompute the same mask.
inline uint32_t dropThreshold(double p) {
    return static_cast<uint32_t>(std::lround(p * 16777216.0));
}
inline bool keep(uint64_t key, uint64_t index, uint32_t threshold) {
    return static_cast<uint32_t>(bits(key, index) >> 40) >= threshold;
}

// The dropout seed for one training step of a run (what Gpt::forward takes).
inline constexpr uint64_t dropoutSeedForStep(uint64_t runSeed, uint64_t step) {
    return deriveKey(deriveKey(runSeed, 0xD50F0D50ull), step);
}

}  // namespace ws::model::rng
