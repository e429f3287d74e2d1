// SPDX-License-Identifier: GPL-3.0-or-later
// WaferViewControls: what the Wafer tab's views show, one row: "Heatmap:" the layer phase the
// heatmap draws (follow the run, the whole step, a LoRA run's adapter ops, or one layer's forward
// or backward; in slow motion the phase under the cursor), "fit colours" (the colour scale over
// the shown frame's min-max), and "Clock:" the timeline's clock (emulated wafer or the real CPU's
// wall time). The colour scale and the clock persist (QSettings "wafer/fitColours",
// "wafer/clock"), so a lesson reopens as it was left; the phase does not (the next run may have
// other layers). GUI thread only.
#pragma once

#include <QString>
#include <QWidget>

#include "ui/wafer/timeline_view.h"

class QCheckBox;
class QComboBox;

namespace ws::wafer {
struct StepPrediction;
}

namespace ws::ui {

// "h.2 backward": a layer phase's name (ParameterTable layer numbering, wafer::layerName).
QString phaseName(int layer, bool backward, int numBlocks);

class WaferViewControls : public QWidget {
    Q_OBJECT
public:
    // The Heatmap choice's codes besides a layer phase's layer*2+backward.
    static constexpr int kFollowPhase = -2;  // the layer phase that just ran
    static constexpr int kWholeStep = -1;
    static constexpr int kAdapterForward = -3;  // LoRA: a block's adapter products alone
    static constexpr int kAdapterBackward = -4;
    static constexpr int kReplayCursor = -5;  // slow motion: the phase under the cursor

    explicit WaferViewControls(QWidget* parent = nullptr);

    // The phases `prediction` has frames for (null: follow and whole step only); keeps the phase
    // chosen when the new step has it, else falls back to following the run. Does nothing when
    // the choices are already `prediction`'s.
    void rebuildPhases(const wafer::StepPrediction* prediction, int numBlocks);
    int phaseCode() const { return m_phaseCode; }
    void setPhaseCode(int code);
    // Slow motion: the choice names the phase under the cursor; empty: back to the phase chosen.
    void showReplayPhase(const QString& phase);
    QString phaseText() const;  // what the Heatmap choice shows now

    bool fitColours() const;
    TimelineView::Clock clock() const { return m_clock; }
    void setClock(TimelineView::Clock clock);
    // Without the emulator, wall time is the only clock: shown and the choice disabled (the
    // chosen clock is kept for the next run).
    void setEmulatedClockOffered(bool offered);

signals:
    void phaseChosen(int code);  // by the user, not for the slow-motion cursor's entry
    void fitColoursToggled(bool on);
    void clockChosen(TimelineView::Clock clock);

private:
    QComboBox* m_phase;
    QCheckBox* m_fitColours;
    QComboBox* m_clockChoice;
    int m_phaseCode = kFollowPhase;
    TimelineView::Clock m_clock = TimelineView::Clock::Emulated;
    const wafer::StepPrediction* m_phasesFor = nullptr;
};

}  // namespace ws::ui
