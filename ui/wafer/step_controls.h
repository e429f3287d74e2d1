// SPDX-License-Identifier: GPL-3.0-or-later
// StepControls: the Wafer tab's step row: "Step:" a slider and a spin box over the recorded
// steps (1-based), Live (follow the step being trained) and a line saying which steps are kept.
// It builds its widgets into a row of the page (row()), says what the user picked through
// signals, and shows the tab's state through show(). GUI thread only.
#pragma once

#include <QObject>
#include <cstdint>

class QHBoxLayout;
class QLabel;
class QPushButton;
class QSlider;
class QSpinBox;
class QWidget;

namespace ws::ui {

class WaferHistory;

class StepControls : public QObject {
    Q_OBJECT
public:
    // The widgets are `page`'s children, laid out in row().
    explicit StepControls(QWidget* page);

    QHBoxLayout* row() const { return m_row; }
    // The recorded steps, the one shown (0-based; -1 none), whether Live is on and whether the
    // run is paused (" · paused" after the range).
    void show(const WaferHistory& history, int64_t shownStep, bool live, bool paused);
    // The slider's own width hint, for placing the view controls beside the row.
    int sliderWidthHint() const;

signals:
    // 0-based, by the slider or the spin box; `dragged`: the slider is held (show it even if it
    // is the step shown: scrubbing leaves Live).
    void stepChosen(int64_t step, bool dragged);
    void liveToggled(bool on);

private:
    QHBoxLayout* m_row;
    QSlider* m_stepSlider;
    QSpinBox* m_stepSpin;
    QPushButton* m_liveButton;
    QLabel* m_stepInfo;
};

}  // namespace ws::ui
