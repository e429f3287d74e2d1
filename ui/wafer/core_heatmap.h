// SPDX-License-Identifier: GPL-3.0-or-later
// CoreHeatmap: one utilization frame of the wafer as a heatmap (QCPColorMap): every core's
// busy fraction over a layer phase's compute window or a whole step, 0-100 %, on the wafer's
// core grid (row 0 at the top), with a labelled colour scale and a title naming the phase, the
// wafer, the frame's mean / min / max and exactly what the percentages are of (the window's
// length; for a phase also the phase's whole time, waits for weights included). Big grids arrive
// averaged down to at most 256 x 256 display cells; the axes still count cores. Showing the frame
// already shown costs nothing, so a live view may call showFrame() on every redraw. GUI thread
// only.
#pragma once

#include <qcustomplot.h>

#include <QString>
#include <memory>
#include <vector>

#include "engine/wafer/cycle_model.h"
#include "ui/wafer/core_regions.h"

namespace ws::ui {

class CoreHeatmap : public QCustomPlot {
    Q_OBJECT
public:
    explicit CoreHeatmap(QWidget* parent = nullptr);

    // Shows `frame`, which `owner` keeps alive; null shows an empty grid with `emptyTitle`.
    // Does not replot (call replot() or let the tab's redraw do it).
    // `phase` names what the frame covers ("h.2 backward", "whole step"); empty: the frame's
    // own label (dense blocks share one frame, labelled "h forward").
    void showFrame(std::shared_ptr<const wafer::StepPrediction> owner,
                   const wafer::UtilizationFrame* frame, const QString& phase = {},
                   const QString& note = {});
    void showNothing(const QString& emptyTitle);
    // Outlines and names the regions of cores that hold each part of a matrix (core_regions.h)
    // and adds its caption under the title; empty: none. Call before showFrame().
    void setRegions(const CoreRegions& regions);
    // The shown layer phase's whole time on the wafer (its compute window plus the waiting for
    // weights, LayerTiming::timeS), said beside a phase frame's window; <= 0: not said. Call
    // before showFrame().
    void setPhaseSeconds(double seconds);
    const CoreRegions& regions() const { return m_regions; }

    const wafer::UtilizationFrame* frame() const { return m_frame; }
    QString titleText() const;
    // The busy fraction (0..1) the map holds for display cell (row, col), NaN outside.
    double cellValue(int row, int col) const;
    // Milliseconds the last showFrame() + replot() took (setting the data and drawing).
    double lastFrameMs() const { return m_lastFrameMs; }
    // Replots when the frame, title or colours changed since the last call (a live view
    // calls it on every redraw); times it for lastFrameMs().
    void replotTimed();
    // Colours over 0-100 % (default) or stretched over the shown frame's min-max.
    // Fitted colours say so on the chart, under the map: "Colours stretched to 0.658–0.659 %
    // busy" (empty while the scale is 0-100 %).
    void setFitColours(bool fit);
    bool fitColours() const { return m_fitColours; }
    QString colourNote() const;

    // The title, stats and colour note as drawn: wrapped to the heatmap's column (tests).
    QStringList shownTitleLines() const;
    QSize minimumSizeHint() const override;

protected:
    void changeEvent(QEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;  // the titles re-wrap

private:
    void applyTheme();
    void setTitles(const QString& title, const QString& stats, const QString& note);
    void fitTitles();
    int titlesHeight() const;  // the title rows' height as wrapped now
    void keepCoresSquare();
    void applyColourRange(const wafer::UtilizationFrame* frame);

    QCPColorMap* m_map;
    QCPColorScale* m_scale;
    QCPTextElement* m_title;
    QCPTextElement* m_stats;
    QCPTextElement* m_colourNote;
    CoreRegions m_regions;
    std::vector<QCPAbstractItem*> m_regionItems;
    std::shared_ptr<const wafer::StepPrediction> m_owner;
    const wafer::UtilizationFrame* m_frame = nullptr;
    double m_setDataMs = 0;
    double m_lastFrameMs = 0;
    double m_phaseS = 0;
    QString m_fullTitle, m_fullStats, m_fullNote;  // before wrapping
    int m_gridCols = 16, m_gridRows = 16;          // the grid shown, in cores
    int m_titlesHeight = 0;
    bool m_fitColours = false;
    bool m_stale = true;  // shown data changed since the last replotTimed()
};

// Viridis (perceptually uniform, readable in light and dark themes and for colour-blind eyes).
QCPColorGradient busyGradient();

}  // namespace ws::ui
