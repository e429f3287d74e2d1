// SPDX-License-Identifier: GPL-3.0-or-later
// Which SIMD instruction set the engine's Highway kernels run on. Each kernel file
// (model/simd_element_kernels.cpp, optim/adamw_kernel.cpp) is compiled once per x86 target that
// Highway 1.0 supports (SCALAR for a baseline x86-64, SSSE3, SSE4, AVX2, AVX3 = AVX-512) and picks
// the best one the CPU has on its first call; all kernel files share that choice. The test hooks
// run the kernels on every target this CPU can execute, so the slower paths stay tested here too.
//
// Thread-safety: simdTargetName() may be called from any thread. The test hooks change a
// process-wide choice and must not run while kernels run on other threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ws::tensor {

// The target the kernels dispatch to on this CPU ("AVX3 (AVX-512)", "AVX2", ..., "SCALAR" for
// Highway's portable fallback), e.g. for the session's start log line and the benchmarks.
std::string simdTargetName();

// Test hooks: the targets compiled in and runnable on this CPU (best first, as Highway bit masks),
// and forcing one of them (0 returns to the normal choice).
std::vector<int64_t> simdRunnableTargets();
void simdForceTarget(int64_t target);
std::string simdTargetLabel(int64_t target);

}  // namespace ws::tensor
