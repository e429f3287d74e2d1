// SPDX-License-Identifier: GPL-3.0-or-later
// TimelineView: see timeline_view.h.
#include "ui/wafer/timeline_view.h"

#include <QToolTip>
#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "engine/core/units.h"
#include "engine/wafer/narration.h"
#include "ui/common/plot_theme.h"

namespace ws::ui {
namespace {
using streaming::SpanKind;

constexpr int kLaneMemoryX = 0;
constexpr int kLaneSwarmX = 1;
constexpr int kFirstSystemLane = 2;
constexpr double kBarHalfHeight = 0.36;

// `per`: lanes per system, 3 (stream-in, compute, stream-out) or 4 with the activation-offload
// lane (laneOfOffload) when the step offloads activations to MemoryX.
int laneOf(const RecordedSpan& s, int per = 3) {
    switch (s.kind()) {
        case SpanKind::Update:
            return kLaneMemoryX;
        case SpanKind::Reduce:
            return kLaneSwarmX;
        case SpanKind::StreamIn:
            return s.system < 0 ? kLaneSwarmX : kFirstSystemLane + per * s.system;
        case SpanKind::Forward:
        case SpanKind::Backward:
            return kFirstSystemLane + per * std::max(0, int(s.system)) + 1;
        case SpanKind::StreamOut:
            return s.system < 0 ? kLaneSwarmX : kFirstSystemLane + per * s.system + 2;
    }
    return kLaneSwarmX;
}

int laneOfOffload(int system) {
    return kFirstSystemLane + 4 * system + 3;
}

// Where a span's bar sits: its lane (row) and the bar's centre and half height in lane units.
// Compact: one row per system, stream-in / compute / stream-out as three thin bands in it.
struct Placement {
    int lane = 0;
    double y = 0;
    double half = kBarHalfHeight;
};

Placement placementOfLane(int full, bool compact, int per) {
    if (!compact || full < kFirstSystemLane) return {full, double(full), kBarHalfHeight};
    const int system = (full - kFirstSystemLane) / per;
    const int band = (full - kFirstSystemLane) % per;  // 0 in, 1 compute, 2 out, 3 offload
    const int lane = kFirstSystemLane + system;
    if (per == 3) return {lane, lane + (band - 1) * 0.29, 0.13};
    return {lane, lane + (band - 1.5) * 0.22, 0.1};
}

Placement placementOf(const RecordedSpan& s, bool compact, int per = 3) {
    return placementOfLane(laneOf(s, per), compact, per);
}

// A span's time; one the emulated clock did not time has none.
QString spanTimeText(double s) {
    if (s < 0) return QObject::tr("not timed");
    return QString::fromStdString(formatSeconds(s));
}

}  // namespace

// One kind's bars (or the planned schedule's ghosts), drawn as rectangles on lane rows.
class GanttBars : public QCPAbstractPlottable {
public:
    struct Bar {
        double start = 0, end = 0;  // axis units
        int lane = 0;
        double y = 0, half = kBarHalfHeight;  // centre and half height, lane units
        bool highlight = false;
        RecordedSpan span;
        QString op = {};  // an op inside the span (LoRA adapter bars): its name
        double opS = 0;
    };

    GanttBars(QCPAxis* key, QCPAxis* value) : QCPAbstractPlottable(key, value) {
        setSelectable(QCP::stNone);
    }
    std::vector<Bar> bars;
    QPen highlightPen;

