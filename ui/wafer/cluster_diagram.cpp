// ClusterDiagram: see cluster_diagram.h.
#include "ui/wafer/cluster_diagram.h"

#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>
#include <set>

#include "ui/wafer/timeline_view.h"
#include "ui/wafer/utilization_map.h"

namespace ws::ui {
namespace {
using streaming::SpanKind;

QString bytesText(double bytes) {
    if (bytes >= 1e9) return QStringLiteral("%1 GB").arg(bytes / 1e9, 0, 'f', 2);
    if (bytes >= 1e6) return QStringLiteral("%1 MB").arg(bytes / 1e6, 0, 'f', 2);
    if (bytes >= 1e3) return QStringLiteral("%1 kB").arg(bytes / 1e3, 0, 'f', 1);
    return QStringLiteral("%1 B").arg(bytes, 0, 'f', 0);
}

void drawArrow(QPainter& p, QPointF from, QPointF to, const QColor& color, double width) {
    p.setPen(QPen(color, width, Qt::SolidLine, Qt::RoundCap));
    p.drawLine(from, to);
    const double angle = std::atan2(to.y() - from.y(), to.x() - from.x());
    const double head = 6 + 2 * width;
    QPainterPath path;
    path.moveTo(to);
    path.lineTo(to - QPointF(head * std::cos(angle - 0.45), head * std::sin(angle - 0.45)));
    path.lineTo(to - QPointF(head * std::cos(angle + 0.45), head * std::sin(angle + 0.45)));
    path.closeSubpath();
    p.setPen(Qt::NoPen);
    p.setBrush(color);
    p.drawPath(path);
}

}  // namespace

ClusterDiagram::ClusterDiagram(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("clusterDiagram"));
    setMinimumSize(300, 260);
}

void ClusterDiagram::setPlacement(std::vector<QString> perSystem) {
    if (perSystem == m_placement) return;
    m_placement = std::move(perSystem);
    update();
}

