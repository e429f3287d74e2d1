// SPDX-License-Identifier: GPL-3.0-or-later
// SweepHeatmap: a width x learning-rate heatmap of seed-mean final loss (QCPColorMap), one per
// parametrization side by side, on one colour scale so SP and μP compare cell by cell. A cell
// where any seed diverged is grey and labelled "div"; a cell without a result yet is empty.
// GUI thread only.
#pragma once

#include <QWidget>
#include <string>
#include <vector>

#include "ui/sweeps/sweep_points.h"

class QCPColorScale;
class QCustomPlot;
class QHBoxLayout;

namespace ws::ui {

class SweepHeatmap : public QWidget {
    Q_OBJECT
public:
    explicit SweepHeatmap(QWidget* parent = nullptr);

    void setResults(const std::vector<SweepPanelData>& panels);
    int mapCount() const { return int(m_plots.size()); }
    QCustomPlot* plot(int i) const { return m_plots.at(size_t(i)); }
    // The cell value (NaN when empty or diverged) at width row `w`, learning-rate column `l`.
    double cell(int map, int w, int l) const;

private:
    QHBoxLayout* m_layout;
    std::vector<QCustomPlot*> m_plots;
    std::vector<QCPColorScale*> m_scales;
    std::vector<std::string> m_names;
};

}  // namespace ws::ui
