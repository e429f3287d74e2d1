// SPDX-License-Identifier: GPL-3.0-or-later
// SweepTable: see sweep_table.h.
#include "ui/sweeps/sweep_table.h"

#include <QHeaderView>
#include <cmath>

#include "ui/sweeps/sweep_points.h"

namespace ws::ui {
namespace {

constexpr int kSortRole = Qt::UserRole + 1;

// Sorts by kSortRole: numbers numerically, text as text.
class SortItem : public QTableWidgetItem {
public:
    using QTableWidgetItem::QTableWidgetItem;
    bool operator<(const QTableWidgetItem& other) const override {
        const QVariant a = data(kSortRole), b = other.data(kSortRole);
        if (a.typeId() == QMetaType::Double && b.typeId() == QMetaType::Double)
            return a.toDouble() < b.toDouble();
        return a.toString() < b.toString();
    }
};

QString shortKey(const std::string& key) {
    const size_t dot = key.rfind('.');
    return QString::fromStdString(dot == std::string::npos ? key : key.substr(dot + 1));
}

}  // namespace

SweepTable::SweepTable(QWidget* parent) : QTableWidget(parent) {
    setObjectName(QStringLiteral("SweepTable"));
    setEditTriggers(QAbstractItemView::NoEditTriggers);
    setSelectionBehavior(QAbstractItemView::SelectRows);
    setAlternatingRowColors(true);
    verticalHeader()->setVisible(false);
    verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
    horizontalHeader()->setStretchLastSection(true);
    setSortingEnabled(true);
    setColumns({});
}

void SweepTable::setColumns(const std::vector<std::string>& keys) {
    m_keys = keys;
    QStringList headers{tr("trial")};
    for (const auto& k : keys) headers << shortKey(k);
    headers << tr("seed") << tr("status") << tr("final loss") << tr("steps") << tr("why stopped");
    setSortingEnabled(false);
    clearContents();
    setRowCount(0);
    m_trialItems.clear();
    setColumnCount(int(headers.size()));
    setHorizontalHeaderLabels(headers);
    for (int c = 0; c < int(keys.size()); ++c)
        horizontalHeaderItem(c + 1)->setToolTip(QString::fromStdString(keys[size_t(c)]));
    setSortingEnabled(true);
}

int SweepTable::column(const QString& header) const {
    for (int c = 0; c < columnCount(); ++c)
        if (horizontalHeaderItem(c)->text() == header) return c;
    return -1;
}

int SweepTable::rowOfTrial(int trial) const {
    auto it = m_trialItems.find(trial);
    return it == m_trialItems.end() ? -1 : it->second->row();
}

void SweepTable::setCell(int row, int col, const QString& text, const QVariant& sortKey) {
    QTableWidgetItem* item = this->item(row, col);
    if (!item) {
        item = new SortItem;
        setItem(row, col, item);
    }
    item->setText(text);
    item->setData(kSortRole, sortKey);
    if (sortKey.typeId() == QMetaType::Double)
        item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
}

int SweepTable::ensureRow(int trial, const std::vector<sweep::TrialParam>& params, int64_t seed) {
    if (int row = rowOfTrial(trial); row >= 0) return row;
    const int row = rowCount();
    insertRow(row);
    auto* item = new SortItem;
    setItem(row, 0, item);
    item->setText(QString::number(trial));
    item->setData(kSortRole, double(trial));
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    m_trialItems[trial] = item;
    for (size_t k = 0; k < m_keys.size(); ++k) {
        std::string value;
        for (const auto& p : params)
            if (p.key == m_keys[k]) value = p.value;
        const double l2 = sweep::log2Value(value);
        const bool rate = m_keys[k].find("learning_rate") != std::string::npos;
        const QString shown = rate && std::isfinite(l2)
                                  ? QString::fromStdString(learningRateLabel(l2))
                                  : QString::fromStdString(value);
        const double number = std::strtod(value.c_str(), nullptr);
        const bool numeric = std::isfinite(l2) || value == "0";
        setCell(row, int(k) + 1, shown,
                numeric ? QVariant(number) : QVariant(QString::fromStdString(value)));
    }
    const int base = int(m_keys.size()) + 1;
    setCell(row, base, QString::number(seed), double(seed));
    setCell(row, base + 1, tr("queued"), QStringLiteral("queued"));
    setCell(row, base + 2, QString(), std::numeric_limits<double>::infinity());
    setCell(row, base + 3, QStringLiteral("0"), 0.0);
    setCell(row, base + 4, QString(), QString());
    return row;
}

void SweepTable::setPlan(const sweep::SweepPlan& plan) {
    std::vector<std::string> keys;
    if (!plan.trials.empty())
        for (const auto& p : plan.trials.front().params) keys.push_back(p.key);
    setColumns(keys);
    setSortingEnabled(false);
    for (const auto& t : plan.trials) ensureRow(t.index, t.params, t.seed);
    setSortingEnabled(true);
    resizeColumnsToContents();
}

void SweepTable::setTrials(const std::vector<sweep::TrialResult>& trials) {
    std::vector<std::string> keys;
    if (!trials.empty())
        for (const auto& p : trials.front().params) keys.push_back(p.key);
    setColumns(keys);
    for (const auto& t : trials) setResult(t);
    resizeColumnsToContents();
}

void SweepTable::markStarted(const sweep::TrialStarted& trial) {
    setSortingEnabled(false);
    const int row = ensureRow(trial.trial, trial.params, trial.seed);
    const int base = int(m_keys.size()) + 1;
    setCell(row, base + 1, tr("running"), QStringLiteral("running"));
    setSortingEnabled(true);
}

void SweepTable::markProgress(const sweep::TrialProgress& progress) {
    const int row = rowOfTrial(progress.trial);
    if (row < 0) return;
    setSortingEnabled(false);
    const int base = int(m_keys.size()) + 1;
    setCell(row, base + 3, QString::number(progress.step), double(progress.step));
    setSortingEnabled(true);
}

void SweepTable::setResult(const sweep::TrialResult& result) {
    setSortingEnabled(false);
    const int row = ensureRow(result.trial, result.params, result.seed);
    const int base = int(m_keys.size()) + 1;
    const QString status = QString::fromUtf8(sweep::trialStatusName(result.status));
    setCell(row, base + 1, status, status);
    const bool finite = std::isfinite(result.finalLoss);
    setCell(row, base + 2, finite ? QString::number(result.finalLoss, 'f', 4) : QStringLiteral("—"),
            finite ? result.finalLoss : std::numeric_limits<double>::infinity());
    setCell(row, base + 3, QString::number(result.steps), double(result.steps));
    const QString reason = QString::fromStdString(result.reason);
    setCell(row, base + 4, reason, reason);
    item(row, base + 4)->setToolTip(reason);
    setSortingEnabled(true);
}

}  // namespace ws::ui