void ClusterDiagram::setStep(const StepRecord* record, int numSystems, int numBlocks, int treeDepth,
                             const QString& waferName, const wafer::UtilizationFrame* frame,
                             bool live, double colourLow, double colourHigh) {
    // Redraws come every 40 ms while a run trains; repaint only when the picture changes.
    const Shown shown{record ? record->step : -1,
                      record ? record->spans.size() : 0,
                      frame,
                      numSystems,
                      treeDepth,
                      live,
                      colourLow,
                      colourHigh,
                      waferName};
    if (shown == m_shown) return;
    m_shown = shown;
    m_numSystems = std::max(1, numSystems);
    m_treeDepth = std::max(0, treeDepth);
    m_waferName = waferName;
    m_hasRecord = record != nullptr;
    m_traffic = {};
    m_inFlight.clear();
    m_active = Active::None;
    if (record) {
        // Updates of the layers the emulated machine updates (a LoRA run's frozen embeddings and
        // head have none: their real no-op updates are not counted).
        std::set<int> updatedByPlan;
        if (record->prediction)
            for (const auto& t : record->prediction->spans)
                if (t.kind == SpanKind::Update) updatedByPlan.insert(t.layer);
        for (const auto& s : record->spans) {
            switch (s.kind()) {
                case SpanKind::StreamIn:
                    if (s.system <= 0) m_traffic.weightsDown += s.bytes;  // broadcast: counted once
                    break;
                case SpanKind::StreamOut:
                    m_traffic.gradientsUp += s.bytes;
                    break;
                case SpanKind::Reduce:
                    m_traffic.reducedBytes += s.bytes;
                    break;
                case SpanKind::Update:
                    if (!record->prediction || updatedByPlan.count(s.layer) > 0)
                        ++m_traffic.updatedLayers;
                    break;
                default:
                    break;
            }
        }
        m_traffic.plannedUpdates = numBlocks + 2;
        if (record->prediction) {
            m_traffic.plannedUpdates = int(std::count_if(
                record->prediction->spans.begin(), record->prediction->spans.end(),
                [](const wafer::TimelineSpan& t) { return t.kind == SpanKind::Update; }));
        }
        const bool complete = stepComplete(*record, numBlocks);
        if (live && !complete && !record->spans.empty()) {
            const RecordedSpan& s = record->spans.back();
            const QString layer = QString::fromStdString(layerName(s.layer, numBlocks));
            switch (s.kind()) {
                case SpanKind::StreamIn:
                    m_active = Active::Down;
                    m_inFlight =
                        tr("%1 weights streaming in (%2)")
                            .arg(layer, s.backwardPass ? tr("for backward") : tr("for forward"));
                    break;
                case SpanKind::Forward:
                case SpanKind::Backward:
                    m_active = Active::Compute;
                    m_inFlight = tr("%1 %2 on the wafer")
                                     .arg(layer, s.kind() == SpanKind::Forward ? tr("forward")
                                                                               : tr("backward"));
                    break;
                case SpanKind::StreamOut:
                case SpanKind::Reduce:
                    m_active = Active::Up;
                    m_inFlight = tr("%1 gradients streaming out and reducing").arg(layer);
                    break;
                case SpanKind::Update:
                    m_active = Active::Update;
                    m_inFlight = tr("MemoryX updating %1").arg(layer);
                    break;
            }
        } else if (complete) {
            m_inFlight = tr("step %1 complete").arg(record->step + 1);
        } else {
            m_inFlight = tr("step %1 starting").arg(record->step + 1);
        }
    }
    if (frame != m_thumbFrame || colourLow != m_thumbLow || colourHigh != m_thumbHigh) {
        m_thumbFrame = frame;
        m_thumbLow = colourLow;
        m_thumbHigh = colourHigh;
        m_thumbnail = QImage();
        m_scaledThumbnail = QPixmap();
        if (frame && frame->rows > 0 && frame->cols > 0) {
            QImage image(frame->cols, frame->rows, QImage::Format_RGB32);
            QCPColorGradient gradient = busyGradient();
            std::vector<double> values(frame->busy.begin(), frame->busy.end());
            for (int r = 0; r < frame->rows; ++r) {
                gradient.colorize(values.data() + size_t(r) * size_t(frame->cols),
                                  QCPRange(colourLow, colourHigh),
                                  reinterpret_cast<QRgb*>(image.scanLine(r)), frame->cols);
            }
            m_thumbnail = image;
        }
    }
    update();
}

// One paint's colours, fonts and rows: title, MemoryX, arrows, the SwarmX tree, arrows, systems,
// caption, in flight.
struct ClusterDiagram::Paint {
    Paint(const QWidget& widget, int treeDepth)
        : text(widget.palette().color(QPalette::Text)),
          base(widget.palette().color(QPalette::Base)),
          normal(widget.font()),
          bold(boldOf(widget.font())),
          fm(normal),
          line(fm.height()),
          w(widget.width()),
          h(widget.height()),
          levels(std::max(1, treeDepth)),
          titleH(line + 6),
          memH(2 * line + 10),
          levelH(line + 10),
          arrowGap(2 * line + 14),
          footH(line + 8),
          memY(margin + titleH),
          treeTop(memY + memH + arrowGap),
          sysY(treeTop + levels * levelH + 26),
          sysH(std::max(3.0 * line, h - sysY - (line + 4) - footH - margin)) {
        faint = text;
        faint.setAlpha(60);
    }
    static QFont boldOf(QFont font) {
        font.setBold(true);
        return font;
    }
    QPen boxPen(bool active, const QColor& c) const {
        return active ? QPen(c, 3) : QPen(faint.darker(100), 1);
    }

    const QColor text, base;
    QColor faint;
    const QFont normal, bold;
    const QFontMetrics fm;
    const int line;
    const QColor down = TimelineView::kindColor(SpanKind::StreamIn);
    const QColor up = TimelineView::kindColor(SpanKind::StreamOut);
    const QColor compute = TimelineView::kindColor(SpanKind::Forward);
    const QColor update = TimelineView::kindColor(SpanKind::Update);
    const double w, h;
    static constexpr double margin = 10;
    const int levels;
    const double titleH, memH, levelH, arrowGap, footH;
    const double memY, treeTop, sysY, sysH;
};

