// SPDX-License-Identifier: GPL-3.0-or-later
// Finite-difference gradient checking for the model tests: central differences in double,
// compared to the analytic gradient with a relative tolerance (and a small absolute floor for
// entries that are zero up to rounding).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace ws::model::testing {

// eps 1e-5 in double: truncation error ~eps^2 * f''' and cancellation ~1e-16 / eps stay far below
// the 1e-6 relative tolerance for the O(1) losses used here.
inline constexpr double kFiniteDifferenceEps = 1e-5;
inline constexpr double kRelativeTolerance = 1e-6;
inline constexpr double kAbsoluteFloor = 1e-9;

// Checks analytic[i] == d loss / d x[i] for every i in `indices` (all when empty). loss() must
// read x. Returns the largest relative error seen.
inline double expectGradientMatches(std::vector<double>& x, const std::vector<double>& analytic,
                                    const std::function<double()>& loss, const std::string& what,
                                    std::vector<size_t> indices = {}) {
    // Sizes first: a gradient buffer shorter than x would be read past its end below.
    if (analytic.size() != x.size()) {
        ADD_FAILURE() << what << ": " << analytic.size() << " analytic gradients for " << x.size()
                      << " inputs";
        return std::numeric_limits<double>::infinity();
    }
    if (indices.empty()) {
        indices.resize(x.size());
        for (size_t i = 0; i < x.size(); ++i) indices[i] = i;
    }
    double worst = 0.0;
    int failures = 0;
    for (size_t i : indices) {
        const double saved = x[i];
        x[i] = saved + kFiniteDifferenceEps;
        const double plus = loss();
        x[i] = saved - kFiniteDifferenceEps;
        const double minus = loss();
        x[i] = saved;
        const double numeric = (plus - minus) / (2 * kFiniteDifferenceEps);
        const double diff = std::abs(numeric - analytic[i]);
        const double scale = std::max(std::abs(numeric), std::abs(analytic[i]));
        if (diff > kAbsoluteFloor) worst = std::max(worst, diff / scale);
        if (diff > kRelativeTolerance * scale + kAbsoluteFloor && failures++ < 5) {
            ADD_FAILURE() << what << "[" << i << "]: analytic " << analytic[i] << " numeric "
                          << numeric;
        }
    }
    return worst;
}

inline std::vector<double> randomVector(size_t n, uint32_t seed, double lo = -1.0,
                                        double hi = 1.0) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<double> dist(lo, hi);
    std::vector<double> v(n);
    for (double& x : v) x = dist(gen);
    return v;
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0.0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

}  // namespace ws::model::testing
