// SPDX-License-Identifier: GPL-3.0-or-later
// Palette-following chart colours: see plot_theme.h.
#include "ui/common/plot_theme.h"

#include <qcustomplot.h>

namespace ws::ui {
namespace {

// `current` scaled from its base, the base remembered on `owner` under `key`: the value the
// chart's code set, unless `current` is still what the last call set (then the base stays).
double scaledFromBase(QObject* owner, const QByteArray& key, double current, double scale) {
    const QByteArray baseKey = "wsPlotScaleBase_" + key, lastKey = "wsPlotScaleLast_" + key;
    const QVariant base = owner->property(baseKey.constData());
    const QVariant last = owner->property(lastKey.constData());
    const double b =
        base.isValid() && last.isValid() && last.toDouble() == current ? base.toDouble() : current;
    const double result = b * scale;
    owner->setProperty(baseKey.constData(), b);
    owner->setProperty(lastKey.constData(), result);
    return result;
}

QFont scaledFont(QObject* owner, const QByteArray& key, QFont font, double scale) {
    if (font.pointSizeF() > 0)
        font.setPointSizeF(scaledFromBase(owner, key, font.pointSizeF(), scale));
    return font;
}

QPen scaledPen(QObject* owner, const QByteArray& key, QPen pen, double scale, bool cosmeticIsOne) {
    if (pen.style() == Qt::NoPen) return pen;
    double width = pen.widthF();
    if (width == 0 && !cosmeticIsOne) return pen;
    if (width == 0) width = 1;
    pen.setWidthF(scaledFromBase(owner, key, width, scale));
    return pen;
}

}  // namespace

void markPlotFontsScaled(QCustomPlot* plot, double scale) {
    const auto mark = [scale](QObject* owner, const QByteArray& key, const QFont& font) {
        if (font.pointSizeF() <= 0) return;
        const QByteArray baseKey = "wsPlotScaleBase_" + key, lastKey = "wsPlotScaleLast_" + key;
        owner->setProperty(baseKey.constData(), font.pointSizeF() / scale);
        owner->setProperty(lastKey.constData(), font.pointSizeF());
    };
    for (QCPAxisRect* rect : plot->axisRects()) {
        for (QCPAxis* axis : rect->axes()) {
            mark(axis, "tickFont", axis->tickLabelFont());
            mark(axis, "labelFont", axis->labelFont());
        }
    }
    for (int i = 0; i < plot->itemCount(); ++i)
        if (auto* text = qobject_cast<QCPItemText*>(plot->item(i)))
            mark(text, "font", text->font());
    for (QCPLayoutElement* element : plot->plotLayout()->elements(true))
        if (auto* text = qobject_cast<QCPTextElement*>(element)) mark(text, "font", text->font());
    if (plot->legend) mark(plot->legend, "font", plot->legend->font());
}

void applyPlotScale(QCustomPlot* plot, double scale) {
    for (QCPAxisRect* rect : plot->axisRects()) {
        for (QCPAxis* axis : rect->axes()) {
            axis->setTickLabelFont(scaledFont(axis, "tickFont", axis->tickLabelFont(), scale));
            axis->setLabelFont(scaledFont(axis, "labelFont", axis->labelFont(), scale));
            axis->setBasePen(scaledPen(axis, "basePen", axis->basePen(), scale, false));
            axis->setTickPen(scaledPen(axis, "tickPen", axis->tickPen(), scale, false));
        }
    }
    for (int i = 0; i < plot->plottableCount(); ++i) {
        QCPAbstractPlottable* p = plot->plottable(i);
        const bool isGraph = qobject_cast<QCPGraph*>(p) != nullptr;
        p->setPen(scaledPen(p, "pen", p->pen(), scale, isGraph));
    }
    for (int i = 0; i < plot->itemCount(); ++i) {
        QCPAbstractItem* item = plot->item(i);
        if (auto* text = qobject_cast<QCPItemText*>(item))
            text->setFont(scaledFont(text, "font", text->font(), scale));
        else if (auto* line = qobject_cast<QCPItemLine*>(item))
            line->setPen(scaledPen(line, "pen", line->pen(), scale, true));
        else if (auto* straight = qobject_cast<QCPItemStraightLine*>(item))
            straight->setPen(scaledPen(straight, "pen", straight->pen(), scale, true));
    }
    for (QCPLayoutElement* element : plot->plotLayout()->elements(true)) {
        if (auto* text = qobject_cast<QCPTextElement*>(element))
            text->setFont(scaledFont(text, "font", text->font(), scale));
    }
    if (plot->legend)
        plot->legend->setFont(scaledFont(plot->legend, "font", plot->legend->font(), scale));
}

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