    double selectTest(const QPointF&, bool, QVariant*) const override { return -1; }
    QCPRange getKeyRange(bool& found, QCP::SignDomain) const override {
        found = !bars.empty();
        QCPRange r(0, 0);
        for (const auto& b : bars) {
            r.lower = std::min(r.lower, b.start);
            r.upper = std::max(r.upper, b.end);
        }
        return r;
    }
    QCPRange getValueRange(bool& found, QCP::SignDomain, const QCPRange&) const override {
        found = !bars.empty();
        QCPRange r(0, 0);
        for (const auto& b : bars) r.upper = std::max(r.upper, b.y + b.half);
        return r;
    }

protected:
    void draw(QCPPainter* painter) override {
        QCPAxis* key = mKeyAxis.data();
        QCPAxis* value = mValueAxis.data();
        if (bars.empty() || !key || !value) return;
        painter->setAntialiasing(false);
        const QCPRange keys = key->range();
        // Bars at least one pixel wide, so the shortest spans stay visible at any zoom.
        auto rectOf = [&](const Bar& b) {
            const double x0 = key->coordToPixel(b.start);
            const double x1 = key->coordToPixel(b.end);
            const double y0 = value->coordToPixel(b.y - b.half);
            const double y1 = value->coordToPixel(b.y + b.half);
            QRectF r(QPointF(std::min(x0, x1), std::min(y0, y1)),
                     QPointF(std::max(x0, x1), std::max(y0, y1)));
            if (r.width() < 1) r.setWidth(1);
            return r;
        };
        painter->setPen(mPen);
        painter->setBrush(mBrush);
        for (const auto& b : bars) {
            if (b.end < keys.lower || b.start > keys.upper) continue;
            painter->drawRect(rectOf(b));
        }
        painter->setBrush(Qt::NoBrush);
        painter->setPen(highlightPen);
        for (const auto& b : bars) {
            if (!b.highlight || b.end < keys.lower || b.start > keys.upper) continue;
            painter->drawRect(rectOf(b).adjusted(-1, -1, 1, 1));
        }
    }
    void drawLegendIcon(QCPPainter* painter, const QRectF& rect) const override {
        painter->setPen(mPen);
        painter->setBrush(mBrush);
        painter->drawRect(rect.adjusted(1, 2, -1, -2));
    }
};

QColor TimelineView::kindColor(SpanKind kind) {
    // Tableau 10: distinct in light and dark themes.
    switch (kind) {
        case SpanKind::StreamIn:
            return QColor(78, 121, 167);
        case SpanKind::Forward:
            return QColor(89, 161, 79);
        case SpanKind::Backward:
            return QColor(242, 142, 43);
        case SpanKind::StreamOut:
            return QColor(176, 122, 161);
        case SpanKind::Reduce:
            return QColor(225, 87, 89);
        case SpanKind::Update:
            return QColor(118, 183, 178);
    }
    return Qt::gray;
}

QColor TimelineView::offloadColor() {
    return QColor(156, 117, 95);  // Tableau brown: apart from every span kind's colour
}

QString TimelineView::kindLabel(SpanKind kind) {
    switch (kind) {
        case SpanKind::StreamIn:
            return tr("stream-in (weights)");
        case SpanKind::Forward:
            return tr("forward");
        case SpanKind::Backward:
            return tr("backward");
        case SpanKind::StreamOut:
            return tr("stream-out (gradients)");
        case SpanKind::Reduce:
            return tr("SwarmX reduce");
        case SpanKind::Update:
            return tr("MemoryX update");
    }
    return {};
}

TimelineView::TimelineView(QWidget* parent) : QCustomPlot(parent) {
    setObjectName(QStringLiteral("timelineView"));
    // One system's five lanes at ~16 px each, the title, axis and legend: a single system is
    // never squeezed into the one-row-per-system layout.
    setMinimumHeight(220);
    setNoAntialiasingOnDrag(true);
    plotLayout()->insertRow(0);
    m_title = new QCPTextElement(this, QString(), QFont(font().family(), 10, QFont::Bold));
    plotLayout()->addElement(0, 0, m_title);
    m_planned = new GanttBars(xAxis, yAxis);
    m_planned->setName(tr("planned (not yet run)"));
    for (int k = 0; k < 6; ++k) {
        const auto kind = SpanKind(k);
        auto* bars = new GanttBars(xAxis, yAxis);
        bars->setName(kindLabel(kind));
        bars->setBrush(kindColor(kind));
        bars->setPen(QPen(kindColor(kind).darker(130), 0));
        m_kinds[size_t(k)] = bars;
    }
    m_planned->removeFromLegend();
    m_future = new QCPItemRect(this);
    m_future->topLeft->setTypeY(QCPItemPosition::ptAxisRectRatio);
    m_future->bottomRight->setTypeY(QCPItemPosition::ptAxisRectRatio);
    m_future->setPen(Qt::NoPen);
    m_future->setVisible(false);
    m_future->setClipToAxisRect(true);
    m_cursor = new QCPItemStraightLine(this);
    m_cursor->setVisible(false);
    m_adapters = new GanttBars(xAxis, yAxis);
    m_adapters->setName(tr("LoRA adapter ops"));
    m_adapters->setBrush(adapterColor());
    m_adapters->setPen(QPen(adapterColor().darker(140), 0));
    m_adapters->removeFromLegend();  // listed only while a LoRA run is shown
    m_offload = new GanttBars(xAxis, yAxis);
    m_offload->setName(tr("activation offload (MemoryX)"));
    m_offload->setBrush(offloadColor());
    m_offload->setPen(QPen(offloadColor().darker(140), 0));
    m_offload->removeFromLegend();  // listed only while a step that offloads is shown
    legend->setVisible(true);
    legend->setWrap(3);  // two rows: one row of six is wider than a laptop's window allows
    legend->setFillOrder(QCPLegend::foColumnsFirst, true);  // re-lays the entries out
    // The legend sits in its own row under the chart, never over the bars.
    axisRect()->insetLayout()->take(legend);
    plotLayout()->addElement(2, 0, legend);
    plotLayout()->setRowStretchFactor(2, 0.001);
    legend->setMargins(QMargins(4, 2, 4, 2));
    yAxis->setRangeReversed(true);
    yAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
    yAxis->grid()->setVisible(false);
    setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    axisRect()->setRangeDrag(Qt::Horizontal);
    axisRect()->setRangeZoom(Qt::Horizontal);
    applyTheme();
    setStep(nullptr, 1, 0, Clock::Emulated, -1);
}

void TimelineView::applyTheme() {
    const PlotColors c = applyPlotPalette(this);
    const QColor text = c.text, grid = c.grid;
    xAxis->grid()->setPen(QPen(grid, 1, Qt::SolidLine));
    xAxis->grid()->setZeroLinePen(Qt::NoPen);
    m_title->setTextColor(text);
    legend->setTextColor(text);
    legend->setBorderPen(Qt::NoPen);
    legend->setBrush(Qt::NoBrush);
    QColor ghost = text;
    ghost.setAlpha(70);
    QColor ghostFill = text;
    ghostFill.setAlpha(18);
    m_planned->setPen(QPen(ghost, 0, Qt::SolidLine));
    m_planned->setBrush(ghostFill);
    for (auto* bars : m_kinds) bars->highlightPen = QPen(text, 2);
    m_cursor->setPen(QPen(QColor(214, 39, 40), 2.5));  // red: apart from every span kind
    QColor shade = c.base;
    shade.setAlpha(150);
    m_future->setBrush(shade);
}

void TimelineView::changeEvent(QEvent* event) {
    QCustomPlot::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) {
        applyTheme();
        replot(rpQueuedReplot);
    }
}

