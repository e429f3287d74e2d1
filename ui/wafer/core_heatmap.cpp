// SPDX-License-Identifier: GPL-3.0-or-later
// CoreHeatmap: see core_heatmap.h.
#include "ui/wafer/core_heatmap.h"

#include <QElapsedTimer>
#include <QResizeEvent>
#include <QToolTip>
#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/core/units.h"
#include "ui/common/text_fit.h"

namespace ws::ui {

QCPColorGradient busyGradient() {
    QCPColorGradient g;
    g.clearColorStops();
    // matplotlib's viridis at nine stops.
    const QColor stops[] = {QColor(68, 1, 84),    QColor(71, 44, 122),  QColor(59, 81, 139),
                            QColor(44, 113, 142), QColor(33, 144, 141), QColor(39, 173, 129),
                            QColor(92, 200, 99),  QColor(170, 220, 50), QColor(253, 231, 37)};
    for (int i = 0; i < 9; ++i) g.setColorStopAt(i / 8.0, stops[i]);
    g.setLevelCount(256);
    return g;
}

namespace {

// What a frame's percentages are of, for the colour scale.
QString scaleLabel(const wafer::UtilizationFrame* frame, bool fitted) {
    using W = wafer::UtilizationFrame::Window;
    const W window = frame ? frame->window : W::Step;
    const QString of = window == W::Compute    ? CoreHeatmap::tr("% of the layer's compute")
                       : window == W::Adapters ? CoreHeatmap::tr("% of the adapters' time")
                                               : CoreHeatmap::tr("% of the step's time");
    return fitted ? CoreHeatmap::tr("busy (%1, colours fitted)").arg(of)
                  : CoreHeatmap::tr("busy (%1)").arg(of);
}

// Ticks on whole cores, only over the grid: with square cores the axis with room to spare
// shows more than the grid, and no core lives at -20 or 40 of a 16-wide wafer.
class GridTicker : public QCPAxisTickerFixed {
public:
    double last = 15;  // the grid's last core on this axis

protected:
    QVector<double> createTickVector(double tickStep, const QCPRange& range) override {
        QVector<double> ticks = QCPAxisTickerFixed::createTickVector(tickStep, range);
        ticks.erase(std::remove_if(ticks.begin(), ticks.end(),
                                   [this](double t) { return t < -1e-9 || t > last + 1e-9; }),
                    ticks.end());
        return ticks;
    }
};

}  // namespace

CoreHeatmap::CoreHeatmap(QWidget* parent) : QCustomPlot(parent) {
    setObjectName(QStringLiteral("utilizationMap"));
    // Its minimum grows with its titles (minimumSizeHint): they wrap to the width.
    setNoAntialiasingOnDrag(true);
    plotLayout()->insertRow(0);
    m_title = new QCPTextElement(this, QString(), QFont(font().family(), 10, QFont::Bold));
    plotLayout()->addElement(0, 0, m_title);
    plotLayout()->insertRow(1);
    m_stats = new QCPTextElement(this, QString(), QFont(font().family(), 9));
    plotLayout()->addElement(1, 0, m_stats);

    xAxis->setLabel(tr("core column"));
    yAxis->setLabel(tr("core row"));
    yAxis->setRangeReversed(true);  // row 0 at the top, as the wafer is drawn
    for (QCPAxis* axis : {xAxis, yAxis}) {
        auto ticker = QSharedPointer<GridTicker>::create();
        ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);  // whole cores only
        axis->setTicker(ticker);
    }

    m_map = new QCPColorMap(xAxis, yAxis);
    m_map->setInterpolate(false);
    m_map->setTightBoundary(false);
    m_scale = new QCPColorScale(this);
    plotLayout()->addElement(2, 1, m_scale);
    m_scale->setType(QCPAxis::atRight);
    m_scale->axis()->setLabel(scaleLabel(nullptr, false));
    m_scale->setDataRange(QCPRange(0, 100));
    m_scale->setGradient(busyGradient());
    m_map->setColorScale(m_scale);
    m_map->setGradient(busyGradient());
    m_map->setDataRange(QCPRange(0, 100));
    m_colourNote = new QCPTextElement(this, QString(), QFont(font().family(), 10, QFont::Bold));
    plotLayout()->addElement(3, 0, m_colourNote);
    m_colourNote->setVisible(false);
    // The scale's height follows the plot's axis rect.
    auto* group = new QCPMarginGroup(this);
    axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    m_scale->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    applyTheme();
    // Cores stay square: the axis with room to spare shows more than the grid (a 16 x 16
    // wafer was drawn 490 x 75 px on a laptop and squashed in presenter mode).
    connect(this, &QCustomPlot::afterLayout, this, &CoreHeatmap::keepCoresSquare);
    showNothing(tr("No utilization frame yet"));
}

