// SPDX-License-Identifier: GPL-3.0-or-later
// SweepTable: every trial of a sweep as a row (planned trials first as "queued"), sortable by
// any column; numbers sort as numbers (a learning rate shown as 2^-8 sorts by its value, a
// missing final loss sorts last). Columns: trial, one per swept key, seed, status, final loss,
// steps, why stopped. GUI thread only.
#pragma once

#include <QTableWidget>
#include <map>

#include "engine/sweep/runner.h"

namespace ws::ui {

class SweepTable : public QTableWidget {
    Q_OBJECT
public:
    explicit SweepTable(QWidget* parent = nullptr);

    void setPlan(const sweep::SweepPlan& plan);  // one "queued" row per planned trial
    void setTrials(const std::vector<sweep::TrialResult>& trials);  // a stored sweep
    void markStarted(const sweep::TrialStarted& trial);
    void markProgress(const sweep::TrialProgress& progress);
    void setResult(const sweep::TrialResult& result);
    int column(const QString& header) const;  // -1 when absent
    int rowOfTrial(int trial) const;

private:
    void setColumns(const std::vector<std::string>& keys);
    int ensureRow(int trial, const std::vector<sweep::TrialParam>& params, int64_t seed);
    void setCell(int row, int col, const QString& text, const QVariant& sortKey);

    std::vector<std::string> m_keys;
    std::map<int, QTableWidgetItem*> m_trialItems;  // trial -> its "trial" cell
};

}  // namespace ws::ui