void ClusterDiagram::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const Paint k(*this, m_treeDepth);
    p.fillRect(rect(), k.base);
    if (!m_hasRecord) {
        // A run followed in other processes has no steps here, but its placement is known.
        QString text = tr("MemoryX → SwarmX → systems: no step to show yet");
        if (!m_placement.empty()) {
            text = tr("MemoryX and the SwarmX root on rank 0");
            for (size_t s = 0; s < m_placement.size(); ++s)
                text += tr("\nsystem %1: %2").arg(s).arg(m_placement[s]);
        }
        p.setPen(k.text);
        p.drawText(rect().adjusted(12, 12, -12, -12), Qt::AlignCenter | Qt::TextWordWrap, text);
        return;
    }
    p.setFont(k.bold);
    p.setPen(k.text);
    p.drawText(QRectF(k.margin, k.margin, k.w - 2 * k.margin, k.titleH),
               Qt::AlignLeft | Qt::AlignTop, tr("Cluster traffic this step"));
    const QRectF mem = drawMemoryX(p, k);
    const QRectF swarm = drawSwarmTree(p, k);
    const std::vector<QRectF> systems = drawSystems(p, k);
    drawTraffic(p, k, mem, swarm, systems);
    // What is in flight.
    p.setFont(k.bold);
    p.setPen(k.text);
    p.drawText(QRectF(k.margin, k.h - k.margin - k.footH, k.w - 2 * k.margin, k.footH),
               Qt::AlignHCenter | Qt::AlignVCenter, tr("latest: %1").arg(m_inFlight));
}

QRectF ClusterDiagram::drawMemoryX(QPainter& p, const Paint& k) const {
    const QString memText = tr("weights + optimizer · %1 / %2 layers updated")
                                .arg(m_traffic.updatedLayers)
                                .arg(m_traffic.plannedUpdates);
    const double memW = std::min(k.w - 2 * k.margin,
                                 std::max(k.w * 0.5, double(k.fm.horizontalAdvance(memText)) + 24));
    const QRectF mem(k.w / 2 - memW / 2, k.memY, memW, k.memH);
    p.setPen(k.boxPen(m_active == Active::Update, k.update));
    p.setBrush(k.base.lighter(103));
    p.drawRoundedRect(mem, 6, 6);
    p.setPen(k.text);
    p.setFont(k.bold);
    p.drawText(mem.adjusted(6, 4, -6, 0), Qt::AlignHCenter | Qt::AlignTop, tr("MemoryX"));
    p.setFont(k.normal);
    p.drawText(mem.adjusted(6, 0, -6, -4), Qt::AlignHCenter | Qt::AlignBottom, memText);
    return mem;
}

// One row of nodes per level (fan-out up to 4), at least one node; returns the tree's bounds.
QRectF ClusterDiagram::drawSwarmTree(QPainter& p, const Paint& k) const {
    QRectF swarmBounds;
    const QString swarmLabel = m_numSystems == 1
                                   ? tr("SwarmX (1 system: broadcast only, no reduce)")
                                   : tr("SwarmX tree, depth %1").arg(m_treeDepth);
    const int levels = k.levels;
    for (int level = 0; level < levels; ++level) {
        const int fromBottom = levels - level;  // 1 = the level next to the systems
        const int nodes = std::max(
            1, int(std::ceil(m_numSystems / std::pow(4.0, std::max(0, fromBottom - 1)) / 4.0)));
        const int drawn = std::min(nodes, 8);
        double nodeW = std::min(110.0, (k.w * 0.7) / drawn - 6);
        if (levels == 1 && drawn == 1) {  // the one node carries the label inside
            nodeW = std::min(k.w - 2 * k.margin,
                             double(QFontMetrics(k.bold).horizontalAdvance(swarmLabel)) + 20);
        }
        const double rowW = drawn * (nodeW + 6) - 6;
        const double y = k.treeTop + level * k.levelH;
        for (int i = 0; i < drawn; ++i) {
            const QRectF node(k.w / 2 - rowW / 2 + i * (nodeW + 6), y, nodeW, k.levelH - 4);
            p.setPen(k.boxPen(m_active == Active::Down || m_active == Active::Up,
                              m_active == Active::Up ? k.up : k.down));
            p.setBrush(k.base.lighter(103));
            p.drawRoundedRect(node, 4, 4);
            swarmBounds = swarmBounds.isNull() ? node : swarmBounds.united(node);
        }
    }
    p.setPen(k.text);
    p.setFont(k.bold);
    p.drawText(swarmBounds, Qt::AlignCenter, levels == 1 ? swarmLabel : QString());
    p.setFont(k.normal);
    if (levels > 1) {  // left of the tree, where the rows leave room
        p.drawText(QRectF(k.margin, swarmBounds.top(), swarmBounds.left() - k.margin - 6,
                          swarmBounds.height()),
                   Qt::AlignRight | Qt::AlignVCenter | Qt::TextWordWrap, swarmLabel);
    }
    return swarmBounds;
}

