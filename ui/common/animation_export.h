// SPDX-License-Identifier: GPL-3.0-or-later
// Exporting an animation from the studio (issue 17, "For slides"): frames drawn one by one on the
// GUI thread (a widget's grab(), a replay's step) go into engine/media's writer behind a
// cancellable progress dialog. Cancel or any error leaves no file (the writer renames its temp
// file into place only when complete); an error is shown in a message box naming the problem.
// The format follows the file's extension: .png (animated PNG), .gif, .mp4 (needs ffmpeg).
// GUI thread only.
#pragma once

#include <QImage>
#include <QString>
#include <QStringList>
#include <functional>

class QWidget;

namespace ws::ui {

enum class AnimationExportOutcome { Exported, Cancelled, Failed };

struct AnimationExportResult {
    AnimationExportOutcome outcome = AnimationExportOutcome::Failed;
    QString error;   // what the message box said (Failed only)
    int frames = 0;  // frames written (Exported only)
};

// Renders frames 0..frameCount-1 with `renderFrame` (each 1/fps seconds long; every frame the
// size of the first) into `path`. `parent` owns the progress dialog and the message box.
AnimationExportResult exportAnimation(QWidget* parent, const QString& path, int frameCount, int fps,
                                      const std::function<QImage(int)>& renderFrame);

// The save dialog's filters: "Animated PNG (*.png)", "GIF (*.gif)", and "MP4 (*.mp4)" when
// `withMp4` (by default: ffmpeg is on PATH).
QStringList animationFileFilters(bool withMp4);
QStringList animationFileFilters();

// Asks where to save an animation, offering animationFileFilters(); adds the chosen filter's
// extension when the name has none of them. Empty when the user cancels.
QString askAnimationPath(QWidget* parent, const QString& suggestedPath);

// `path` with the extension `filter` names ("GIF (*.gif)" -> ".gif") when it has none of the
// animation extensions.
QString withAnimationExtension(const QString& path, const QString& filter);

}  // namespace ws::ui