bool TimelineView::setStep(const StepRecord* record, int numSystems, int numBlocks, Clock clock,
                           int highlightLayer) {
    // A live view calls this on every redraw; rebuild only when what it shows changed.
    const Shown shown{record ? record->step : -1,
                      record ? record->spans.size() : 0,
                      record ? record->prediction.get() : nullptr,
                      numSystems,
                      numBlocks,
                      clock,
                      highlightLayer,
                      height()};
    if (shown == m_shown) return false;
    m_shown = shown;
    numSystems = std::max(1, numSystems);
    m_numBlocks = numBlocks;
    if (clock != m_clock || !record || record->step != m_shownStep) m_userZoomed = false;
    m_clock = clock;
    m_shownStep = record ? record->step : -1;

    // A step that offloads activations to MemoryX gets a fourth lane per system for that traffic
    // (emulated clock: the CPU run does not offload).
    const wafer::StepPrediction* prediction =
        record && clock == Clock::Emulated ? record->prediction.get() : nullptr;
    const bool offloads = prediction && !prediction->activationSpans.empty();
    const int shownSystems = layOutLanes(numSystems, clock, offloads);

    // Time unit from the step's length on this clock.
    const double lengthS = stepLengthS(record, clock);
    m_unitScale = lengthS < 2e-3 ? 1e6 : lengthS < 2.0 ? 1e3 : 1.0;
    const QString unit = m_unitScale == 1e6 ? tr("µs") : m_unitScale == 1e3 ? tr("ms") : tr("s");

    for (auto* bars : m_kinds) bars->bars.clear();
    m_planned->bars.clear();
    m_adapters->bars.clear();
    m_offload->bars.clear();
    m_untimed = 0;
    if (record) {
        addRecordedBars(*record, prediction, numBlocks, highlightLayer);
        if (prediction) addPlannedBars(*prediction);
        // Activations to MemoryX and back: what has run drawn solid, the rest faint.
        if (offloads) addOffloadBars(*record, *prediction, highlightLayer);
    }
    m_extent = lengthS * m_unitScale;
    showOptionalLegendEntries(offloads);

    writeTitle(record, clock, shownSystems, numSystems);
    setReplayCursor(m_cursorS);  // the time unit may have changed
    xAxis->setLabel(clock == Clock::Emulated
                        ? tr("emulated time within the step (%1)").arg(unit)
                        : tr("real CPU wall time within the step (%1)").arg(unit));
    if (!m_userZoomed) fitTime();
    return true;
}