// Systems with their wafers: as many as fit at ~64 px each (at most 8), the last box standing
// for the rest. Returns the boxes drawn.
std::vector<QRectF> ClusterDiagram::drawSystems(QPainter& p, const Paint& k) {
    const double w = k.w, margin = k.margin;
    const int fitting = std::max(1, int((w - 2 * margin + 8) / (64 + 8)));
    const int drawnSystems = std::min({m_numSystems, 8, fitting});
    const double sysW = std::min(170.0, (w - 2 * margin) / drawnSystems - 8);
    const double sysRowW = drawnSystems * (sysW + 8) - 8;
    std::vector<QRectF> systems;
    for (int s = 0; s < drawnSystems; ++s) {
        const QRectF box(w / 2 - sysRowW / 2 + s * (sysW + 8), k.sysY, sysW, k.sysH);
        systems.push_back(box);
        p.setPen(k.boxPen(m_active == Active::Compute, k.compute));
        p.setBrush(k.base.lighter(103));
        p.drawRoundedRect(box, 6, 6);
        p.setPen(k.text);
        const bool rest = drawnSystems < m_numSystems && s == drawnSystems - 1;
        const bool narrow = sysW < k.fm.horizontalAdvance(tr("system 00")) + 8;
        const QString name =
            rest ? (narrow ? tr("…%1").arg(m_numSystems) : tr("… %1 systems").arg(m_numSystems))
            : narrow ? tr("sys %1").arg(s)
                     : tr("system %1").arg(s);
        p.drawText(box.adjusted(4, 2, -4, 0), Qt::AlignHCenter | Qt::AlignTop, name);
        const bool placed = !rest && size_t(s) < m_placement.size();
        if (placed) {  // where the system runs, under its wafer
            p.drawText(
                box.adjusted(4, 0, -4, -2), Qt::AlignHCenter | Qt::AlignBottom,
                k.fm.elidedText(m_placement[size_t(s)], Qt::ElideRight, int(box.width()) - 8));
        }
        drawWaferThumbnail(p, k, box, placed);
    }
    if (!m_waferName.isEmpty() && !systems.empty()) {
        p.setPen(k.text);
        p.drawText(QRectF(margin, k.sysY + k.sysH + 2, w - 2 * margin, k.line),
                   Qt::AlignHCenter | Qt::AlignTop,
                   tr("each system: one %1 wafer (its frame drawn inside)").arg(m_waferName));
    }
    return systems;
}

