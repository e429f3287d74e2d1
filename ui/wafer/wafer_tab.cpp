// WaferTab: see wafer_tab.h.
#include "ui/wafer/wafer_tab.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QPainter>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>

#include "engine/wafer/spec.h"
#include "ui/wafer/buffer_slots_view.h"
#include "ui/wafer/cluster_diagram.h"
#include "ui/wafer/core_heatmap.h"
#include "ui/wafer/core_regions.h"
#include "ui/wafer/executor_buffer.h"
#include "ui/wafer/expert_load_chart.h"
#include "ui/wafer/layer_norm_chart.h"
#include "ui/wafer/slow_motion_bar.h"
#include "ui/wafer/sparsity_chart.h"
#include "ui/wafer/step_replayer.h"
#include "ui/wafer/time_split_bar.h"

namespace ws::ui {
namespace {

constexpr int kFollowPhase = -2;
constexpr int kWholeStep = -1;
constexpr int kAdapterForward = -3;  // LoRA: the adapter products of a block's forward alone
constexpr int kAdapterBackward = -4;
constexpr int kReplayCursor = -5;  // slow motion: the phase under the cursor (not a choice)

QString seconds(double s) {
    if (s < 1e-3) return QStringLiteral("%1 µs").arg(s * 1e6, 0, 'f', 1);
    if (s < 1) return QStringLiteral("%1 ms").arg(s * 1e3, 0, 'f', 2);
    return QStringLiteral("%1 s").arg(s, 0, 'f', 3);
}

QString rate(double perS) {
    if (perS >= 1e9) return QStringLiteral("%1 G").arg(perS / 1e9, 0, 'f', 2);
    if (perS >= 1e6) return QStringLiteral("%1 M").arg(perS / 1e6, 0, 'f', 2);
    if (perS >= 1e3) return QStringLiteral("%1 k").arg(perS / 1e3, 0, 'f', 1);
    return QStringLiteral("%1 ").arg(perS, 0, 'f', 0);
}

}  // namespace

WaferTab::WaferTab(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("waferTab"));
    m_stack = new QStackedWidget(this);
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->addWidget(m_stack);

    // Page 0: the empty state.
    auto* emptyPage = new QWidget(m_stack);
    m_emptyLabel = new QLabel(emptyPage);
    m_emptyLabel->setObjectName(QStringLiteral("waferNotice"));
    m_emptyLabel->setWordWrap(true);
    m_emptyLabel->setAlignment(Qt::AlignCenter);
    m_emptyLabel->setTextFormat(Qt::RichText);
    m_emptyLabel->setFixedWidth(600);
    auto* emptyLayout = new QVBoxLayout(emptyPage);
    emptyLayout->addStretch(1);
    emptyLayout->addWidget(m_emptyLabel, 0, Qt::AlignHCenter);
    emptyLayout->addStretch(2);
    m_stack->addWidget(emptyPage);

    // Page 1: the views.
    auto* page = new QWidget(m_stack);
    auto* layout = new QVBoxLayout(page);
    layout->setContentsMargins(8, 6, 8, 4);
    layout->setSpacing(4);
    m_banner = new QLabel(page);
    m_banner->setObjectName(QStringLiteral("waferBanner"));
    m_banner->setWordWrap(true);
    m_banner->setStyleSheet(
        QStringLiteral("QLabel { background: #fff3cd; color: #5c4400; border: 1px solid #e0c060; "
                       "border-radius: 4px; padding: 4px 8px; }"));
    m_banner->hide();
    layout->addWidget(m_banner);

