// SPDX-License-Identifier: GPL-3.0-or-later
// WaferViewControls: see wafer_view_controls.h.
#include "ui/wafer/wafer_view_controls.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSettings>
#include <algorithm>

#include "engine/wafer/cycle_model.h"
#include "engine/wafer/narration.h"

namespace ws::ui {

QString phaseName(int layer, bool backward, int numBlocks) {
    return QString::fromStdString(wafer::layerName(layer, numBlocks)) +
           (backward ? WaferViewControls::tr(" backward") : WaferViewControls::tr(" forward"));
}

WaferViewControls::WaferViewControls(QWidget* parent) : QWidget(parent) {
    auto* controls = new QHBoxLayout(this);
    controls->setContentsMargins(0, 0, 0, 0);
    controls->addWidget(new QLabel(tr("Heatmap:"), this));
    m_phase = new QComboBox(this);
    m_phase->setObjectName(QStringLiteral("waferPhase"));
    m_phase->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    controls->addWidget(m_phase);
    m_fitColours = new QCheckBox(tr("fit colours"), this);
    m_fitColours->setObjectName(QStringLiteral("waferFitColours"));
    m_fitColours->setToolTip(
        tr("Stretch the colour scale over the shown frame's min-max busy fraction, so small "
           "imbalances between cores show (the default scale is 0-100 %)"));
    controls->addWidget(m_fitColours);
    controls->addSpacing(16);
    // Short names keep the choices beside the step controls on a 1400-px window.
    auto* clockLabel = new QLabel(tr("Clock:"), this);
    clockLabel->setToolTip(tr("The timeline's clock"));
    controls->addWidget(clockLabel);
    m_clockChoice = new QComboBox(this);
    m_clockChoice->setObjectName(QStringLiteral("waferClock"));
    m_clockChoice->addItem(tr("emulated wafer"), int(TimelineView::Clock::Emulated));
    m_clockChoice->addItem(tr("real CPU wall time"), int(TimelineView::Clock::Real));
    controls->addWidget(m_clockChoice);

    connect(m_phase, qOverload<int>(&QComboBox::activated), this, [this](int index) {
        const int code = m_phase->itemData(index).toInt();
        if (code != kReplayCursor) emit phaseChosen(code);
    });
    connect(m_fitColours, &QCheckBox::toggled, this, [this](bool on) {
        QSettings().setValue(QStringLiteral("wafer/fitColours"), on);
        emit fitColoursToggled(on);
    });
    connect(m_clockChoice, qOverload<int>(&QComboBox::activated), this, [this](int index) {
        m_clock = TimelineView::Clock(m_clockChoice->itemData(index).toInt());
        QSettings().setValue(QStringLiteral("wafer/clock"), int(m_clock));
        emit clockChosen(m_clock);
    });

    QSettings settings;
    m_fitColours->setChecked(settings.value(QStringLiteral("wafer/fitColours"), false).toBool());
    m_clock = TimelineView::Clock(
        settings.value(QStringLiteral("wafer/clock"), int(TimelineView::Clock::Emulated)).toInt());
    m_clockChoice->setCurrentIndex(std::max(0, m_clockChoice->findData(int(m_clock))));
}

void WaferViewControls::rebuildPhases(const wafer::StepPrediction* prediction, int numBlocks) {
    if (prediction == m_phasesFor && m_phase->count() > 0) return;
    m_phasesFor = prediction;
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
                m_phase->addItem(phaseName(layer, backward, numBlocks), layer * 2 + backward);
            }
        }
    }
    const int index = m_phase->findData(m_phaseCode);
    m_phase->setCurrentIndex(index >= 0 ? index : 0);
    if (index < 0) m_phaseCode = kFollowPhase;
}

void WaferViewControls::setPhaseCode(int code) {
    m_phaseCode = code;
    const int index = m_phase->findData(code);
    if (index >= 0) m_phase->setCurrentIndex(index);
}

void WaferViewControls::showReplayPhase(const QString& phase) {
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

QString WaferViewControls::phaseText() const {
    return m_phase->currentText();
}

bool WaferViewControls::fitColours() const {
    return m_fitColours->isChecked();
}

void WaferViewControls::setClock(TimelineView::Clock clock) {
    m_clock = clock;
    m_clockChoice->setCurrentIndex(m_clockChoice->findData(int(clock)));
}

void WaferViewControls::setEmulatedClockOffered(bool offered) {
    m_clockChoice->setCurrentIndex(
        m_clockChoice->findData(int(offered ? m_clock : TimelineView::Clock::Real)));
    m_clockChoice->setEnabled(offered);
}

}  // namespace ws::ui