// Lanes.
// Three lanes per system while each gets ~16 px; otherwise one row per system; and only
// as many systems as get ~14 px rows (the rest are named in the title).
// The title, the axis and a legend of two rows take ~130 px; each further row its height.
int TimelineView::layOutLanes(int numSystems, Clock clock, bool offloads) {
    const int legendRowH = QFontMetrics(legend->font()).height() + 4;
    const double available =
        std::max(0, height() - 130 - std::max(0, m_legendRows - 2) * legendRowH);
    m_lanesPerSystem = offloads ? 4 : 3;
    const int per = m_lanesPerSystem;
    m_compact = available / (kFirstSystemLane + per * numSystems) < 16;
    if (m_compact) {
        numSystems = std::clamp(int(available / 14) - kFirstSystemLane, 1, numSystems);
    }
    m_laneNames.clear();
    m_laneNames << tr("MemoryX update");
    m_laneNames << (numSystems == 1 && clock == Clock::Emulated ? tr("SwarmX (1 system: no reduce)")
                                                                : tr("SwarmX reduce"));
    for (int s = 0; s < numSystems; ++s) {
        if (m_compact) {
            m_laneNames << (offloads ? tr("system %1 (in / compute / out / offload)").arg(s)
                                     : tr("system %1 (in / compute / out)").arg(s));
        } else {
            m_laneNames << tr("system %1 stream-in").arg(s) << tr("system %1 compute").arg(s)
                        << tr("system %1 stream-out").arg(s);
            if (offloads) m_laneNames << tr("system %1 activation offload").arg(s);
        }
    }
    auto ticker = yAxis->ticker().staticCast<QCPAxisTickerText>();
    ticker->clear();
    for (int i = 0; i < m_laneNames.size(); ++i) ticker->addTick(i, m_laneNames[i]);
    yAxis->setRange(-0.6, m_laneNames.size() - 0.4);
    m_barsPerLane.assign(size_t(m_laneNames.size()), 0);
    return numSystems;
}

double TimelineView::stepLengthS(const StepRecord* record, Clock clock) {
    double lengthS = 0;
    if (record) {
        if (clock == Clock::Emulated && record->prediction) lengthS = record->prediction->stepS;
        for (const auto& s : record->spans) {
            lengthS = std::max(lengthS, double(clock == Clock::Emulated ? s.emuEnd : s.realEnd));
        }
    }
    return lengthS;
}

// The step's recorded spans on the clock `prediction` says (null: the real one), each in its
// lane; on a LoRA run's emulated clock each block's compute bar carries its adapter ops.
void TimelineView::addRecordedBars(const StepRecord& record,
                                   const wafer::StepPrediction* prediction, int numBlocks,
                                   int highlightLayer) {
    const bool emulated = m_clock == Clock::Emulated;
    const int per = m_lanesPerSystem;
    // LoRA: each block phase's adapter ops, by (layer name, backward), from the prediction.
    std::map<std::pair<std::string, bool>, const wafer::LayerTiming*> adapterTimings;
    if (prediction && prediction->loraRank > 0) {
        for (const auto& l : prediction->layers)
            adapterTimings.emplace(std::pair{l.layer, l.pass == wafer::Pass::Backward}, &l);
    }
    for (const auto& s : record.spans) {
        const double a = emulated ? s.emuStart : s.realStart;
        const double b = emulated ? s.emuEnd : s.realEnd;
        if (emulated && !s.emulated()) {
            ++m_untimed;
            continue;
        }
        const Placement at = placementOf(s, m_compact, per);
        const int lane = at.lane;
        if (lane >= m_laneNames.size()) continue;  // a system beyond the lanes: not drawn
        GanttBars::Bar bar{a * m_unitScale, b * m_unitScale,           lane, at.y,
                           at.half,         s.layer == highlightLayer, s};
        m_kinds[size_t(s.kindCode) % 6]->bars.push_back(bar);
        ++m_barsPerLane[size_t(lane)];
        if (!adapterTimings.empty() && s.isCompute() && s.layer >= 1 && s.layer <= numBlocks) {
            const auto it = adapterTimings.find(
                {wafer::layerName(s.layer, numBlocks), s.kind() == SpanKind::Backward});
            if (it == adapterTimings.end()) continue;
            for (const auto& op : it->second->ops) {
                if (!op.adapter) continue;
                GanttBars::Bar sub = bar;
                sub.start = (a + op.startS) * m_unitScale;
                sub.end = (a + op.startS + op.timeS) * m_unitScale;
                sub.half = at.half * 0.55;
                sub.highlight = false;
                sub.op = QString::fromStdString(op.name);
                sub.opS = op.timeS;
                m_adapters->bars.push_back(sub);
            }
        }
    }
}

