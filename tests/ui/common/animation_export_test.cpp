// SPDX-License-Identifier: GPL-3.0-or-later
// exportAnimation on a real widget: the Wafer tab's CoreHeatmap fed synthetic busy frames (a
// wave over a 32 x 32 teaching grid) exported as GIF and animated PNG, decoded back with the test
// decoders (and the GIF by Qt's own reader too), with the right frame count and size. Cancel in
// the progress dialog and errors (a missing folder, a frame of another size) leave no file, the
// errors in a message box that names the problem. The files and a few decoded frames go to the
// test artifacts for looking at.
#include <QDir>
#include <QImageReader>
#include <QMessageBox>
#include <QProgressDialog>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <cmath>

#include "engine/media/animation_writer.h"
#include "support/animation_decode.h"
#include "support/gui_test.h"
#include "ui/common/animation_export.h"
#include "ui/wafer/core_heatmap.h"

namespace {

std::vector<ws::wafer::UtilizationFrame> waveFrames(int count, int grid) {
    std::vector<ws::wafer::UtilizationFrame> frames;
    for (int f = 0; f < count; ++f) {
        ws::wafer::UtilizationFrame frame;
        frame.label = "h." + std::to_string(f % 4) + " forward";
        frame.gridRows = frame.gridCols = frame.rows = frame.cols = grid;
        frame.busy.resize(size_t(grid * grid));
        double sum = 0;
        frame.min = 1;
        frame.max = 0;
        for (int r = 0; r < grid; ++r)
            for (int c = 0; c < grid; ++c) {
                const double v =
                    0.5 + 0.45 * std::sin((r + 2 * c) * 0.3 - f * 0.5) * std::cos(r * 0.15);
                frame.busy[size_t(r * grid + c)] = float(v);
                sum += v;
                frame.min = std::min(frame.min, v);
                frame.max = std::max(frame.max, v);
            }
        frame.mean = sum / (grid * grid);
        frames.push_back(std::move(frame));
    }
    return frames;
}

QImage toImage(const std::vector<uint32_t>& rgba, int w, int h) {
    return QImage(reinterpret_cast<const uchar*>(rgba.data()), w, h, w * 4, QImage::Format_RGBA8888)
        .copy();
}

QStringList filesIn(const QString& dir) {
    return QDir(dir).entryList(QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot);
}

// Closes the next message box that opens and keeps its text.
class MessageBoxCatcher : public QObject {
public:
    MessageBoxCatcher() {
        connect(&m_timer, &QTimer::timeout, this, [this] {
            for (QWidget* w : QApplication::topLevelWidgets()) {
                if (auto* box = qobject_cast<QMessageBox*>(w); box && box->isVisible()) {
                    text = box->text();
                    box->accept();
                }
            }
        });
        m_timer.start(20);
    }
    QString text;

private:
    QTimer m_timer;
};

}  // namespace

