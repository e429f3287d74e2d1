// SPDX-License-Identifier: GPL-3.0-or-later
// WaferTab: see wafer_tab.h.
#include "ui/wafer/wafer_tab.h"

#include <QLabel>
#include <QScrollArea>
#include <QStackedWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>

#include "engine/core/units.h"
#include "engine/wafer/spec.h"
#include "ui/wafer/cluster_diagram.h"
#include "ui/wafer/core_heatmap.h"
#include "ui/wafer/slow_motion_bar.h"
#include "ui/wafer/step_controls.h"
#include "ui/wafer/step_replayer.h"
#include "ui/wafer/step_views.h"
#include "ui/wafer/wafer_chart_tabs.h"
#include "ui/wafer/wafer_summary.h"
#include "ui/wafer/wafer_view_controls.h"

namespace ws::ui {
namespace {

using Phase = WaferViewControls;  // the Heatmap choice's codes (Phase::kFollowPhase, ...)

// Page 0: the empty state (its label is the notice).
QWidget* emptyPage(QWidget* parent, QLabel*& label) {
    auto* page = new QWidget(parent);
    label = new QLabel(page);
    label->setObjectName(QStringLiteral("waferNotice"));
    label->setWordWrap(true);
    label->setAlignment(Qt::AlignCenter);
    label->setTextFormat(Qt::RichText);
    label->setFixedWidth(600);
    auto* layout = new QVBoxLayout(page);
    layout->addStretch(1);
    layout->addWidget(label, 0, Qt::AlignHCenter);
    layout->addStretch(2);
    return page;
}

QLabel* bannerLabel(QWidget* parent) {
    auto* banner = new QLabel(parent);
    banner->setObjectName(QStringLiteral("waferBanner"));
    banner->setWordWrap(true);
    banner->setStyleSheet(
        QStringLiteral("QLabel { background: #fff3cd; color: #5c4400; border: 1px solid #e0c060; "
                       "border-radius: 4px; padding: 4px 8px; }"));
    banner->hide();
    return banner;
}

}  // namespace

WaferTab::WaferTab(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("waferTab"));
    m_stack = new QStackedWidget(this);
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->addWidget(m_stack);
    m_stack->addWidget(emptyPage(m_stack, m_emptyLabel));

    // Page 1: the views.
    auto* page = new QWidget(m_stack);
    auto* layout = new QVBoxLayout(page);
    layout->setContentsMargins(8, 6, 8, 4);
    layout->setSpacing(4);
    m_banner = bannerLabel(page);
    layout->addWidget(m_banner);
    m_summary = new WaferSummary(page, layout);
    m_stepControls = new StepControls(page);
    layout->addLayout(m_stepControls->row());
    // What the views show: beside the step controls when the tab is wide enough, else on a row
    // of its own (placeViewControls; issue 17: the window fits a laptop).
    m_viewRow = new QHBoxLayout;
    m_viewRow->addStretch(1);
    layout->addLayout(m_viewRow);
    m_viewControls = new WaferViewControls(page);
    m_viewRow->insertWidget(0, m_viewControls);
    m_slowBar = new SlowMotionBar(page);
    layout->addWidget(m_slowBar);
    m_views = new WaferStepViews(page);
    layout->addWidget(m_views, 1);
    // Below the views' minimum (a laptop with docks open) the page scrolls instead of forcing
    // the window wider or taller than the screen.
    auto* scroll = new QScrollArea(m_stack);
    scroll->setObjectName(QStringLiteral("waferScroll"));
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidgetResizable(true);
    scroll->setWidget(page);
    m_stack->addWidget(scroll);
    m_replayer = new StepReplayer(this);

    m_redrawTimer = new QTimer(this);
    m_redrawTimer->setSingleShot(true);
    m_redrawTimer->setInterval(40);
    connect(m_redrawTimer, &QTimer::timeout, this, [this] {
        if (isVisible()) redrawNow();
    });
    connectControls();
    // The colour scale restored from the settings applies as a toggle does (and schedules a
    // redraw like one, which lays the page out before the first run's step arrives).
    if (m_viewControls->fitColours()) {
        m_views->heatmap()->setFitColours(true);
        scheduleRedraw();
    }
    m_viewControls->rebuildPhases(nullptr, m_run.numBlocks);
    setUpReplay();
    updateNotices();
}

