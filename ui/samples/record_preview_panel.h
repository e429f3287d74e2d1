// SPDX-License-Identifier: GPL-3.0-or-later
// RecordPreviewPanel: the fine-tune wizard's Data page for instruction and chat records
// (session/record_preview.h computes what it shows): the detected format with a combo to force
// one, the CSV/TSV column mapping (combos filled with the columns found), the chat template and
// why, what is trained on (the answers, everything, the last answer), the first examples rendered
// with the untrained part greyed out, a histogram of example lengths against the sequence length,
// the warnings and what stops the run. The user's choices leave as config overrides
// (overrides()), which the wizard puts in its request, so the run and the preview read the same
// config. The panel computes nothing: the wizard runs the preview off the GUI thread and hands
// it over (setPreview). GUI thread only.
#pragma once

#include <QString>
#include <QStringList>
#include <QWidget>
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "engine/finetune/finetune_plan.h"
#include "engine/session/record_preview.h"

class QComboBox;
class QGridLayout;
class QCustomPlot;
class QCPBars;
class QCPItemStraightLine;
class QCPItemText;
class QLabel;
class QTextEdit;
class QWidget;

namespace ws::ui {

class RecordPreviewPanel : public QWidget {
    Q_OBJECT
public:
    enum Column { Prompt = 0, Answer, System, Id, ParentId, ColumnCount };
    enum TrainOn { Answers = 0, Everything, LastAnswer };

    explicit RecordPreviewPanel(QWidget* parent = nullptr);

    // The choices as "key=value" overrides: train_input.format, train_on_inputs, mask_history,
    // and each column the user mapped (an optional column set to "none": an empty name, which
    // no column has).
    std::vector<std::string> overrides() const;

    void setBusy();
    void setPreview(const session::RecordPreview& preview);

    // What the user sets, as the combos do (for tests and scripting).
    void setFormat(const QString& key);                  // "auto", "messages", ..., "columns"
    void setColumn(Column column, const QString& name);  // "" for none (optional columns)
    void setTrainOn(TrainOn trainOn);

    QComboBox* formatCombo() const { return m_format; }
    QComboBox* columnCombo(Column column) const { return m_columns[size_t(column)]; }
    QComboBox* trainOnCombo() const { return m_trainOn; }
    QTextEdit* examplesView() const { return m_examples; }
    QCustomPlot* histogram() const { return m_plot; }
    QString detectedText() const;
    QString templateText() const;
    QString countsText() const;
    QString warningsText() const;  // warnings, what blocks the run, the error

signals:
    void choicesChanged();

protected:
    void changeEvent(QEvent* event) override;

private:
    QGridLayout* makeChoices();  // format, column mapping, train on, template
    void makeMappingRow();
    void makeHistogram(QWidget* parent);
    void fillColumns(const session::RecordPreview& preview);
    void showExamples(const session::RecordPreview& preview);
    void showHistogram(const session::RecordPreview& preview);
    void showMessages(const session::RecordPreview& preview);

    QComboBox* m_format;
    QLabel* m_detected;
    QWidget* m_mappingRow;
    QWidget* m_mappingLabel;
    std::array<QComboBox*, ColumnCount> m_columns{};
    std::array<bool, ColumnCount> m_columnSet{};  // the user chose it
    QLabel* m_template;
    QComboBox* m_trainOn;
    QLabel* m_counts;
    QTextEdit* m_examples;
    QCustomPlot* m_plot;
    QCPBars* m_fitting;
    QCPBars* m_longer;
    QCPItemStraightLine* m_limitLine;
    QCPItemText* m_limitLabel;
    QLabel* m_messages;
    std::optional<session::RecordPreview> m_shown;  // for a palette change
};

// The preview of the request's record files, as the run planned for it trains them: the plan's
// config and steps when `plan` is set; else (the plan failed) the base's config with the request's
// overrides, its sequence length capped at the base's positions and the steps counted from the
// request's epochs as a plan counts them. Thread-safe (reads the base and the files): the wizard
// runs it on its thread pool.
session::RecordPreview previewFinetuneData(const finetune::FinetuneRequest& request,
                                           const finetune::FinetunePlan* plan);

}  // namespace ws::ui