// The step's planned schedule, drawn faintly behind the recorded bars (emulated clock).
void TimelineView::addPlannedBars(const wafer::StepPrediction& prediction) {
    for (const auto& p : prediction.spans) {
        RecordedSpan s;
        s.emuStart = float(p.startS);
        s.emuEnd = float(p.endS);
        s.micro = int16_t(p.micro);
        s.layer = int16_t(p.layer);
        s.system = int16_t(p.system);
        s.kindCode = uint8_t(p.kind);
        s.backwardPass = p.backwardPass;
        s.setExpert(p.expert);
        const Placement at = placementOf(s, m_compact, m_lanesPerSystem);
        if (at.lane >= m_laneNames.size()) continue;
        m_planned->bars.push_back(
            {p.startS * m_unitScale, p.endS * m_unitScale, at.lane, at.y, at.half, false, s});
    }
}

// Activations to MemoryX and back: what has run (up to the latest recorded span) drawn solid,
// the rest of the plan faint with the other planned bars.
void TimelineView::addOffloadBars(const StepRecord& record, const wafer::StepPrediction& prediction,
                                  int highlightLayer) {
    double ranUntil = 0;
    for (const auto& s : record.spans)
        if (s.emulated()) ranUntil = std::max(ranUntil, double(s.emuEnd));
    for (const auto& a : prediction.activationSpans) {
        RecordedSpan s;
        s.emuStart = float(a.startS);
        s.emuEnd = float(a.endS);
        s.bytes = int64_t(a.bytes);
        s.micro = int16_t(a.micro);
        s.layer = int16_t(a.layer);
        s.system = int16_t(a.system);
        s.kindCode = uint8_t(a.toMemoryX ? SpanKind::StreamOut : SpanKind::StreamIn);
        s.backwardPass = !a.toMemoryX;
        const Placement at = placementOfLane(laneOfOffload(a.system), m_compact, m_lanesPerSystem);
        if (at.lane >= m_laneNames.size()) continue;
        GanttBars::Bar bar{a.startS * m_unitScale,
                           a.endS * m_unitScale,
                           at.lane,
                           at.y,
                           at.half,
                           false,
                           s,
                           a.toMemoryX ? tr("out") : tr("in"),
                           a.endS - a.startS};
        bar.highlight = s.layer == highlightLayer;
        if (a.endS <= ranUntil * (1 + 1e-6) || record.spans.empty()) {
            m_offload->bars.push_back(bar);
            ++m_barsPerLane[size_t(at.lane)];
        } else {
            m_planned->bars.push_back(bar);
        }
    }
}

// The activation-offload and LoRA-adapter entries are in the legend only for steps that have
// them.
void TimelineView::showOptionalLegendEntries(bool offloads) {
    const bool showOffload = !m_offload->bars.empty() || offloads;
    if (showOffload != legend->hasItemWithPlottable(m_offload)) {
        if (showOffload)
            m_offload->addToLegend();
        else
            m_offload->removeFromLegend();
        fitLegend(true);
    }
    const bool showAdapters = !m_adapters->bars.empty();
    if (showAdapters != legend->hasItemWithPlottable(m_adapters)) {
        if (showAdapters)
            m_adapters->addToLegend();
        else
            m_adapters->removeFromLegend();
        fitLegend(true);
    }
}

