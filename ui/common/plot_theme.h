// The studio's QCustomPlot charts follow the system palette, light or dark: window-coloured
// margins, a base-coloured plot area, axes and tick labels in the text colour, and grid lines in
// faint shades of it (solid: dotted grid lines draw slowly). One place, so every chart changes
// together. GUI thread only.
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

}  // namespace ws::ui
