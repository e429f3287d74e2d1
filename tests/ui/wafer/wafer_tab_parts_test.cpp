// SPDX-License-Identifier: GPL-3.0-or-later
// The Wafer tab's parts, each alone (issue 32 split WaferTab by job): the view controls' Heatmap
// choice (a chosen phase kept, the slow-motion cursor's entry in and out, never reported as a
// choice) and clock (wall time only without the emulator), the step row's range, Live and info
// line and what it reports, the summary's lines without a prediction, and phase names. The tab
// as a whole is wafer_tab_test.cpp's.
#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QSlider>
#include <QSpinBox>
#include <QTest>
#include <QVBoxLayout>

#include "support/gui_test.h"
#include "ui/common/wafer_history.h"
#include "ui/wafer/step_controls.h"
#include "ui/wafer/wafer_summary.h"
#include "ui/wafer/wafer_view_controls.h"

using namespace ws::ui;

namespace {

// Steps first..last, one forward span each.
WaferHistory historyOf(int64_t first, int64_t last) {
    WaferHistory history;
    std::vector<ws::streaming::Span> spans;
    for (int64_t step = first; step <= last; ++step) {
        ws::streaming::Span s;
        s.step = step;
        s.system = 0;
        s.layer = 1;
        s.end = 1e-3;
        spans.push_back(s);
    }
    history.addSpans(spans);
    return history;
}

}  // namespace

class WaferTabPartsTest : public QObject {
    Q_OBJECT
private slots:
    void phaseNamesFollowTheEngine() {
        QCOMPARE(phaseName(0, false, 4), QStringLiteral("embeddings forward"));
        QCOMPARE(phaseName(2, true, 4), QStringLiteral("h.1 backward"));
        QCOMPARE(phaseName(5, true, 4), QStringLiteral("head backward"));
    }

    void heatmapChoiceKeepsThePhaseAndTheCursorEntryComesAndGoes() {
        WaferViewControls controls;
        controls.rebuildPhases(nullptr, 4);
        auto* phase = controls.findChild<QComboBox*>(QStringLiteral("waferPhase"));
        QVERIFY(phase);
        QCOMPARE(phase->count(), 2);  // follow the run, whole step
        QCOMPARE(controls.phaseCode(), WaferViewControls::kFollowPhase);
        controls.setPhaseCode(WaferViewControls::kWholeStep);
        QCOMPARE(controls.phaseText(), QStringLiteral("whole step"));

        controls.showReplayPhase(QStringLiteral("h.1 forward"));
        QCOMPARE(phase->count(), 3);
        QCOMPARE(controls.phaseText(), QStringLiteral("slow motion: h.1 forward"));
        QCOMPARE(controls.phaseCode(), WaferViewControls::kWholeStep);  // not a choice

        QSignalSpy chosen(&controls, &WaferViewControls::phaseChosen);
        emit phase->activated(phase->findData(WaferViewControls::kReplayCursor));
        QCOMPARE(chosen.count(), 0);
        emit phase->activated(phase->findData(WaferViewControls::kFollowPhase));
        QCOMPARE(chosen.count(), 1);
        QCOMPARE(chosen.front().front().toInt(), WaferViewControls::kFollowPhase);

        controls.showReplayPhase({});
        QCOMPARE(phase->count(), 2);
        QCOMPARE(controls.phaseText(), QStringLiteral("whole step"));
        // The same choices again: nothing rebuilt, the phase kept.
        controls.rebuildPhases(nullptr, 4);
        QCOMPARE(controls.phaseCode(), WaferViewControls::kWholeStep);
    }

    void withoutTheEmulatorTheClockIsWallTime() {
        WaferViewControls controls;
        auto* clock = controls.findChild<QComboBox*>(QStringLiteral("waferClock"));
        QVERIFY(clock);
        controls.setClock(TimelineView::Clock::Emulated);
        controls.setEmulatedClockOffered(false);
        QVERIFY(!clock->isEnabled());
        QCOMPARE(clock->currentData().toInt(), int(TimelineView::Clock::Real));
        QCOMPARE(controls.clock(), TimelineView::Clock::Emulated);  // kept for the next run
        controls.setEmulatedClockOffered(true);
        QVERIFY(clock->isEnabled());
        QCOMPARE(clock->currentData().toInt(), int(TimelineView::Clock::Emulated));
    }

    void stepRowShowsTheKeptStepsAndReportsChoices() {
        QWidget page;
        StepControls steps(&page);
        (new QVBoxLayout(&page))->addLayout(steps.row());  // the page owns the row, as the tab's
        auto* slider = page.findChild<QSlider*>(QStringLiteral("waferStepSlider"));
        auto* spin = page.findChild<QSpinBox*>(QStringLiteral("waferStepSpin"));
        auto* live = page.findChild<QPushButton*>(QStringLiteral("waferLive"));
        auto* info = page.findChild<QLabel*>(QStringLiteral("waferStepInfo"));
        QVERIFY(slider && spin && live && info);

        steps.show(WaferHistory{}, -1, true, false);
        QVERIFY(!slider->isEnabled() && !live->isEnabled());
        QVERIFY(info->text().isEmpty());

        const WaferHistory history = historyOf(2, 6);  // steps 3..7, 1-based
        QSignalSpy chosen(&steps, &StepControls::stepChosen);
        QSignalSpy liveToggled(&steps, &StepControls::liveToggled);
        steps.show(history, 4, false, true);
        QCOMPARE(chosen.count(), 0);  // showing is not choosing
        QCOMPARE(liveToggled.count(), 0);
        QVERIFY(slider->isEnabled());
        QCOMPARE(slider->minimum(), 3);
        QCOMPARE(slider->maximum(), 7);
        QCOMPARE(spin->value(), 5);
        QVERIFY(!live->isChecked());
        QCOMPARE(info->text(), QStringLiteral("of 3 – 7 · paused"));

        spin->setValue(6);
        QCOMPARE(chosen.count(), 1);
        QCOMPARE(chosen.front().at(0).value<int64_t>(), int64_t(5));
        QCOMPARE(chosen.front().at(1).toBool(), false);
        live->click();
        QCOMPARE(liveToggled.count(), 1);
        QVERIFY(liveToggled.front().front().toBool());
    }

    void summaryWithoutAPrediction() {
        QWidget page;
        auto* layout = new QVBoxLayout(&page);
        WaferSummary summary(&page, layout);
        auto* line = page.findChild<QLabel*>(QStringLiteral("waferSummary"));
        QVERIFY(line);
        summary.show(nullptr, true, false, 0);
        QVERIFY2(line->text().contains("the emulator is off"), qPrintable(line->text()));
        QCOMPARE(summary.realText(),
                 QStringLiteral("Real training on this CPU: tokens/s not measured yet"));
        summary.show(nullptr, false, false, 1500);
        QCOMPARE(line->text(), QStringLiteral("<b>No prediction</b> for this run"));
        QCOMPARE(summary.realText(), QStringLiteral("Real training on this CPU: 1.50 ktokens/s "
                                                    "(the model really trains; nothing is "
                                                    "emulated)"));
        summary.show(nullptr, false, true, 1500);
        QVERIFY(summary.realText().startsWith("Planned step only"));
    }
};

QTEST_MAIN(WaferTabPartsTest)
#include "wafer_tab_parts_test.moc"
