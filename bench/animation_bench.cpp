// SPDX-License-Identifier: GPL-3.0-or-later
// Animation export for slides (engine/media): 60 frames of studio content at 1920 x 1080 (the
// Wafer tab's utilization map, offscreen, a busy wave moving over a 64 x 64 core grid: a viridis
// heatmap, axes, title and colour scale) encoded to an animated PNG and to a GIF, beside the
// reference measured in the same run: Qt's QImage::save of every frame as its own PNG. Prints
// ms per frame (encoding only; drawing the widget is timed apart) and file sizes. With ffmpeg on
// PATH an MP4 row too (its time: piping the frames plus waiting for ffmpeg at the end).
// Usage: wafer_animation_bench [frames [keep-folder]]   (default 60; the files are copied to
// keep-folder when given, to look at)
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QTemporaryDir>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "bench_machine.h"
#include "engine/media/animation_writer.h"
#include "ui/wafer/core_heatmap.h"

namespace {

ws::wafer::UtilizationFrame wave(int f, int grid) {
    ws::wafer::UtilizationFrame frame;
    frame.label = "h.1 forward";
    frame.gridRows = frame.gridCols = frame.rows = frame.cols = grid;
    frame.busy.resize(size_t(grid * grid));
    frame.min = 1;
    double sum = 0;
    for (int r = 0; r < grid; ++r)
        for (int c = 0; c < grid; ++c) {
            const double v =
                0.5 + 0.45 * std::sin((r + 2 * c) * 0.12 - f * 0.3) * std::cos(r * 0.05);
            frame.busy[size_t(r * grid + c)] = float(v);
            sum += v;
            frame.min = std::min(frame.min, v);
            frame.max = std::max(frame.max, v);
        }
    frame.mean = sum / (grid * grid);
    return frame;
}

struct Encoder {
    const char* name;
    QString path;
    std::unique_ptr<ws::media::AnimationWriter> writer;
    double ms = 0;
    qint64 bytes = 0;
};

}  // namespace

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    const int frames = argc > 1 ? std::max(1, std::atoi(argv[1])) : 60;
    ws::bench::printMachine();
    QTemporaryDir dir;
    ws::ui::CoreHeatmap map;
    map.resize(1920, 1080);
    map.show();
    auto owner = std::make_shared<ws::wafer::StepPrediction>();
    owner->waferName = "teaching wafer";

    ws::media::AnimationSpec spec;
    spec.width = 1920;
    spec.height = 1080;
    Encoder apng{"animated PNG (ours)", dir.filePath("a.png"), nullptr};
    Encoder gif{"GIF (ours)", dir.filePath("a.gif"), nullptr};
    Encoder mp4{"MP4 (ffmpeg, libx264)", dir.filePath("a.mp4"), nullptr};
    std::vector<Encoder*> encoders = {&apng, &gif};
    if (ws::media::findFfmpeg()) encoders.push_back(&mp4);  // optional: when installed
    spec.fps = 10;
    for (Encoder* e : encoders) {
        auto w = ws::media::createAnimationWriter(e->path.toStdString(), spec);
        if (!w) {
            std::fprintf(stderr, "%s\n", w.error().message.c_str());
            return 1;
        }
        e->writer = std::move(*w);
    }
    double drawMs = 0, qtMs = 0;
    qint64 qtBytes = 0;
    QElapsedTimer t;
    // Every frame its own object: the map skips a frame pointer it already shows.
    std::vector<ws::wafer::UtilizationFrame> waves;
    for (int f = 0; f < frames; ++f) waves.push_back(wave(f, 64));
    for (int f = 0; f < frames; ++f) {
        t.start();
        map.showFrame(owner, &waves[size_t(f)], QString("phase %1").arg(f + 1));
        map.replot();
        const QImage image = map.grab().toImage().convertToFormat(QImage::Format_RGBA8888);
        drawMs += t.nsecsElapsed() / 1e6;
        if (image.width() != 1920 || image.height() != 1080) {
            std::fprintf(stderr, "grabbed %d x %d\n", image.width(), image.height());
            return 1;
        }
        const ws::media::FrameView view{image.constBits(), image.width(), image.height(),
                                        size_t(image.bytesPerLine())};
        for (Encoder* e : encoders) {
            t.start();
            if (ws::Status s = e->writer->addFrame(view, 100); !s) {
                std::fprintf(stderr, "%s\n", s.error().message.c_str());
                return 1;
            }
            e->ms += t.nsecsElapsed() / 1e6;
        }
        // Reference: Qt writes this frame as its own PNG (libpng, Qt's default compression).
        t.start();
        const QString png = dir.filePath(QString("qt%1.png").arg(f));
        if (!image.save(png, "PNG")) return 1;
        qtMs += t.nsecsElapsed() / 1e6;
        qtBytes += QFileInfo(png).size();
        QFile::remove(png);
    }
    for (Encoder* e : encoders) {
        t.start();
        if (ws::Status s = e->writer->finish(); !s) {
            std::fprintf(stderr, "%s\n", s.error().message.c_str());
            return 1;
        }
        e->ms += t.nsecsElapsed() / 1e6;
        e->bytes = QFileInfo(e->path).size();
    }
    if (argc > 2) {
        for (Encoder* e : encoders) {
            const QString kept = QDir(QString::fromLocal8Bit(argv[2]))
                                     .filePath("animation_bench" + e->path.section('/', -1).mid(1));
            QFile::remove(kept);
            QFile::copy(e->path, kept);
        }
    }
    std::printf(
        "content: %d frames of the utilization map at 1920 x 1080 (64 x 64 cores, a "
        "moving wave); drawing + grab %.1f ms/frame (not counted below)\n",
        frames, drawMs / frames);
    std::printf("%-34s %10s %14s %14s\n", "encoder", "ms/frame", "file bytes", "bytes/frame");
    for (Encoder* e : encoders)
        std::printf("%-34s %10.1f %14lld %14lld\n", e->name, e->ms / frames,
                    static_cast<long long>(e->bytes), static_cast<long long>(e->bytes / frames));
    std::printf("%-34s %10.1f %14lld %14lld\n", "reference: QImage::save PNG each", qtMs / frames,
                static_cast<long long>(qtBytes), static_cast<long long>(qtBytes / frames));
    return 0;
}
