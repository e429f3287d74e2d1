// SPDX-License-Identifier: GPL-3.0-or-later
// The Wafer tab's slow motion (issue 17), offscreen, on a real short run of the teaching preset
// (presets/teaching-stream.yaml, its corpus by absolute path, 3 steps). The replay's time is moved
// by hand (setReplayTime / advanceReplay), never by waiting: at a phase's middle the heatmap shows
// that phase, the timeline's cursor and the diagram's bytes in flight move with t; Play pins the
// shown step and Live leaves the replay; it works while the run is paused and after it finished;
// the export API's frames; a stored run selected in another window's Runs dock replays the step
// its config plans; and the cluster diagram's labels never overlap, in presenter mode at
// 1400 x 900 and 1920 x 1080. Screenshots (looked at): slow-motion-1400x900.png,
// slow-motion-presenter-1920x1080.png, slow-motion-presenter-1400x900.png, slow-motion-planned.png.
#include <QComboBox>
#include <QDockWidget>
#include <QPushButton>
#include <QSlider>
#include <QTest>
#include <QTreeWidget>

#include "engine/config/config_yaml.h"
#include "engine/core/units.h"
#include "engine/session/session.h"
#include "support/animation_decode.h"
#include "support/gui_test.h"
#include "support/studio_window.h"
#include "support/temp_dir.h"
#include "support/wafer_tab_views.h"
#include "ui/config/config_document.h"
#include "ui/shell/runs_dock.h"
#include "ui/teaching/presenter_mode.h"
#include "ui/wafer/buffer_slots_view.h"
#include "ui/wafer/cluster_diagram.h"
#include "ui/wafer/core_heatmap.h"
#include "ui/wafer/slow_motion_bar.h"
#include "ui/wafer/step_replayer.h"
#include "ui/wafer/timeline_view.h"
#include "ui/wafer/wafer_tab.h"

using ws::testing::WaferTabViews;

using namespace ws::ui;
using ws::streaming::SpanKind;

namespace {

const QString kTeaching = QStringLiteral(WAFER_SOURCE_DIR "/presets/teaching-stream.yaml");

struct RecordedRun {
    ws::config::Config config;
    std::vector<ws::session::Event> events;
};

// The teaching preset trained for `steps` steps, every event it published kept.
RecordedRun trainTeaching(const ws::testing::TempDir& dir, int steps) {
    RecordedRun run;
    auto loaded = ws::config::loadConfigFile(
        kTeaching.toStdString(),
        {"runconfig.max_steps=" + std::to_string(steps), "runconfig.eval_frequency=0",
         "runconfig.model_dir=" + (dir.path() / "model").string()});
    if (!loaded.ok()) qFatal("%s", loaded.error().message.c_str());
    run.config = loaded->config;
    if (!std::filesystem::path(run.config.trainInput.dataDir.front()).is_absolute())
        qFatal("data_dir not absolute");
    ws::session::SessionOptions options;
    options.dbPath = dir.path() / "runs.sqlite";
    options.cacheDir = dir.path() / "cache";
    options.recordInStore = false;
    auto session = ws::session::Session::create(std::move(loaded).value(), options);
    if (!session.ok()) qFatal("%s", session.error().message.c_str());
    (*session)->run();
    (*session)->events().drain(run.events);
    return run;
}

// Feeds the run's events of steps [from, to) to the tab, as the main window does.
void feed(WaferTab& tab, const RecordedRun& run, int64_t from, int64_t to) {
    std::vector<ws::streaming::Span> spans;
    std::vector<ws::session::StepMetrics> metrics;
    for (const auto& e : run.events) {
        if (const auto* es = std::get_if<ws::session::EmulatedStep>(&e)) {
            if (es->step >= from && es->step < to) tab.addEmulatedStep(*es);
        } else if (const auto* sp = std::get_if<ws::streaming::Span>(&e)) {
            if (sp->step >= from && sp->step < to) spans.push_back(*sp);
        } else if (const auto* m = std::get_if<ws::session::StepMetrics>(&e)) {
            if (m->step - 1 >= from && m->step - 1 < to) metrics.push_back(*m);
        }
    }
    tab.appendSpans(spans);
    tab.appendMetrics(metrics);
}

// The middle of a compute span of the plan (system 0, micro-batch 0).
double middleOf(const ws::wafer::StepPrediction& p, int layer, bool backward) {
    for (const auto& s : p.spans)
        if (s.system == 0 && s.micro == 0 && s.layer == layer &&
            s.kind == (backward ? SpanKind::Backward : SpanKind::Forward))
            return 0.5 * (s.startS + s.endS);
    return -1;
}

// Which drawn texts of the diagram overlap (or leave it); "" when none.
QString overlaps(const ClusterDiagram* d) {
    const auto& rects = d->textRects();
    const QRectF inside = QRectF(d->rect()).adjusted(-1, -1, 1, 1);
    for (size_t i = 0; i < rects.size(); ++i) {
        if (!inside.contains(rects[i]))
            return QStringLiteral("text %1 leaves the diagram (%2 x %3)")
                .arg(i)
                .arg(d->width())
                .arg(d->height());
        for (size_t j = i + 1; j < rects.size(); ++j)
            if (rects[i].adjusted(0, 0.5, 0, -0.5).intersects(rects[j].adjusted(0, 0.5, 0, -0.5)))
                return QStringLiteral("texts %1 and %2 overlap").arg(i).arg(j);
    }
    return {};
}

}  // namespace