void TimelineView::writeTitle(const StepRecord* record, Clock clock, int shownSystems,
                              int totalSystems) {
    if (!record) {
        m_title->setText(tr("Timeline: no step recorded yet"));
    } else if (clock == Clock::Emulated) {
        m_title->setText(
            record->prediction
                ? tr("Step %1 on the emulated %2 (%3 spans run, planned schedule faint behind)")
                      .arg(record->step + 1)
                      .arg(QString::fromStdString(record->prediction->waferName))
                      .arg(record->spans.size() - size_t(m_untimed))
                : tr("Step %1: no emulated time (the emulator is off)").arg(record->step + 1));
    } else {
        m_title->setText(tr("Step %1 on this computer's CPU (real wall time, %2 spans)")
                             .arg(record->step + 1)
                             .arg(record->spans.size()));
    }
    if (shownSystems < totalSystems) {
        m_title->setText(m_title->text() +
                         tr(" · systems 0-%1 of %2 shown (a taller timeline shows more)")
                             .arg(shownSystems - 1)
                             .arg(totalSystems));
    }
    m_stepTitle = m_title->text();
    fitTitle();
}

void TimelineView::resizeEvent(QResizeEvent* event) {
    fitLegend(false);
    QCustomPlot::resizeEvent(event);
    fitTitle();
}

// As many legend entries per row as the width holds (issue 31: three per row were cut at the
// right on a laptop with the Lessons dock open; one row of six is wider than most windows).
void TimelineView::fitLegend(bool force) {
    const int items = legend->itemCount();
    if (items == 0) return;
    int widest = 0;
    for (int i = 0; i < items; ++i)
        if (QCPAbstractLegendItem* item = legend->item(i))
            widest = std::max(widest, item->minimumOuterSizeHint().width());
    const int available = width() - 24;
    const int perRow =
        std::clamp(available / std::max(1, widest + legend->columnSpacing()), 1, items);
    if (!force && perRow == legend->wrap()) return;
    legend->setWrap(perRow);
    legend->setFillOrder(QCPLegend::foColumnsFirst, true);  // re-lays the entries out
    m_legendRows = (items + perRow - 1) / perRow;
}

// The title, without its parenthesis when the whole does not fit the width (presenter mode's
// large type in a 1400-px window cut it at both ends).
void TimelineView::fitTitle() {
    QString title = m_titleOverride.isEmpty() ? m_stepTitle : m_titleOverride;
    const QFontMetrics fm(m_title->font());
    const qsizetype paren = title.indexOf(QStringLiteral(" ("));
    if (fm.horizontalAdvance(title) > width() - 16 && paren > 0) {
        const qsizetype close = title.indexOf(')', paren);
        title = title.left(paren) + (close > 0 ? title.mid(close + 1) : QString());
    }
    if (title != m_title->text()) m_title->setText(title);
}

void TimelineView::setReplayCursor(double timeS) {
    m_cursorS = timeS;
    const bool shown = timeS >= 0;
    m_cursor->setVisible(shown);
    m_future->setVisible(shown);
    if (!shown) return;
    const double x = timeS * m_unitScale;
    m_cursor->point1->setCoords(x, 0);
    m_cursor->point2->setCoords(x, 1);
    m_future->topLeft->setCoords(x, 0);
    m_future->bottomRight->setCoords(std::max(x, m_extent * 1.02), 1);
}

void TimelineView::setTitleOverride(const QString& title) {
    m_titleOverride = title;
    fitTitle();
}

QString TimelineView::titleText() const {
    return m_title->text();
}

void TimelineView::fitTime() {
    const double extent = m_extent > 0 ? m_extent : 1.0;
    xAxis->setRange(-0.01 * extent, 1.01 * extent);
}

int TimelineView::barCount(int lane) const {
    return lane >= 0 && lane < int(m_barsPerLane.size()) ? m_barsPerLane[size_t(lane)] : 0;
}

int TimelineView::plannedCount() const {
    return int(m_planned->bars.size());
}

int TimelineView::offloadBarCount() const {
    return int(m_offload->bars.size());
}

int TimelineView::adapterBarCount() const {
    return int(m_adapters->bars.size());
}

QColor TimelineView::adapterColor() {
    return QColor(214, 39, 160);  // magenta: apart from every span kind's colour
}