void WaferTab::connectControls() {
    connect(m_views->charts(), &QTabWidget::currentChanged, this, &WaferTab::scheduleRedraw);
    connect(m_stepControls, &StepControls::stepChosen, this, [this](int64_t step, bool dragged) {
        if (dragged || step != m_shownStep) showStep(step);
    });
    connect(m_stepControls, &StepControls::liveToggled, this, [this](bool on) {
        if (on)
            goLive();
        else if (m_live)
            showStep(m_shownStep);
    });
    connect(m_viewControls, &WaferViewControls::phaseChosen, this, [this](int code) {
        // A phase chosen during slow motion is shown as chosen: the replay ends.
        if (isReplaying()) leaveReplay();
        setPhase(code);
    });
    connect(m_viewControls, &WaferViewControls::fitColoursToggled, this, [this](bool on) {
        m_views->heatmap()->setFitColours(on);
        scheduleRedraw();
    });
    connect(m_viewControls, &WaferViewControls::clockChosen, this, &WaferTab::setClock);
}

void WaferTab::beginRun(const config::Config& config) {
    if (m_plannedActive) leavePlannedRun();
    m_replayer->clear();  // a new run: nothing of the last one replays
    m_history.clear();
    m_liveRunId = -1;
    auto spec = wafer::specForConfig(config);
    m_run.ioBytesPerS = spec.ok() ? spec->ioBytesPerS() : 0;
    m_run.numBlocks = config.model.numHiddenLayers;
    m_run.numSystems = std::max(1, config.runconfig.numCsx);
    m_run.bufferLayers = std::max(1, config.wafer.weightBufferLayers);
    m_emulation = config.wafer.emulate ? Emulation::Waiting : Emulation::Off;
    m_notPlannedReason.clear();
    m_followedNote.clear();
    m_shownStep = -1;
    m_live = true;
    m_followLayer = -1;
    m_followStep = -1;
    m_realTokensPerS = 0;
    m_runState = session::RunState::Preparing;
    m_views->diagram()->setPlacement({});
    m_views->charts()->beginRun(config);
    m_viewControls->rebuildPhases(nullptr, m_run.numBlocks);
    updateNotices();
    scheduleRedraw();
}

void WaferTab::setPlacement(const std::vector<store::RankPlacement>& ranks) {
    std::vector<QString> perSystem;
    for (const auto& r : ranks) {
        for (int s = r.firstSystem; s < r.firstSystem + r.systems; ++s) {
            if (s < 0 || s > 4096) continue;  // a damaged record, not worth a huge vector
            if (perSystem.size() <= size_t(s)) perSystem.resize(size_t(s) + 1);
            perSystem[size_t(s)] =
                tr("rank %1 on %2").arg(r.rank).arg(QString::fromStdString(r.host));
        }
    }
    m_views->diagram()->setPlacement(std::move(perSystem));
}

void WaferTab::appendSpans(const std::vector<streaming::Span>& spans) {
    if (spans.empty()) return;
    m_history.addSpans(spans);
    // The layer phase to follow: the latest compute span, and its step. Spans arrive as work
    // ends, so this is the phase that just finished (the next one is already running; a paused
    // run's next step may already be streaming its first weights in).
    const int64_t newest = m_history.lastStep();
    for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if ((it->kind == streaming::SpanKind::Forward ||
             it->kind == streaming::SpanKind::Backward) &&
            it->step >= m_followStep) {
            m_followStep = it->step;
            m_followLayer = it->layer;
            m_followBackward = it->kind == streaming::SpanKind::Backward;
            break;
        }
    }
    // Spans but no emulated step: the emulator did not plan this run.
    if (m_emulation == Emulation::Waiting && !m_history.latestPrediction()) {
        m_emulation = Emulation::NotPlanned;
        updateNotices();
    }
    if (m_live) m_shownStep = newest;
    scheduleRedraw();
}

void WaferTab::addEmulatedStep(const session::EmulatedStep& step) {
    // An MoE run re-sends a finished step with its real routing: not a new step.
    const bool fresh = step.step > m_history.lastStep();
    m_history.addEmulatedStep(step);
    if (m_emulation != Emulation::On) {
        m_emulation = Emulation::On;
        updateNotices();
    }
    if (m_live && fresh) m_shownStep = m_history.lastStep();  // nothing computing in it yet
    scheduleRedraw();
}