    m_summary = new QLabel(page);
    m_summary->setObjectName(QStringLiteral("waferSummary"));
    m_summary->setTextFormat(Qt::RichText);
    m_summary->setWordWrap(true);
    layout->addWidget(m_summary);
    m_realSummary = new QLabel(page);
    m_realSummary->setObjectName(QStringLiteral("waferRealSummary"));
    m_realSummary->setWordWrap(true);  // one long line set the page's width on a laptop
    layout->addWidget(m_realSummary);
    auto* splitRow = new QHBoxLayout;
    m_splitLabel = new QLabel(tr("Where the predicted step time goes:"), page);
    splitRow->addWidget(m_splitLabel, 0, Qt::AlignTop);
    m_split = new TimeSplitBar(page);
    splitRow->addWidget(m_split, 1);
    layout->addLayout(splitRow);

    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Step:"), page));
    m_stepSlider = new QSlider(Qt::Horizontal, page);
    m_stepSlider->setObjectName(QStringLiteral("waferStepSlider"));
    m_stepSlider->setToolTip(tr("Scrub back over the recorded steps"));
    controls->addWidget(m_stepSlider, 1);
    m_stepSpin = new QSpinBox(page);
    m_stepSpin->setObjectName(QStringLiteral("waferStepSpin"));
    m_stepSpin->setKeyboardTracking(false);
    controls->addWidget(m_stepSpin);
    m_liveButton = new QPushButton(tr("Live"), page);
    m_liveButton->setObjectName(QStringLiteral("waferLive"));
    m_liveButton->setCheckable(true);
    m_liveButton->setChecked(true);
    m_liveButton->setToolTip(tr("Follow the step being trained"));
    controls->addWidget(m_liveButton);
    m_stepInfo = new QLabel(page);
    m_stepInfo->setObjectName(QStringLiteral("waferStepInfo"));
    m_stepInfo->setSizePolicy(QSizePolicy::Minimum, QSizePolicy::Preferred);  // never clipped
    controls->addWidget(m_stepInfo);
    layout->addLayout(controls);
    m_stepRow = controls;
    // What the views show: beside the step controls when the tab is wide enough, else on a row
    // of its own (placeViewControls; issue 17: the window fits a laptop).
    m_viewRow = new QHBoxLayout;
    m_viewRow->addStretch(1);
    layout->addLayout(m_viewRow);
    m_viewControls = new QWidget(page);
    controls = new QHBoxLayout(m_viewControls);
    controls->setContentsMargins(0, 0, 0, 0);
    controls->addWidget(new QLabel(tr("Heatmap:"), page));
    m_phase = new QComboBox(page);
    m_phase->setObjectName(QStringLiteral("waferPhase"));
    m_phase->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    controls->addWidget(m_phase);
    m_fitColours = new QCheckBox(tr("fit colours"), page);
    m_fitColours->setObjectName(QStringLiteral("waferFitColours"));
    m_fitColours->setToolTip(
        tr("Stretch the colour scale over the shown frame's min-max busy fraction, so small "
           "imbalances between cores show (the default scale is 0-100 %)"));
    controls->addWidget(m_fitColours);
    controls->addSpacing(16);
    // Short names keep the choices beside the step controls on a 1400-px window.
    auto* clockLabel = new QLabel(tr("Clock:"), page);
    clockLabel->setToolTip(tr("The timeline's clock"));
    controls->addWidget(clockLabel);
    m_clockChoice = new QComboBox(page);
    m_clockChoice->setObjectName(QStringLiteral("waferClock"));
    m_clockChoice->addItem(tr("emulated wafer"), int(TimelineView::Clock::Emulated));
    m_clockChoice->addItem(tr("real CPU wall time"), int(TimelineView::Clock::Real));
    controls->addWidget(m_clockChoice);
    m_viewRow->insertWidget(0, m_viewControls);
    m_slowBar = new SlowMotionBar(page);
    layout->addWidget(m_slowBar);

