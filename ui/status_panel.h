// StatusPanel: the status bar's run read-out: state, step / max steps, loss, tokens/s, ETA and a
// progress bar. Fed from the drained event batches; GUI thread only.
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
    QString stepText() const;

private:
    QLabel* m_state;
    QLabel* m_step;
    QLabel* m_loss;
    QLabel* m_speed;
    QLabel* m_eta;
    QProgressBar* m_progress;
};

}  // namespace ws::ui
