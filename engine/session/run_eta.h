// SPDX-License-Identifier: GPL-3.0-or-later
// How long a training run has left, computed once for every front end (the studio's status bar
// and the CLI's progress line), so the two never disagree.
// Thread-safe: pure functions.
#pragma once

#include <cstdint>

#include "engine/session/events.h"

namespace ws::session {

// The steps from `stepsDone` to `stepsTotal` at `secondsPerStep` each: 0 once done, NaN when the
// time per step is not known (not positive, NaN) or the counts make no sense (stepsDone < 0).
double remainingSeconds(int64_t stepsDone, int64_t stepsTotal, double secondsPerStep);

// A run's ETA after the step `m` reports: its remaining steps at the time per step of the current
// log window (the tokens of a step over the window's token rate, paused time excluded), so it
// follows the recent pace rather than the run's start-up, and holds for a resumed run whose
// step count began before this process. NaN before a rate is measured.
double etaSeconds(const StepMetrics& m);

}  // namespace ws::session
