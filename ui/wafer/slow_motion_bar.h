// SPDX-License-Identifier: GPL-3.0-or-later
// SlowMotionBar: the Wafer tab's slow-motion controls ("slowMotionBar"): Play / Pause
// ("replayPlay"), the pace ("replaySpeed": 1 emulated µs = 20 ms on screen, 1 µs = 2 ms,
// 10 µs = 1 ms, the whole step in 10 s or 30 s), a scrub slider over the step ("replayScrub"),
// the cursor's time ("replayTime": "3.42 ms of 25.79 ms") and one line saying what happens at
// the cursor ("replayLine"), and Export… ("replayExport": the replay as an animated PNG, GIF or
// MP4 for slides). It shows what it is told and emits what the user does; the tab's
// StepReplayer keeps the time. GUI thread only.
#pragma once

#include <QWidget>

#include "engine/wafer/replay.h"

class QComboBox;
class QLabel;
class QPushButton;
class QSlider;

namespace ws::ui {

class SlowMotionBar : public QWidget {
    Q_OBJECT
public:
    static constexpr int kScrubTicks = 10000;

    explicit SlowMotionBar(QWidget* parent = nullptr);

    // The pace of the chosen speed for a step of `stepS` emulated seconds.
    wafer::ReplayPace pace(double stepS) const;
    int speedCount() const;
    void setSpeedIndex(int index);
    int speedIndex() const;

    // The cursor at `timeS` of `durationS` (the slider follows without emitting).
    void setTime(double timeS, double durationS);
    void setPlaying(bool playing);
    void setLine(const QString& line);
    QString line() const;
    QString timeText() const;
    // Says what is replayed ("the planned schedule of run 7", empty: the recorded step).
    void setSource(const QString& source);
    void setReplayEnabled(bool enabled, const QString& why = {});

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;
    void changeEvent(QEvent* event) override;

signals:
    void playToggled(bool play);
    void speedChanged();
    void scrubbed(double fraction);  // 0..1 of the step
    void exportRequested();

private:
    void elideLine();

    QString m_fullLine;
    QPushButton* m_play;
    QPushButton* m_export;
    QComboBox* m_speed;
    QSlider* m_scrub;
    QLabel* m_time;
    QLabel* m_source;
    QLabel* m_line;
};

}  // namespace ws::ui
