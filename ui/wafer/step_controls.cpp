// SPDX-License-Identifier: GPL-3.0-or-later
// StepControls: see step_controls.h.
#include "ui/wafer/step_controls.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <initializer_list>

#include "ui/common/wafer_history.h"

namespace ws::ui {

StepControls::StepControls(QWidget* page) : QObject(page) {
    m_row = new QHBoxLayout;
    m_row->addWidget(new QLabel(tr("Step:"), page));
    m_stepSlider = new QSlider(Qt::Horizontal, page);
    m_stepSlider->setObjectName(QStringLiteral("waferStepSlider"));
    m_stepSlider->setToolTip(tr("Scrub back over the recorded steps"));
    m_row->addWidget(m_stepSlider, 1);
    m_stepSpin = new QSpinBox(page);
    m_stepSpin->setObjectName(QStringLiteral("waferStepSpin"));
    m_stepSpin->setKeyboardTracking(false);
    m_row->addWidget(m_stepSpin);
    m_liveButton = new QPushButton(tr("Live"), page);
    m_liveButton->setObjectName(QStringLiteral("waferLive"));
    m_liveButton->setCheckable(true);
    m_liveButton->setChecked(true);
    m_liveButton->setToolTip(tr("Follow the step being trained"));
    m_row->addWidget(m_liveButton);
    m_stepInfo = new QLabel(page);
    m_stepInfo->setObjectName(QStringLiteral("waferStepInfo"));
    m_stepInfo->setSizePolicy(QSizePolicy::Minimum, QSizePolicy::Preferred);  // never clipped
    m_row->addWidget(m_stepInfo);

    connect(m_stepSlider, &QSlider::valueChanged, this,
            [this](int v) { emit stepChosen(int64_t(v) - 1, m_stepSlider->isSliderDown()); });
    connect(m_stepSpin, qOverload<int>(&QSpinBox::valueChanged), this,
            [this](int v) { emit stepChosen(int64_t(v) - 1, false); });
    connect(m_liveButton, &QPushButton::toggled, this, &StepControls::liveToggled);
}

void StepControls::show(const WaferHistory& history, int64_t shownStep, bool live, bool paused) {
    const bool any = !history.empty();
    const int first = any ? int(history.firstStep()) + 1 : 0;
    const int last = any ? int(history.lastStep()) + 1 : 0;
    const int shown = shownStep >= 0 ? int(shownStep) + 1 : 0;
    for (QWidget* w : std::initializer_list<QWidget*>{m_stepSlider, m_stepSpin, m_liveButton})
        w->setEnabled(any);
    {
        const QSignalBlocker b1(m_stepSlider), b2(m_stepSpin), b3(m_liveButton);
        m_stepSlider->setRange(first, last);
        m_stepSlider->setValue(shown);
        m_stepSpin->setRange(first, last);
        m_stepSpin->setValue(shown);
        m_liveButton->setChecked(live);
    }
    QString info;
    if (any) {
        info = tr("of %1 – %2").arg(first).arg(last);
        if (history.droppedSteps() > 0)
            info += tr(" (the last %1 steps are kept)").arg(history.size());
        if (paused) info += tr(" · paused");
    }
    m_stepInfo->setText(info);
    m_stepInfo->setToolTip(tr("The tab keeps the spans of the last %1 steps of this run "
                              "(at most %2 spans); older steps are dropped.")
                               .arg(WaferHistory::kMaxSteps)
                               .arg(WaferHistory::kMaxSpans));
}

int StepControls::sliderWidthHint() const {
    return m_stepSlider->sizeHint().width();
}

}  // namespace ws::ui
