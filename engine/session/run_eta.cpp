// SPDX-License-Identifier: GPL-3.0-or-later
// A run's time left (see run_eta.h).
#include "engine/session/run_eta.h"

#include <cmath>
#include <limits>

namespace ws::session {

double remainingSeconds(int64_t stepsDone, int64_t stepsTotal, double secondsPerStep) {
    constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();
    if (stepsDone < 0) return kUnknown;
    if (stepsDone >= stepsTotal) return 0.0;
    if (!(secondsPerStep > 0) || !std::isfinite(secondsPerStep)) return kUnknown;
    return double(stepsTotal - stepsDone) * secondsPerStep;
}

double etaSeconds(const StepMetrics& m) {
    const double tokensPerStep = m.step > 0 ? double(m.tokensSeen) / double(m.step) : 0.0;
    const double secondsPerStep = m.tokensPerSec > 0 ? tokensPerStep / m.tokensPerSec : 0.0;
    return remainingSeconds(m.step, m.maxSteps, secondsPerStep);
}

}  // namespace ws::session