class SlowMotionTest : public QObject {
    Q_OBJECT
private slots:
    void replayOfARealTeachingRun() {
        ws::testing::TempDir dir;
        const RecordedRun run = trainTeaching(dir, 3);
        WaferTab tab;
        tab.resize(1400, 900);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        tab.beginRun(run.config);
        tab.setRunState(ws::session::RunState::Running);
        // Paused after two steps: the tab follows the run (Live) and replays its newest step.
        feed(tab, run, 0, 2);
        tab.setRunState(ws::session::RunState::Paused);
        tab.redrawNow();
        QVERIFY(tab.isLive());
        QCOMPARE(tab.shownStep(), int64_t(1));
        QVERIFY(!tab.isReplaying());
        QCOMPARE(WaferTabViews(tab).timeline->replayCursor(), -1.0);
        QVERIFY(!WaferTabViews(tab).diagram->replayState());
        auto* bar = tab.findChild<SlowMotionBar*>("slowMotionBar");
        QVERIFY(bar && bar->isVisible());
        auto* play = bar->findChild<QPushButton*>("replayPlay");
        auto* scrub = bar->findChild<QSlider*>("replayScrub");
        QVERIFY(play && play->isEnabled() && scrub);
        const auto prediction = tab.history().find(1)->prediction;
        QVERIFY(prediction);
        const ws::wafer::StepPrediction& p = *prediction;

        // The middle of h.0's forward (layer 1): that phase on the heatmap, the cursor there.
        const double t1 = middleOf(p, 1, false);
        QVERIFY(t1 > 0);
        tab.setReplayTime(t1);
        QVERIFY(tab.isReplaying());
        QVERIFY(!tab.isLive());  // scrubbing pins the shown step
        QCOMPARE(tab.shownStep(), int64_t(1));
        QCOMPARE(WaferTabViews(tab).heatmap->frame(), p.frameFor(1, false));
        QVERIFY2(WaferTabViews(tab).heatmap->titleText().contains("h.0 forward"),
                 qPrintable(WaferTabViews(tab).heatmap->titleText()));
        QCOMPARE(WaferTabViews(tab).timeline->replayCursor(), t1);
        // The narration of the moment (engine/wafer/narration.h): h.0's forward, bound by its
        // own weight stream on the teaching wafer.
        QVERIFY2(tab.replayLine().contains("h.0") && tab.replayLine().contains("forward"),
                 qPrintable(tab.replayLine()));
        QVERIFY2(bar->timeText().endsWith(QStringLiteral("of %1").arg(
                     QString::fromStdString(ws::formatSeconds(p.stepS)))),
                 qPrintable(bar->timeText()));
        QVERIFY(WaferTabViews(tab).diagram->replayState());
        // Issue 31: the Heatmap choice names the phase the heatmap shows in slow motion, not
        // the phase chosen before (h.0 forward here, while the cursor moves on to h.1).
        tab.leaveReplay();
        tab.setPhase(1 * 2 + 0);
        tab.redrawNow();
        QCOMPARE(tab.phaseChoiceText(), QStringLiteral("h.0 forward"));
        tab.setReplayTime(middleOf(p, 2, false));
        QVERIFY2(WaferTabViews(tab).heatmap->titleText().contains("h.1 forward"),
                 qPrintable(WaferTabViews(tab).heatmap->titleText()));
        QVERIFY2(tab.phaseChoiceText().contains("h.1 forward"), qPrintable(tab.phaseChoiceText()));
        tab.leaveReplay();
        tab.redrawNow();
        QCOMPARE(tab.phaseChoiceText(), QStringLiteral("h.0 forward"));
        tab.setPhase(-2);  // follow the run again
        tab.setReplayTime(t1);
        QVERIFY(tab.isReplaying());
        const double weightsAtT1 = WaferTabViews(tab).diagram->replayState()->weightsIn.bytesSoFar;
        QVERIFY(weightsAtT1 > 0);
        QCOMPARE(WaferTabViews(tab).diagram->replayState()->gradientsOut[0].bytesSoFar, 0.0);
        QVERIFY(WaferTabViews(tab).bufferSlots->text().contains("h.0 forward, computing"));
        QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
        QVERIFY(tab.grab().save(ws::testing::artifactPath("slow-motion-1400x900.png")));

        // The middle of h.1's backward (layer 2): later, more weights in, gradients out.
        const double t2 = middleOf(p, 2, true);
        QVERIFY(t2 > t1);
        tab.setReplayTime(t2);
        QCOMPARE(WaferTabViews(tab).heatmap->frame(), p.frameFor(2, true));
        QCOMPARE(WaferTabViews(tab).timeline->replayCursor(), t2);
        const auto& at2 = *WaferTabViews(tab).diagram->replayState();
        QVERIFY(at2.weightsIn.bytesSoFar > weightsAtT1);
        QVERIFY(WaferTabViews(tab).diagram->trafficLabels()[0].startsWith("weights ↓"));

        // The step's end: every link carried the step's recorded bytes (an fp32 run's).
        tab.setReplayTime(1e9);
        QCOMPARE(WaferTabViews(tab).replayer->timeS(), p.stepS);
        double recordedIn = 0, recordedOut = 0;
        for (const auto& s : tab.history().find(1)->spans) {
            if (s.kind() == SpanKind::StreamIn && s.system == 0) recordedIn += double(s.bytes);
            if (s.kind() == SpanKind::StreamOut && s.system == 0) recordedOut += double(s.bytes);
        }
        const auto& end = *WaferTabViews(tab).diagram->replayState();
        QVERIFY(recordedIn > 0 && recordedOut > 0);
        QVERIFY(std::abs(end.weightsIn.bytesSoFar - recordedIn) < 1e-6 * recordedIn);
        QVERIFY(std::abs(end.gradientsOut[0].bytesSoFar - recordedOut) < 1e-6 * recordedOut);

        // The pace, not the CPU: "whole step in 10 s" moves a tenth of the step per wall second.
        auto* speed = bar->findChild<QComboBox*>("replaySpeed");
        QVERIFY(speed && speed->count() >= 4);
        speed->setCurrentIndex(speed->findText("whole step in 10 s"));
        tab.setReplayTime(0);
        tab.advanceReplay(1.0);
        QVERIFY(std::abs(WaferTabViews(tab).replayer->timeS() - p.stepS / 10) < 1e-12);
        speed->setCurrentIndex(speed->findText("1 µs = 20 ms"));
        tab.advanceReplay(0.020);
        QVERIFY(std::abs(WaferTabViews(tab).replayer->timeS() - (p.stepS / 10 + 1e-6)) < 1e-12);

        // Play / Pause: the timer runs only while playing (its ticks are not waited for).
        QTest::mouseClick(play, Qt::LeftButton);
        QVERIFY(WaferTabViews(tab).replayer->isPlaying());
        QCOMPARE(play->text(), QStringLiteral("Pause"));
        // Issue 31: the Pause glyph (U+23F8) is in no usual font and showed as an empty box:
        // every character of the button is in its font, and the icon says play / pause.
        QVERIFY(!play->icon().isNull());
        for (const QChar c : play->text())
            QVERIFY2(QFontMetrics(play->font()).inFont(c), qPrintable(QString(c)));
        QTest::mouseClick(play, Qt::LeftButton);
        QVERIFY(!WaferTabViews(tab).replayer->isPlaying());
        QVERIFY(tab.isReplaying());

        // Live leaves the replay: the normal picture again.
        tab.goLive();
        tab.redrawNow();
        QVERIFY(!tab.isReplaying());
        QCOMPARE(WaferTabViews(tab).timeline->replayCursor(), -1.0);
        QVERIFY(!WaferTabViews(tab).diagram->replayState());

        // The run goes on and finishes; its last step replays as well.
        tab.setRunState(ws::session::RunState::Running);
        feed(tab, run, 2, 3);
        tab.setRunState(ws::session::RunState::Finished);
        tab.redrawNow();
        QCOMPARE(tab.shownStep(), int64_t(2));
        tab.setReplayTime(t1);
        QCOMPARE(WaferTabViews(tab).heatmap->frame(), p.frameFor(1, false));
        QCOMPARE(WaferTabViews(tab).timeline->replayCursor(), t1);
        QCOMPARE(WaferTabViews(tab).replayer->step(), int64_t(2));

        // Export: frames of the replay at the chosen pace, each drawn at its time.
        speed->setCurrentIndex(speed->findText("whole step in 10 s"));
        QCOMPARE(tab.replayFrameCount(30), 301);
        const QImage frame = tab.renderReplayFrame(150, 30);
        QVERIFY(!frame.isNull());
        QVERIFY(frame.width() > 600 && frame.height() > 400);
        QVERIFY(std::abs(WaferTabViews(tab).replayer->timeS() - p.stepS / 2) < 1e-12);
        QCOMPARE(WaferTabViews(tab).timeline->replayCursor(), p.stepS / 2);
        QVERIFY(frame.save(ws::testing::artifactPath("slow-motion-export-frame.png")));

        // Export… writes those frames as an animation; the cursor comes back where it was. At
        // 1 µs = 20 ms the step would last minutes: refused with a message naming a faster speed
        // and no file written.
        tab.setReplayTime(t1);
        const QString gif = QString::fromStdString((dir / "replay.gif").string());
        speed->setCurrentIndex(speed->findText("1 µs = 20 ms"));
        QVERIFY(tab.replayFrameCount(WaferTab::kAnimationFps) > WaferTab::kMaxAnimationFrames);
        const auto refused = tab.exportReplayAnimation(gif);
        QCOMPARE(refused.outcome, ws::ui::AnimationExportOutcome::Failed);
        QVERIFY2(refused.error.contains("faster speed"), qPrintable(refused.error));
        QVERIFY(!std::filesystem::exists(dir / "replay.gif"));
        speed->setCurrentIndex(speed->findText("whole step in 10 s"));
        const int frames = tab.replayFrameCount(WaferTab::kAnimationFps);
        QCOMPARE(frames, 10 * WaferTab::kAnimationFps + 1);
        const auto exported = tab.exportReplayAnimation(gif);
        QVERIFY2(exported.outcome == ws::ui::AnimationExportOutcome::Exported,
                 qPrintable(exported.error));
        QCOMPARE(exported.frames, frames);
        QCOMPARE(WaferTabViews(tab).replayer->timeS(), t1);
        const auto decoded = ws::testing::decodeGif(ws::testing::readBytes(dir / "replay.gif"));
        QVERIFY2(decoded.error.empty(), decoded.error.c_str());
        QCOMPARE(decoded.width, frame.width());
        QVERIFY(decoded.frames.size() > 10);  // the cursor moves: frames differ
        int totalMs = 0;
        for (const auto& f : decoded.frames) totalMs += f.delayMs;
        QVERIFY2(std::abs(totalMs - frames * 1000 / WaferTab::kAnimationFps) <= 20,
                 qPrintable(QString::number(totalMs)));
    }

