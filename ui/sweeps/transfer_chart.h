// SPDX-License-Identifier: GPL-3.0-or-later
// TransferChart: the μTransfer chart of a sweep. One panel per parametrization side by side
// (sp | mup); in each, x = log2(learning rate), y = final training loss, one curve per width
// (seed mean, with a band from the seeds' min to max), each width's optimum marked with a star,
// and the drift of the optimum across widths and the transfer regret printed under the title.
// Diverged trials are triangles along the top of the panel, never dropped. The text under the
// title wraps to the panel's width (a long analysis note would be cut off at the window's default
// size). GUI thread only.
#pragma once

#include <QColor>
#include <QString>
#include <QWidget>
#include <string>
#include <vector>

#include "engine/sweep/results.h"
#include "ui/sweeps/sweep_points.h"

class QCPTextElement;
class QCustomPlot;
class QFontMetrics;
class QHBoxLayout;

namespace ws::ui {

// Colours the sweep views and heatmap share: follows the palette (light or dark).
void applySweepPlotTheme(QCustomPlot* plot);
// The colour of the i-th narrowest width, the same in every panel.
QColor widthColor(int rank);
// `text` with each line broken at spaces so that no line is wider than `width` pixels in `metrics`
// (a single word wider than that stays whole).
QString wrapToWidth(const QString& text, const QFontMetrics& metrics, int width);

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
    QString panelNote(int i) const;  // the drift / regret text (unwrapped)
    // The note as drawn, wrapped to the panel's width.
    QString panelNoteShown(int i) const;

protected:
    void resizeEvent(QResizeEvent* event) override;  // rewraps the notes

private:
    void wrapNote(size_t i);

    QHBoxLayout* m_layout;
    std::vector<QCustomPlot*> m_panels;
    std::vector<QCPTextElement*> m_notes;  // drift and regret, one per panel
    std::vector<QString> m_noteTexts;      // the notes unwrapped
    std::vector<std::string> m_names;
};

// "μP" for mup, "SP" for sp, the name itself otherwise.
QString parametrizationTitle(const std::string& name);

}  // namespace ws::ui
