// SPDX-License-Identifier: GPL-3.0-or-later
// TimeSplitBar: see time_split_bar.h.
#include "ui/wafer/time_split_bar.h"

#include <QEvent>
#include <QPainter>
#include <algorithm>

#include "engine/core/units.h"

namespace ws::ui {
namespace {}  // namespace

TimeSplitBar::TimeSplitBar(QWidget* parent) : QWidget(parent) {
    setMinimumHeight(2 * fontMetrics().height() + 12);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

void TimeSplitBar::setSplit(const wafer::TimeSplit* split) {
    m_parts.clear();
    if (split) {
        m_parts = {{tr("compute"), split->compute, QColor(89, 161, 79)},
                   {tr("waiting for weights"), split->streaming, QColor(78, 121, 167)},
                   {tr("fabric + fill"), split->fabric, QColor(237, 201, 72)},
                   {tr("SwarmX reduce"), split->reduce, QColor(225, 87, 89)},
                   {tr("bubble"), split->bubble, QColor(186, 176, 172)}};
    }
    QStringList tips;
    for (const auto& p : m_parts)
        tips << QStringLiteral("%1: %2").arg(p.name, QString::fromStdString(formatSeconds(p.s)));
    setToolTip(tips.join('\n'));
    update();
}

void TimeSplitBar::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    // The legend's row follows the type size (presenter mode enlarges it).
    if (event->type() == QEvent::FontChange) setMinimumHeight(2 * fontMetrics().height() + 12);
}

void TimeSplitBar::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QColor text = palette().color(QPalette::WindowText);
    double total = 0;
    for (const auto& part : m_parts) total += std::max(0.0, part.s);
    const int barH = fontMetrics().height() - 2;
    const QRectF bar(0, 2, width() - 1, barH);
    if (total <= 0) {
        p.setPen(text);
        p.drawText(rect(), Qt::AlignLeft | Qt::AlignVCenter, tr("time split: no prediction"));
        return;
    }
    double x = 0;
    for (const auto& part : m_parts) {
        const double w = bar.width() * std::max(0.0, part.s) / total;
        p.fillRect(QRectF(x, bar.top(), w, bar.height()), part.color);
        x += w;
    }
    p.setPen(QPen(text, 0.5));
    p.drawRect(bar);
    // Legend: swatch, name, percentage.
    double lx = 0;
    const double ly = bar.bottom() + 4;
    const int sw = fontMetrics().height() - 6;
    for (const auto& part : m_parts) {
        const QString label = QStringLiteral("%1 %2 %").arg(part.name).arg(
            100.0 * std::max(0.0, part.s) / total, 0, 'f', 1);
        const int lw = fontMetrics().horizontalAdvance(label);
        if (lx + sw + 4 + lw > width()) break;
        p.fillRect(QRectF(lx, ly + 3, sw, sw), part.color);
        p.setPen(text);
        p.drawText(QPointF(lx + sw + 4, ly + fontMetrics().ascent()), label);
        lx += sw + 4 + lw + 14;
    }
}

}  // namespace ws::ui