    auto* vertical = new QSplitter(Qt::Vertical, page);
    auto* top = new QSplitter(Qt::Horizontal, vertical);
    m_map = new CoreHeatmap(top);
    m_diagram = new ClusterDiagram(top);
    top->addWidget(m_map);
    top->addWidget(m_diagram);
    top->setStretchFactor(0, 3);
    top->setStretchFactor(1, 2);
    // The per-layer gradient norms sit under the diagram, beside the timeline: under the
    // diagram itself they would make the top row taller than the default window allows and
    // squeeze the heatmap and the timeline's lanes; the timeline can spare some width.
    auto* bottom = new QSplitter(Qt::Horizontal, vertical);
    // The weight buffer's slots sit on the timeline, whose stream-in lane they explain.
    auto* timelineBox = new QWidget(bottom);
    auto* timelineLayout = new QVBoxLayout(timelineBox);
    timelineLayout->setContentsMargins(0, 0, 0, 0);
    timelineLayout->setSpacing(2);
    m_bufferSlots = new BufferSlotsView(timelineBox);
    m_timeline = new TimelineView(timelineBox);
    timelineLayout->addWidget(m_bufferSlots);
    timelineLayout->addWidget(m_timeline, 1);
    // The gradient norms, an MoE run's tokens per expert and a sparse run's sparsity per layer
    // over the run, as tabs (the last two only for runs that have them): the column is as tall
    // as the timeline, too short for two readable charts at the default window size.
    m_chartTabs = new QTabWidget(bottom);
    m_chartTabs->setObjectName(QStringLiteral("waferChartTabs"));
    m_chartTabs->setDocumentMode(true);
    m_layerNorms = new LayerNormChart(m_chartTabs);
    m_expertLoads = new ExpertLoadChart(m_chartTabs);
    m_sparsityChart = new SparsityChart(m_chartTabs);
    m_chartTabs->addTab(m_layerNorms, tr("Gradient norms"));
    m_chartTabs->addTab(m_expertLoads, tr("Tokens per expert"));
    m_chartTabs->addTab(m_sparsityChart, tr("Sparsity"));
    setChartShown(m_expertLoads, false);
    setChartShown(m_sparsityChart, false);
    connect(m_chartTabs, &QTabWidget::currentChanged, this, &WaferTab::scheduleRedraw);
    bottom->addWidget(timelineBox);
    bottom->addWidget(m_chartTabs);
    bottom->setStretchFactor(0, 5);
    bottom->setStretchFactor(1, 2);
    // Start at those proportions: the size hints alone leave the diagram and the bar chart at
    // their minimum widths, clipping the diagram's labels and the chart's title.
    top->setSizes({3000, 2000});
    bottom->setSizes({5000, 2000, 2000});
    vertical->addWidget(top);
    vertical->addWidget(bottom);
    // The timeline keeps the height it had before the slow-motion bar took a row: its lanes
    // go compact (one row per system) under ~210 px.
    vertical->setStretchFactor(0, 4);
    vertical->setStretchFactor(1, 3);
    layout->addWidget(vertical, 1);
    m_views = vertical;
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

    connect(m_stepSlider, &QSlider::valueChanged, this, [this](int v) {
        if (m_stepSlider->isSliderDown() || v - 1 != m_shownStep) showStep(int64_t(v) - 1);
    });
    connect(m_stepSpin, qOverload<int>(&QSpinBox::valueChanged), this, [this](int v) {
        if (v - 1 != m_shownStep) showStep(int64_t(v) - 1);
    });
    connect(m_liveButton, &QPushButton::toggled, this, [this](bool on) {
        if (on)
            goLive();
        else if (m_live)
            showStep(m_shownStep);
    });
    connect(m_phase, qOverload<int>(&QComboBox::activated), this, [this](int index) {
        const int code = m_phase->itemData(index).toInt();
        if (code == kReplayCursor) return;
        // A phase chosen during slow motion is shown as chosen: the replay ends.
        if (isReplaying()) leaveReplay();
        setPhase(code);
    });
    connect(m_fitColours, &QCheckBox::toggled, this, [this](bool on) {
        m_map->setFitColours(on);
        QSettings().setValue(QStringLiteral("wafer/fitColours"), on);
        scheduleRedraw();
    });
    connect(m_clockChoice, qOverload<int>(&QComboBox::activated), this, [this](int index) {
        setClock(TimelineView::Clock(m_clockChoice->itemData(index).toInt()));
        QSettings().setValue(QStringLiteral("wafer/clock"), int(m_clock));
    });

