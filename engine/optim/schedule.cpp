// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/optim/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>

namespace ws::optim {

LearningRateSchedule::LearningRateSchedule(const config::LearningRate& spec, int64_t maxSteps)
    : m_constant(spec.constant) {
    int64_t begin = 0;
    for (size_t i = 0; i < spec.schedule.size(); ++i) {
        const auto& piece = spec.schedule[i];
        int64_t length = piece.totalIters;
        if (length <= 0) length = std::max<int64_t>(1, maxSteps - begin);
        m_pieces.push_back({piece, begin, length});
        begin += length;
    }
}

double LearningRateSchedule::at(int64_t step) const {
    if (m_pieces.empty()) return m_constant;
    const Piece* piece = &m_pieces.back();
    for (const auto& p : m_pieces) {
        if (step < p.begin + p.length) {
            piece = &p;
            break;
        }
    }
    const auto& s = piece->spec;
    const double progress = std::clamp(
        static_cast<double>(step - piece->begin) / static_cast<double>(piece->length), 0.0, 1.0);
    if (s.scheduler == "Constant") return s.learningRate;
    if (s.scheduler == "Cosine") {
        return s.endLearningRate + (s.initialLearningRate - s.endLearningRate) * 0.5 *
                                       (1.0 + std::cos(std::numbers::pi * progress));
    }
    // This form returns end_learning_rate exactly once the piece is over.
    return s.initialLearningRate * (1.0 - progress) + s.endLearningRate * progress;
}

std::string LearningRateSchedule::describe() const {
    if (m_pieces.empty()) return fmt::format("constant {:g}", m_constant);
    std::string text;
    for (const auto& p : m_pieces) {
        if (!text.empty()) text += ", then ";
        if (p.spec.scheduler == "Constant") {
            text += fmt::format("Constant {:g} for {} steps", p.spec.learningRate, p.length);
        } else {
            text += fmt::format("{} {:g} -> {:g} over {} steps", p.spec.scheduler,
                                p.spec.initialLearningRate, p.spec.endLearningRate, p.length);
        }
    }
    return text;
}

}  // namespace ws::optim
