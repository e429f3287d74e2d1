// SPDX-License-Identifier: GPL-3.0-or-later
// SlowMotionBar: see slow_motion_bar.h.
#include "ui/wafer/slow_motion_bar.h"

#include <QComboBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QStyle>
#include <cmath>

#include "engine/core/units.h"

namespace ws::ui {
namespace {

// A speed: `emulatedS` of the step on screen in `wallS`; emulatedS 0: the whole step in wallS.
struct Speed {
    const char* label;
    double emulatedS;
    double wallS;
};
constexpr Speed kSpeeds[] = {
    {QT_TRANSLATE_NOOP("SlowMotionBar", "whole step in 10 s"), 0, 10},
    {QT_TRANSLATE_NOOP("SlowMotionBar", "whole step in 30 s"), 0, 30},
    {QT_TRANSLATE_NOOP("SlowMotionBar", "10 µs = 1 ms"), 10e-6, 1e-3},
    {QT_TRANSLATE_NOOP("SlowMotionBar", "1 µs = 2 ms"), 1e-6, 2e-3},
    {QT_TRANSLATE_NOOP("SlowMotionBar", "1 µs = 20 ms"), 1e-6, 20e-3},
};

}  // namespace

SlowMotionBar::SlowMotionBar(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("slowMotionBar"));
    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    m_source = new QLabel(tr("Slow motion:"), this);
    m_source->setObjectName(QStringLiteral("replaySource"));
    row->addWidget(m_source);
    // Icons from the style rather than glyphs: no bundled or usual system font has U+23F8
    // (pause), which showed as an empty box.
    m_play = new QPushButton(style()->standardIcon(QStyle::SP_MediaPlay), tr("Play"), this);
    m_play->setObjectName(QStringLiteral("replayPlay"));
    m_play->setCheckable(true);
    m_play->setToolTip(
        tr("Replay the shown step's emulated schedule at the chosen speed: the "
           "timeline's cursor moves, the heatmap shows the phase under it, the "
           "diagram the bytes in flight. Live leaves the replay."));
    row->addWidget(m_play);
    m_speed = new QComboBox(this);
    m_speed->setObjectName(QStringLiteral("replaySpeed"));
    m_speed->setToolTip(
        tr("Emulated time per time on screen; the CPU's training speed does "
           "not matter"));
    for (const Speed& s : kSpeeds) m_speed->addItem(tr(s.label));
    m_speed->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    row->addWidget(m_speed);
    m_scrub = new QSlider(Qt::Horizontal, this);
    m_scrub->setObjectName(QStringLiteral("replayScrub"));
    m_scrub->setRange(0, kScrubTicks);
    m_scrub->setToolTip(tr("Move the cursor through the step"));
    m_scrub->setMinimumWidth(90);
    row->addWidget(m_scrub, 2);
    m_time = new QLabel(this);
    m_time->setObjectName(QStringLiteral("replayTime"));
    // Wide enough for "888.88 ms of 888.88 ms", so the line beside does not jump as t moves.
    m_time->setMinimumWidth(
        fontMetrics().horizontalAdvance(QStringLiteral("888.88 ms of 888.88 ms")));
    row->addWidget(m_time);
    m_line = new QLabel(this);
    m_line->setObjectName(QStringLiteral("replayLine"));
    m_line->setTextFormat(Qt::PlainText);
    m_line->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // elided by width
    QFont bold = m_line->font();
    bold.setBold(true);
    m_line->setFont(bold);
    row->addWidget(m_line, 5);
    m_line->installEventFilter(this);  // re-elided whenever its width changes
    m_export = new QPushButton(tr("Export…"), this);
    m_export->setObjectName(QStringLiteral("replayExport"));
    m_export->setToolTip(
        tr("Save the shown step's replay at the chosen speed as an animation for slides: "
           "animated PNG, GIF, or MP4 when ffmpeg is installed"));
    row->addWidget(m_export);

    connect(m_play, &QPushButton::toggled, this, &SlowMotionBar::playToggled);
    connect(m_export, &QPushButton::clicked, this, &SlowMotionBar::exportRequested);
    connect(m_speed, &QComboBox::currentIndexChanged, this, &SlowMotionBar::speedChanged);
    connect(m_scrub, &QSlider::valueChanged, this,
            [this](int v) { emit scrubbed(double(v) / kScrubTicks); });
    setTime(0, 0);
}

wafer::ReplayPace SlowMotionBar::pace(double stepS) const {
    const int i = std::clamp(m_speed->currentIndex(), 0, speedCount() - 1);
    const Speed& s = kSpeeds[i];
    return s.emulatedS > 0 ? wafer::ReplayPace::of(s.emulatedS, s.wallS)
                           : wafer::ReplayPace::wholeStepIn(stepS, s.wallS);
}

int SlowMotionBar::speedCount() const {
    return int(std::size(kSpeeds));
}

void SlowMotionBar::setSpeedIndex(int index) {
    m_speed->setCurrentIndex(index);
}

int SlowMotionBar::speedIndex() const {
    return m_speed->currentIndex();
}

void SlowMotionBar::setTime(double timeS, double durationS) {
    m_time->setText(tr("%1 of %2")
                        .arg(QString::fromStdString(formatSeconds(timeS)),
                             QString::fromStdString(formatSeconds(durationS))));
    const QSignalBlocker block(m_scrub);
    m_scrub->setValue(durationS > 0 ? int(std::lround(timeS / durationS * kScrubTicks)) : 0);
}

void SlowMotionBar::setPlaying(bool playing) {
    const QSignalBlocker block(m_play);
    m_play->setChecked(playing);
    m_play->setText(playing ? tr("Pause") : tr("Play"));
    m_play->setIcon(style()->standardIcon(playing ? QStyle::SP_MediaPause : QStyle::SP_MediaPlay));
}

void SlowMotionBar::setLine(const QString& line) {
    m_fullLine = line;
    m_line->setToolTip(line);
    elideLine();
}

QString SlowMotionBar::line() const {
    return m_fullLine;
}

// The line fits its label's width, with "…" where it is cut (the tooltip has it all).
void SlowMotionBar::elideLine() {
    const QString shown =
        m_line->fontMetrics().elidedText(m_fullLine, Qt::ElideRight, std::max(0, m_line->width()));
    if (shown != m_line->text()) m_line->setText(shown);
}

bool SlowMotionBar::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_line && event->type() == QEvent::Resize) elideLine();
    return QWidget::eventFilter(watched, event);
}

void SlowMotionBar::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::FontChange) elideLine();
}

QString SlowMotionBar::timeText() const {
    return m_time->text();
}

void SlowMotionBar::setSource(const QString& source) {
    m_source->setText(source.isEmpty() ? tr("Slow motion:") : tr("Slow motion (%1):").arg(source));
}

void SlowMotionBar::setReplayEnabled(bool enabled, const QString& why) {
    for (QWidget* w : std::initializer_list<QWidget*>{m_play, m_speed, m_scrub, m_export})
        w->setEnabled(enabled);
    setToolTip(enabled ? QString() : why);
    if (!enabled) setLine(why);
}

}  // namespace ws::ui
