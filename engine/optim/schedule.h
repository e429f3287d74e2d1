// SPDX-License-Identifier: GPL-3.0-or-later
// Learning-rate schedules in Cerebras ModelZoo's form: a constant, or a list of pieces
// (Linear, Cosine, Constant) that run one after the other, each for `total_iters` steps; the last
// piece may say 0 to mean "until max_steps". After the last piece ends, its final value holds.
// A warmup is simply a first Linear piece from 0 to the peak. Thread-safe: immutable after
// construction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/config/config.h"

namespace ws::optim {

class LearningRateSchedule {
public:
    LearningRateSchedule(const config::LearningRate& spec, int64_t maxSteps);

    // Learning rate used by the update of training step `step` (0-based).
    double at(int64_t step) const;
    // One line a person can read, e.g. "Linear 0 -> 0.003 over 30 steps, then Cosine ...".
    std::string describe() const;

private:
    struct Piece {
        config::SchedulerConfig spec;
        int64_t begin = 0;
        int64_t length = 0;
    };
    double m_constant = 0.0;
    std::vector<Piece> m_pieces;
};

}  // namespace ws::optim
