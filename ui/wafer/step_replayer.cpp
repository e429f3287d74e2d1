// SPDX-License-Identifier: GPL-3.0-or-later
// StepReplayer: see step_replayer.h.
#include "ui/wafer/step_replayer.h"

#include <QTimer>
#include <algorithm>

namespace ws::ui {

StepReplayer::StepReplayer(QObject* parent) : QObject(parent) {
    m_pace = wafer::ReplayPace::of(1, 10);  // until the bar sets one
    m_timer = new QTimer(this);
    m_timer->setInterval(kTickMs);
    m_timer->setTimerType(Qt::PreciseTimer);
    connect(m_timer, &QTimer::timeout, this, &StepReplayer::tick);
}

bool StepReplayer::setStep(const StepRecord* record, double ioBytesPerS) {
    const wafer::StepPrediction* prediction =
        record && record->prediction ? record->prediction.get() : nullptr;
    const int64_t step = record ? record->step : -1;
    const size_t spans = record ? record->spans.size() : 0;
    if (prediction == m_prediction && step == m_step && spans == m_spans && ioBytesPerS == m_io)
        return false;
    m_prediction = prediction;
    m_step = step;
    m_spans = spans;
    m_io = ioBytesPerS;
    if (!prediction) {
        m_replay.reset();
        m_timeS = 0;
        setPlaying(false);
        emit changed();
        return true;
    }
    std::vector<wafer::SpanBytes> recorded;
    recorded.reserve(record->spans.size());
    for (const RecordedSpan& s : record->spans)
        recorded.push_back({s.system, s.micro, s.layer, s.kind(), bool(s.backwardPass),
                            double(s.bytes), s.expert()});
    m_replay = std::make_unique<wafer::StepReplay>(record->prediction, ioBytesPerS, recorded);
    m_timeS = std::clamp(m_timeS, 0.0, m_replay->durationS());
    emit changed();
    return true;
}

void StepReplayer::clear() {
    setPlaying(false);
    m_active = false;
    m_replay.reset();
    m_prediction = nullptr;
    m_step = -1;
    m_spans = 0;
    m_timeS = 0;
    emit changed();
}

void StepReplayer::setActive(bool on) {
    if (!on) setPlaying(false);
    if (on == m_active) return;
    m_active = on;
    emit changed();
}

void StepReplayer::setPlaying(bool on) {
    on = on && m_replay && m_pace.emulatedPerWallS() > 0;
    if (on == m_playing) return;
    m_playing = on;
    if (on) {
        m_active = true;
        if (m_timeS >= durationS()) m_timeS = 0;  // played to the end: from the start again
        m_wall.start();
        m_timer->start();
    } else {
        m_timer->stop();
    }
    emit changed();
}

void StepReplayer::setPace(wafer::ReplayPace pace) {
    m_pace = pace;
    if (m_pace.emulatedPerWallS() <= 0) setPlaying(false);
}

void StepReplayer::setTime(double timeS) {
    m_active = true;
    m_timeS = std::clamp(timeS, 0.0, durationS());
    emit changed();
}

void StepReplayer::advance(double wallS) {
    m_active = true;
    m_timeS = m_pace.advance(m_timeS, wallS, durationS());
    if (m_playing && m_timeS >= durationS()) setPlaying(false);  // stops at the step's end
    emit changed();
}

void StepReplayer::tick() {
    // The wall time that really passed, not the timer's nominal interval: a busy GUI thread
    // makes the replay jump, never slow down.
    const double wallS = double(m_wall.restart()) * 1e-3;
    advance(wallS);
}

wafer::ReplayState StepReplayer::state() const {
    return m_replay ? m_replay->stateAt(m_timeS) : wafer::StepReplay(nullptr).stateAt(0);
}

}  // namespace ws::ui