void ClusterDiagram::drawWaferThumbnail(QPainter& p, const Paint& k, const QRectF& box,
                                        bool bottomLine) {
    // The wafer's own aspect (WSE-2's grid is 750 x 994 cores), fitted into the box.
    const double aspect = m_thumbFrame && m_thumbFrame->gridRows > 0
                              ? double(m_thumbFrame->gridCols) / m_thumbFrame->gridRows
                              : 1.0;
    const double maxW = box.width() - 12,
                 maxH = box.height() - k.line * (bottomLine ? 2 : 1) - (bottomLine ? 12 : 10);
    const double waferW = std::min(maxW, maxH * aspect);
    const double waferH = waferW / aspect;
    const QRectF wafer(box.center().x() - waferW / 2, box.top() + k.line + 4, waferW, waferH);
    if (!m_thumbnail.isNull()) {
        // Scaled once per size (nearest cell, as the heatmap draws it), not on every paint.
        const QSize size = wafer.size().toSize();
        if (m_scaledThumbnail.size() != size) {
            m_scaledThumbnail = QPixmap::fromImage(
                m_thumbnail.scaled(size, Qt::IgnoreAspectRatio, Qt::FastTransformation));
        }
        p.drawPixmap(wafer.topLeft(), m_scaledThumbnail);
    } else {
        p.setBrush(k.faint);
        p.setPen(Qt::NoPen);
        p.drawRect(wafer);
    }
}

// Arrows, weights down on the left and gradients up on the right, with the bytes beside them.
void ClusterDiagram::drawTraffic(QPainter& p, const Paint& k, const QRectF& mem,
                                 const QRectF& swarmBounds,
                                 const std::vector<QRectF>& systems) const {
    auto arrowColor = [&](bool active, QColor c) {
        if (!active) c.setAlpha(110);
        return c;
    };
    const QColor down = k.down, up = k.up;
    const double w = k.w, margin = k.margin;
    const bool downActive = m_active == Active::Down;
    const bool upActive = m_active == Active::Up;
    const double leftX = swarmBounds.center().x() - std::min(40.0, swarmBounds.width() / 4);
    const double rightX = swarmBounds.center().x() + std::min(40.0, swarmBounds.width() / 4);
    drawArrow(p, {leftX, mem.bottom() + 1}, {leftX, swarmBounds.top() - 2},
              arrowColor(downActive, down), downActive ? 4 : 2);
    drawArrow(p, {rightX, swarmBounds.top() - 2}, {rightX, mem.bottom() + 1},
              arrowColor(upActive, up), upActive ? 4 : 2);
    for (const QRectF& box : systems) {
        const double dx = std::min(14.0, box.width() / 5);
        drawArrow(p, {box.center().x() - dx, swarmBounds.bottom() + 2},
                  {box.center().x() - dx, box.top() - 1}, arrowColor(downActive, down),
                  downActive ? 3 : 1.5);
        if (m_numSystems > 1 || m_traffic.gradientsUp > 0) {
            drawArrow(p, {box.center().x() + dx, box.top() - 1},
                      {box.center().x() + dx, swarmBounds.bottom() + 2}, arrowColor(upActive, up),
                      upActive ? 3 : 1.5);
        }
    }
    // Traffic labels beside the top arrows.
    const double labelY = mem.bottom() + 2;
    const double labelH = swarmBounds.top() - mem.bottom() - 4;
    p.setFont(downActive ? k.bold : k.normal);
    p.setPen(down.darker(downActive ? 110 : 100));
    p.drawText(QRectF(margin, labelY, leftX - margin - 8, labelH),
               Qt::AlignRight | Qt::AlignVCenter | Qt::TextWordWrap,
               tr("weights ↓ %1\nbroadcast to %2 system(s)")
                   .arg(bytesText(double(m_traffic.weightsDown)))
                   .arg(m_numSystems));
    p.setFont(upActive ? k.bold : k.normal);
    p.setPen(up.darker(upActive ? 110 : 100));
    p.drawText(QRectF(rightX + 8, labelY, w - rightX - 8 - margin, labelH),
               Qt::AlignLeft | Qt::AlignVCenter | Qt::TextWordWrap,
               m_numSystems > 1
                   ? tr("gradients ↑ %1\nreduced by SwarmX (%2 in)")
                         .arg(bytesText(double(m_traffic.gradientsUp) / m_numSystems),
                              bytesText(double(m_traffic.reducedBytes)))
                   : tr("gradients ↑ %1").arg(bytesText(double(m_traffic.gradientsUp))));
}

}  // namespace ws::ui
