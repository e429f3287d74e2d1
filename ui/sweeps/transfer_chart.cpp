// SPDX-License-Identifier: GPL-3.0-or-later
// TransferChart: see transfer_chart.h.
#include "ui/sweeps/transfer_chart.h"

#include <qcustomplot.h>
#include <QFontMetrics>
#include <QHBoxLayout>
#include <QResizeEvent>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include "ui/common/plot_theme.h"

namespace ws::ui {
namespace {

const QString kCurvePrefix = QStringLiteral("width ");
const QString kDivergedName = QStringLiteral("diverged-marker");  // graphs kept out of the legend

QString driftText(const sweep::ParametrizationTransfer& t) {
    QString drift = std::isnan(t.driftSteps)
                        ? QObject::tr("drift —")
                        : QObject::tr("drift %1 grid step%2")
                              .arg(t.driftSteps, 0, 'g', 3)
                              .arg(t.driftSteps == 1.0 ? QString() : QStringLiteral("s"));
    QString regret = std::isnan(t.regret) ? QObject::tr("regret —")
                     : std::isinf(t.regret)
                         ? QObject::tr("regret ∞ (diverged)")
                         : QObject::tr("regret %1 nats").arg(t.regret, 0, 'f', 3);
    QString text = drift + QStringLiteral("   ") + regret;
    QStringList best;
    for (const auto& w : t.widths) {
        if (std::isnan(w.bestLog2Lr)) continue;
        best << QStringLiteral("%1: %2").arg(w.width).arg(w.bestLog2Lr);
    }
    if (!best.isEmpty()) text += QObject::tr("\nbest log2 lr  ") + best.join(QStringLiteral("  "));
    if (!t.note.empty()) text += '\n' + QString::fromStdString(t.note);
    return text;
}

}  // namespace

QString parametrizationTitle(const std::string& name) {
    if (name == "mup") return QStringLiteral("μP");
    if (name == "sp") return QStringLiteral("SP");
    if (name.empty()) return QObject::tr("as configured");
    return QString::fromStdString(name);
}

QColor widthColor(int rank) {
    static const QColor colors[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e),
                                    QColor(0x2c, 0xa0, 0x2c), QColor(0xd6, 0x27, 0x28),
                                    QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b),
                                    QColor(0xe3, 0x77, 0xc2), QColor(0x17, 0xbe, 0xcf)};
    return colors[size_t(std::max(rank, 0)) % std::size(colors)];
}

QString wrapToWidth(const QString& text, const QFontMetrics& metrics, int width) {
    QStringList out;
    for (QString line : text.split('\n')) {
        while (metrics.horizontalAdvance(line) > width) {
            int cut = -1;  // the last space with what is before it fitting
            for (int i = int(line.size()) - 1; i > 0 && cut < 0; --i) {
                if (line[i] == ' ' && metrics.horizontalAdvance(line.left(i).trimmed()) <= width)
                    cut = i;
            }
            if (cut < 0) break;
            out << line.left(cut).trimmed();
            line = line.mid(cut).trimmed();
        }
        out << line;
    }
    return out.join('\n');
}

void applySweepPlotTheme(QCustomPlot* plot) {
    const PlotColors c = applyPlotPalette(plot);
    const QColor text = c.text, base = c.base, grid = c.grid;
    plot->legend->setTextColor(text);
    plot->legend->setBorderPen(QPen(grid));
    QColor legendBack = base;
    legendBack.setAlpha(220);
    plot->legend->setBrush(legendBack);
}

TransferChart::TransferChart(QWidget* parent) : QWidget(parent) {
    m_layout = new QHBoxLayout(this);
    m_layout->setContentsMargins(0, 0, 0, 0);
    m_layout->setSpacing(4);
}