void WaferTab::appendMetrics(const std::vector<session::StepMetrics>& batch) {
    if (batch.empty()) return;
    for (const auto& m : batch) {
        if (m.tokensPerSec > 0) m_realTokensPerS = m.tokensPerSec;
        m_history.addMetrics(m);
        m_views->charts()->addMetrics(m, m_plannedActive);
    }
    scheduleRedraw();
}

void WaferTab::addExpertTokens(int64_t step, const std::vector<std::vector<int64_t>>& tokens) {
    m_history.addExpertTokens(step, tokens);
    scheduleRedraw();
}

void WaferTab::noteLog(int, const QString& message) {
    static const QString kMarker = QStringLiteral("emulator off for this run");
    const qsizetype at = message.indexOf(kMarker);
    if (at < 0) return;
    m_notPlannedReason = message.mid(at);
    if (m_emulation == Emulation::Waiting || m_emulation == Emulation::NotPlanned) {
        m_emulation = Emulation::NotPlanned;
        updateNotices();
        scheduleRedraw();
    }
}

void WaferTab::setFollowedNote(const QString& note) {
    m_followedNote = note;
    updateNotices();
}

void WaferTab::setMeasuredTokensPerSec(double tokensPerSec) {
    if (!(tokensPerSec > 0)) return;
    m_realTokensPerS = tokensPerSec;
    scheduleRedraw();
}

QString WaferTab::realSummaryText() const {
    return m_summary->realText();
}

void WaferTab::setRunState(session::RunState state) {
    m_runState = state;
    scheduleRedraw();
}

void WaferTab::showStep(int64_t step) {
    if (m_plannedActive) leavePlannedRun();
    if (m_history.empty()) return;
    m_live = false;
    m_shownStep = std::clamp(step, m_history.firstStep(), m_history.lastStep());
    scheduleRedraw();
    updateStepControls();
}

void WaferTab::goLive() {
    if (m_plannedActive) leavePlannedRun();
    leaveReplay();
    m_live = true;
    m_shownStep = m_history.lastStep();
    scheduleRedraw();
    updateStepControls();
}

void WaferTab::setPhase(int phaseCode) {
    m_viewControls->setPhaseCode(phaseCode);
    scheduleRedraw();
}

void WaferTab::setClock(TimelineView::Clock clock) {
    m_viewControls->setClock(clock);
    scheduleRedraw();
}

void WaferTab::scheduleRedraw() {
    m_dirty = true;
    if (!m_redrawTimer->isActive()) m_redrawTimer->start();
}

void WaferTab::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (m_dirty) scheduleRedraw();
}

void WaferTab::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    placeViewControls();
    scheduleRedraw();
}

void WaferTab::placeViewControls() {
    QHBoxLayout* stepRow = m_stepControls->row();
    const bool inStepRow = stepRow->indexOf(m_viewControls) >= 0;
    const int views = m_viewControls->sizeHint().width() - (inStepRow ? 24 : 0);  // no margin
    // The step controls with the slider at 60 px at least (it stretches), the views 24 px away;
    // the page's margins and a vertical scroll bar's width spared.
    const int steps = stepRow->sizeHint().width() - (inStepRow ? views + 24 : 0) -
                      m_stepControls->sliderWidthHint() + 60;
    const bool oneRow = steps + 24 + views <= width() - 16 - 20;
    if (oneRow == inStepRow) return;
    if (oneRow) {
        m_viewRow->removeWidget(m_viewControls);
        stepRow->addWidget(m_viewControls);
        m_viewControls->layout()->setContentsMargins(24, 0, 0, 0);
    } else {
        stepRow->removeWidget(m_viewControls);
        m_viewRow->insertWidget(0, m_viewControls);
        m_viewControls->layout()->setContentsMargins(0, 0, 0, 0);
    }
}

QString WaferTab::phaseChoiceText() const {
    return m_viewControls->phaseText();
}

QString WaferTab::phaseName(int layer, bool backward) const {
    return ws::ui::phaseName(layer, backward, m_run.numBlocks);
}

