// SPDX-License-Identifier: GPL-3.0-or-later
// LessonRunSelection: which runs the Training tab shows during a lesson (issue 31). It keeps the
// runs the open lesson trained, in order. A step that compares runs (it shows the Training tab
// and its checks name a `previous.` subject) selects them in the Runs dock, so the loss chart
// shows the runs compared (and the live one) and no others: on entering it, the lesson's last
// run (the step's own run, if it trains one, comes live); once its action is done, the last two.
// Opening a lesson clears the selection and drops the runs trained before from the charts, so
// one lesson's runs never crowd the next one's legend. GUI thread only.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/lesson/lesson.h"

namespace ws::ui {

class LessonHost;

class LessonRunSelection {
public:
    explicit LessonRunSelection(LessonHost* host) : m_host(host) {}

    // A lesson opened: no run of it yet; the Runs selection and the ended runs are cleared.
    void lessonOpened();
    // The run training now belongs to the lesson (its store id is noted once the run has one).
    void noteLiveRun();
    // The step is shown; `actionDone`: its action has finished. Selects the runs it compares.
    void stepShown(const lesson::LessonStep& step, bool actionDone);
    // Whether a step compares runs: it shows the Training tab and a check names `previous.`.
    static bool comparesRuns(const lesson::LessonStep& step);
    // The store ids of the runs the open lesson trained, oldest first.
    const std::vector<int64_t>& runs() const { return m_runs; }

private:
    LessonHost* m_host;
    std::vector<int64_t> m_runs;
};

}  // namespace ws::ui