void TransferChart::setParametrizations(const std::vector<std::string>& names) {
    const std::vector<std::string> wanted = names.empty() ? std::vector<std::string>{""} : names;
    if (wanted == m_names) {
        setResults({}, {});
        return;
    }
    for (QCustomPlot* p : m_panels) delete p;
    m_panels.clear();
    m_notes.clear();
    m_noteTexts.clear();
    m_names = wanted;
    for (const auto& name : m_names) {
        auto* plot = new QCustomPlot(this);
        plot->setObjectName(QStringLiteral("transfer_") + QString::fromStdString(name));
        plot->setMinimumSize(260, 220);
        plot->setNoAntialiasingOnDrag(true);
        plot->plotLayout()->insertRow(0);
        auto* title =
            new QCPTextElement(plot, parametrizationTitle(name),
                               QFont(font().family(), font().pointSize() + 2, QFont::Bold));
        title->setObjectName(QStringLiteral("title"));
        plot->plotLayout()->addElement(0, 0, title);
        // Drift and regret under the title, outside the axes, so they never hide a point.
        plot->plotLayout()->insertRow(1);
        auto* note =
            new QCPTextElement(plot, QString(), QFont(font().family(), font().pointSize()));
        note->setTextFlags(Qt::AlignCenter);
        plot->plotLayout()->addElement(1, 0, note);
        m_notes.push_back(note);
        m_noteTexts.emplace_back();
        plot->xAxis->setLabel(tr("log2(learning rate)"));
        plot->yAxis->setLabel(tr("final loss (seed mean, min–max)"));
        auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
        ticker->setTickStep(1.0);
        ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
        plot->xAxis->setTicker(ticker);
        // The legend in a row of its own above the axes: inside, it hides points somewhere on
        // every μTransfer curve (low rates top left, optima bottom, divergence top right).
        plot->legend->setVisible(true);
        plot->axisRect()->insetLayout()->take(plot->legend);
        plot->plotLayout()->insertRow(2);
        plot->plotLayout()->addElement(2, 0, plot->legend);
        plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
        plot->legend->setWrap(4);
        plot->plotLayout()->setRowStretchFactor(2, 0.001);
        plot->plotLayout()->setRowStretchFactor(1, 0.001);
        plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
        applySweepPlotTheme(plot);
        plot->legend->setBorderPen(Qt::NoPen);
        plot->legend->setBrush(Qt::NoBrush);
        title->setTextColor(plot->palette().color(QPalette::Text));
        note->setTextColor(plot->palette().color(QPalette::Text));
        m_layout->addWidget(plot, 1);
        m_panels.push_back(plot);
    }
    setResults({}, {});
}

void TransferChart::setResults(const std::vector<SweepPanelData>& panels,
                               const std::vector<sweep::ParametrizationTransfer>& transfer) {
    // Colour by width rank over all panels, so 64 is the same colour in SP and μP.
    std::vector<double> widths;
    for (const auto& p : panels)
        for (const auto& c : p.curves) widths.push_back(c.width);
    std::sort(widths.begin(), widths.end());
    widths.erase(std::unique(widths.begin(), widths.end()), widths.end());
    auto rankOf = [&](double w) {
        return int(std::lower_bound(widths.begin(), widths.end(), w) - widths.begin());
    };

    for (size_t i = 0; i < m_panels.size(); ++i) {
        QCustomPlot* plot = m_panels[i];
        plot->clearGraphs();
        plot->clearItems();
        const SweepPanelData* data = nullptr;
        for (const auto& p : panels)
            if (p.parametrization == m_names[i]) data = &p;
        const sweep::ParametrizationTransfer* analysis = nullptr;
        for (const auto& t : transfer)
            if (t.parametrization == m_names[i]) analysis = &t;

        const QColor text = plot->palette().color(QPalette::Text);
        double xLo = std::numeric_limits<double>::infinity(), xHi = -xLo;
        double yLo = xLo, yHi = -xLo;
        struct Diverged {
            double x;
            QColor color;
        };
        std::vector<Diverged> diverged;
        if (data) {
            for (const auto& curve : data->curves) {
                const QColor color = widthColor(rankOf(curve.width));
                QVector<double> xs, mean, lo, hi;
                for (const auto& pt : curve.points) {
                    xLo = std::min(xLo, pt.log2Lr);
                    xHi = std::max(xHi, pt.log2Lr);
                    for (int d = 0; d < pt.diverged; ++d) diverged.push_back({pt.log2Lr, color});
                    if (pt.losses.empty()) continue;
                    xs << pt.log2Lr;
                    mean << pt.mean();
                    lo << pt.min();
                    hi << pt.max();
                    yLo = std::min(yLo, pt.min());
                    yHi = std::max(yHi, pt.max());
                }
                QCPGraph* upper = plot->addGraph();
                upper->setData(xs, hi, true);
                upper->setPen(Qt::NoPen);
                upper->removeFromLegend();
                QCPGraph* lower = plot->addGraph();
                lower->setData(xs, lo, true);
                lower->setPen(Qt::NoPen);
                QColor band = color;
                band.setAlpha(45);
                lower->setBrush(band);
                lower->setChannelFillGraph(upper);
                lower->removeFromLegend();
                QCPGraph* line = plot->addGraph();
                line->setName(kCurvePrefix + QString::number(curve.width));
                line->setData(xs, mean, true);
                line->setPen(QPen(color, 2));
                line->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, color, color, 6));
            }
        }
        if (analysis) {
            for (const auto& w : analysis->widths) {
                if (!std::isfinite(w.bestLog2Lr) || !std::isfinite(w.bestLoss)) continue;
                const QColor color = widthColor(rankOf(w.width));
                QCPGraph* best = plot->addGraph();
                best->setName(QStringLiteral("optimum %1").arg(w.width));
                best->setLineStyle(QCPGraph::lsNone);
                best->setScatterStyle(
                    QCPScatterStyle(QCPScatterStyle::ssStar, QPen(color, 2), QBrush(color), 16));
                best->addData(w.bestLog2Lr, w.bestLoss);
                best->removeFromLegend();
            }
        }
        if (!std::isfinite(yLo)) {
            yLo = 0.0;
            yHi = 6.0;
        }
        const double span = std::max(yHi - yLo, 0.05);
        const double top = yHi + 0.12 * span;
        if (!diverged.empty()) {
            // Along the top, spread a little when several seeds or widths diverged at one rate.
            std::map<double, int> atX;
            for (const auto& d : diverged) {
                const int k = atX[d.x]++;
                QCPGraph* g = plot->addGraph();
                g->setName(kDivergedName);
                g->setLineStyle(QCPGraph::lsNone);
                g->setScatterStyle(
                    QCPScatterStyle(QCPScatterStyle::ssTriangle, QPen(d.color, 1.5), d.color, 9));
                g->addData(d.x, top - 0.035 * span * k);
                g->removeFromLegend();
            }
            // One legend entry explains the triangles (the markers themselves stay out of it).
            QCPGraph* key = plot->addGraph();
            key->setName(tr("diverged"));  // short: it shares the first legend column
            key->setLineStyle(QCPGraph::lsNone);
            key->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssTriangle, text, text, 9));
        }
        if (std::isfinite(xLo)) plot->xAxis->setRange(xLo - 0.5, xHi + 0.5);
        plot->yAxis->setRange(yLo - 0.08 * span, top + 0.1 * span);

        m_noteTexts[i] = analysis ? driftText(*analysis)
                                  : (data && !data->curves.empty() ? tr("drift —   regret —")
                                                                   : tr("no finished trials yet"));
        wrapNote(i);
        plot->replot(QCustomPlot::rpQueuedReplot);
    }
}

