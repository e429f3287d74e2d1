// SPDX-License-Identifier: GPL-3.0-or-later
// StatusPanel: the status bar's run read-out: state, step / max steps, loss, tokens/s, ETA and a
// progress bar. Fed from the drained event batches while a run trains; shows a sweep's trials and
// ETA while a sweep runs, and the selected stored run's summary otherwise, so it never keeps the
// figures of a run no longer shown. GUI thread only.
#pragma once

#include <QWidget>

#include "engine/session/events.h"

class QLabel;
class QProgressBar;

namespace ws::ui {

class StatusPanel : public QWidget {
    Q_OBJECT
public:
    explicit StatusPanel(QWidget* parent = nullptr);
    void showMetrics(const session::StepMetrics& m);
    void showState(session::RunState state, const QString& detail);
    void showPreparing(double fraction, const QString& what);
    // Waiting on something outside the studio (a batch job in Slurm's queue): "Waiting" and
    // `what`, with a busy bar.
    void showWaiting(const QString& what);
    // Nothing to report: "Ready" and no figures.
    void clear();
    // A run from the store: its status and the figures of its summary (steps, final loss,
    // tokens/s, time taken: store::RunInfo::summaryJson), blank where it has none.
    void showStoredRun(const QString& name, const QString& status, const std::string& summaryJson);
    // A sweep: its state, trials with a result of all planned, and the ETA (NaN: not yet known).
    void showSweep(const QString& state, size_t done, size_t planned, double etaSeconds);
    QString stepText() const;
    QString stateText() const;
    QString lossText() const;
    QString etaText() const;

private:
    QLabel* m_state;
    QLabel* m_step;
    QLabel* m_loss;
    QLabel* m_speed;
    QLabel* m_eta;
    QProgressBar* m_progress;
};

}  // namespace ws::ui