void CoreHeatmap::setTitles(const QString& title, const QString& stats, const QString& note) {
    if (title == m_fullTitle && stats == m_fullStats && note == m_fullNote) return;
    m_stale = true;
    m_fullTitle = title;
    m_fullStats = stats;
    m_fullNote = note;
    fitTitles();
}

void CoreHeatmap::fitTitles() {
    // The titles sit over the heatmap's column only (the colour scale has the other): wrapped to
    // its width, never cut at both ends as a centred line wider than the column was.
    const int scaleW = std::max(70, m_scale->outerRect().width());
    const int width = std::max(80, this->width() - scaleW - 12);
    const QString title = wrapText(m_fullTitle, QFontMetrics(m_title->font()), width);
    const QString stats = wrapText(m_fullStats, QFontMetrics(m_stats->font()), width);
    const QString note = wrapText(m_fullNote, QFontMetrics(m_colourNote->font()), width);
    if (title != m_title->text() || stats != m_stats->text() || note != m_colourNote->text())
        m_stale = true;
    m_title->setText(title);
    m_stats->setText(stats);
    m_colourNote->setText(note);
    m_colourNote->setVisible(!note.isEmpty());
    const int textHeight = titlesHeight();
    if (textHeight != m_titlesHeight) {
        m_titlesHeight = textHeight;
        updateGeometry();  // the page gives the map room for its grid under the titles
    }
}

int CoreHeatmap::titlesHeight() const {
    auto height = [](const QCPTextElement* e) {
        if (!e->visible() || e->text().isEmpty()) return 0;
        return int(e->text().count('\n') + 1) * QFontMetrics(e->font()).lineSpacing() + 4;
    };
    return height(m_title) + height(m_stats) + height(m_colourNote);
}

QSize CoreHeatmap::minimumSizeHint() const {
    // The titles as wrapped now, and ~150 px under them for the grid, its axes and ticks (the
    // map drawn a few pixels high under presenter mode's large type told nothing).
    return {260, std::max(260, titlesHeight() + 150)};
}

void CoreHeatmap::resizeEvent(QResizeEvent* event) {
    fitTitles();
    QCustomPlot::resizeEvent(event);
}

void CoreHeatmap::keepCoresSquare() {
    const QRect r = axisRect()->rect();
    if (r.width() <= 0 || r.height() <= 0 || m_gridCols <= 0 || m_gridRows <= 0) return;
    const double perCol = r.width() / double(m_gridCols), perRow = r.height() / double(m_gridRows);
    const double px = std::min(perCol, perRow);  // pixels per core on both axes
    const double cols = r.width() / px, rows = r.height() / px;
    for (auto [axis, cells] : {std::pair{xAxis, m_gridCols}, {yAxis, m_gridRows}})
        if (auto grid = axis->ticker().dynamicCast<GridTicker>()) grid->last = cells - 1;
    const double cx = (m_gridCols - 1) / 2.0, cy = (m_gridRows - 1) / 2.0;
    xAxis->setRange(cx - cols / 2, cx + cols / 2);
    yAxis->setRange(cy - rows / 2, cy + rows / 2);
}

QStringList CoreHeatmap::shownTitleLines() const {
    QStringList lines = m_title->text().split('\n') + m_stats->text().split('\n');
    if (m_colourNote->visible()) lines += m_colourNote->text().split('\n');
    return lines;
}

void CoreHeatmap::applyTheme() {
    const QPalette pal = palette();
    const QColor text = pal.color(QPalette::Text);
    QColor grid = text;
    grid.setAlpha(60);
    setBackground(pal.color(QPalette::Window));
    axisRect()->setBackground(pal.color(QPalette::Base));
    for (QCPAxis* axis : {xAxis, yAxis, xAxis2, yAxis2, m_scale->axis()}) {
        axis->setBasePen(QPen(grid));
        axis->setTickPen(QPen(grid));
        axis->setSubTickPen(QPen(grid));
        axis->setTickLabelColor(text);
        axis->setLabelColor(text);
        axis->grid()->setVisible(false);
    }
    m_title->setTextColor(text);
    m_stats->setTextColor(text);
    // Orange in a light theme, amber in a dark one: it must not pass for a title.
    m_colourNote->setTextColor(text.lightness() > 128 ? QColor(255, 190, 60) : QColor(190, 90, 0));
}

void CoreHeatmap::changeEvent(QEvent* event) {
    QCustomPlot::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) {
        applyTheme();
        const CoreRegions regions = m_regions;
        m_regions = {};
        setRegions(regions);  // their colours follow the palette
        replot(rpQueuedReplot);
    }
}

