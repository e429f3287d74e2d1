// SPDX-License-Identifier: GPL-3.0-or-later
// BufferSlotsView: see buffer_slots_view.h.
#include "ui/wafer/buffer_slots_view.h"

#include <QPainter>
#include <QPainterPath>
#include <algorithm>

#include "engine/wafer/narration.h"
#include "ui/wafer/timeline_view.h"

namespace ws::ui {

using streaming::SpanKind;
using wafer::SlotActivity;

BufferSlotsView::BufferSlotsView(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("bufferSlots"));
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

void BufferSlotsView::setState(std::optional<wafer::BufferState> state, int numBlocks,
                               const QString& why, const QString& source) {
    m_state = std::move(state);
    m_why = why.isEmpty() ? tr("no emulated schedule") : why;
    m_numBlocks = numBlocks;
    setToolTip(source.isEmpty() ? text() : text() + QLatin1Char('\n') + source);
    update();
}

// The engine's names (wafer::layerName), as the timeline, the heatmap and the narration say them.
QString BufferSlotsView::layerName(int layer) const {
    return QString::fromStdString(wafer::layerName(layer, m_numBlocks));
}

QString BufferSlotsView::slotText(const wafer::SlotState& s) const {
    if (s.activity == SlotActivity::Empty) return tr("empty");
    const QString what =
        tr("%1 %2").arg(layerName(s.layer), s.backward ? tr("backward") : tr("forward"));
    switch (s.activity) {
        case SlotActivity::StreamingIn:
            return tr("%1, streaming in %2 %").arg(what).arg(int(100 * s.streamedFraction));
        case SlotActivity::Waiting:
            return tr("%1, in, waiting").arg(what);
        case SlotActivity::Computing:
            return s.streamedFraction < 1 ? tr("%1, computing as its weights arrive").arg(what)
                                          : tr("%1, computing").arg(what);
        case SlotActivity::Empty:
            break;
    }
    return what;
}

QString BufferSlotsView::shortSlotText(const wafer::SlotState& s) const {
    // What a narrow box has room for: "h.1 fwd in", "h.1 fwd ↓40 %", "emb bwd" (computing: the
    // box's colour, forward green or backward orange, says so; the tooltip has the full text).
    const QString layer = s.layer == 0 ? tr("emb") : layerName(s.layer);
    const QString what = tr("%1 %2").arg(layer, s.backward ? tr("bwd") : tr("fwd"));
    switch (s.activity) {
        case SlotActivity::StreamingIn:
            return tr("%1 ↓%2 %").arg(what).arg(int(100 * s.streamedFraction));
        case SlotActivity::Waiting:
            return tr("%1 in").arg(what);
        case SlotActivity::Computing:
            return what;
        case SlotActivity::Empty:
            break;
    }
    return tr("empty");
}

QString BufferSlotsView::text() const {
    if (!m_state) return tr("weight buffer: %1").arg(m_why);
    QStringList parts;
    for (size_t i = 0; i < m_state->slotStates.size(); ++i)
        parts << tr("slot %1: %2").arg(i + 1).arg(slotText(m_state->slotStates[i]));
    QStringList out;
    for (int layer : m_state->streamingOut) out << layerName(layer);
    parts << (out.isEmpty() ? tr("gradients out: none")
                            : tr("gradients out: %1").arg(out.join(", ")));
    return parts.join(QStringLiteral(" · "));
}

QSize BufferSlotsView::sizeHint() const {
    const QFontMetrics fm(font());
    return {fm.horizontalAdvance(QLatin1Char('x')) * 90, fm.height() * 2 + 10};
}

QSize BufferSlotsView::minimumSizeHint() const {
    const QFontMetrics fm(font());
    return {fm.horizontalAdvance(QLatin1Char('x')) * 40, fm.height() * 2 + 10};
}

void BufferSlotsView::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const QPalette pal = palette();
    const QColor text = pal.color(QPalette::WindowText);
    const QFontMetrics fm(font());
    const int h = height() - 4;
    int x = 2;
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(text);
    const QString title = tr("Weight buffer:");
    p.drawText(QRect(x, 2, fm.horizontalAdvance(title) + 20, h), Qt::AlignVCenter, title);
    x += QFontMetrics(bold).horizontalAdvance(title) + 12;
    p.setFont(font());
    if (!m_state) {
        p.drawText(QRect(x, 2, width() - x, h), Qt::AlignVCenter, m_why);
        return;
    }
    const int slotCount = int(m_state->slotStates.size());
    // The slots come first: the gradients' box shrinks to "out: ..." when room is short.
    const int outWidth = std::clamp(width() / 5, fm.horizontalAdvance(tr("out: h.00")) + 20,
                                    fm.horizontalAdvance(tr("gradients out: embeddings")) + 24);
    const int gap = 8;
    const int slotWidth =
        std::max(40, (width() - x - outWidth - gap * (slotCount + 1)) / std::max(1, slotCount));
    auto box = [&](QRect r, const QColor& colour, double fill, QString label, bool dashed,
                   const QString& shortLabel = {}) {
        // A narrow box says the same in fewer words before it elides.
        if (!shortLabel.isEmpty() && fm.horizontalAdvance(label) > r.width() - 10)
            label = shortLabel;
        QPainterPath path;
        path.addRoundedRect(QRectF(r), 5, 5);
        QColor faint = colour;
        faint.setAlpha(60);
        p.fillPath(path, faint);
        if (fill > 0) {
            p.save();
            p.setClipPath(path);
            p.fillRect(QRectF(r.x(), r.y(), r.width() * fill, r.height()), colour);
            p.restore();
        }
        p.setPen(
            QPen(dashed ? text : colour.darker(120), 1.5, dashed ? Qt::DashLine : Qt::SolidLine));
        p.drawPath(path);
        p.setPen(text);
        p.drawText(r.adjusted(6, 0, -4, 0), Qt::AlignVCenter | Qt::AlignLeft,
                   fm.elidedText(label, Qt::ElideRight, r.width() - 10));
    };
    for (int i = 0; i < slotCount; ++i) {
        const wafer::SlotState& s = m_state->slotStates[size_t(i)];
        const QRect r(x, 2, slotWidth, h);
        const QString label = tr("%1 · %2").arg(i + 1).arg(slotText(s));
        const QString brief = tr("%1 · %2").arg(i + 1).arg(shortSlotText(s));
        switch (s.activity) {
            case SlotActivity::Empty:
                box(r, pal.color(QPalette::Mid), 0, label, true);
                break;
            case SlotActivity::StreamingIn:
                box(r, TimelineView::kindColor(SpanKind::StreamIn), s.streamedFraction, label,
                    false, brief);
                break;
            case SlotActivity::Waiting:
                box(r, TimelineView::kindColor(SpanKind::StreamIn), 1, label, false, brief);
                break;
            case SlotActivity::Computing:
                box(r, TimelineView::kindColor(s.backward ? SpanKind::Backward : SpanKind::Forward),
                    s.computedFraction, label, false, brief);
                break;
        }
        x += slotWidth + gap;
    }
    QStringList out;
    QStringList outShort;  // "emb" fits a narrow box
    for (int layer : m_state->streamingOut) {
        out << layerName(layer);
        outShort << (layer == 0 ? tr("emb") : layerName(layer));
    }
    const QRect r(x + gap, 2, width() - x - gap - 2, h);
    box(r, TimelineView::kindColor(SpanKind::StreamOut), out.isEmpty() ? 0 : 1,
        out.isEmpty() ? tr("gradients out: none")
                      : tr("gradients out → MemoryX: %1").arg(out.join(", ")),
        out.isEmpty(), out.isEmpty() ? tr("out: none") : tr("out: %1").arg(outShort.join(", ")));
}

}  // namespace ws::ui
