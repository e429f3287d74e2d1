// SPDX-License-Identifier: GPL-3.0-or-later
// ClusterDiagram: see cluster_diagram.h.
#include "ui/wafer/cluster_diagram.h"

#include "engine/core/units.h"
#include "engine/wafer/narration.h"

#include <QHelpEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>
#include <algorithm>
#include <cmath>
#include <set>

#include "ui/common/text_fit.h"
#include "ui/wafer/cluster_layout.h"
#include "ui/wafer/core_heatmap.h"
#include "ui/wafer/timeline_view.h"

namespace ws::ui {
namespace {
using streaming::SpanKind;

// The texts the diagram's paint draws (drawnTexts(), textRects(): no two may overlap); set
// while ClusterDiagram::paintEvent runs. GUI thread only.
std::vector<ClusterDiagram::DrawnText>* g_drawn = nullptr;

void drawRecorded(QPainter& p, const QRectF& r, int flags, const QString& text) {
    p.drawText(r, flags, text);
    if (g_drawn && !text.isEmpty()) g_drawn->push_back({text, r, p.boundingRect(r, flags, text)});
}

// Draws a laid-out label (ClusterLayout wrapped it to its box). Should the widget be shorter
// than its labels need (before the page gave it its minimum), as many lines as the box holds,
// each elided: a label never spills into its neighbours.
void drawLabel(QPainter& p, const ClusterLayout::Label& label, Qt::Alignment align) {
    if (label.lines.isEmpty()) return;
    const QFontMetrics fm(p.font());
    const int fit = std::max(1, int((label.box.height() + 0.5) / lineHeight(p.font())));
    QStringList shown = label.lines;
    if (shown.size() > fit) shown = fitLines(label.lines, fm, int(label.box.width()), fit);
    drawRecorded(p, label.box, int(align), shown.join('\n'));
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
}

void ClusterDiagram::setPlacement(std::vector<QString> perSystem) {
    if (perSystem == m_placement) return;
    m_placement = std::move(perSystem);
    relayout();
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
    m_links = {};
    if (record && record->prediction && m_numSystems > 1) {
        const wafer::StepPrediction& pr = *record->prediction;
        for (const wafer::LinkLoad& link : pr.links) {
            if (m_links.shown && link.utilization <= m_links.utilization) continue;
            m_links.shown = true;
            m_links.busiest = QString::fromStdString(link.name);
            m_links.utilization = link.utilization;
        }
        m_links.lockstep = pr.lockstep;
        m_links.queueingS = pr.split.queueing;
    }
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
            const QString layer = QString::fromStdString(wafer::layerName(s.layer, numBlocks));
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
    relayout();
    update();
}

void ClusterDiagram::setReplay(std::optional<wafer::ReplayState> state, int numBlocks,
                               const QString& caption) {
    if (!state && !m_replay) return;
    m_replay = std::move(state);
    m_replayBlocks = numBlocks;
    m_replayCaption = caption;
    relayout();
    update();
}

// Slow motion: the bytes so far, then the rate now, then the step's total (as many lines as the
// gap between MemoryX and SwarmX holds).
QStringList ClusterDiagram::downLabel() const {
    if (!m_replay) {
        return {tr("weights ↓ %1")
                    .arg(QString::fromStdString(formatBytes(double(m_traffic.weightsDown)))),
                tr("broadcast to %1 system(s)").arg(m_numSystems)};
    }
    const wafer::LinkFlow& in = m_replay->weightsIn;
    return {tr("weights ↓ %1").arg(QString::fromStdString(formatBytes(in.bytesSoFar))),
            rateLine(in),
            m_numSystems > 1
                ? tr("of %1, to %2 systems")
                      .arg(QString::fromStdString(formatBytes(in.totalBytes)))
                      .arg(m_numSystems)
                : tr("of %1 this step").arg(QString::fromStdString(formatBytes(in.totalBytes)))};
}

QStringList ClusterDiagram::upLabel() const {
    if (!m_replay) {
        if (m_numSystems > 1)
            return {tr("gradients ↑ %1")
                        .arg(QString::fromStdString(
                            formatBytes(double(m_traffic.gradientsUp) / m_numSystems))),
                    tr("reduced by SwarmX (%1 in)")
                        .arg(QString::fromStdString(formatBytes(double(m_traffic.reducedBytes))))};
        return {tr("gradients ↑ %1")
                    .arg(QString::fromStdString(formatBytes(double(m_traffic.gradientsUp))))};
    }
    const wafer::LinkFlow& out =
        m_replay->gradientsOut.empty() ? m_replay->reducedOut : m_replay->gradientsOut.front();
    QStringList lines{tr("gradients ↑ %1").arg(QString::fromStdString(formatBytes(out.bytesSoFar))),
                      rateLine(out)};
    if (m_numSystems > 1)
        lines << tr("per system; reduced → MemoryX %1")
                     .arg(QString::fromStdString(formatBytes(m_replay->reducedOut.bytesSoFar)));
    else
        lines << tr("of %1 this step").arg(QString::fromStdString(formatBytes(out.totalBytes)));
    return lines;
}

QString ClusterDiagram::rateLine(const wafer::LinkFlow& flow) const {
    if (!flow.active()) return tr("idle now");
    return tr("%1 now (%2)")
        .arg(QString::fromStdString(formatByteRate(flow.bytesPerS)),
             QString::fromStdString(wafer::layerName(flow.layer, m_replayBlocks)));
}

QStringList ClusterDiagram::trafficLabels() const {
    return {downLabel().join(' '), upLabel().join(' ')};
}

// The labels beside the top arrows in short words, for a diagram too small for the full ones
// (the tooltip has those).
QStringList ClusterDiagram::downBrief() const {
    if (!m_replay)
        return {tr("↓ %1").arg(QString::fromStdString(formatBytes(double(m_traffic.weightsDown)))),
                tr("to %1 sys.").arg(m_numSystems)};
    const wafer::LinkFlow& in = m_replay->weightsIn;
    return {tr("↓ %1").arg(QString::fromStdString(formatBytes(in.bytesSoFar))),
            in.active() ? QString::fromStdString(formatByteRate(in.bytesPerS)) : tr("idle")};
}

QStringList ClusterDiagram::upBrief() const {
    if (!m_replay) {
        QStringList lines{tr("↑ %1").arg(QString::fromStdString(
            formatBytes(double(m_traffic.gradientsUp) / (m_numSystems > 1 ? m_numSystems : 1))))};
        if (m_numSystems > 1) lines << tr("reduced");
        return lines;
    }
    const wafer::LinkFlow& out =
        m_replay->gradientsOut.empty() ? m_replay->reducedOut : m_replay->gradientsOut.front();
    return {tr("↑ %1").arg(QString::fromStdString(formatBytes(out.bytesSoFar))),
            out.active() ? QString::fromStdString(formatByteRate(out.bytesPerS)) : tr("idle")};
}

QString ClusterDiagram::captionText() const {
    return m_waferName.isEmpty()
               ? QString()
               : tr("each system: one %1 wafer (its frame drawn inside)").arg(m_waferName);
}

ClusterTexts ClusterDiagram::texts() const {
    ClusterTexts t;
    t.title = m_replay ? tr("Cluster traffic at the cursor (slow motion)")
                       : tr("Cluster traffic this step");
    const int updated = m_replay ? m_replay->updatesDone : m_traffic.updatedLayers;
    const int planned = m_replay ? m_replay->updatesPlanned : m_traffic.plannedUpdates;
    t.memText = tr("weights + optimizer · %1 / %2 layers updated").arg(updated).arg(planned);
    if (m_replay && !m_replay->updating.empty()) {
        t.memText = tr("updating %1 · %2 / %3 layers updated")
                        .arg(QString::fromStdString(
                            wafer::layerName(m_replay->updating.front(), m_replayBlocks)))
                        .arg(updated)
                        .arg(planned);
    }
    t.swarmLabel = m_numSystems == 1 ? tr("SwarmX (1 system: broadcast only, no reduce)")
                                     : tr("SwarmX tree, depth %1").arg(m_treeDepth);
    t.swarmSide = {tr("SwarmX tree,"), tr("depth %1").arg(m_treeDepth)};
    if (m_links.shown) {
        const QString busy =
            tr("%1 %2% busy").arg(m_links.busiest).arg(100.0 * m_links.utilization, 0, 'f', 0);
        const QString queue = tr("lockstep ×%1: +%2 a step")
                                  .arg(m_links.lockstep, 0, 'f', 2)
                                  .arg(QString::fromStdString(formatSeconds(m_links.queueingS)));
        t.swarmLabel += QStringLiteral(" · ") + busy + QStringLiteral(" · ") + queue;
        t.swarmSide << busy << queue;
    }
    t.downFull = downLabel();
    t.upFull = upLabel();
    t.downBrief = downBrief();
    t.upBrief = upBrief();
    t.downBold = !m_replay && downNow();
    t.upBold = !m_replay && upNow();
    t.replay = m_replay.has_value();
    t.numSystems = m_numSystems;
    t.treeDepth = m_treeDepth;
    t.placement = m_placement;
    t.caption = captionText();
    t.foot = m_replay ? m_replayCaption : tr("latest: %1").arg(m_inFlight);
    return t;
}

QSize ClusterDiagram::minimumSizeHint() const {
    // As tall as its labels need at this width (they wrap; the page scrolls rather than cut
    // them), never less than the diagram's own shape needs.
    if (!m_hasRecord) return {int(ClusterLayout::kMinWidth), 260};
    const ClusterLayout layout(font(), QSizeF(width(), 0), texts());
    return {int(ClusterLayout::kMinWidth), std::max(260, int(std::ceil(layout.requiredHeight())))};
}

void ClusterDiagram::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    relayout();
}

void ClusterDiagram::relayout() {
    // The labels' height at this width changes with the texts (the bytes grow, slow motion's
    // three lines) and the width: the page learns the new minimum when it changed.
    const int required = minimumSizeHint().height();
    if (required == m_requiredHeight) return;
    m_requiredHeight = required;
    updateGeometry();
}

bool ClusterDiagram::event(QEvent* event) {
    if (event->type() == QEvent::ToolTip && m_hasRecord) {
        // The traffic whole, whatever the labels beside the arrows had room for, and where the
        // systems run.
        QString text = QStringLiteral("%1\n%2\nlatest: %3")
                           .arg(downLabel().join(QStringLiteral(", ")),
                                upLabel().join(QStringLiteral(", ")), m_inFlight);
        for (size_t s = 0; s < m_placement.size(); ++s)
            text += tr("\nsystem %1: %2").arg(s).arg(m_placement[s]);
        if (const QString caption = captionText(); !caption.isEmpty()) text += '\n' + caption;
        QToolTip::showText(static_cast<QHelpEvent*>(event)->globalPos(), text, this);
        return true;
    }
    return QWidget::event(event);
}

// One paint's colours and fonts; where things go is the ClusterLayout's.
struct ClusterDiagram::Paint {
    explicit Paint(const QWidget& widget)
        : text(widget.palette().color(QPalette::Text)),
          base(widget.palette().color(QPalette::Base)),
          normal(widget.font()),
          bold(boldOf(widget.font())) {
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
    const QColor down = TimelineView::kindColor(SpanKind::StreamIn);
    const QColor up = TimelineView::kindColor(SpanKind::StreamOut);
    const QColor compute = TimelineView::kindColor(SpanKind::Forward);
    const QColor update = TimelineView::kindColor(SpanKind::Update);
};

void ClusterDiagram::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const Paint k(*this);
    m_drawn.clear();
    g_drawn = &m_drawn;
    struct Unset {
        ClusterDiagram* d;
        ~Unset() {
            g_drawn = nullptr;
            d->m_textRects.clear();
            for (const DrawnText& t : d->m_drawn) d->m_textRects.push_back(t.bounds);
        }
    } unset{this};
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
    const ClusterLayout layout(k.normal, size(), texts());
    m_compact = layout.compact();
    p.setFont(k.bold);
    p.setPen(k.text);
    drawLabel(p, layout.title, Qt::AlignLeft | Qt::AlignTop);
    drawMemoryX(p, k, layout);
    drawSwarmTree(p, k, layout);
    drawSystems(p, k, layout);
    drawTraffic(p, k, layout);
    // What is in flight.
    p.setFont(k.bold);
    p.setPen(k.text);
    drawLabel(p, layout.foot, Qt::AlignHCenter | Qt::AlignVCenter);
}

void ClusterDiagram::drawMemoryX(QPainter& p, const Paint& k, const ClusterLayout& l) const {
    const bool active = m_replay ? !m_replay->updating.empty() : m_active == Active::Update;
    p.setPen(k.boxPen(active, k.update));
    p.setBrush(k.base.lighter(103));
    p.drawRoundedRect(l.mem, 6, 6);
    p.setPen(k.text);
    p.setFont(k.bold);
    drawLabel(p, l.memTitle, Qt::AlignHCenter | Qt::AlignTop);
    p.setFont(k.normal);
    drawLabel(p, l.memText, Qt::AlignCenter);
}

void ClusterDiagram::drawSwarmTree(QPainter& p, const Paint& k, const ClusterLayout& l) const {
    for (const auto& row : l.treeRows) {
        for (const QRectF& node : row) {
            p.setPen(k.boxPen(downNow() || upNow(), downNow() ? k.down : k.up));
            p.setBrush(k.base.lighter(103));
            p.drawRoundedRect(node, 4, 4);
        }
    }
    p.setPen(k.text);
    const bool inside = l.treeRows.size() == 1 && l.treeRows.front().size() == 1;
    p.setFont(inside ? k.bold : k.normal);
    drawLabel(p, l.swarm, inside ? Qt::AlignCenter : Qt::AlignRight | Qt::AlignVCenter);
}

void ClusterDiagram::drawSystems(QPainter& p, const Paint& k, const ClusterLayout& l) {
    p.setFont(k.normal);
    for (const ClusterLayout::System& sys : l.systems) {
        p.setPen(k.boxPen(computeNow(), k.compute));
        p.setBrush(k.base.lighter(103));
        p.drawRoundedRect(sys.box, 6, 6);
        p.setPen(k.text);
        drawLabel(p, sys.name, Qt::AlignHCenter | Qt::AlignTop);
        drawLabel(p, sys.placement, Qt::AlignHCenter | Qt::AlignBottom);
        drawWaferThumbnail(p, k, sys.waferArea);
    }
    p.setPen(k.text);
    drawLabel(p, l.caption, Qt::AlignHCenter | Qt::AlignTop);
}

void ClusterDiagram::drawWaferThumbnail(QPainter& p, const Paint& k, const QRectF& area) {
    // The wafer's own aspect (WSE-2's grid is 750 x 994 cores), fitted into its area.
    const double aspect = m_thumbFrame && m_thumbFrame->gridRows > 0
                              ? double(m_thumbFrame->gridCols) / m_thumbFrame->gridRows
                              : 1.0;
    const double waferW = std::min(area.width(), area.height() * aspect);
    const double waferH = waferW / aspect;
    if (waferW < 1 || waferH < 1) return;
    const QRectF wafer(area.center().x() - waferW / 2, area.top(), waferW, waferH);
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
void ClusterDiagram::drawTraffic(QPainter& p, const Paint& k, const ClusterLayout& l) const {
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
    const bool downActive = downNow();
    const bool upActive = upNow();
    const wafer::ReplayState* r = m_replay ? &*m_replay : nullptr;
    const QRectF& swarm = l.swarmBounds;
    drawArrow(p, {l.downX, l.mem.bottom() + 1}, {l.downX, swarm.top() - 2},
              arrowColor(r ? r->weightsIn.active() : downActive, down),
              width(r ? &r->weightsIn : nullptr, downActive, 2, 4));
    drawArrow(p, {l.upX, swarm.top() - 2}, {l.upX, l.mem.bottom() + 1},
              arrowColor(r ? r->reducedOut.active() : upActive, up),
              width(r ? &r->reducedOut : nullptr, upActive, 2, 4));
    for (size_t i = 0; i < l.systems.size(); ++i) {
        const QRectF& box = l.systems[i].box;
        const wafer::LinkFlow* in = r && i < r->broadcast.size() ? &r->broadcast[i] : nullptr;
        const wafer::LinkFlow* out =
            r && i < r->gradientsOut.size() ? &r->gradientsOut[i] : nullptr;
        const double dx = std::min(14.0, box.width() / 5);
        drawArrow(p, {box.center().x() - dx, swarm.bottom() + 2},
                  {box.center().x() - dx, box.top() - 1},
                  arrowColor(in ? in->active() : downActive, down), width(in, downActive, 1.5, 3));
        if (m_numSystems > 1 || m_traffic.gradientsUp > 0 || r) {
            drawArrow(p, {box.center().x() + dx, box.top() - 1},
                      {box.center().x() + dx, swarm.bottom() + 2},
                      arrowColor(out ? out->active() : upActive, up), width(out, upActive, 1.5, 3));
        }
    }
    // The labels beside the top arrows (bold for the link at work, outside slow motion).
    p.setFont(!m_replay && downActive ? k.bold : k.normal);
    p.setPen(down.darker(downActive ? 110 : 100));
    drawLabel(p, l.down, Qt::AlignRight | Qt::AlignVCenter);
    p.setFont(!m_replay && upActive ? k.bold : k.normal);
    p.setPen(up.darker(upActive ? 110 : 100));
    drawLabel(p, l.up, Qt::AlignLeft | Qt::AlignVCenter);
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