void CoreHeatmap::showNothing(const QString& emptyTitle) {
    if (!m_frame && m_fullTitle == emptyTitle && m_fullStats.isEmpty()) return;
    m_stale = true;
    m_owner.reset();
    m_frame = nullptr;
    m_map->data()->clear();
    m_map->setVisible(false);
    setTitles(emptyTitle, {}, {});
    m_gridCols = m_gridRows = 16;
    xAxis->setRange(-0.5, 15.5);
    yAxis->setRange(-0.5, 15.5);
}

void CoreHeatmap::showFrame(std::shared_ptr<const wafer::StepPrediction> owner,
                            const wafer::UtilizationFrame* frame, const QString& phase,
                            const QString& note) {
    if (!frame || !owner) {
        showNothing(note.isEmpty() ? tr("No utilization frame for this phase") : note);
        return;
    }
    const QString title = tr("%1 on %2 (%3 x %4 cores)")
                              .arg(!phase.isEmpty()         ? phase
                                   : frame->label == "step" ? tr("whole step")
                                                            : QString::fromStdString(frame->label),
                                   QString::fromStdString(owner->waferName))
                              .arg(frame->gridRows)
                              .arg(frame->gridCols);
    QString stats = (note.isEmpty() ? QString() : note + QStringLiteral("  ·  ")) +
                    tr("busy: mean %1 %, min %2 %, max %3 %")
                        .arg(100.0 * frame->mean, 0, 'f', 1)
                        .arg(100.0 * frame->min, 0, 'f', 1)
                        .arg(100.0 * frame->max, 0, 'f', 1);
    // Exactly what the percentages are of, on lines of their own (the map is narrow).
    using W = wafer::UtilizationFrame::Window;
    if (frame->windowS > 0 && frame->window == W::Compute) {
        stats += '\n' + tr("% of the layer's %1 of compute")
                            .arg(QString::fromStdString(formatSeconds(frame->windowS)));
        if (m_phaseS > frame->windowS * (1 + 1e-6))
            stats += '\n' + tr("(its phase took %1 in all: the rest was waiting for weights)")
                                .arg(QString::fromStdString(formatSeconds(m_phaseS)));
    } else if (frame->windowS > 0 && frame->window == W::Step) {
        stats += '\n' + tr("% of the whole %1 step, waits included")
                            .arg(QString::fromStdString(formatSeconds(frame->windowS)));
    }  // the adapters' window: the caller's note says it
    if (!m_regions.caption.isEmpty()) stats += '\n' + m_regions.caption;
    if (frame->rows != frame->gridRows || frame->cols != frame->gridCols) {
        stats += '\n' + tr("shown as %1 x %2 cells, each the mean of the cores it covers")
                            .arg(frame->rows)
                            .arg(frame->cols);
    }
    applyColourRange(frame);
    setTitles(title, stats, m_fullNote);
    if (frame == m_frame) return;  // same immutable frame: the cells are already set
    m_stale = true;

    QElapsedTimer timer;
    timer.start();
    m_owner = std::move(owner);
    m_frame = frame;
    const int rows = frame->rows, cols = frame->cols;
    // Display cell centres in core coordinates (cells cover several cores on big grids).
    const double sx = double(frame->gridCols) / cols, sy = double(frame->gridRows) / rows;
    auto* data = m_map->data();
    data->setSize(cols, rows);
    data->setRange(QCPRange(0.5 * sx - 0.5, (cols - 0.5) * sx - 0.5),
                   QCPRange(0.5 * sy - 0.5, (rows - 0.5) * sy - 0.5));
    const float* busy = frame->busy.data();
    for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < cols; ++c) data->setCell(c, r, 100.0 * double(busy[r * cols + c]));
    }
    m_map->setVisible(true);
    m_gridCols = frame->gridCols;
    m_gridRows = frame->gridRows;
    xAxis->setRange(-0.5, frame->gridCols - 0.5);
    yAxis->setRange(-0.5, frame->gridRows - 0.5);
    // Ticks on whole cores: 1, 2, 5 x 10^k, about six along each axis.
    for (auto [axis, extent] : {std::pair{xAxis, frame->gridCols}, {yAxis, frame->gridRows}}) {
        if (auto fixed = axis->ticker().dynamicCast<QCPAxisTickerFixed>()) {
            const double raw = std::max(1.0, extent / 6.0);
            const double decade = std::pow(10.0, std::floor(std::log10(raw)));
            const double step = raw / decade < 2   ? decade
                                : raw / decade < 5 ? 2 * decade
                                                   : 5 * decade;
            fixed->setTickStep(step);
        }
    }
    m_setDataMs = double(timer.nsecsElapsed()) / 1e6;
}

void CoreHeatmap::setFitColours(bool fit) {
    if (fit != m_fitColours) m_stale = true;
    m_fitColours = fit;
    applyColourRange(m_frame);
}