    // The colour scale and the clock persist (QSettings), so a lesson reopens as it was left; the
    // phase does not (the next run may have other layers).
    QSettings settings;
    m_fitColours->setChecked(settings.value(QStringLiteral("wafer/fitColours"), false).toBool());
    m_clock = TimelineView::Clock(
        settings.value(QStringLiteral("wafer/clock"), int(TimelineView::Clock::Emulated)).toInt());
    m_clockChoice->setCurrentIndex(std::max(0, m_clockChoice->findData(int(m_clock))));
    rebuildPhaseChoices(nullptr);
    setUpReplay();
    updateNotices();
}

void WaferTab::beginRun(const config::Config& config) {
    if (m_plannedActive) leavePlannedRun();
    m_replayer->clear();  // a new run: nothing of the last one replays
    m_history.clear();
    m_liveRunId = -1;
    auto spec = wafer::specForConfig(config);
    m_ioBytesPerS = spec.ok() ? spec->ioBytesPerS() : 0;
    m_numBlocks = config.model.numHiddenLayers;
    m_numSystems = std::max(1, config.runconfig.numCsx);
    m_bufferLayers = std::max(1, config.wafer.weightBufferLayers);
    m_emulation = config.wafer.emulate ? Emulation::Waiting : Emulation::Off;
    m_notPlannedReason.clear();
    m_followedNote.clear();
    m_shownStep = -1;
    m_live = true;
    m_followLayer = -1;
    m_followStep = -1;
    m_realTokensPerS = 0;
    m_runState = session::RunState::Preparing;
    m_diagram->setPlacement({});
    // An MoE model's chart: its MoE blocks (every moe_layer_frequency-th from block 0).
    std::vector<int> moeBlocks;
    const auto& moe = config.model.moe;
    for (int b = 0; moe && b < m_numBlocks; ++b)
        if (b % std::max(1, moe->moeLayerFrequency) == 0) moeBlocks.push_back(b);
    m_expertLoads->setModel(m_numBlocks, moe ? moe->numExperts : 0, moe ? moe->topK : 1, moeBlocks);
    setChartShown(m_expertLoads, m_expertLoads->isMoe());
    m_liveSparsity.clear();
    m_liveSparse = config.sparsity && config.sparsity->sparsity > 0;
    showSparsity({}, m_liveSparse);
    rebuildPhaseChoices(nullptr);
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
    m_diagram->setPlacement(std::move(perSystem));
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
        if (!m.blockSparsity.empty()) {
            m_liveSparsity.push_back({m.step, m.blockSparsity, m.blockImbalance});
            if (!m_plannedActive) {  // a stored run's chart shows until Live
                m_sparsityChart->addPoint(m.step, m.blockSparsity, m.blockImbalance);
                setChartShown(m_sparsityChart, true);
            }
        }
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
    return m_realSummary->text();
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
    m_phaseCode = phaseCode;
    const int index = m_phase->findData(phaseCode);
    if (index >= 0) m_phase->setCurrentIndex(index);
    scheduleRedraw();
}

void WaferTab::setClock(TimelineView::Clock clock) {
    m_clock = clock;
    m_clockChoice->setCurrentIndex(m_clockChoice->findData(int(clock)));
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
    const bool inStepRow = m_stepRow->indexOf(m_viewControls) >= 0;
    const int views = m_viewControls->sizeHint().width() - (inStepRow ? 24 : 0);  // no margin
    // The step controls with the slider at 60 px at least (it stretches), the views 24 px away;
    // the page's margins and a vertical scroll bar's width spared.
    const int steps = m_stepRow->sizeHint().width() - (inStepRow ? views + 24 : 0) -
                      m_stepSlider->sizeHint().width() + 60;
    const bool oneRow = steps + 24 + views <= width() - 16 - 20;
    if (oneRow == inStepRow) return;
    if (oneRow) {
        m_viewRow->removeWidget(m_viewControls);
        m_stepRow->addWidget(m_viewControls);
        m_viewControls->layout()->setContentsMargins(24, 0, 0, 0);
    } else {
        m_stepRow->removeWidget(m_viewControls);
        m_viewRow->insertWidget(0, m_viewControls);
        m_viewControls->layout()->setContentsMargins(0, 0, 0, 0);
    }
}