    // A stored run selected in the Runs dock of a window that did not train it: the Wafer tab
    // shows the step its config plans, says so, and replays it; the window that trained it keeps
    // its recorded steps. Also presenter mode mid-replay, at 1920 x 1080 and 1400 x 900.
    void storedRunAndPresenterMode() {
        ws::testing::StudioWindow trained;
        QVERIFY(trained.open());
        QVERIFY(trained->openConfig(kTeaching));
        QVERIFY(trained->document()->setField("runconfig.max_steps", "3"));
        QVERIFY(trained->document()->setField("runconfig.eval_frequency", "0"));
        QVERIFY(trained.runToEnd(120000));
        auto* trainedTab = trained.find<WaferTab>("waferTab");
        QVERIFY(trainedTab->liveRunId() > 0);
        // Selecting its own run keeps the recorded steps.
        trained.find<RunsDock>("RunsDock")->selectRuns({trainedTab->liveRunId()});
        QVERIFY(!trainedTab->showsPlannedRun());
        QCOMPARE(trainedTab->history().size(), size_t(3));

        // Mid-replay in the studio's default window, then in presenter mode at a projector's
        // size and a laptop's.
        QVERIFY(trained->showTab("wafer"));
        trainedTab->setReplayTime(middleOf(*trainedTab->history().find(2)->prediction, 2, false));
        QVERIFY(trained->saveScreenshot(ws::testing::artifactPath("slow-motion-studio.png")));
        WaferTabViews(*trainedTab).diagram->repaint();
        QCOMPARE(overlaps(WaferTabViews(*trainedTab).diagram), QString());
        trained->presenterMode()->setActive(true);
        for (const QSize size : {QSize(1920, 1080), QSize(1400, 900)}) {
            trained->setWindowState(Qt::WindowNoState);  // offscreen: full screen is its screen
            trained->resize(size);
            // At 1400 x 900 the window's content is ~27 px wider than 1400 in presenter mode
            // (the timeline's one-row legend; not the diagram's concern): it gets what it needs.
            QTRY_VERIFY(trained->height() == size.height() && trained->width() >= size.width() &&
                        trained->width() <= size.width() + 40);
            QTest::qWait(100);  // the tool bar lays its larger buttons out
            const auto& p = *trainedTab->history().find(2)->prediction;
            trainedTab->setReplayTime(middleOf(p, 2, false));
            const QString path =
                ws::testing::artifactPath(QStringLiteral("slow-motion-presenter-%1x%2.png")
                                              .arg(size.width())
                                              .arg(size.height()));
            QVERIFY(trained->saveScreenshot(path));
            WaferTabViews(*trainedTab).diagram->repaint();
            QVERIFY(!WaferTabViews(*trainedTab).diagram->textRects().empty());
            const QString overlap = overlaps(WaferTabViews(*trainedTab).diagram);
            QVERIFY2(overlap.isEmpty(), qPrintable(overlap + " at " + path));
        }
        trained->presenterMode()->setActive(false);

        // Another window on the same store: the run is not in its memory, only its plan.
        ws::testing::StudioWindow other;
        QVERIFY(other.open({1400, 900}, trained.filePath("runs.sqlite")));
        auto* tab = other.find<WaferTab>("waferTab");
        QVERIFY(!tab->showsPlannedRun());
        auto* dock = other.find<RunsDock>("RunsDock");
        dock->refresh();
        dock->selectRuns({trainedTab->liveRunId()});
        QVERIFY(tab->showsPlannedRun());
        QVERIFY(other->showTab("wafer"));
        tab->redrawNow();
        QVERIFY2(tab->noticeText().contains("planned schedule"), qPrintable(tab->noticeText()));
        QVERIFY(WaferTabViews(*tab).timeline->titleText().startsWith("Planned step of run"));
        const auto& planned = *trainedTab->history().find(2)->prediction;
        const double t = middleOf(planned, 1, true);
        tab->setReplayTime(t);
        QVERIFY(tab->isReplaying());
        QCOMPARE(WaferTabViews(*tab).timeline->replayCursor(), t);
        QVERIFY(WaferTabViews(*tab).heatmap->frame());
        QVERIFY2(WaferTabViews(*tab).heatmap->titleText().contains("h.0 backward"),
                 qPrintable(WaferTabViews(*tab).heatmap->titleText()));
        QVERIFY(WaferTabViews(*tab).diagram->replayState()->weightsIn.bytesSoFar > 0);
        QVERIFY(WaferTabViews(*tab)
                    .slowMotionBar->findChild<QLabel*>("replaySource")
                    ->text()
                    .contains("planned schedule"));
        QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
        QVERIFY(tab->grab().save(ws::testing::artifactPath("slow-motion-planned.png")));
        // Live returns to this window's own (empty) state.
        tab->goLive();
        QVERIFY(!tab->showsPlannedRun());
        other.close();
    }
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<SlowMotionTest>(argc, argv);
}
#include "slow_motion_test.moc"
