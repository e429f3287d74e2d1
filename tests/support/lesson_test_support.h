// SPDX-License-Identifier: GPL-3.0-or-later
// What the Lessons dock's GUI tests share: the shipped lessons' files, how long a lesson's
// action may take, stopping the lesson's run between checks, and the studio they run in
// (openLessonStudio: one set-up for every test).
#pragma once

#include <QSignalSpy>
#include <QString>
#include <QTest>

#include "support/studio_window.h"
#include "ui/common/run_controller.h"
#include "ui/lessons/lessons_panel.h"
#include "ui/shell/main_window.h"

namespace ws::testing {

// A lesson step's action (a run to its pause, a sweep) on a loaded 2-core machine.
inline constexpr int kActionTimeoutMs = 180000;

// A shipped lesson: resources/lessons/<name>.
inline QString lessonFile(const char* name) {
    return QStringLiteral(WAFER_SOURCE_DIR "/resources/lessons/") + QLatin1String(name);
}

// Stops the lesson's run, if one is going, and waits for it to finish.
inline void stopRun(ws::ui::MainWindow& window) {
    if (!window.controller()->isActive()) return;
    QSignalSpy finished(window.controller(), &ws::ui::RunController::finished);
    window.controller()->stop();
    QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), 60000);
}

// Opens `studio` as the lesson tests run it: a fresh run store, `size`, exposed, Run Sweep
// answered Yes (a lesson's sweep asks no question), the Lessons dock shown. False when the
// window cannot be opened.
[[nodiscard]] inline bool openLessonStudio(StudioWindow& studio, QSize size = {1600, 1000}) {
    if (!studio.open(size)) return false;
    studio->setSweepConfirmer([](const QString&) { return true; });
    studio->showLessons();
    return studio->lessonsPanel()->isVisible();
}

}  // namespace ws::testing
