// ClusterDiagram: see cluster_diagram.h.
#include "ui/wafer/cluster_diagram.h"

#include "engine/wafer/narration.h"

#include <QHelpEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>
#include <algorithm>
#include <cmath>
#include <set>

#include "ui/common/text_fit.h"
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

// The rectangles of the texts the diagram's paint draws (textRects(): no two may overlap);
// set while ClusterDiagram::paintEvent runs. GUI thread only.
std::vector<QRectF>* g_textRects = nullptr;

void drawRecorded(QPainter& p, const QRectF& r, int flags, const QString& text) {
    p.drawText(r, flags, text);
    if (g_textRects && !text.isEmpty()) g_textRects->push_back(p.boundingRect(r, flags, text));
}

QString rateText(double bytesPerS) {
    return bytesText(bytesPerS) + QStringLiteral("/s");
}

// Draws `lines` in `r`: word-wrapped when the wrapped lines fit its height, else as many of
// them as it holds (at least one), each elided to its width: a label never spills into its
// neighbours. The tooltip has every label whole (ClusterDiagram::event).
void drawLines(QPainter& p, const QRectF& r, const QStringList& lines, Qt::Alignment align) {
    const QFontMetrics fm(p.font());
    const int fit = std::max(1, int(r.height() / fm.height()));
    const QStringList shown = fitLines(lines, fm, int(r.width()), fit);
    drawRecorded(p, r, int(align), shown.join('\n'));
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

void ClusterDiagram::setReplay(std::optional<wafer::ReplayState> state, int numBlocks,
                               const QString& caption) {
    if (!state && !m_replay) return;
    m_replay = std::move(state);
    m_replayBlocks = numBlocks;
    m_replayCaption = caption;
    update();
}

// Slow motion: the bytes so far, then the rate now, then the step's total (as many lines as the
// gap between MemoryX and SwarmX holds).
QStringList ClusterDiagram::downLabel() const {
    if (!m_replay) {
        return {tr("weights ↓ %1").arg(bytesText(double(m_traffic.weightsDown))),
                tr("broadcast to %1 system(s)").arg(m_numSystems)};
    }
    const wafer::LinkFlow& in = m_replay->weightsIn;
    return {tr("weights ↓ %1").arg(bytesText(in.bytesSoFar)), rateLine(in),
            m_numSystems > 1
                ? tr("of %1, to %2 systems").arg(bytesText(in.totalBytes)).arg(m_numSystems)
                : tr("of %1 this step").arg(bytesText(in.totalBytes))};
}

QStringList ClusterDiagram::upLabel() const {
    if (!m_replay) {
        if (m_numSystems > 1)
            return {
                tr("gradients ↑ %1").arg(bytesText(double(m_traffic.gradientsUp) / m_numSystems)),
                tr("reduced by SwarmX (%1 in)").arg(bytesText(double(m_traffic.reducedBytes)))};
        return {tr("gradients ↑ %1").arg(bytesText(double(m_traffic.gradientsUp)))};
    }
    const wafer::LinkFlow& out =
        m_replay->gradientsOut.empty() ? m_replay->reducedOut : m_replay->gradientsOut.front();
    QStringList lines{tr("gradients ↑ %1").arg(bytesText(out.bytesSoFar)), rateLine(out)};
    if (m_numSystems > 1)
        lines << tr("per system; reduced → MemoryX %1")
                     .arg(bytesText(m_replay->reducedOut.bytesSoFar));
    else
        lines << tr("of %1 this step").arg(bytesText(out.totalBytes));
    return lines;
}

QString ClusterDiagram::rateLine(const wafer::LinkFlow& flow) const {
    if (!flow.active()) return tr("idle now");
    return tr("%1 now (%2)")
        .arg(rateText(flow.bytesPerS),
             QString::fromStdString(wafer::layerName(flow.layer, m_replayBlocks)));
}

QStringList ClusterDiagram::trafficLabels() const {
    return {downLabel().join(' '), upLabel().join(' ')};
}

bool ClusterDiagram::event(QEvent* event) {
    if (event->type() == QEvent::ToolTip && m_hasRecord) {
        // The traffic whole, whatever the labels beside the arrows had room for.
        QToolTip::showText(static_cast<QHelpEvent*>(event)->globalPos(),
                           QStringLiteral("%1\n%2\nlatest: %3")
                               .arg(downLabel().join(QStringLiteral(", ")),
                                    upLabel().join(QStringLiteral(", ")), m_inFlight),
                           this);
        return true;
    }
    return QWidget::event(event);
}

// One paint's colours, fonts and rows: title, MemoryX, arrows, the SwarmX tree, arrows, systems,
// caption, foot. A widget too short for them all (presenter mode's large type under 1080 px)
// gets one-line rows and no caption, and every label draws only the lines its row holds.
struct ClusterDiagram::Paint {
    Paint(const QWidget& widget, int treeDepth, bool caption)
        : text(widget.palette().color(QPalette::Text)),
          base(widget.palette().color(QPalette::Base)),
          normal(widget.font()),
          bold(boldOf(widget.font())),
          fm(normal),
          line(fm.height()),
          w(widget.width()),
          h(widget.height()),
          levels(std::max(1, treeDepth)) {
        faint = text;
        faint.setAlpha(60);
        titleH = line + 6;
        memH = 2 * line + 10;
        levelH = line + 10;
        arrowGap = 2 * line + 14;
        treeGap = 26;
        captionH = caption ? line + 4 : 0;
        footH = line + 8;
        const double full = 2 * margin + titleH + memH + arrowGap + levels * levelH + treeGap +
                            3.0 * line + captionH + footH;
        compact = h < full;
        if (compact) {
            titleH = line + 2;
            memH = line + 8;
            levelH = line + 6;
            arrowGap = line + 12;
            treeGap = 16;
            captionH = 0;
            footH = line + 4;
        }
        memY = margin + titleH;
        treeTop = memY + memH + arrowGap;
        sysY = treeTop + levels * levelH + treeGap;
        sysH = std::max(2.0 * line + 8, h - sysY - captionH - footH - margin);
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
    bool compact = false;
    double titleH, memH, levelH, arrowGap, treeGap, captionH, footH;
    double memY, treeTop, sysY, sysH;
};

void ClusterDiagram::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const Paint k(*this, m_treeDepth, !m_waferName.isEmpty());
    m_compact = k.compact;
    m_textRects.clear();
    g_textRects = &m_textRects;
    struct Unset {
        ~Unset() { g_textRects = nullptr; }
    } unset;
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
    drawRecorded(p, QRectF(k.margin, k.margin, k.w - 2 * k.margin, k.titleH),
                 Qt::AlignLeft | Qt::AlignTop,
                 m_replay ? tr("Cluster traffic at the cursor (slow motion)")
                          : tr("Cluster traffic this step"));
    const QRectF mem = drawMemoryX(p, k);
    const QRectF swarm = drawSwarmTree(p, k);
    const std::vector<QRectF> systems = drawSystems(p, k);
    drawTraffic(p, k, mem, swarm, systems);
    // What is in flight.
    p.setFont(k.bold);
    p.setPen(k.text);
    drawLines(p, QRectF(k.margin, k.h - k.margin - k.footH, k.w - 2 * k.margin, k.footH),
              {m_replay ? m_replayCaption : tr("latest: %1").arg(m_inFlight)},
              Qt::AlignHCenter | Qt::AlignVCenter);
}

QRectF ClusterDiagram::drawMemoryX(QPainter& p, const Paint& k) const {
    const int updated = m_replay ? m_replay->updatesDone : m_traffic.updatedLayers;
    const int planned = m_replay ? m_replay->updatesPlanned : m_traffic.plannedUpdates;
    QString memText = tr("weights + optimizer · %1 / %2 layers updated").arg(updated).arg(planned);
    if (m_replay && !m_replay->updating.empty()) {
        memText = tr("updating %1 · %2 / %3 layers updated")
                      .arg(QString::fromStdString(
                          wafer::layerName(m_replay->updating.front(), m_replayBlocks)))
                      .arg(updated)
                      .arg(planned);
    }
    const bool active = m_replay ? !m_replay->updating.empty() : m_active == Active::Update;
    const QString oneLine = tr("MemoryX · %1").arg(memText);
    const double textW = k.fm.horizontalAdvance(k.compact ? oneLine : memText) + 24;
    const double memW = std::min(k.w - 2 * k.margin, std::max(k.w * 0.5, textW));
    const QRectF mem(k.w / 2 - memW / 2, k.memY, memW, k.memH);
    p.setPen(k.boxPen(active, k.update));
    p.setBrush(k.base.lighter(103));
    p.drawRoundedRect(mem, 6, 6);
    p.setPen(k.text);
    if (k.compact) {
        p.setFont(k.normal);
        drawLines(p, mem.adjusted(6, 0, -6, 0), {oneLine}, Qt::AlignCenter);
        return mem;
    }
    p.setFont(k.bold);
    drawRecorded(p, mem.adjusted(6, 4, -6, 0), Qt::AlignHCenter | Qt::AlignTop, tr("MemoryX"));
    p.setFont(k.normal);
    drawLines(p, mem.adjusted(6, 0, -6, -4), {memText}, Qt::AlignHCenter | Qt::AlignBottom);
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
            p.setPen(k.boxPen(downNow() || upNow(), downNow() ? k.down : k.up));
            p.setBrush(k.base.lighter(103));
            p.drawRoundedRect(node, 4, 4);
            swarmBounds = swarmBounds.isNull() ? node : swarmBounds.united(node);
        }
    }
    p.setPen(k.text);
    p.setFont(k.bold);
    if (levels == 1) drawLines(p, swarmBounds, {swarmLabel}, Qt::AlignCenter);
    p.setFont(k.normal);
    if (levels > 1) {  // left of the tree, where the rows leave room
        drawLines(p,
                  QRectF(k.margin, swarmBounds.top(), swarmBounds.left() - k.margin - 6,
                         swarmBounds.height()),
                  {tr("SwarmX tree,"), tr("depth %1").arg(m_treeDepth)},
                  Qt::AlignRight | Qt::AlignVCenter);
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
        p.setPen(k.boxPen(computeNow(), k.compute));
        p.setBrush(k.base.lighter(103));
        p.drawRoundedRect(box, 6, 6);
        p.setPen(k.text);
        const bool rest = drawnSystems < m_numSystems && s == drawnSystems - 1;
        const bool narrow = sysW < k.fm.horizontalAdvance(tr("system 00")) + 8;
        const QString name =
            rest ? (narrow ? tr("…%1").arg(m_numSystems) : tr("… %1 systems").arg(m_numSystems))
            : narrow ? tr("sys %1").arg(s)
                     : tr("system %1").arg(s);
        drawRecorded(p, box.adjusted(4, 2, -4, 0), Qt::AlignHCenter | Qt::AlignTop, name);
        const bool placed = !rest && size_t(s) < m_placement.size();
        if (placed) {  // where the system runs, under its wafer
            drawRecorded(
                p, box.adjusted(4, 0, -4, -2), Qt::AlignHCenter | Qt::AlignBottom,
                k.fm.elidedText(m_placement[size_t(s)], Qt::ElideRight, int(box.width()) - 8));
        }
        drawWaferThumbnail(p, k, box, placed);
    }
    if (!m_waferName.isEmpty() && !systems.empty() && k.captionH > 0) {
        p.setPen(k.text);
        drawLines(p, QRectF(margin, k.sysY + k.sysH + 2, w - 2 * margin, k.line),
                  {tr("each system: one %1 wafer (its frame drawn inside)").arg(m_waferName)},
                  Qt::AlignHCenter | Qt::AlignTop);
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
// In slow motion each arrow is lit while its link moves bytes, as thick as its rate now.
void ClusterDiagram::drawTraffic(QPainter& p, const Paint& k, const QRectF& mem,
                                 const QRectF& swarmBounds,
                                 const std::vector<QRectF>& systems) const {
    auto arrowColor = [&](bool active, QColor c) {
        if (!active) c.setAlpha(m_replay ? 60 : 110);
        return c;
    };
    // Width of a link's arrow: the normal picture's two widths, or in slow motion its rate.
    auto width = [&](const wafer::LinkFlow* flow, bool active, double thin, double bold) {
        if (!flow) return active ? bold : thin;
        if (!flow->active() || flow->peakBytesPerS <= 0) return thin * 0.75;
        return thin + 1.5 * bold * std::min(1.0, flow->bytesPerS / flow->peakBytesPerS);
    };
    const QColor down = k.down, up = k.up;
    const double w = k.w, margin = k.margin;
    const bool downActive = downNow();
    const bool upActive = upNow();
    const wafer::ReplayState* r = m_replay ? &*m_replay : nullptr;
    // In slow motion the labels have three lines to show: the arrows sit closer together.
    const double offset = std::min(m_replay ? 28.0 : 40.0, swarmBounds.width() / 4);
    const double leftX = swarmBounds.center().x() - offset;
    const double rightX = swarmBounds.center().x() + offset;
    drawArrow(p, {leftX, mem.bottom() + 1}, {leftX, swarmBounds.top() - 2},
              arrowColor(r ? r->weightsIn.active() : downActive, down),
              width(r ? &r->weightsIn : nullptr, downActive, 2, 4));
    drawArrow(p, {rightX, swarmBounds.top() - 2}, {rightX, mem.bottom() + 1},
              arrowColor(r ? r->reducedOut.active() : upActive, up),
              width(r ? &r->reducedOut : nullptr, upActive, 2, 4));
    for (size_t i = 0; i < systems.size(); ++i) {
        const QRectF& box = systems[i];
        const wafer::LinkFlow* in = r && i < r->broadcast.size() ? &r->broadcast[i] : nullptr;
        const wafer::LinkFlow* out =
            r && i < r->gradientsOut.size() ? &r->gradientsOut[i] : nullptr;
        const double dx = std::min(14.0, box.width() / 5);
        drawArrow(p, {box.center().x() - dx, swarmBounds.bottom() + 2},
                  {box.center().x() - dx, box.top() - 1},
                  arrowColor(in ? in->active() : downActive, down), width(in, downActive, 1.5, 3));
        if (m_numSystems > 1 || m_traffic.gradientsUp > 0 || r) {
            drawArrow(p, {box.center().x() + dx, box.top() - 1},
                      {box.center().x() + dx, swarmBounds.bottom() + 2},
                      arrowColor(out ? out->active() : upActive, up), width(out, upActive, 1.5, 3));
        }
    }
    // Traffic labels beside the top arrows, as many lines as the gap holds.
    const double labelY = mem.bottom() + 2;
    const double labelH = swarmBounds.top() - mem.bottom() - 4;
    // A narrow diagram (a laptop with the Lessons dock open) says the step's traffic in short
    // words rather than cutting the long ones ("weights ↓ 1...."); the tooltip has them whole.
    auto fitting = [&p](const QStringList& full, const QStringList& brief, const QRectF& box) {
        const QFontMetrics fm(p.font());
        const int lines = std::max(1, int(box.height() / fm.height()));
        return brief.isEmpty() || wrapLines(full, fm, int(box.width())).size() <= lines ? full
                                                                                        : brief;
    };
    QStringList downBrief, upBrief;
    if (!m_replay) {
        downBrief = {tr("↓ %1").arg(bytesText(double(m_traffic.weightsDown))),
                     tr("to %1 sys.").arg(m_numSystems)};
        upBrief = {tr("↑ %1").arg(
            bytesText(double(m_traffic.gradientsUp) / (m_numSystems > 1 ? m_numSystems : 1)))};
        if (m_numSystems > 1) upBrief << tr("reduced");
    }
    p.setFont(downActive ? k.bold : k.normal);
    p.setPen(down.darker(downActive ? 110 : 100));
    const double gap = m_replay ? 14 : 8;  // clear of a thick arrow's head
    const QRectF downRect(margin, labelY, leftX - margin - gap, labelH);
    drawLines(p, downRect, fitting(downLabel(), downBrief, downRect),
              Qt::AlignRight | Qt::AlignVCenter);
    p.setFont(upActive ? k.bold : k.normal);
    p.setPen(up.darker(upActive ? 110 : 100));
    const QRectF upRect(rightX + gap, labelY, w - rightX - gap - margin, labelH);
    drawLines(p, upRect, fitting(upLabel(), upBrief, upRect), Qt::AlignLeft | Qt::AlignVCenter);
}

bool ClusterDiagram::downNow() const {
    if (!m_replay) return m_active == Active::Down;
    bool any = m_replay->weightsIn.active();
    for (const auto& f : m_replay->broadcast) any = any || f.active();
    return any;
}

bool ClusterDiagram::upNow() const {
    if (!m_replay) return m_active == Active::Up;
    bool any = m_replay->reducedOut.active();
    for (const auto& f : m_replay->gradientsOut) any = any || f.active();
    return any;
}

bool ClusterDiagram::computeNow() const {
    return m_replay ? m_replay->phase.activity == wafer::WaferActivity::Computing
                    : m_active == Active::Compute;
}

}  // namespace ws::ui
