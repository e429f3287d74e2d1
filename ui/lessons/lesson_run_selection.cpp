// SPDX-License-Identifier: GPL-3.0-or-later
// LessonRunSelection: see lesson_run_selection.h.
#include "ui/lessons/lesson_run_selection.h"

#include <algorithm>

#include "engine/session/session.h"
#include "ui/common/run_controller.h"
#include "ui/lessons/lesson_host.h"

namespace ws::ui {

void LessonRunSelection::lessonOpened() {
    m_runs.clear();
    m_host->selectRuns({});
    m_host->forgetEndedRuns();
}

void LessonRunSelection::noteLiveRun() {
    const session::Session* session = m_host->runController()->session();
    const auto place = session ? session->place() : std::nullopt;
    if (!place || place->runId <= 0) return;
    if (std::find(m_runs.begin(), m_runs.end(), place->runId) == m_runs.end())
        m_runs.push_back(place->runId);
}

bool LessonRunSelection::comparesRuns(const lesson::LessonStep& step) {
    if (step.view != lesson::View::Training) return false;
    auto namesPrevious = [](const std::vector<lesson::Condition>& conditions) {
        return std::any_of(conditions.begin(), conditions.end(), [](const lesson::Condition& c) {
            return c.text.find("previous") != std::string::npos;
        });
    };
    return namesPrevious(step.expect) || (step.tryIt && namesPrevious(step.tryIt->check));
}

void LessonRunSelection::stepShown(const lesson::LessonStep& step, bool actionDone) {
    noteLiveRun();
    if (!comparesRuns(step) || m_runs.empty()) return;
    // Before a step's own run, the run it will be compared with; after it, both.
    const bool ownRunComing = !actionDone && step.action.kind != lesson::Action::Kind::None;
    const size_t count = std::min(m_runs.size(), ownRunComing ? size_t(1) : size_t(2));
    const std::vector<int64_t> compared(m_runs.end() - ptrdiff_t(count), m_runs.end());
    m_host->selectRuns(compared);
}

}  // namespace ws::ui
