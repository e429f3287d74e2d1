// SPDX-License-Identifier: GPL-3.0-or-later
// The studio's QCustomPlot charts follow the system palette, light or dark: window-coloured
// margins, a base-coloured plot area, axes and tick labels in the text colour, and grid lines in
// faint shades of it (solid: dotted grid lines draw slowly). One place, so every chart changes
// together. applyPlotScale enlarges a chart's type and lines for presenter mode and undoes it.
// GUI thread only.
#pragma once

#include <QColor>

class QCustomPlot;

namespace ws::ui {

struct PlotColors {
    QColor text;     // the palette's text colour
    QColor base;     // the plot area's background
    QColor grid;     // text at alpha 40: axis lines, ticks
    QColor subGrid;  // text at alpha 16: grid lines
};

// Applies the palette to `plot`'s background, axis rect and x/y axes (grid lines in subGrid,
// no sub-grid, no zero line) and returns the colours for what the caller draws itself.
PlotColors applyPlotPalette(QCustomPlot* plot);

// Sets `plot`'s fonts (axes, text elements, text items, legend) and line widths (axes, plottables,
// line items) to `scale` x the sizes its own code gave them; scale 1 puts those sizes back. Safe
// to call again and again (presenter mode calls it before every replot): a size the chart's code
// changed since the last call becomes the new base. Cosmetic (0-width) graph pens count as 1.
void applyPlotScale(QCustomPlot* plot, double scale);

// For a chart made while the application font was already `scale` x its normal size (created
// in presenter mode): records its fonts as that scale of their normal sizes, so that
// applyPlotScale(plot, scale) keeps them and applyPlotScale(plot, 1) makes them normal.
void markPlotFontsScaled(QCustomPlot* plot, double scale);

}  // namespace ws::ui