QString TimelineView::describeAt(const QPointF& pos) const {
    const double key = xAxis->pixelToCoord(pos.x());
    const double value = yAxis->pixelToCoord(pos.y());

    const double slack = std::abs(xAxis->pixelToCoord(pos.x() + 2) - key);  // 2 px
    const GanttBars::Bar* hit = nullptr;
    bool planned = false;
    for (const auto& b : m_adapters->bars) {  // drawn on top of the compute bars
        if (std::abs(value - b.y) <= b.half && b.start - slack <= key && key <= b.end + slack) {
            const RecordedSpan& s = b.span;
            return tr("%1 · LoRA adapter op %2 (%3)\nemulated: %4 from %5\nsystem %6, micro-batch "
                      "%7")
                .arg(QString::fromStdString(wafer::layerName(s.layer, m_numBlocks)), b.op,
                     s.kind() == SpanKind::Backward ? tr("backward") : tr("forward"),
                     spanTimeText(b.opS), spanTimeText(b.start / m_unitScale))
                .arg(s.system)
                .arg(s.micro);
        }
    }
    for (const auto& b : m_offload->bars) {
        if (std::abs(value - b.y) <= b.half && b.start - slack <= key && key <= b.end + slack) {
            const RecordedSpan& s = b.span;
            const bool out = s.kind() == SpanKind::StreamOut;
            return tr("%1 · activation offload %2\nemulated: %3 from %4\nsystem %5, micro-batch "
                      "%6\nmoved: %7 over the MemoryX link")
                .arg(QString::fromStdString(wafer::layerName(s.layer, m_numBlocks)),
                     out ? tr("out to MemoryX after its forward")
                         : tr("back in from MemoryX before its backward"),
                     spanTimeText(b.opS), spanTimeText(b.start / m_unitScale))
                .arg(s.system)
                .arg(s.micro)
                .arg(QString::fromStdString(formatBytes(double(s.bytes))));
        }
    }
    for (const auto* bars : m_kinds) {
        for (const auto& b : bars->bars) {
            if (std::abs(value - b.y) <= b.half && b.start - slack <= key && key <= b.end + slack)
                hit = &b;
        }
    }
    if (!hit) {
        for (const auto& b : m_planned->bars) {
            if (std::abs(value - b.y) <= b.half && b.start <= key && key <= b.end) {
                hit = &b;
                planned = true;
            }
        }
    }
    if (!hit) return {};
    const RecordedSpan& s = hit->span;
    QString what = QString::fromStdString(spanUnitName(s, m_numBlocks)) + QStringLiteral(" · ") +
                   kindLabel(s.kind());
    if (s.kind() == SpanKind::StreamIn)
        what += s.backwardPass ? tr(" for backward") : tr(" for forward");
    QStringList lines{what};
    lines << (s.system >= 0 ? tr("system %1, micro-batch %2").arg(s.system).arg(s.micro)
                            : tr("SwarmX / MemoryX, micro-batch %1").arg(s.micro));
    if (planned) {
        lines << tr("planned: emulated %1, starting at %2")
                     .arg(spanTimeText(double(s.emuEnd - s.emuStart)),
                          spanTimeText(double(s.emuStart)))
              << tr("(not run yet in this step)");
    } else {
        lines << tr("emulated: %1")
                     .arg(s.emulated() ? spanTimeText(double(s.emuEnd - s.emuStart)) +
                                             tr(" from %1").arg(spanTimeText(double(s.emuStart)))
                                       : tr("not on the emulated machine"));
        lines << tr("real CPU: %1").arg(spanTimeText(double(s.realEnd - s.realStart)));
        if (s.bytes > 0)
            lines << tr("moved: %1").arg(QString::fromStdString(formatBytes(double(s.bytes))));
    }
    return lines.join('\n');
}

void TimelineView::mouseMoveEvent(QMouseEvent* event) {
    QCustomPlot::mouseMoveEvent(event);
    const QString text = describeAt(event->position());
    if (text.isEmpty())
        QToolTip::hideText();
    else
        QToolTip::showText(event->globalPosition().toPoint(), text, this);
}

void TimelineView::mousePressEvent(QMouseEvent* event) {
    m_userZoomed = true;
    QCustomPlot::mousePressEvent(event);
}

void TimelineView::wheelEvent(QWheelEvent* event) {
    m_userZoomed = true;
    QCustomPlot::wheelEvent(event);
}

void TimelineView::mouseDoubleClickEvent(QMouseEvent* event) {
    QCustomPlot::mouseDoubleClickEvent(event);
    m_userZoomed = false;
    fitTime();
    replot(rpQueuedReplot);
}

}  // namespace ws::ui