int TransferChart::curveCount(int i) const {
    int n = 0;
    QCustomPlot* plot = panel(i);
    for (int g = 0; g < plot->graphCount(); ++g)
        if (plot->graph(g)->name().startsWith(kCurvePrefix)) ++n;
    return n;
}

int TransferChart::pointCount(int i) const {
    int n = 0;
    QCustomPlot* plot = panel(i);
    for (int g = 0; g < plot->graphCount(); ++g)
        if (plot->graph(g)->name().startsWith(kCurvePrefix)) n += plot->graph(g)->dataCount();
    return n;
}

int TransferChart::divergedMarkerCount(int i) const {
    int n = 0;
    QCustomPlot* plot = panel(i);
    for (int g = 0; g < plot->graphCount(); ++g)
        if (plot->graph(g)->name() == kDivergedName) ++n;
    return n;
}

QString TransferChart::panelNote(int i) const {
    return m_noteTexts.at(size_t(i));
}

QString TransferChart::panelNoteShown(int i) const {
    return m_notes.at(size_t(i))->text();
}

void TransferChart::wrapNote(size_t i) {
    QCustomPlot* plot = m_panels[i];
    // The panel's share of the chart's width, a little short for the text's margins. Not the
    // panel's own width: the text's size sets the panel's minimum, so a note wrapped to a wide
    // panel would keep that panel wide and squeeze its neighbour.
    const int panels = int(m_panels.size());
    const int share = (width() - m_layout->spacing() * (panels - 1)) / std::max(panels, 1);
    const int wrapWidth = std::max(share - 24, 80);
    const QString wrapped =
        wrapToWidth(m_noteTexts[i], QFontMetrics(m_notes[i]->font()), wrapWidth);
    if (wrapped == m_notes[i]->text()) return;
    m_notes[i]->setText(wrapped);
    plot->updateGeometry();  // its minimum size follows the text
    plot->replot(QCustomPlot::rpQueuedReplot);
}

void TransferChart::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    for (size_t i = 0; i < m_panels.size(); ++i) wrapNote(i);
}

}  // namespace ws::ui
