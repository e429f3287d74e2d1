// SPDX-License-Identifier: GPL-3.0-or-later
// WAFER_CPU_CLONES: marks a hot loop function to be compiled once per x86-64 level (v4 = AVX-512,
// v3 = AVX2, and the baseline) with the loader picking the best for the CPU at run time (GCC
// target_clones), so one portable binary still vectorizes wide. Used for loops that need no
// intrinsics (the Highway kernels dispatch on their own, see simd.h). Expands to nothing where
// target clones are unavailable (other compilers or platforms): the baseline build then runs.
// Also nothing under ASan/TSan (./test.sh --sanitize): GCC instruments the clones' ifunc resolver,
// which the dynamic loader runs before the sanitizer runtime is initialised (a segfault at start).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__) && \
    !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define WAFER_CPU_CLONES \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define WAFER_CPU_CLONES
#endif
