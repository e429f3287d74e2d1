// SPDX-License-Identifier: GPL-3.0-or-later
// exportAnimation and the file-dialog helpers (see animation_export.h).
#include "ui/common/animation_export.h"

#include <QApplication>
#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>
#include <QProgressDialog>
#include <QRegularExpression>
#include <cmath>
#include <memory>

#include "engine/media/animation_writer.h"

namespace ws::ui {

namespace {

AnimationExportResult failed(QWidget* parent, const QString& message) {
    QMessageBox::warning(parent, QObject::tr("Export animation"), message);
    return {AnimationExportOutcome::Failed, message, 0};
}

// Milliseconds frame i lasts at `fps`, rounded so that frame i starts at round(i * 1000 / fps).
int delayOf(int i, int fps) {
    return int(std::llround((i + 1) * 1000.0 / fps) - std::llround(i * 1000.0 / fps));
}

}  // namespace

AnimationExportResult exportAnimation(QWidget* parent, const QString& path, int frameCount, int fps,
                                      const std::function<QImage(int)>& renderFrame) {
    if (frameCount < 1) return failed(parent, QObject::tr("There are no frames to export."));
    if (fps < 1 || fps > 240)
        return failed(parent, QObject::tr("%1 frames per second: use 1 to 240.").arg(fps));
    const std::filesystem::path file = path.toStdString();
    if (auto format = media::formatForPath(file); !format)
        return failed(parent, QString::fromStdString(format.error().message));

    QProgressDialog progress(QObject::tr("Exporting %1…").arg(QFileInfo(path).fileName()),
                             QObject::tr("Cancel"), 0, frameCount, parent);
    progress.setWindowTitle(QObject::tr("Export animation"));
    progress.setWindowModality(Qt::WindowModal);
    progress.setMinimumDuration(0);
    progress.setAutoReset(false);
    progress.setAutoClose(false);
    progress.setValue(0);

    std::unique_ptr<media::AnimationWriter> writer;
    QSize size;
    for (int i = 0; i < frameCount; ++i) {
        if (progress.wasCanceled()) return {AnimationExportOutcome::Cancelled, {}, 0};
        const QImage image = renderFrame(i);
        if (progress.wasCanceled()) return {AnimationExportOutcome::Cancelled, {}, 0};
        if (image.isNull()) {
            writer.reset();
            return failed(parent, QObject::tr("Frame %1 of %2 could not be drawn; nothing was "
                                              "written.")
                                      .arg(i + 1)
                                      .arg(frameCount));
        }
        const QImage rgba = image.convertToFormat(QImage::Format_RGBA8888);
        if (!writer) {
            size = rgba.size();
            media::AnimationSpec spec;
            spec.width = size.width();
            spec.height = size.height();
            spec.fps = fps;
            auto created = media::createAnimationWriter(file, spec);
            if (!created) return failed(parent, QString::fromStdString(created.error().message));
            writer = std::move(*created);
        }
        const media::FrameView view{rgba.constBits(), rgba.width(), rgba.height(),
                                    size_t(rgba.bytesPerLine())};
        if (Status s = writer->addFrame(view, delayOf(i, fps)); !s) {
            writer.reset();  // removes the temp file before the box waits for the user
            return failed(parent, QString::fromStdString(s.error().message));
        }
        progress.setValue(i + 1);
    }
    progress.setLabelText(QObject::tr("Finishing %1…").arg(QFileInfo(path).fileName()));
    progress.setCancelButton(nullptr);  // the encoder's last step cannot be interrupted
    QApplication::processEvents();
    if (Status s = writer->finish(); !s) {
        writer.reset();
        return failed(parent, QString::fromStdString(s.error().message));
    }
    return {AnimationExportOutcome::Exported, {}, frameCount};
}

QStringList animationFileFilters(bool withMp4) {
    QStringList filters = {QObject::tr("Animated PNG (*.png)"), QObject::tr("GIF (*.gif)")};
    if (withMp4) filters << QObject::tr("MP4 (*.mp4)");
    return filters;
}

QStringList animationFileFilters() {
    return animationFileFilters(media::findFfmpeg().has_value());
}

QString withAnimationExtension(const QString& path, const QString& filter) {
    if (media::formatForPath(path.toStdString()).ok()) return path;
    const QRegularExpressionMatch m = QRegularExpression(R"(\*(\.\w+))").match(filter);
    return m.hasMatch() ? path + m.captured(1) : path;
}

QString askAnimationPath(QWidget* parent, const QString& suggestedPath) {
    const QStringList filters = animationFileFilters();
    QString selected = filters.front();
    if (suggestedPath.endsWith(".gif", Qt::CaseInsensitive)) selected = filters[1];
    const QString path = QFileDialog::getSaveFileName(parent, QObject::tr("Export animation"),
                                                      suggestedPath, filters.join(";;"), &selected);
    if (path.isEmpty()) return {};
    return withAnimationExtension(path, selected);
}

}  // namespace ws::ui
