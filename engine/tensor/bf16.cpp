// SPDX-License-Identifier: GPL-3.0-or-later
// Buffer versions of the bf16 conversions in bf16.h on Google Highway, beside the scalar loops they
// replaced (namespace reference). Rounding is integer work on the float's bits (add the
// round-to-nearest-even bias, keep the upper half; NaN quieted instead), so each lane repeats the
// scalar function's operations exactly and every target gives the same bits. The partial last
// vector and an alignment head go through padded copies so they are converted by the same code.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "engine/tensor/bf16.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// foreach_target.h must come first: it re-includes this file once per target.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "engine/tensor/bf16.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace ws::tensor {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using DU = hn::RebindToUnsigned<DF>;
using DI = hn::RebindToSigned<DF>;
using D16 = hn::Rebind<uint16_t, DU>;  // half as wide: one u16 lane per float lane
using VU = hn::Vec<DU>;

// The rounded float's bits (low 16 bits zero) for a vector of float bits; floatToBf16Bits lane by
// lane. The sum cannot wrap: the largest non-NaN pattern (0xFF800000, -Inf) plus 0x8000 stays
// below 2^32, and NaNs take the other branch.
HWY_INLINE VU roundedBits(DU du, VU bits) {
    const DI di;
    // |x| > Inf as integers; both sides fit in 31 bits, so the signed compare is exact.
    const auto magnitude = hn::BitCast(di, hn::And(bits, hn::Set(du, 0x7FFFFFFFu)));
    const auto isNan = hn::RebindMask(du, hn::Gt(magnitude, hn::Set(di, 0x7F800000)));
    const VU bias =
        hn::Add(hn::Set(du, 0x7FFFu), hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u)));
    const VU nearestEven = hn::Add(bits, bias);
    const VU quietNan = hn::Or(bits, hn::Set(du, 0x00400000u));
    return hn::And(hn::IfThenElse(isNan, quietNan, nearestEven), hn::Set(du, 0xFFFF0000u));
}

HWY_INLINE void roundLanes(DF df, const float* src, float* dst) {
    const DU du;
    hn::StoreU(hn::BitCast(df, roundedBits(du, hn::BitCast(du, hn::LoadU(df, src)))), df, dst);
}

HWY_INLINE void packLanes(DF df, const float* src, uint16_t* dst) {
    const DU du;
    const DI di;
    const D16 d16;
    const VU upper = hn::ShiftRight<16>(roundedBits(du, hn::BitCast(du, hn::LoadU(df, src))));
    // upper <= 0xFFFF, so the saturating signed-to-u16 demotion keeps it as it is.
    hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, upper)), d16, dst);
}

HWY_INLINE void unpackLanes(DF df, const uint16_t* src, float* dst) {
    const DU du;
    const D16 d16;
    const VU bits = hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, src)));
    hn::StoreU(hn::BitCast(df, bits), df, dst);
}

// lanes() on up to one vector's worth (rest < Lanes) through padded copies.
template <typename From, typename To, typename Lanes>
HWY_INLINE void partialLanes(DF df, const From* src, To* dst, size_t rest, Lanes lanes) {
    constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(float);
    From in[kMaxLanes] = {};
    To out[kMaxLanes] = {};
    std::copy_n(src, rest, in);
    lanes(df, in, out);
    std::copy_n(out, rest, dst);
}

// Runs lanes(src + i, dst + i) over [0, count) a vector at a time. The float side (floats) starts
// on a vector boundary after a partial head: unaligned 64-byte accesses split a cache line each
// (measured: rounding ran 1.7x the reference unaligned on AVX-512, below AVX2's 2.6x).
template <typename From, typename To, typename Lanes>
HWY_INLINE void spans(const From* src, To* dst, size_t count, const float* floats, Lanes lanes) {
    const DF df;
    const size_t N = hn::Lanes(df);
    const size_t vectorBytes = N * sizeof(float);
    const size_t misaligned = reinterpret_cast<uintptr_t>(floats) % vectorBytes;
    size_t i = 0;
    if (misaligned % sizeof(float) == 0 && misaligned != 0) {
        i = std::min(count, (vectorBytes - misaligned) / sizeof(float));
        partialLanes(df, src, dst, i, lanes);
    }
    for (; i + N <= count; i += N) lanes(df, src + i, dst + i);
    if (i < count) partialLanes(df, src + i, dst + i, count - i, lanes);
}