void WaferTab::updateStepControls() {
    m_stepControls->show(m_history, m_shownStep, m_live && !m_plannedActive,
                         m_runState == session::RunState::Paused);
    placeViewControls();  // the info's width changed
}

void WaferTab::updateSummary(const StepRecord* record) {
    const wafer::StepPrediction* p = record && record->prediction
                                         ? record->prediction.get()
                                         : m_history.latestPrediction().get();
    m_summary->show(p, m_emulation == Emulation::Off, m_plannedActive, m_realTokensPerS);
}

QString WaferTab::noticeText() const {
    if (m_stack->currentIndex() == 0) return m_emptyLabel->text();
    return m_banner->isHidden() ? QString() : m_banner->text();
}

void WaferTab::updateNotices() {
    if (m_emulation == Emulation::NoRun && !m_plannedActive) {
        m_emptyLabel->setText(
            tr("<h3>No run to show yet</h3><p>Press <b>Run</b> to train the config. While it "
               "trains, this tab shows the emulated wafer-scale cluster step by step: the "
               "per-core utilization of each layer as it runs, the weights streaming from "
               "MemoryX through SwarmX to each system and the gradients coming back, and the "
               "step's timeline.</p><p>The emulator follows <tt>wafer.spec</tt> and "
               "<tt>runconfig.num_csx</tt>; <tt>wafer predict CONFIG</tt> gives the same "
               "prediction from the command line.</p><p>Select a finished run in the Runs dock to "
               "see, and replay in slow motion, the step its config plans (runs keep no spans "
               "in the store; the tab keeps the steps of the run trained in this window).</p>"));
        // A centred word-wrapped label gets no height-for-width on its own.
        m_emptyLabel->setMinimumHeight(m_emptyLabel->heightForWidth(m_emptyLabel->width()));
        m_stack->setCurrentIndex(0);
        return;
    }
    m_stack->setCurrentIndex(1);
    QString banner;
    if (m_emulation == Emulation::Off) {
        banner =
            tr("The emulator is off for this run (wafer.emulate: false): there are no "
               "utilization frames and no emulated times. The model trains as usual; the "
               "timeline shows the real CPU's wall time of each span.");
    } else if (m_emulation == Emulation::NotPlanned) {
        banner = tr("The emulator could not plan this config, so it is off for this run "
                    "(training is unaffected; the timeline shows real CPU wall time). %1")
                     .arg(m_notPlannedReason.isEmpty() ? tr("See the Log for why.")
                                                       : m_notPlannedReason);
    }
    if (!m_followedNote.isEmpty()) banner = m_followedNote;
    if (m_plannedActive) banner = m_plannedNote;
    m_banner->setText(banner);
    m_banner->setVisible(!banner.isEmpty());
    // Without the emulator, wall time is the only clock (the choice is kept for the next run).
    const bool emulated =
        m_emulation == Emulation::On || m_emulation == Emulation::Waiting || m_plannedActive;
    m_viewControls->setEmulatedClockOffered(emulated);
}

