// SPDX-License-Identifier: GPL-3.0-or-later
// ScheduleEditor: the Config form's editor of optimizer.learning_rate. Either one constant
// learning rate, or a table of schedule pieces (the SchedulerConfig declaration in
// engine/config/config.h: scheduler, initial/end learning rate, learning_rate, total_iters) that
// can be added, removed and reordered, with a small plot of the learning rate at every step drawn
// by the engine's own optim::LearningRateSchedule, so the preview is the schedule training uses.
// Every edit is emitted as the field's flow-YAML value; setSchedule() shows the document's value
// (both ways in sync like every other field). GUI thread only.
#pragma once

#include <QWidget>

#include "engine/config/config.h"

class QComboBox;
class QCPGraph;
class QCustomPlot;
class QLabel;
class QLineEdit;
class QStackedWidget;
class QTableWidget;
class QToolButton;

namespace ws::ui {

class ScheduleEditor : public QWidget {
    Q_OBJECT
public:
    explicit ScheduleEditor(QWidget* parent = nullptr);

    // Shows `rate` for a run of `maxSteps` steps (no edited() signal).
    void setSchedule(const config::LearningRate& rate, int64_t maxSteps);
    const config::LearningRate& schedule() const { return m_rate; }

    // The value as the YAML field takes it: "0.001" or "[{scheduler: Linear, ...}, ...]".
    static QString toFlowYaml(const config::LearningRate& rate);

    QTableWidget* table() const { return m_table; }
    QComboBox* modeBox() const { return m_mode; }
    QLineEdit* constantEdit() const { return m_constant; }
    QCustomPlot* preview() const { return m_plot; }
    int previewPointCount() const;
    // Row editing, as the buttons do it (tests).
    void addPiece();
    void removePiece(int row);
    void movePiece(int row, int delta);

signals:
    void edited(const QString& flowYaml);

private:
    void rebuildTable();
    void updatePreview();
    void updateButtons();
    void emitEdited();
    void onCellChanged(int row, int column);
    void onSchedulerChosen(int row, const QString& scheduler);

    config::LearningRate m_rate;
    int64_t m_maxSteps = 1;
    bool m_updating = false;
    bool m_emitting = false;
    QComboBox* m_mode;
    QStackedWidget* m_pages;
    QLineEdit* m_constant;
    QTableWidget* m_table;
    QToolButton *m_add, *m_remove, *m_up, *m_down;
    QCustomPlot* m_plot;
    QCPGraph* m_graph;
    QLabel* m_summary;
};

}  // namespace ws::ui
