// SPDX-License-Identifier: GPL-3.0-or-later
// What machine a benchmark ran on, printed as its first lines: the CPU model (from
// /proc/cpuinfo), the cores the process may use, the vector ISA the CPU offers and the one the
// binary was built for. Figures from different machines are then never compared unawares.
// Header-only; call once from main before any threads start.
#pragma once

#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

namespace ws::bench {

inline std::string cpuModel() {
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos)
                return line.substr(line.find_first_not_of(' ', colon + 1));
        }
    }
    return "unknown CPU";
}

// The widest x86 vector extensions the CPU reports (others: the architecture's name).
inline std::string cpuIsa() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    std::string isa;
    auto add = [&](bool has, const char* name) {
        if (!has) return;
        if (!isa.empty()) isa += ' ';
        isa += name;
    };
    add(__builtin_cpu_supports("sse4.2"), "sse4.2");
    add(__builtin_cpu_supports("avx"), "avx");
    add(__builtin_cpu_supports("avx2"), "avx2");
    add(__builtin_cpu_supports("fma"), "fma");
    add(__builtin_cpu_supports("avx512f"), "avx512f");
    return isa.empty() ? "x86 (no SSE4.2)" : isa;
#elif defined(__aarch64__)
    return "aarch64";
#else
    return "unknown";
#endif
}

inline const char* builtIsa() {
#if defined(__AVX512F__)
    return "avx512f";
#elif defined(__AVX2__)
    return "avx2";
#elif defined(__AVX__)
    return "avx";
#elif defined(__SSE4_2__)
    return "sse4.2";
#elif defined(__x86_64__)
    return "x86-64 baseline (sse2)";
#elif defined(__aarch64__)
    return "aarch64";
#else
    return "unknown";
#endif
}

inline void printMachine() {
    std::printf("machine: %s, %u hardware threads; CPU ISA: %s; built for: %s\n",
                cpuModel().c_str(), std::thread::hardware_concurrency(), cpuIsa().c_str(),
                builtIsa());
}

}  // namespace ws::bench
