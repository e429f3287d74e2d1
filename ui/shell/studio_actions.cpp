// SPDX-License-Identifier: GPL-3.0-or-later
// StudioActions: see studio_actions.h.
#include "ui/shell/studio_actions.h"

#include <QAction>
#include <QKeySequence>
#include <QMainWindow>
#include <QStyle>
#include <QToolBar>
#include <utility>

namespace ws::ui {

StudioActions StudioActions::create(QWidget* owner) {
    StudioActions a;
    QStyle* s = owner->style();
    const auto make = [&](QStyle::StandardPixmap icon, const QString& text) {
        return new QAction(s->standardIcon(icon), text, owner);
    };
    a.run = make(QStyle::SP_MediaPlay, QAction::tr("&Run"));
    a.run->setShortcuts({QKeySequence(Qt::Key_F5), QKeySequence(Qt::CTRL | Qt::Key_Return)});
    a.run->setToolTip(QAction::tr("Train the current config (F5)"));
    a.runSweep = make(QStyle::SP_FileDialogDetailedView, QAction::tr("Run S&weep"));
    a.runSweep->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_F5));
    a.runSweep->setToolTip(QAction::tr("Run the sweep: section of the current config (Ctrl+F5)"));
    a.pause = make(QStyle::SP_MediaPause, QAction::tr("&Pause"));
    a.pause->setShortcut(QKeySequence(Qt::Key_F6));
    a.pause->setToolTip(QAction::tr("Pause between two layers (F6)"));
    // "Continue" un-pauses; "Resume Run" continues a stopped run from a checkpoint.
    a.continueRun = make(QStyle::SP_MediaSeekForward, QAction::tr("&Continue"));
    a.continueRun->setShortcut(QKeySequence(Qt::Key_F7));
    a.continueRun->setToolTip(QAction::tr("Continue the paused run (F7)"));
    a.stepLayer = make(QStyle::SP_MediaSkipForward, QAction::tr("Step &Layer"));
    a.stepLayer->setShortcut(QKeySequence(Qt::Key_F10));
    a.stepLayer->setToolTip(QAction::tr(
        "While paused: run one more layer phase (one layer's forward or backward pass, with "
        "its weights streamed in) and pause again; the Wafer tab shows it (F10)"));
    a.stop = make(QStyle::SP_MediaStop, QAction::tr("&Stop"));
    a.stop->setShortcut(QKeySequence(Qt::SHIFT | Qt::Key_F5));
    a.stop->setToolTip(
        QAction::tr("Stop after the current step; the weights so far are saved (Shift+F5)"));
    a.checkpoint = make(QStyle::SP_DriveHDIcon, QAction::tr("Check&point Now"));
    a.checkpoint->setShortcut(QKeySequence(Qt::Key_F9));
    a.checkpoint->setToolTip(
        QAction::tr("Write a checkpoint after the current step; the Log names its folder (F9)"));
    a.resumeRun = make(QStyle::SP_BrowserReload, QAction::tr("Resume R&un…"));
    a.resumeRun->setShortcut(QKeySequence(Qt::Key_F8));
    a.resumeRun->setToolTip(QAction::tr("Continue the run or stopped sweep selected in Runs (F8)"));
    a.finetune = make(QStyle::SP_FileDialogDetailedView, QAction::tr("&Fine-tune…"));
    a.finetune->setToolTip(QAction::tr("Fine-tune a base model on your own text"));
    a.runCluster = make(QStyle::SP_DriveNetIcon, QAction::tr("Run on C&luster…"));
    a.runCluster->setToolTip(
        QAction::tr("Train the current config with Open MPI: its systems spread over processes "
                    "on this and other machines"));

    a.open = make(QStyle::SP_DialogOpenButton, QAction::tr("&Open…"));
    a.open->setShortcut(QKeySequence::Open);
    a.save = make(QStyle::SP_DialogSaveButton, QAction::tr("&Save"));
    a.save->setShortcut(QKeySequence::Save);
    a.saveAs = new QAction(QAction::tr("Save &As…"), owner);
    a.saveAs->setShortcut(QKeySequence::SaveAs);
    a.quit = new QAction(QAction::tr("&Quit"), owner);
    a.quit->setShortcut(QKeySequence::Quit);
    a.undo = new QAction(QAction::tr("&Undo"), owner);
    a.undo->setShortcut(QKeySequence::Undo);
    a.undo->setEnabled(false);
    a.redo = new QAction(QAction::tr("&Redo"), owner);
    a.redo->setShortcut(QKeySequence::Redo);
    a.redo->setEnabled(false);

    // For findChild (tests, lessons, accessibility tools); main_window.h lists them.
    const std::pair<QAction*, const char*> named[] = {{a.run, "runAction"},
                                                      {a.runSweep, "runSweepAction"},
                                                      {a.pause, "pauseAction"},
                                                      {a.continueRun, "continueAction"},
                                                      {a.stepLayer, "stepLayerAction"},
                                                      {a.stop, "stopAction"},
                                                      {a.checkpoint, "checkpointAction"},
                                                      {a.resumeRun, "resumeRunAction"},
                                                      {a.finetune, "finetuneAction"},
                                                      {a.runCluster, "runClusterAction"},
                                                      {a.open, "openAction"},
                                                      {a.save, "saveAction"},
                                                      {a.saveAs, "saveAsAction"},
                                                      {a.undo, "undoAction"},
                                                      {a.redo, "redoAction"},
                                                      {a.quit, "quitAction"}};
    for (const auto& [action, name] : named) action->setObjectName(QLatin1String(name));
    return a;
}

QToolBar* StudioActions::addRunToolBar(QMainWindow* window) const {
    auto* toolbar = window->addToolBar(QToolBar::tr("Run"));
    toolbar->setObjectName(QStringLiteral("RunToolBar"));
    toolbar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    toolbar->setMovable(false);
    for (QAction* a : {run, runSweep, pause, continueRun, stepLayer, stop}) toolbar->addAction(a);
    toolbar->addSeparator();
    for (QAction* a : {checkpoint, resumeRun, finetune}) toolbar->addAction(a);
    return toolbar;
}

}  // namespace ws::ui