void roundSpan(const float* src, float* dst, size_t count) {
    spans(src, dst, count, dst, [](DF df, const float* s, float* d) { roundLanes(df, s, d); });
}

void packSpan(const float* src, uint16_t* dst, size_t count) {
    spans(src, dst, count, src, [](DF df, const float* s, uint16_t* d) { packLanes(df, s, d); });
}

void unpackSpan(const uint16_t* src, float* dst, size_t count) {
    spans(src, dst, count, dst, [](DF df, const uint16_t* s, float* d) { unpackLanes(df, s, d); });
}

}  // namespace HWY_NAMESPACE
}  // namespace ws::tensor
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "engine/tensor/threads.h"

namespace ws::tensor {

HWY_EXPORT(roundSpan);
HWY_EXPORT(packSpan);
HWY_EXPORT(unpackSpan);

namespace {
int threadsFor(size_t count) {
    return threadsForWork(static_cast<int64_t>(count));
}
}  // namespace

void roundToBf16Span(const float* src, float* dst, size_t count) {
    HWY_DYNAMIC_DISPATCH(roundSpan)(src, dst, count);
}

void floatToBf16Span(const float* src, uint16_t* dst, size_t count) {
    HWY_DYNAMIC_DISPATCH(packSpan)(src, dst, count);
}

void bf16ToFloatSpan(const uint16_t* src, float* dst, size_t count) {
    HWY_DYNAMIC_DISPATCH(unpackSpan)(src, dst, count);
}

void roundToBf16(float* data, size_t count) {
    parallelFor(int64_t(count), threadsFor(count), [=](int64_t begin, int64_t end) {
        roundToBf16Span(data + begin, data + begin, size_t(end - begin));
    });
}

void floatToBf16(const float* src, uint16_t* dst, size_t count) {
    parallelFor(int64_t(count), threadsFor(count), [=](int64_t begin, int64_t end) {
        floatToBf16Span(src + begin, dst + begin, size_t(end - begin));
    });
}

void bf16ToFloat(const uint16_t* src, float* dst, size_t count) {
    parallelFor(int64_t(count), threadsFor(count), [=](int64_t begin, int64_t end) {
        bf16ToFloatSpan(src + begin, dst + begin, size_t(end - begin));
    });
}

namespace reference {
namespace {
// floatToBf16Bits without the branch, so the loops below vectorize for the baseline target.
inline uint32_t roundedBits(uint32_t bits) {
    const bool isNan = (bits & 0x7FFFFFFFu) > 0x7F800000u;
    const uint32_t nearestEven = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
    const uint32_t quietNan = (bits | 0x00400000u) & 0xFFFF0000u;
    return isNan ? quietNan : nearestEven;
}
}  // namespace

void roundToBf16Span(const float* src, float* dst, size_t count) {
#pragma omp simd
    for (size_t i = 0; i < count; ++i) {
        uint32_t bits;
        std::memcpy(&bits, &src[i], sizeof bits);
        bits = roundedBits(bits);
        std::memcpy(&dst[i], &bits, sizeof bits);
    }
}

void floatToBf16Span(const float* src, uint16_t* dst, size_t count) {
#pragma omp simd
    for (size_t i = 0; i < count; ++i) {
        uint32_t bits;
        std::memcpy(&bits, &src[i], sizeof bits);
        dst[i] = static_cast<uint16_t>(roundedBits(bits) >> 16);
    }
}

void bf16ToFloatSpan(const uint16_t* src, float* dst, size_t count) {
#pragma omp simd
    for (size_t i = 0; i < count; ++i) {
        const uint32_t bits = static_cast<uint32_t>(src[i]) << 16;
        std::memcpy(&dst[i], &bits, sizeof bits);
    }
}
}  // namespace reference

}  // namespace ws::tensor
#endif  // HWY_ONCE