void WaferTab::redrawNow() {
    m_redrawTimer->stop();
    m_dirty = false;
    // Following a paused run: the step of the phase it paused after (the narration's), though
    // the next step may already be streaming its first weights in.
    const bool paused = m_runState == session::RunState::Paused;
    if (m_live)
        m_shownStep = paused && m_followStep >= 0 && m_history.find(m_followStep)
                          ? m_followStep
                          : m_history.lastStep();
    updateStepControls();
    const StepRecord* record = shownRecord();
    const bool newest = record && record->step == m_history.lastStep();
    const bool running = m_runState == session::RunState::Running || paused ||
                         m_runState == session::RunState::Preparing;
    const bool followed = m_live && record && record->step == m_followStep;
    const bool inProgress = (newest || followed) && running && !m_plannedActive;
    updateSummary(record);

    const auto& prediction = record && record->prediction
                                 ? record->prediction
                                 : std::shared_ptr<const wafer::StepPrediction>();
    if (prediction) m_viewControls->rebuildPhases(prediction.get(), m_run.numBlocks);
    const ShownPhase shown = showHeatmap(record, prediction, inProgress, followed, paused);
    // The wafers in the diagram use the heatmap's colours.
    double colourLow = 0, colourHigh = 1;
    if (shown.frame && m_viewControls->fitColours() && shown.frame->max > shown.frame->min) {
        colourLow = shown.frame->min;
        colourHigh = shown.frame->max;
    }
    const int numSystems = prediction ? prediction->numSystems : m_run.numSystems;
    m_views->diagram()->setStep(
        record, numSystems, m_run.numBlocks, prediction ? prediction->treeDepth : 0,
        prediction ? QString::fromStdString(prediction->waferName) : QString(), shown.frame,
        inProgress, colourLow, colourHigh);
    TimelineView* timeline = m_views->timeline();
    const bool timelineChanged = timeline->setStep(
        record, numSystems, m_run.numBlocks,
        prediction ? m_viewControls->clock() : TimelineView::Clock::Real, shown.layer);
    m_views->charts()->showStep(m_history, record, m_live, m_plannedActive, m_run.numBlocks);
    m_views->showBufferAtPhase(record, prediction.get(), shown.layer, shown.backward,
                               m_run.numBlocks, m_run.bufferLayers);
    // Slow motion draws the moment under its cursor over the step's picture.
    syncReplay(record);
    const bool replaying = m_replayer->isActive();
    if (replaying) {
        applyReplay();
    } else {
        m_views->diagram()->setReplay(std::nullopt);
        timeline->setReplayCursor(-1);
        m_viewControls->showReplayPhase({});
    }
    m_views->heatmap()->replotTimed();  // only when its frame or titles changed
    if (timelineChanged || replaying) timeline->replot(QCustomPlot::rpQueuedRefresh);
}

WaferTab::ShownPhase WaferTab::showHeatmap(
    const StepRecord* record, const std::shared_ptr<const wafer::StepPrediction>& prediction,
    bool inProgress, bool followed, bool paused) {
    if (!prediction) {
        m_views->showNoHeatmap(m_emulation == Emulation::NoRun || m_emulation == Emulation::Waiting
                                   ? tr("No utilization frame yet")
                                   : tr("No utilization frames: the emulator is off for this run"));
        return {};
    }
    // The chosen phase, or the layer that just ran, or the whole step.
    ShownPhase shown;
    QString note, phase;
    const int code = m_viewControls->phaseCode();
    if (code == Phase::kFollowPhase) {
        // The phase just computed; paused, even when it was the step's last.
        if (inProgress && followed && m_followLayer >= 0 &&
            (paused || !stepComplete(*record, m_run.numBlocks))) {
            shown = {prediction->frameFor(m_followLayer, m_followBackward), m_followLayer,
                     m_followBackward};
            phase = phaseName(m_followLayer, m_followBackward);
            note = tr("just computed");
        } else {
            shown.frame = prediction->frameFor(-1, false);
            note = !inProgress                              ? tr("whole step")
                   : stepComplete(*record, m_run.numBlocks) ? tr("step complete")
                                                            : tr("step starting");
        }
    } else if (code == Phase::kWholeStep) {
        shown.frame = prediction->frameFor(-1, false);
    } else if (code == Phase::kAdapterForward || code == Phase::kAdapterBackward) {
        const bool backward = code == Phase::kAdapterBackward;
        shown.frame = prediction->adapterFrame(backward);
        phase = backward ? tr("LoRA adapter ops, backward") : tr("LoRA adapter ops, forward");
        note = tr("rank %1: busy over the adapters' own %2 per block")
                   .arg(prediction->loraRank)
                   .arg(QString::fromStdString(formatSeconds(
                       backward ? prediction->adapterBackwardS : prediction->adapterForwardS)));
    } else {
        shown = {prediction->frameFor(code / 2, code % 2 == 1), code / 2, code % 2 == 1};
        phase = phaseName(shown.layer, shown.backward);
    }
    m_views->showHeatmap(prediction, shown.frame, shown.layer, shown.backward, phase, note,
                         m_run.numBlocks);
    return shown;
}

const StepRecord* WaferTab::shownRecord() const {
    if (m_plannedActive) return &m_planned;
    return m_shownStep >= 0 ? m_history.find(m_shownStep) : nullptr;
}

bool WaferTab::chartShown(const QWidget* chart) const {
    return m_views->charts()->chartShown(chart);
}

}  // namespace ws::ui