void CoreHeatmap::applyColourRange(const wafer::UtilizationFrame* frame) {
    // 0-100 % compares phases; fitted to the frame's own min-max it shows small imbalances.
    QCPRange range(0, 100);
    if (m_fitColours && frame && frame->max > frame->min)
        range = QCPRange(100.0 * frame->min, 100.0 * frame->max);
    m_scale->setDataRange(range);
    m_scale->axis()->setLabel(scaleLabel(frame, m_fitColours));
    QString note;
    if (m_fitColours && frame && frame->max > frame->min) {
        // Enough decimals that the two ends differ: 0.658–0.659, 12.3–87.6.
        const double lo = 100.0 * frame->min, hi = 100.0 * frame->max, spread = hi - lo;
        const int decimals = std::clamp(1 - int(std::floor(std::log10(spread))), 1, 6);
        note = tr("Colours stretched to %1–%2 % busy")
                   .arg(lo, 0, 'f', decimals)
                   .arg(hi, 0, 'f', decimals);
        if (spread < 5)
            note += tr("\n(a spread of %1 points: the stripes are tiny differences)")
                        .arg(spread, 0, 'g', 2);
    }
    setTitles(m_fullTitle, m_fullStats, note);
}

void CoreHeatmap::setRegions(const CoreRegions& regions) {
    const bool same =
        regions.caption == m_regions.caption &&
        regions.regions.size() == m_regions.regions.size() &&
        std::equal(regions.regions.begin(), regions.regions.end(), m_regions.regions.begin(),
                   [](const auto& a, const auto& b) {
                       return a.label == b.label && a.col0 == b.col0 && a.col1 == b.col1;
                   });
    if (same) return;
    m_stale = true;
    m_regions = regions;
    for (QCPAbstractItem* item : m_regionItems) removeItem(item);
    m_regionItems.clear();
    const QColor text = palette().color(QPalette::Text);
    QColor window = palette().color(QPalette::Window);
    window.setAlpha(190);
    QFont labelFont = font();
    labelFont.setBold(true);
    for (const CoreRegion& r : m_regions.regions) {
        auto* rect = new QCPItemRect(this);
        rect->topLeft->setCoords(r.col0, r.row0);
        rect->bottomRight->setCoords(r.col1, r.row1);
        rect->setPen(QPen(text, 2, Qt::DashLine));
        rect->setBrush(Qt::NoBrush);
        auto* label = new QCPItemText(this);
        label->position->setCoords(r.col0, r.row0);
        label->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
        label->setPadding(QMargins(4, 2, 4, 2));
        label->setText(r.label);
        label->setFont(labelFont);
        label->setColor(text);
        label->setBrush(window);
        m_regionItems.push_back(rect);
        m_regionItems.push_back(label);
    }
}

void CoreHeatmap::setPhaseSeconds(double seconds) {
    m_phaseS = seconds;
}

QString CoreHeatmap::colourNote() const {
    return m_fullNote;
}

QString CoreHeatmap::titleText() const {
    return m_fullTitle + '\n' + m_fullStats;
}

double CoreHeatmap::cellValue(int row, int col) const {
    if (!m_frame || row < 0 || col < 0 || row >= m_frame->rows || col >= m_frame->cols)
        return std::numeric_limits<double>::quiet_NaN();
    return m_map->data()->cell(col, row) / 100.0;
}

void CoreHeatmap::replotTimed() {
    if (!m_stale) return;  // nothing changed since the last replot: the buffer is current
    m_stale = false;
    QElapsedTimer timer;
    timer.start();
    replot(rpQueuedRefresh);  // draws into the buffer now; the widget repaints from it
    m_lastFrameMs = m_setDataMs + double(timer.nsecsElapsed()) / 1e6;
    m_setDataMs = 0;
}

void CoreHeatmap::mouseMoveEvent(QMouseEvent* event) {
    QCustomPlot::mouseMoveEvent(event);
    if (!m_frame) return;
    const double col = xAxis->pixelToCoord(event->position().x());
    const double row = yAxis->pixelToCoord(event->position().y());
    const int c = int(std::floor((col + 0.5) * m_frame->cols / m_frame->gridCols));
    const int r = int(std::floor((row + 0.5) * m_frame->rows / m_frame->gridRows));
    if (r < 0 || c < 0 || r >= m_frame->rows || c >= m_frame->cols) {
        QToolTip::hideText();
        return;
    }
    const bool cells = m_frame->rows != m_frame->gridRows || m_frame->cols != m_frame->gridCols;
    const QString where = cells ? tr("cell %1, %2 (mean of its cores)").arg(r).arg(c)
                                : tr("core row %1, column %2").arg(r).arg(c);
    QToolTip::showText(event->globalPosition().toPoint(),
                       tr("%1\nbusy %2 % of %3")
                           .arg(where)
                           .arg(100.0 * m_frame->busy[size_t(r * m_frame->cols + c)], 0, 'f', 1)
                           .arg(QString::fromStdString(m_frame->label)),
                       this);
}

}  // namespace ws::ui
