// TransferChart: the μTransfer chart of a sweep. One panel per parametrization side by side
// (sp | mup); in each, x = log2(learning rate), y = final training loss, one curve per width
// (seed mean, with a band from the seeds' min to max), each width's optimum marked with a star,
// and the drift of the optimum across widths and the transfer regret printed under the title.
// Diverged trials are triangles along the top of the panel, never dropped. GUI thread only.
#pragma once

#include <QColor>
#include <QWidget>
#include <string>
#include <vector>

#include "engine/sweep/results.h"
#include "ui/sweep_points.h"

class QCPTextElement;
class QCustomPlot;
class QHBoxLayout;

namespace ws::ui {

// Colours the sweep views and heatmap share: follows the palette (light or dark).
void applySweepPlotTheme(QCustomPlot* plot);
// The colour of the i-th narrowest width, the same in every panel.
QColor widthColor(int rank);

class TransferChart : public QWidget {
    Q_OBJECT
public:
    explicit TransferChart(QWidget* parent = nullptr);

    // One panel per name ("" for a sweep without parametrizations); empties the panels.
    void setParametrizations(const std::vector<std::string>& names);
    // Redraws every panel from the trials so far and their analysis (sweep::analyzeTransfer).
    void setResults(const std::vector<SweepPanelData>& panels,
                    const std::vector<sweep::ParametrizationTransfer>& transfer);

    int panelCount() const { return int(m_panels.size()); }
    QCustomPlot* panel(int i) const { return m_panels.at(size_t(i)); }
    // Width curves drawn in panel i (the seed-mean lines), and their points in total.
    int curveCount(int i) const;
    int pointCount(int i) const;
    int divergedMarkerCount(int i) const;
    QString panelNote(int i) const;  // the drift / regret text

private:
    QHBoxLayout* m_layout;
    std::vector<QCustomPlot*> m_panels;
    std::vector<QCPTextElement*> m_notes;  // drift and regret, one per panel
    std::vector<std::string> m_names;
};

// "μP" for mup, "SP" for sp, the name itself otherwise.
QString parametrizationTitle(const std::string& name);

}  // namespace ws::ui
