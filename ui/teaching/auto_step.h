// SPDX-License-Identifier: GPL-3.0-or-later
// AutoStep: Run → Auto-step (issue 17). While the studio's own run is paused, it repeats Step
// Layer at a chosen pace (0.5, 1, 2 or 4 s per phase) until it is switched off, the run is no
// longer paused (Continue, Stop) or the step's last layer phase is done; and it narrates every
// phase the paused run computes (auto-stepped or Step Layer by hand) in one plain-English line
// (wafer/narration.h) for the NarrationLine above the tabs. A step is asked for only once the
// previous one has paused again (Session::pauseStops), so a slow phase is never skipped or
// doubled. GUI thread only.
#pragma once

#include <QLabel>
#include <QObject>
#include <QString>
#include <memory>
#include <optional>
#include <vector>

#include "engine/session/events.h"
#include "engine/wafer/narration.h"

class QAction;
class QActionGroup;
class QTimer;

namespace ws::ui {

class RunController;

class AutoStep : public QObject {
    Q_OBJECT
public:
    static constexpr int kPacesMs[] = {500, 1000, 2000, 4000};

    explicit AutoStep(RunController* controller, QObject* parent = nullptr);

    // "autoStepAction": checkable; enabled while the run is paused (or auto-stepping).
    QAction* action() const { return m_toggle; }
    // "autoStepPace500" ... "autoStepPace4000": one checked, for a Pace submenu.
    QList<QAction*> paceActions() const;
    // A row for a dock: the Auto-step button and a pace choice ("autoStepPace"), kept in step
    // with the actions.
    QWidget* createControls(QWidget* parent);

    int paceMs() const { return m_paceMs; }
    void setPaceMs(int ms);
    bool isRunning() const { return m_running; }
    void start();
    void stop();
    // One beat of the pace: asks for the next layer phase if the last one has paused again;
    // stops at the step's end or when the run is no longer paused. The timer calls it; tests
    // call it directly (with the timer stopped) to step deterministically.
    void tick();
    QTimer* timer() const { return m_timer; }
    // The narration of the phase the paused run computed last ("" while it runs on its own).
    QString narration() const { return m_narration; }
    // Why auto-stepping stopped last ("" while running or never started).
    QString stopReason() const { return m_stopReason; }

signals:
    void runningChanged(bool running);
    void narrationChanged(const QString& line);
    void paceChanged(int ms);

private:
    struct Phase {
        int64_t step = 0;
        int layer = 0;
        bool backward = false;
        int micro = 0;
    };
    void onSpans(const std::vector<streaming::Span>& spans);
    void onState(session::RunState state);
    void setNarration(const QString& line);
    void narrateLastPhase();
    bool lastPhaseEndsTheStep() const;
    void stopBecause(const QString& why);
    void updateEnabled();

    RunController* m_controller;
    QAction* m_toggle;
    QActionGroup* m_paces;
    QTimer* m_timer;
    int m_paceMs = 1000;
    bool m_running = false;
    int64_t m_lastStops = 0;  // the pause stop our last Step Layer was given at
    int m_issued = 0;         // Step Layers asked for since start()
    std::shared_ptr<const wafer::StepPrediction> m_prediction;
    std::optional<Phase> m_phase;  // the last layer phase the run computed
    QString m_narration;
    QString m_stopReason;
};

// The narration line above the tabs ("narrationLine"): one phase in large type (larger still in
// Presenter Mode, as it follows the application font), hidden while there is nothing to say.
class NarrationLine : public QLabel {
    Q_OBJECT
public:
    explicit NarrationLine(QWidget* parent = nullptr);
    void setLine(const QString& line);
    static constexpr double kScale = 1.3;  // of the application font
    static constexpr int kMaxLines = 3;    // a longer narration ends in "…" (tooltip: whole)
    // As high as the lines it shows at its width: two at least, kMaxLines at most, so that every
    // line drawn is whole (never the height of the text wrapped at a narrow width, which would
    // make the window taller than a laptop's screen).
    QSize minimumSizeHint() const override;
    QSize sizeHint() const override;
    bool hasHeightForWidth() const override { return false; }
    QString fullText() const { return m_full; }

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    QStringList wrapped() const;  // the whole text's lines at the present width
    void fitText();
    void followApplicationFont();
    QString m_full;
    int m_shownLines = 0;
};

}  // namespace ws::ui
