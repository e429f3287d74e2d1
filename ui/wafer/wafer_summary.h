// SPDX-License-Identifier: GPL-3.0-or-later
// WaferSummary: the top of the Wafer tab: the cycle model's prediction for the shown step (wafer
// and systems, step time, tokens/s, MFU, whether weight streaming hides behind compute; a LoRA
// run's adapter share; the activation plan's line), the real CPU's tokens/s beside it, and the
// bar of where the predicted step time goes. It builds its rows into the page's layout and
// fills them through show(). GUI thread only.
#pragma once

#include <QObject>
#include <QString>

class QLabel;
class QVBoxLayout;
class QWidget;

namespace ws::wafer {
struct StepPrediction;
}

namespace ws::ui {

class TimeSplitBar;

class WaferSummary : public QObject {
    Q_OBJECT
public:
    // The rows ("waferSummary", "waferRealSummary", the time split) go into `layout`, the widgets
    // are `page`'s children.
    WaferSummary(QWidget* page, QVBoxLayout* layout);

    // `prediction` null: "No prediction" (`emulatorOff` says why). `planned`: a stored run's
    // planned step, whose real speed is not shown. `realTokensPerS` <= 0: not measured yet.
    void show(const wafer::StepPrediction* prediction, bool emulatorOff, bool planned,
              double realTokensPerS);
    QString realText() const;  // the "Real training on this CPU" line

private:
    QLabel* m_summary;
    QLabel* m_realSummary;
    TimeSplitBar* m_split;
    QLabel* m_splitLabel;
};

}  // namespace ws::ui