void WaferTab::rebuildPhaseChoices(const wafer::StepPrediction* prediction) {
    if (prediction == m_phaseChoicesFor && m_phase->count() > 0) return;
    m_phaseChoicesFor = prediction;
    m_phase->clear();
    // Short: at presenter mode's type size the controls row must fit a 1400-px window.
    m_phase->addItem(tr("follow the run"), kFollowPhase);
    m_phase->setItemData(0, tr("The layer phase that just ran"), Qt::ToolTipRole);
    m_phase->addItem(tr("whole step"), kWholeStep);
    if (prediction && prediction->adapterFrame(false)) {
        m_phase->addItem(tr("LoRA adapter ops, forward (every block)"), kAdapterForward);
        m_phase->addItem(tr("LoRA adapter ops, backward (every block)"), kAdapterBackward);
    }
    if (prediction) {
        const int layers = int(prediction->forwardFrame.size());
        for (int backward = 0; backward < 2; ++backward) {
            for (int i = 0; i < layers; ++i) {
                // Backward runs from the head down, as the step does.
                const int layer = backward ? layers - 1 - i : i;
                const auto* frame = prediction->frameFor(layer, backward);
                if (!frame || frame == prediction->frameFor(-1, false)) continue;
                m_phase->addItem(phaseName(layer, backward), layer * 2 + backward);
            }
        }
    }
    const int index = m_phase->findData(m_phaseCode);
    m_phase->setCurrentIndex(index >= 0 ? index : 0);
    if (index < 0) m_phaseCode = kFollowPhase;
}

void WaferTab::showReplayPhaseChoice(const QString& phase) {
    // The Heatmap choice names what the heatmap shows: in slow motion, the phase under the
    // cursor (issue 31: it kept naming "h.0 forward" while playback showed other layers).
    int index = m_phase->findData(kReplayCursor);
    if (phase.isEmpty()) {
        if (index >= 0) m_phase->removeItem(index);
        const int chosen = m_phase->findData(m_phaseCode);
        m_phase->setCurrentIndex(chosen >= 0 ? chosen : 0);
        return;
    }
    const QString text = tr("slow motion: %1").arg(phase);
    if (index < 0) {
        m_phase->insertItem(0, text, kReplayCursor);
        m_phase->setItemData(0,
                             tr("The phase under the slow-motion cursor; choose another to "
                                "leave slow motion and show it"),
                             Qt::ToolTipRole);
        index = 0;
    } else {
        m_phase->setItemText(index, text);
    }
    m_phase->setCurrentIndex(index);
}

QString WaferTab::phaseChoiceText() const {
    return m_phase->currentText();
}

QString WaferTab::phaseName(int layer, bool backward) const {
    return QString::fromStdString(wafer::layerName(layer, m_numBlocks)) +
           (backward ? tr(" backward") : tr(" forward"));
}

void WaferTab::updateStepControls() {
    const bool any = !m_history.empty();
    const int first = any ? int(m_history.firstStep()) + 1 : 0;
    const int last = any ? int(m_history.lastStep()) + 1 : 0;
    const int shown = m_shownStep >= 0 ? int(m_shownStep) + 1 : 0;
    for (QWidget* w : std::initializer_list<QWidget*>{m_stepSlider, m_stepSpin, m_liveButton})
        w->setEnabled(any);
    {
        const QSignalBlocker b1(m_stepSlider), b2(m_stepSpin), b3(m_liveButton);
        m_stepSlider->setRange(first, last);
        m_stepSlider->setValue(shown);
        m_stepSpin->setRange(first, last);
        m_stepSpin->setValue(shown);
        m_liveButton->setChecked(m_live && !m_plannedActive);
    }
    QString info;
    if (any) {
        info = tr("of %1 – %2").arg(first).arg(last);
        if (m_history.droppedSteps() > 0)
            info += tr(" (the last %1 steps are kept)").arg(m_history.size());
        if (m_runState == session::RunState::Paused) info += tr(" · paused");
    }
    m_stepInfo->setText(info);
    placeViewControls();  // the info's width changed
    m_stepInfo->setToolTip(tr("The tab keeps the spans of the last %1 steps of this run "
                              "(at most %2 spans); older steps are dropped.")
                               .arg(WaferHistory::kMaxSteps)
                               .arg(WaferHistory::kMaxSpans));
}