class AnimationExportTest : public QObject {
    Q_OBJECT
private slots:
    void exportsTheCoreHeatmapAsGifAndApng() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QWidget window;
        auto* map = new ws::ui::CoreHeatmap(&window);
        map->resize(480, 360);
        window.resize(480, 360);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        auto owner = std::make_shared<ws::wafer::StepPrediction>();
        owner->waferName = "teaching wafer";
        const auto frames = waveFrames(24, 32);
        QImage firstFrame;
        auto render = [&](int i) {
            map->showFrame(owner, &frames[size_t(i)], QString("phase %1 of 24").arg(i + 1));
            map->replot();
            QImage image = map->grab().toImage();
            if (i == 0) firstFrame = image.convertToFormat(QImage::Format_RGBA8888);
            return image;
        };
        for (const QString name : {"utilization.gif", "utilization.png"}) {
            const QString path = dir.filePath(name);
            const auto result = ws::ui::exportAnimation(&window, path, 24, 12, render);
            QCOMPARE(int(result.outcome), int(ws::ui::AnimationExportOutcome::Exported));
            QCOMPARE(result.frames, 24);
            QVERIFY(QFile::exists(path));
            QCOMPARE(filesIn(dir.path()).filter(name).size(), 1);  // no temp left
            const std::string bytes = ws::testing::readBytes(path.toStdString());
            const auto decoded = name.endsWith(".gif") ? ws::testing::decodeGif(bytes)
                                                       : ws::testing::decodeApng(bytes);
            QVERIFY2(decoded.error.empty(), decoded.error.c_str());
            QCOMPARE(decoded.width, firstFrame.width());
            QCOMPARE(decoded.height, firstFrame.height());
            QCOMPARE(int(decoded.frames.size()), 24);
            int totalMs = 0;
            for (const auto& f : decoded.frames) totalMs += f.delayMs;
            QVERIFY2(std::abs(totalMs - 2000) <= 10, qPrintable(QString::number(totalMs)));
            const QImage first = toImage(decoded.frames[0].rgba, decoded.width, decoded.height);
            if (name.endsWith(".png")) {
                QCOMPARE(first, firstFrame);  // lossless
                // Qt reads an animated PNG's default image: the first frame.
                QCOMPARE(QImage(path).convertToFormat(QImage::Format_RGBA8888), firstFrame);
            } else {
                QImageReader reader(path);
                QCOMPARE(reader.imageCount(), 24);
                QCOMPARE(reader.read().convertToFormat(QImage::Format_RGBA8888), first);
            }
            const QString artifact = ws::testing::artifactPath("animation_export_" + name);
            QFile::remove(artifact);
            QVERIFY(QFile::copy(path, artifact));
            for (int i : {0, 12, 23})
                toImage(decoded.frames[size_t(i)].rgba, decoded.width, decoded.height)
                    .save(ws::testing::artifactPath(
                        QString("animation_export_%1_frame%2.png")
                            .arg(name.section('.', 1), QString::number(i))));
            qInfo("%s: %lld bytes, %d x %d, 24 frames", qPrintable(name),
                  static_cast<long long>(bytes.size()), decoded.width, decoded.height);
        }
    }

    void cancelLeavesNoFile() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QWidget window;
        window.resize(200, 100);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        int rendered = 0;
        const QString path = dir.filePath("cancelled.gif");
        const auto result = ws::ui::exportAnimation(&window, path, 40, 10, [&](int i) {
            ++rendered;
            if (i == 5) {
                auto* progress = window.findChild<QProgressDialog*>();
                if (progress) progress->cancel();
            }
            QImage image(64, 48, QImage::Format_RGB32);
            image.fill(QColor::fromHsv(i * 9, 200, 200));
            return image;
        });
        QCOMPARE(int(result.outcome), int(ws::ui::AnimationExportOutcome::Cancelled));
        QCOMPARE(rendered, 6);
        QVERIFY(filesIn(dir.path()).filter("cancelled").isEmpty());
    }

    void errorsAreShownAndLeaveNoFile() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QWidget window;
        window.resize(200, 100);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        auto plain = [](int i) {
            QImage image(30 + (i == 3 ? 1 : 0), 20, QImage::Format_ARGB32);
            image.fill(Qt::darkCyan);
            return image;
        };
        {
            MessageBoxCatcher box;
            const QString path = dir.filePath("no-such-folder/out.gif");
            const auto result = ws::ui::exportAnimation(&window, path, 2, 10, plain);
            QCOMPARE(int(result.outcome), int(ws::ui::AnimationExportOutcome::Failed));
            QVERIFY2(result.error.contains("does the folder exist"), qPrintable(result.error));
            QCOMPARE(box.text, result.error);
        }
        {
            MessageBoxCatcher box;
            const QString path = dir.filePath("sizes.png");
            const auto result = ws::ui::exportAnimation(&window, path, 6, 10, plain);
            QCOMPARE(int(result.outcome), int(ws::ui::AnimationExportOutcome::Failed));
            QVERIFY2(result.error.contains("frame 4 is 31 x 20 pixels, the animation is 30 x 20"),
                     qPrintable(result.error));
            QCOMPARE(box.text, result.error);
            QVERIFY(filesIn(dir.path()).filter("sizes").isEmpty());
        }
        {
            MessageBoxCatcher box;
            const auto result =
                ws::ui::exportAnimation(&window, dir.filePath("talk.webm"), 2, 10, plain);
            QCOMPARE(int(result.outcome), int(ws::ui::AnimationExportOutcome::Failed));
            QVERIFY2(result.error.contains(".png (animated PNG), .gif or .mp4"),
                     qPrintable(result.error));
        }
        QVERIFY(filesIn(dir.path()).isEmpty());
    }

    void mp4IsOfferedOnlyWithFfmpeg() {
        QCOMPARE(ws::ui::animationFileFilters(false),
                 QStringList({"Animated PNG (*.png)", "GIF (*.gif)"}));
        QCOMPARE(ws::ui::animationFileFilters(true),
                 QStringList({"Animated PNG (*.png)", "GIF (*.gif)", "MP4 (*.mp4)"}));
        QCOMPARE(ws::ui::animationFileFilters().size(),
                 ws::media::findFfmpeg().has_value() ? 3 : 2);
        QCOMPARE(ws::ui::withAnimationExtension("/a/talk", "GIF (*.gif)"), QString("/a/talk.gif"));
        QCOMPARE(ws::ui::withAnimationExtension("/a/talk.png", "GIF (*.gif)"),
                 QString("/a/talk.png"));
        QCOMPARE(ws::ui::withAnimationExtension("/a/talk.v2", "MP4 (*.mp4)"),
                 QString("/a/talk.v2.mp4"));
    }

    void exportsMp4WhenFfmpegIsInstalled() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        if (!ws::media::findFfmpeg()) QSKIP("ffmpeg is not installed");
        QWidget window;
        window.resize(200, 100);
        const QString path = dir.filePath("clip.mp4");
        const auto result = ws::ui::exportAnimation(&window, path, 15, 30, [](int i) {
            QImage image(161, 91, QImage::Format_RGB32);
            image.fill(QColor::fromHsv(i * 20, 180, 220));
            return image;
        });
        QCOMPARE(int(result.outcome), int(ws::ui::AnimationExportOutcome::Exported));
        QVERIFY(QFileInfo(path).size() > 100);
        QVERIFY(QFile::remove(path));
    }
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<AnimationExportTest>(argc, argv);
}

#include "animation_export_test.moc"
