// SPDX-License-Identifier: GPL-3.0-or-later
// WaferTab's slow motion and stored runs' planned steps (wafer_tab.h): the replay's bar and
// clock wired to the views, the moment under the cursor drawn into the heatmap, the buffer
// slots, the cluster diagram and the timeline, animation frames for export, and a stored run's
// step re-planned from its config.
#include <QMessageBox>
#include <QSettings>
#include <algorithm>

#include "engine/config/config_yaml.h"
#include "engine/core/units.h"
#include "engine/session/emulation.h"
#include "engine/wafer/narration.h"
#include "engine/wafer/spec.h"
#include "ui/wafer/cluster_diagram.h"
#include "ui/wafer/core_heatmap.h"
#include "ui/wafer/slow_motion_bar.h"
#include "ui/wafer/step_replayer.h"
#include "ui/wafer/step_views.h"
#include "ui/wafer/stored_run_charts.h"
#include "ui/wafer/wafer_chart_tabs.h"
#include "ui/wafer/wafer_tab.h"
#include "ui/wafer/wafer_view_controls.h"

namespace ws::ui {

void WaferTab::setUpReplay() {
    m_slowBar->setSpeedIndex(QSettings().value(QStringLiteral("wafer/replaySpeed"), 0).toInt());
    connect(m_slowBar, &SlowMotionBar::playToggled, this, &WaferTab::setReplayPlaying);
    connect(m_slowBar, &SlowMotionBar::speedChanged, this, [this] {
        m_replayer->setPace(m_slowBar->pace(m_replayer->durationS()));
        QSettings().setValue(QStringLiteral("wafer/replaySpeed"), m_slowBar->speedIndex());
    });
    connect(m_slowBar, &SlowMotionBar::scrubbed, this,
            [this](double fraction) { setReplayTime(fraction * m_replayer->durationS()); });
    connect(m_slowBar, &SlowMotionBar::exportRequested, this, [this] {
        const QString tooLong = replayTooLongToExport();
        if (!tooLong.isEmpty()) {
            QMessageBox::information(this, tr("Export animation"), tooLong);
            return;
        }
        const QString path = askAnimationPath(this, QStringLiteral("step-replay.png"));
        if (!path.isEmpty()) exportReplayAnimation(path);
    });
    connect(m_replayer, &StepReplayer::changed, this, &WaferTab::drawReplay);
    drawReplay();
}

bool WaferTab::isReplaying() const {
    return m_replayer->isActive();
}

// The replayed step is the shown one; a new step arriving while following the run ends the
// replay (Play and scrubbing pin the shown step, so that happens only when asked for).
void WaferTab::syncReplay(const StepRecord* record) {
    if (m_replayer->isActive() && m_live && !m_plannedActive && record &&
        record->step != m_replayer->step())
        m_replayer->setActive(false);
    if (m_replayer->setStep(record && record->prediction ? record : nullptr, m_run.ioBytesPerS) &&
        m_replayer->replay())
        m_narration = wafer::narrationContext(*m_replayer->replay()->prediction());
    m_replayer->setPace(m_slowBar->pace(m_replayer->durationS()));
}

// Play and the scrub slider hold the shown step still: out of Live, on the step shown now.
static void pinShownStep(WaferTab& tab) {
    if (tab.isLive() && !tab.showsPlannedRun() && tab.shownStep() >= 0)
        tab.showStep(tab.shownStep());
}

void WaferTab::setReplayPlaying(bool play) {
    if (play) pinShownStep(*this);
    syncReplay(shownRecord());
    m_replayer->setPlaying(play);
    drawReplay();  // the button's state, even when there is nothing to play
}

void WaferTab::setReplayTime(double timeS) {
    pinShownStep(*this);
    syncReplay(shownRecord());
    if (!m_replayer->replay()) return;
    m_replayer->setTime(timeS);
}

void WaferTab::advanceReplay(double wallS) {
    pinShownStep(*this);
    syncReplay(shownRecord());
    if (!m_replayer->replay()) return;
    m_replayer->advance(wallS);
}

void WaferTab::leaveReplay() {
    m_replayer->setActive(false);
}

QString WaferTab::replayLine() const {
    return m_slowBar->line();
}

void WaferTab::drawReplay() {
    if (!isVisible()) {  // the clock runs on; the picture is drawn when the tab shows again
        m_dirty = true;
        return;
    }
    const bool active = m_replayer->isActive() && m_replayer->replay();
    const double duration = m_replayer->durationS();
    m_slowBar->setTime(m_replayer->timeS(), duration);
    m_slowBar->setPlaying(m_replayer->isPlaying());
    m_slowBar->setSource(m_plannedActive ? tr("planned schedule") : QString());
    const StepRecord* record = shownRecord();
    if (!m_replayer->replay()) {
        m_slowBar->setReplayEnabled(
            false, record ? tr("no emulated schedule to replay for this step (emulator off)")
                          : tr("nothing to replay yet: run a config, or select a run in the "
                               "Runs dock"));
    } else {
        m_slowBar->setReplayEnabled(true);
        if (!active)
            m_slowBar->setLine(tr("Play replays step %1's emulated schedule in slow motion")
                                   .arg(m_replayer->step() + 1));
    }
    if (active != m_replayDrawn) {
        m_replayDrawn = active;
        if (!active) {
            scheduleRedraw();  // the step's normal picture again
            return;
        }
    }
    if (!active) return;
    applyReplay();
    m_views->heatmap()->replotTimed();
    m_views->timeline()->replot(QCustomPlot::rpQueuedRefresh);
}

void WaferTab::applyReplay() {
    const wafer::StepReplay* replay = m_replayer->replay();
    if (!replay) return;
    const wafer::ReplayState st = m_replayer->state();
    const auto& prediction = replay->prediction();
    const wafer::PhaseAtTime& ph = st.phase;
    const QString at = QString::fromStdString(formatSeconds(st.timeS));
    // The teachers' narration of the moment (engine/wafer/narration.h); past the step's last
    // work it has nothing to say, the replay's own summary does.
    std::string line = wafer::narrateMoment(*prediction, st.timeS, m_narration);
    if (line.empty())
        line = wafer::describeReplayState(st, replay->numSystems(), replay->numBlocks());
    m_slowBar->setLine(QString::fromStdString(line));

    // The heatmap: the phase under the cursor, else the last one computed. The note changes
    // only with the phase, so the map replots only then.
    const wafer::UtilizationFrame* frame =
        ph.frame >= 0 && size_t(ph.frame) < prediction->frames.size()
            ? &prediction->frames[size_t(ph.frame)]
            : nullptr;
    if (frame) {
        const QString note = ph.activity == wafer::WaferActivity::Computing
                                 ? tr("under the slow-motion cursor")
                             : ph.activity == wafer::WaferActivity::WaitingForWeights
                                 ? tr("last computed; the wafer waits for the weights of %1")
                                       .arg(phaseName(ph.nextLayer, ph.nextBackward))
                                 : tr("last computed; the wafer's work for this step is done");
        m_views->showHeatmap(prediction, frame, ph.layer, ph.backward,
                             phaseName(ph.layer, ph.backward), note, m_run.numBlocks);
        m_viewControls->showReplayPhase(phaseName(ph.layer, ph.backward));
    } else {
        m_viewControls->showReplayPhase(tr("nothing computed yet"));
        m_views->showNoHeatmap(ph.nextLayer >= 0
                                   ? tr("Slow motion: nothing computed yet, the wafer waits for "
                                        "the weights of %1")
                                         .arg(phaseName(ph.nextLayer, ph.nextBackward))
                                   : tr("Slow motion: no utilization frame for this moment"));
    }
    // The buffer: what the run's executor held at that point of the phase (its real spans), as
    // the step shows it outside slow motion; a planned step has only its schedule's.
    const StepRecord* record = shownRecord();
    m_views->showBufferAtReplay(m_plannedActive ? nullptr : record, *prediction, st,
                                m_run.numBlocks);
    double low = 0, high = 1;
    if (frame && m_viewControls->fitColours() && frame->max > frame->min) {
        low = frame->min;
        high = frame->max;
    }
    ClusterDiagram* diagram = m_views->diagram();
    diagram->setStep(record, prediction->numSystems, m_run.numBlocks, prediction->treeDepth,
                     QString::fromStdString(prediction->waferName), frame, false, low, high);
    diagram->setReplay(st, replay->numBlocks(),
                       tr("slow motion at %1 of %2")
                           .arg(at, QString::fromStdString(formatSeconds(replay->durationS()))));
    m_views->timeline()->setReplayCursor(st.timeS);
}

int WaferTab::replayFrameCount(double fps) const {
    const double duration = m_replayer->replay() ? m_replayer->durationS() : 0;
    return m_slowBar->pace(duration).frameCount(duration, fps);
}

QImage WaferTab::renderReplayFrame(int frame, double fps) {
    syncReplay(shownRecord());
    if (!m_replayer->replay()) return {};
    m_replayer->setPlaying(false);
    const double duration = m_replayer->durationS();
    m_replayer->setTime(m_slowBar->pace(duration).frameTime(frame, duration, fps));
    applyReplay();
    m_views->heatmap()->replot(QCustomPlot::rpImmediateRefresh);
    m_views->timeline()->replot(QCustomPlot::rpImmediateRefresh);
    return m_views->grab().toImage();
}

QString WaferTab::replayTooLongToExport() {
    syncReplay(shownRecord());
    if (!m_replayer->replay()) return tr("There is no step to replay yet: run or pick a step.");
    const int frames = replayFrameCount(kAnimationFps);
    if (frames <= kMaxAnimationFrames) return {};
    return tr("At this speed the step's replay lasts %1 s (%2 frames). Choose a faster speed, "
              "such as \"whole step in 10 s\", for an animation of at most %3 s.")
        .arg(frames / kAnimationFps)
        .arg(frames)
        .arg(kMaxAnimationFrames / kAnimationFps);
}

AnimationExportResult WaferTab::exportReplayAnimation(const QString& path) {
    if (const QString tooLong = replayTooLongToExport(); !tooLong.isEmpty())
        return {AnimationExportOutcome::Failed, tooLong, 0};
    const int fps = kAnimationFps;
    const double wasAt = m_replayer->timeS();
    const bool wasActive = m_replayer->isActive();
    auto result = exportAnimation(this, path, replayFrameCount(fps), fps,
                                  [this, fps](int frame) { return renderReplayFrame(frame, fps); });
    // Back where the teacher left the cursor (rendering moved it through the whole step).
    if (wasActive) {
        setReplayTime(wasAt);
    } else {
        leaveReplay();
    }
    return result;
}

bool WaferTab::showPlannedRun(const config::Config& config, const QString& runLabel, QString* error,
                              const QString& origin) {
    auto prediction = session::predictConfigStep(config);
    if (!prediction.ok()) {
        if (error) *error = QString::fromStdString(prediction.error().message);
        return false;
    }
    auto spec = wafer::specForConfig(config);
    if (!m_plannedActive) m_savedRun = m_run;  // keep the run trained in this window
    m_replayer->setActive(false);
    m_plannedActive = true;
    m_run.numBlocks = config.model.numHiddenLayers;
    m_run.numSystems = std::max(1, config.runconfig.numCsx);
    m_run.ioBytesPerS = spec.ok() ? spec->ioBytesPerS() : 0;
    // One step as planned: spans with the plan's times and bytes, no real time (not recorded).
    m_planned = StepRecord{};
    m_planned.step = 0;
    m_planned.emulatedStart = 0;
    m_planned.prediction = *prediction;
    const wafer::StepReplay plan(*prediction, m_run.ioBytesPerS);
    for (size_t i = 0; i < plan.spans().size(); ++i) {
        const wafer::TimelineSpan& t = plan.spans()[i];
        RecordedSpan s;
        s.emuStart = float(t.startS);
        s.emuEnd = float(t.endS);
        s.bytes = int64_t(plan.spanBytes()[i]);
        s.micro = int16_t(t.micro);
        s.layer = int16_t(t.layer);
        s.system = int16_t(t.system);
        s.kindCode = uint8_t(t.kind);
        s.backwardPass = t.kind == streaming::SpanKind::StreamIn && t.backwardPass;
        s.setExpert(t.expert);
        m_planned.spans.push_back(s);
    }
    m_plannedNote =
        tr("%1, %2: its <b>planned schedule</b>, one step re-planned from its config by the "
           "emulator (this is the plan, not a recording: a run's spans are not stored; real CPU "
           "times are not shown)%3. Press Live to return to the run trained in this window.")
            .arg(origin.isEmpty() ? tr("Selected in the Runs dock") : origin.toHtmlEscaped(),
                 runLabel.toHtmlEscaped(),
                 config.model.sparsity.level > 0
                     ? tr("; its blocks are planned dense (the run's pruned nonzeros depend on "
                          "its weights)")
                     : QString());
    m_views->timeline()->setTitleOverride(
        tr("Planned step of %1 (re-planned from its config, not recorded)").arg(runLabel));
    // A stored run's own charts replace these (showStoredRun); a config's plan has none.
    m_views->charts()->showPlanCharts();
    m_viewControls->rebuildPhases(prediction->get(), m_run.numBlocks);
    updateNotices();
    scheduleRedraw();
    updateStepControls();
    return true;
}

bool WaferTab::showStoredRun(int64_t runId, const QString& name, const std::string& configYaml,
                             QString* error, const store::RunStore* store) {
    if (runId == m_liveRunId && !m_history.empty()) {
        leavePlannedRun();
        return true;
    }
    const QString label = tr("run %1 “%2”").arg(runId).arg(name);
    auto parsed = config::parseConfig(configYaml, "the run store", {}, {});
    QString why;
    if (!parsed.ok()) {
        why = QString::fromStdString(parsed.error().message);
    } else if (!parsed->config.wafer.emulate) {
        why = tr("the emulator was off for it (wafer.emulate: false)");
    } else if (showPlannedRun(parsed->config, label, &why)) {
        if (store) {
            m_views->charts()->showPlanCharts(
                readRecordedRouting(*store, runId, parsed->config),
                readRecordedSparsity(*store, runId, parsed->config.model.numHiddenLayers));
            scheduleRedraw();
        }
        return true;
    }
    if (error) *error = tr("Wafer tab: %1 has no planned step to show: %2").arg(label, why);
    return false;
}

void WaferTab::leavePlannedRun() {
    if (!m_plannedActive) return;
    m_replayer->setActive(false);
    m_plannedActive = false;
    m_planned = StepRecord{};
    m_run = m_savedRun;
    m_views->timeline()->setTitleOverride({});
    m_views->charts()->showLiveCharts();
    m_viewControls->rebuildPhases(nullptr, m_run.numBlocks);
    updateNotices();
    scheduleRedraw();
    updateStepControls();
}

}  // namespace ws::ui