void WaferTab::updateSummary(const StepRecord* record) {
    const wafer::StepPrediction* p = record && record->prediction
                                         ? record->prediction.get()
                                         : m_history.latestPrediction().get();
    if (p) {
        m_summary->setText(
            tr("<b>Predicted on %1 × %2 system(s):</b> step %3 · %4tokens/s · MFU %5 % · "
               "weight streaming %6")
                .arg(QString::fromStdString(p->waferName))
                .arg(p->numSystems)
                .arg(seconds(p->stepS), rate(p->tokensPerS))
                .arg(100.0 * p->mfu, 0, 'f', 1)
                .arg(p->weightStreamingHidden ? tr("<b>hidden</b> behind compute")
                                              : tr("<b>not hidden</b> (the step waits for "
                                                   "weights)")));
        if (p->loraRank > 0) {
            const double busy = p->split.compute + p->split.fabric;
            m_summary->setText(
                m_summary->text() +
                tr("<br><b>LoRA rank %1:</b> the adapter ops (x·A, u·B and their gradients) take "
                   "%2 of the step (%3 % of the wafer's compute and fabric time); the frozen base "
                   "forms no weight gradients and only the adapters' gradients stream out")
                    .arg(p->loraRank)
                    .arg(seconds(p->adapterS))
                    .arg(busy > 0 ? 100.0 * p->adapterS / busy : 0.0, 0, 'f', 1));
        }
        if (!p->activationPlan.empty() && !p->blockActivations.empty()) {
            // Activation offload / recompute (wafer/activation_plan.h): the planner's one line.
            m_summary->setText(
                m_summary->text() +
                tr("<br><b>Activations:</b> %1 · recompute %2 of the step, offload %3 each way "
                   "(the timeline's activation-offload lane) · HFU %4 %")
                    .arg(QString::fromStdString(p->activationPlan).toHtmlEscaped())
                    .arg(seconds(p->recomputeS))
                    .arg(QLocale().formattedDataSize(int64_t(p->offloadBytesPerStep), 2,
                                                     QLocale::DataSizeSIFormat))
                    .arg(100.0 * p->hfu, 0, 'f', 1));
        }
        m_split->setSplit(&p->split);
        m_split->show();
        m_splitLabel->show();
    } else {
        m_summary->setText(m_emulation == Emulation::Off
                               ? tr("<b>No prediction:</b> the emulator is off for this run")
                               : tr("<b>No prediction</b> for this run"));
        m_split->setSplit(nullptr);
        m_split->hide();  // nothing to split: no empty bar
        m_splitLabel->hide();
    }
    if (m_plannedActive) {
        m_realSummary->setText(
            tr("Planned step only: the run's real CPU speed is in its record "
               "(Runs dock), not replayed here"));
        return;
    }
    const QString aside = p ? tr("the model really trains; only the wafer's time is emulated")
                            : tr("the model really trains; nothing is emulated");
    m_realSummary->setText(
        m_realTokensPerS > 0
            ? tr("Real training on this CPU: %1tokens/s (%2)").arg(rate(m_realTokensPerS), aside)
            : tr("Real training on this CPU: tokens/s not measured yet"));
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
    m_clockChoice->setCurrentIndex(
        m_clockChoice->findData(int(emulated ? m_clock : TimelineView::Clock::Real)));
    m_clockChoice->setEnabled(emulated);
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

    // Heatmap: the chosen phase, or the layer that just ran, or the whole step.
    const auto& prediction = record && record->prediction
                                 ? record->prediction
                                 : std::shared_ptr<const wafer::StepPrediction>();
    rebuildPhaseChoices(prediction ? prediction.get() : m_phaseChoicesFor);
    int highlightLayer = -1;
    bool highlightBackward = false;
    const wafer::UtilizationFrame* frame = nullptr;
    QString note, phase;
    if (prediction) {
        if (m_phaseCode == kFollowPhase) {
            // The phase just computed; paused, even when it was the step's last.
            if (inProgress && followed && m_followLayer >= 0 &&
                (paused || !stepComplete(*record, m_numBlocks))) {
                frame = prediction->frameFor(m_followLayer, m_followBackward);
                highlightLayer = m_followLayer;
                highlightBackward = m_followBackward;
                phase = phaseName(m_followLayer, m_followBackward);
                note = tr("just computed");
            } else {
                frame = prediction->frameFor(-1, false);
                note = !inProgress                          ? tr("whole step")
                       : stepComplete(*record, m_numBlocks) ? tr("step complete")
                                                            : tr("step starting");
            }
        } else if (m_phaseCode == kWholeStep) {
            frame = prediction->frameFor(-1, false);
        } else if (m_phaseCode == kAdapterForward || m_phaseCode == kAdapterBackward) {
            const bool backward = m_phaseCode == kAdapterBackward;
            frame = prediction->adapterFrame(backward);
            phase = backward ? tr("LoRA adapter ops, backward") : tr("LoRA adapter ops, forward");
            note = tr("rank %1: busy over the adapters' own %2 per block")
                       .arg(prediction->loraRank)
                       .arg(seconds(backward ? prediction->adapterBackwardS
                                             : prediction->adapterForwardS));
        } else {
            highlightLayer = m_phaseCode / 2;
            highlightBackward = m_phaseCode % 2 == 1;
            frame = prediction->frameFor(highlightLayer, m_phaseCode % 2 == 1);
            phase = phaseName(highlightLayer, m_phaseCode % 2 == 1);
        }
        // Which matrix each region of cores holds, for a layer phase's frame.
        m_map->setRegions(highlightLayer >= 0
                              ? regionsOf(*prediction, highlightLayer, highlightBackward)
                              : CoreRegions{});
        m_map->setPhaseSeconds(highlightLayer >= 0
                                   ? phaseSecondsOf(*prediction, highlightLayer, highlightBackward)
                                   : 0.0);
        m_map->showFrame(prediction, frame, phase, note);
    } else {
        m_map->setRegions({});
        m_map->showNothing(m_emulation == Emulation::NoRun || m_emulation == Emulation::Waiting
                               ? tr("No utilization frame yet")
                               : tr("No utilization frames: the emulator is off for this run"));
    }
    // The wafers in the diagram use the heatmap's colours.
    double colourLow = 0, colourHigh = 1;
    if (frame && m_fitColours->isChecked() && frame->max > frame->min) {
        colourLow = frame->min;
        colourHigh = frame->max;
    }
    m_diagram->setStep(record, prediction ? prediction->numSystems : m_numSystems, m_numBlocks,
                       prediction ? prediction->treeDepth : 0,
                       prediction ? QString::fromStdString(prediction->waferName) : QString(),
                       frame, inProgress, colourLow, colourHigh);
    const bool timelineChanged =
        m_timeline->setStep(record, prediction ? prediction->numSystems : m_numSystems, m_numBlocks,
                            prediction ? m_clock : TimelineView::Clock::Real, highlightLayer);
    // Norms arrive with the step's metrics, after its spans: while following the run, show the
    // newest step that has them rather than "not measured yet" for most of every step.
    const StepRecord* normsRecord = record;
    if (m_live && record && record->layerGradNorms.empty()) {
        const StepRecord* previous = m_history.find(record->step - 1);
        if (previous && !previous->layerGradNorms.empty()) normsRecord = previous;
    }
    m_layerNorms->setStep(normsRecord, m_numBlocks);
    // The routing arrives after the step too: likewise.
    const StepRecord* routingRecord = record;
    if (m_live && record && record->expertTokens.empty()) {
        const StepRecord* previous = m_history.find(record->step - 1);
        if (previous && !previous->expertTokens.empty()) routingRecord = previous;
    }
    if (m_plannedActive) {
        setChartShown(m_expertLoads,
                      m_expertLoads->setPlanned(record ? record->prediction.get() : nullptr,
                                                m_storedRouting ? &*m_storedRouting : nullptr));
    } else {
        m_expertLoads->setPlanned(nullptr);
        setChartShown(m_expertLoads, m_expertLoads->isMoe());
        m_expertLoads->setStep(routingRecord);
    }
    if (m_sparsityChart->isVisible()) m_sparsityChart->redraw();
    showBufferAtPhase(record, prediction.get(), highlightLayer, highlightBackward);
    // Slow motion draws the moment under its cursor over the step's picture.
    syncReplay(record);
    const bool replaying = m_replayer->isActive();
    if (replaying) {
        applyReplay();
    } else {
        m_diagram->setReplay(std::nullopt);
        m_timeline->setReplayCursor(-1);
        showReplayPhaseChoice({});
    }
    m_map->replotTimed();  // only when its frame or titles changed
    if (timelineChanged || replaying) m_timeline->replot(QCustomPlot::rpQueuedRefresh);
}

