// SPDX-License-Identifier: GPL-3.0-or-later
// AnswersTab: the Answers tab, H2O LLM Studio's "validation insights" for a chat fine-tune. A
// model (a run or checkpoint folder; after a fine-tune on chat records the studio fills in the
// run) and up to two others to compare with (its base, an earlier checkpoint) answer the same
// held-out records (the run's own held-out split, or a records file), greedily, in a table side
// by side: the question, the record's answer, each model's reply (green when it matches
// exactly, red when not; the answer loss in its tooltip), and above the table each model's
// exact match, answer loss and chat template (with `auto`, a base without its fine-tune's
// template tokens answers through the plain template, and the tab says so). Sorted by record, or by
// the first model's answer loss (best or worst first). The check runs on AnswerCheckJob's worker;
// Stop ends it within one reply. GUI thread only.
#pragma once

#include <QWidget>
#include <vector>

#include "engine/sample/answer_check.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace ws::ui {

class AnswerCheckJob;

class AnswersTab : public QWidget {
    Q_OBJECT
public:
    explicit AnswersTab(QWidget* parent = nullptr);
    ~AnswersTab() override;

    static constexpr int kModels = 3;  // the model and two to compare with

    // Model `index` (0: the model; 1, 2: compared with); empty leaves the slot out.
    void setModelPath(int index, const QString& path);
    QString modelPath(int index) const;
    // A records file; empty: the first model's run's held-out records.
    void setRecordsPath(const QString& path);
    void setMaxCases(int cases);
    // "auto" (the run's, the model's own, else ChatML), a built-in ("chatml", "plain") or a file.
    void setChatTemplate(const QString& choice);
    void setDbPath(const QString& dbPath) { m_dbPath = dbPath; }

    bool check();  // false if already checking or no model
    void stop();
    bool isChecking() const;

    enum class Order { Records, BestFirst, WorstFirst };
    void setOrder(Order order);

    // What the table shows, for tests and the README: per model, its outcomes by case.
    const std::vector<sample::AnswerOutcome>& outcomes(int model) const;
    QString summary(int model) const;  // "12/20 exact (60%) · answer loss 0.412"
    QString status() const;
    QTableWidget* table() const { return m_table; }

signals:
    void finished(bool ok, const QString& message);

private:
    void onCases(const std::vector<sample::AnswerCase>& cases, const QString& source);
    void onOutcome(int model, int caseIndex, const sample::AnswerOutcome& outcome);
    void onModelFailed(int model, const QString& message);
    void onFinished(bool ok, const QString& message);
    void rebuildTable();
    void updateSummaries();
    std::vector<int> rowOrder() const;  // case indices in the order shown

    QLineEdit* m_models[kModels];
    QLineEdit* m_records;
    QSpinBox* m_maxCases;
    QComboBox* m_template;
    QComboBox* m_order;
    QPushButton* m_check;
    QPushButton* m_stop;
    QLabel* m_status;
    QLabel* m_summaries[kModels];
    QTableWidget* m_table;
    AnswerCheckJob* m_job;
    QString m_dbPath;
    std::vector<int> m_slotModels;  // the job's model index -> slot
    std::vector<sample::AnswerCase> m_cases;
    std::vector<sample::AnswerOutcome> m_outcomes[kModels];  // by case (reply empty until done)
    std::vector<bool> m_done[kModels];
    QString m_templates[kModels];
    QString m_failures[kModels];
};

}  // namespace ws::ui
