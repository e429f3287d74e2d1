// Palette-following chart colours: see plot_theme.h.
#include "ui/common/plot_theme.h"

#include <qcustomplot.h>

namespace ws::ui {

PlotColors applyPlotPalette(QCustomPlot* plot) {
    const QPalette pal = plot->palette();
    PlotColors c;
    c.text = pal.color(QPalette::Text);
    c.base = pal.color(QPalette::Base);
    c.grid = c.text;
    c.grid.setAlpha(40);
    c.subGrid = c.text;
    c.subGrid.setAlpha(16);
    plot->setBackground(pal.color(QPalette::Window));
    plot->axisRect()->setBackground(c.base);
    for (QCPAxis* axis : {plot->xAxis, plot->yAxis}) {
        axis->setBasePen(QPen(c.grid));
        axis->setTickPen(QPen(c.grid));
        axis->setSubTickPen(QPen(c.grid));
        axis->setTickLabelColor(c.text);
        axis->setLabelColor(c.text);
        axis->grid()->setPen(QPen(c.subGrid, 1, Qt::SolidLine));
        axis->grid()->setSubGridPen(Qt::NoPen);
        axis->grid()->setZeroLinePen(Qt::NoPen);
    }
    return c;
}

}  // namespace ws::ui
