// What the Lessons dock's GUI tests share: the shipped lessons' files, how long a lesson's
// action may take, and stopping the lesson's run between checks.
#pragma once

#include <QSignalSpy>
#include <QString>
#include <QTest>

#include "ui/shell/main_window.h"
#include "ui/shell/run_controller.h"

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

}  // namespace ws::testing
