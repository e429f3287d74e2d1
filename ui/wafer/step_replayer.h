// SPDX-License-Identifier: GPL-3.0-or-later
// StepReplayer: the clock of the Wafer tab's slow-motion replay. Holds the step being replayed
// (a wafer::StepReplay built from the shown step's prediction and recorded bytes), the cursor's
// emulated time t and the pace (emulated seconds per wall second). While playing, a ~30 fps
// QTimer moves t by the wall time that really passed x the pace, so the replay's speed on screen
// never depends on how fast the CPU trains (or whether it trains at all). Tests and exporters
// drive it without the timer: setTime(), advance(). GUI thread only.
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <memory>

#include "engine/wafer/replay.h"
#include "ui/common/wafer_history.h"

class QTimer;

namespace ws::ui {

class StepReplayer : public QObject {
    Q_OBJECT
public:
    static constexpr int kTickMs = 33;  // ~30 frames a second

    explicit StepReplayer(QObject* parent = nullptr);

    // The step to replay: `record`'s prediction with its recorded bytes (record null or without
    // prediction: nothing to replay). `ioBytesPerS` (the spec's) gives the planned bytes of spans
    // not recorded. Keeps t (clamped) when the step changes, so scrubbing steps compares them.
    // Returns whether the replayed step changed.
    bool setStep(const StepRecord* record, double ioBytesPerS);
    void clear();  // nothing to replay; stops and leaves replay

    // Replay mode: the tab draws the step at t instead of its normal picture.
    bool isActive() const { return m_active; }
    void setActive(bool on);
    bool isPlaying() const { return m_playing; }
    void setPlaying(bool on);  // playing makes it active; at the end, plays from the start

    void setPace(wafer::ReplayPace pace);
    wafer::ReplayPace pace() const { return m_pace; }

    double timeS() const { return m_timeS; }
    double durationS() const { return m_replay ? m_replay->durationS() : 0; }
    void setTime(double timeS);  // scrub (makes it active)
    void advance(double wallS);  // as if wallS of wall time passed while playing
    const wafer::StepReplay* replay() const { return m_replay.get(); }
    wafer::ReplayState state() const;
    int64_t step() const { return m_step; }

signals:
    void changed();  // t, the step, or the mode changed: redraw the replay

private:
    void tick();

    std::unique_ptr<wafer::StepReplay> m_replay;
    const wafer::StepPrediction* m_prediction = nullptr;
    int64_t m_step = -1;
    size_t m_spans = 0;
    double m_io = 0;
    double m_timeS = 0;
    bool m_active = false;
    bool m_playing = false;
    wafer::ReplayPace m_pace;
    QTimer* m_timer;
    QElapsedTimer m_wall;
};

}  // namespace ws::ui
