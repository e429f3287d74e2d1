// SPDX-License-Identifier: GPL-3.0-or-later
// Bounded waiting for tests: ask a condition again and again until it holds or a deadline passes,
// so a test that waits for an event fails with a message instead of hanging, and never decides
// "nothing happened" from a sleep. Header-only; call from any thread (the condition is the
// caller's to make thread-safe, e.g. an atomic or a queue drain).
#pragma once

#include <chrono>
#include <thread>

namespace ws::testing {

// True as soon as ready() returns true; false when `timeout` passed first. Between two calls it
// sleeps `pollEvery` (pass zero when ready() itself blocks, e.g. EventQueue::waitAndDrain).
template <class Ready>
bool waitUntil(std::chrono::milliseconds timeout, Ready&& ready,
               std::chrono::milliseconds pollEvery = std::chrono::milliseconds(1)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (ready()) return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        if (pollEvery.count() > 0) std::this_thread::sleep_for(pollEvery);
    }
}

}  // namespace ws::testing