void WaferTab::showBufferAtPhase(const StepRecord* record, const wafer::StepPrediction* prediction,
                                 int layer, bool backward) {
    if (layer < 0 || !record) {
        m_bufferSlots->setState(std::nullopt, m_numBlocks,
                                prediction ? tr("shown for one layer phase at a time (pick one "
                                                "under Heatmap, or Step Layer)")
                                           : tr("no emulated schedule"));
        return;
    }
    // What the executor's buffer held as the phase ended (the run's real spans: the next layer
    // already in the other slot); a planned step has none: its emulated schedule's middle.
    const ExecutorBuffer executor(*record,
                                  prediction ? prediction->weightBufferLayers : m_bufferLayers);
    if (auto state = executor.atPhase(layer, backward)) {
        m_bufferSlots->setState(std::move(state), m_numBlocks, {},
                                tr("What the run's weight buffer held as %1 ended (its real "
                                   "stream-in and compute spans).")
                                    .arg(phaseName(layer, backward)));
    } else if (!executor.empty()) {
        m_bufferSlots->setState(
            std::nullopt, m_numBlocks,
            tr("%1 has not run yet in this step").arg(phaseName(layer, backward)));
    } else if (const double t =
                   prediction ? wafer::phaseMidpoint(*prediction, layer, backward) : -1.0;
               t >= 0) {
        m_bufferSlots->setState(wafer::bufferStateAt(*prediction, t), m_numBlocks, {},
                                tr("The planned schedule's buffer in the middle of %1.")
                                    .arg(phaseName(layer, backward)));
    } else {
        m_bufferSlots->setState(std::nullopt, m_numBlocks, tr("no emulated schedule"));
    }
}

