// SPDX-License-Identifier: GPL-3.0-or-later
// SparsityChart: the Wafer tab's chart of weight sparsity over the run, one line per block
// (h.0 ... h.{L-1}): the share of its masked weights at zero (left axis, %) and, dashed on the
// right axis, the imbalance those zeros cause on the wafer (the busiest output column's nonzeros
// over the mean column's: the cores holding the busiest column finish last). Fed from the run's
// StepMetrics (blockSparsity / blockImbalance, measured on the first step, log steps and mask
// updates); hidden by the tab for dense runs. GUI thread only.
#pragma once

#include <qcustomplot.h>

#include <QString>
#include <vector>

namespace ws::ui {

class SparsityChart : public QCustomPlot {
    Q_OBJECT
public:
    explicit SparsityChart(QWidget* parent = nullptr);

    void clear();
    // One measurement after `step` (1-based): L levels in [0, 1] and L imbalances (>= 1).
    void addPoint(int64_t step, const std::vector<double>& levels,
                  const std::vector<double>& imbalance);
    void redraw();  // rescale and replot (the tab's coalesced redraw calls it)

    // What is drawn, for tests.
    int blockCount() const { return int(m_levels.size()); }
    int pointCount(int block) const;
    double lastLevel(int block) const;      // NaN when none
    double lastImbalance(int block) const;  // NaN when none
    QString titleText() const;

    // With the tab bar above it, no taller than the timeline beside it: the Wafer page's
    // height follows its parts' hints (word-wrapped labels make the scroll area lay it out by
    // height-for-width), so a taller hint would make the page scroll.
    QSize sizeHint() const override { return {320, 200}; }

protected:
    void changeEvent(QEvent* event) override;  // follows a light/dark palette switch

private:
    void applyTheme();
    void ensureBlocks(int blocks);

    QCPTextElement* m_title;
    std::vector<QCPGraph*> m_levels;     // per block, left axis
    std::vector<QCPGraph*> m_imbalance;  // per block, right axis, dashed
    int64_t m_lastStep = 0;
};

}  // namespace ws::ui
