// SPDX-License-Identifier: GPL-3.0-or-later
// StudioActions: the studio's commands as actions: their texts, icons, shortcuts, tool tips and
// object names (main_window.h lists the names; tests and lessons find them so), and the Run tool
// bar ("RunToolBar") that shows the run commands. What each does is wired by the shell and the
// features. GUI thread only.
#pragma once

class QAction;
class QMainWindow;
class QToolBar;
class QWidget;

namespace ws::ui {

struct StudioActions {
    // Run.
    QAction *run = nullptr, *runSweep = nullptr, *pause = nullptr, *continueRun = nullptr;
    QAction *stepLayer = nullptr, *stop = nullptr, *checkpoint = nullptr, *resumeRun = nullptr;
    QAction *finetune = nullptr, *runCluster = nullptr;
    // File and Edit.
    QAction *open = nullptr, *save = nullptr, *saveAs = nullptr, *quit = nullptr;
    QAction *undo = nullptr, *redo = nullptr;

    // The actions, children of `owner`, named, enabled (undo and redo disabled).
    static StudioActions create(QWidget* owner);
    // The Run tool bar at the top of `window`, text beside the icons, not movable.
    QToolBar* addRunToolBar(QMainWindow* window) const;
};

}  // namespace ws::ui