CoreRegions WaferTab::regionsOf(const wafer::StepPrediction& prediction, int layer,
                                bool backward) const {
    const std::string name = wafer::layerName(layer, m_numBlocks);
    // An MoE block: its experts' shares of the wafer and the tokens each got.
    const size_t block = size_t(layer - 1);
    if (layer >= 1 && block < prediction.expertTokens.size() &&
        !prediction.expertTokens[block].empty())
        return coreRegionsOfExperts(prediction.expertRegions, prediction.expertTokens[block]);
    const wafer::Pass pass = backward ? wafer::Pass::Backward : wafer::Pass::Forward;
    for (const auto& timing : prediction.layers)
        if (timing.layer == name && timing.pass == pass) return coreRegionsFor(timing);
    return {};
}

double WaferTab::phaseSecondsOf(const wafer::StepPrediction& prediction, int layer,
                                bool backward) const {
    const std::string name = wafer::layerName(layer, m_numBlocks);
    const wafer::Pass pass = backward ? wafer::Pass::Backward : wafer::Pass::Forward;
    for (const auto& timing : prediction.layers)
        if (timing.layer == name && timing.pass == pass) return timing.timeS;
    return 0;
}

const StepRecord* WaferTab::shownRecord() const {
    if (m_plannedActive) return &m_planned;
    return m_shownStep >= 0 ? m_history.find(m_shownStep) : nullptr;
}

}  // namespace ws::ui
