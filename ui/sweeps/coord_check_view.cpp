// SPDX-License-Identifier: GPL-3.0-or-later
// CoordCheckView: see coord_check_view.h.
#include "ui/sweeps/coord_check_view.h"

#include <qcustomplot.h>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>
#include <algorithm>
#include <map>
#include <set>

#include "ui/sweeps/transfer_chart.h"

namespace ws::ui {

CoordCheckView::CoordCheckView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 4, 0, 0);
    auto* top = new QHBoxLayout;
    m_verdict = new QLabel(tr("The μP coord check trains the current config at widths 32–256 "
                              "for a few steps under SP and μP and plots mean |activation| per "
                              "layer type: under μP the lines stay flat as the model widens."),
                           this);
    m_verdict->setWordWrap(true);
    m_verdict->setObjectName(QStringLiteral("CoordVerdict"));
    m_run = new QPushButton(tr("Run Coord Check"), this);
    connect(m_run, &QPushButton::clicked, this, &CoordCheckView::runRequested);
    top->addWidget(m_verdict, 1);
    top->addWidget(m_run);
    layout->addLayout(top);
    m_panelsLayout = new QHBoxLayout;
    m_panelsLayout->setSpacing(4);
    layout->addLayout(m_panelsLayout, 1);
}

CoordCheckView::~CoordCheckView() {
    if (m_worker.joinable()) m_worker.join();
}

bool CoordCheckView::runOn(const config::Config& base, const mup::CoordCheckOptions& options) {
    if (m_worker.joinable()) return false;
    if (Status s = mup::checkCoordCheck(base, options); !s.ok()) {
        m_verdict->setText(QStringLiteral("<span style='color:#d62728'>%1</span>")
                               .arg(QString::fromStdString(s.error().message).toHtmlEscaped()));
        emit finished(false, QString::fromStdString(s.error().message));
        return false;
    }
    m_run->setEnabled(false);
    m_verdict->setText(tr("coord check running…"));
    auto pending = std::make_shared<Result<mup::CoordCheckResult>>(Error{"not run"});
    m_pending = pending;
    CoordCheckView* self = this;  // the destructor joins the worker before `this` goes
    m_worker = std::thread([self, pending, base, options] {
        *pending =
            mup::runCoordCheck(base, options, [self](int done, int total, const std::string& what) {
                const QString text = QObject::tr("coord check: %1/%2 runs (%3)")
                                         .arg(done)
                                         .arg(total)
                                         .arg(QString::fromStdString(what));
                QMetaObject::invokeMethod(
                    self, [self, text] { self->m_verdict->setText(text); }, Qt::QueuedConnection);
            });
        QMetaObject::invokeMethod(
            self, [self] { self->onWorkerDone(); }, Qt::QueuedConnection);
    });
    return true;
}

void CoordCheckView::onWorkerDone() {
    if (m_worker.joinable()) m_worker.join();
    m_run->setEnabled(true);
    if (!m_pending->ok()) {
        const QString message = QString::fromStdString(m_pending->error().message);
        m_verdict->setText(
            QStringLiteral("<span style='color:#d62728'>%1</span>").arg(message.toHtmlEscaped()));
        emit finished(false, message);
        return;
    }
    setResult(**m_pending);
    emit finished(true, verdictText());
}

QString CoordCheckView::verdictText() const {
    return m_verdict->text();
}

void CoordCheckView::setResult(const mup::CoordCheckResult& r) {
    m_last = r;
    std::set<int> allSteps;
    for (const auto& p : r.points) allSteps.insert(p.step);
    std::vector<int> steps;
    if (!allSteps.empty()) {
        const std::vector<int> v(allSteps.begin(), allSteps.end());
        for (size_t i : {size_t(0), v.size() / 2, v.size() - 1})
            if (std::find(steps.begin(), steps.end(), v[i]) == steps.end()) steps.push_back(v[i]);
    }
    for (QCustomPlot* p : m_panels) delete p;
    m_panels.clear();
    const QString verdict =
        r.pass ? tr("<b style='color:#2ca02c'>PASS</b>") : tr("<b style='color:#d62728'>FAIL</b>");
    m_verdict->setText(
        tr("%1 — μP's worst slope %2 (%3, step %4), threshold ±%5; SP's worst %6 (%7, step %8). "
           "Slope = d log2(mean |act|) / d log2(width).")
            .arg(verdict)
            .arg(r.worstMupSlope, 0, 'f', 2)
            .arg(QString::fromUtf8(r.worstMupLayer.data(), qsizetype(r.worstMupLayer.size())))
            .arg(r.worstMupStep)
            .arg(r.threshold, 0, 'g', 3)
            .arg(r.worstSpSlope, 0, 'f', 2)
            .arg(QString::fromUtf8(r.worstSpLayer.data(), qsizetype(r.worstSpLayer.size())))
            .arg(r.worstSpStep));
    for (int step : steps) {
        auto* plot = new QCustomPlot(this);
        plot->setMinimumSize(240, 200);
        applySweepPlotTheme(plot);
        const QColor text = plot->palette().color(QPalette::Text);
        plot->plotLayout()->insertRow(0);
        auto* title =
            new QCPTextElement(plot, tr("step %1").arg(step),
                               QFont(font().family(), font().pointSize() + 1, QFont::Bold));
        title->setTextColor(text);
        plot->plotLayout()->addElement(0, 0, title);
        for (QCPAxis* a : {plot->xAxis, plot->yAxis}) {
            a->setScaleType(QCPAxis::stLogarithmic);
            auto ticker = QSharedPointer<QCPAxisTickerLog>::create();
            ticker->setLogBase(a == plot->xAxis ? 2 : 10);
            a->setTicker(ticker);
        }
        plot->xAxis->setLabel(tr("width (hidden_size)"));
        plot->yAxis->setLabel(tr("mean |activation|"));
        int layerIndex = 0;
        double lo = 1e300, hi = 0, wLo = 1e300, wHi = 0;
        for (std::string_view layer : mup::kLayerTypes) {
            const QColor color = widthColor(layerIndex++);
            for (auto p : {mup::Parametrization::Standard, mup::Parametrization::Mup}) {
                std::map<int, double> byWidth;
                for (const auto& pt : r.points)
                    if (pt.step == step && pt.layer == layer && pt.parametrization == p)
                        byWidth[pt.width] = pt.meanAbs;
                QCPGraph* g = plot->addGraph();
                const bool mup = p == mup::Parametrization::Mup;
                g->setName(QStringLiteral("%1 %2").arg(
                    mup ? QStringLiteral("μP") : QStringLiteral("SP"),
                    QString::fromUtf8(layer.data(), qsizetype(layer.size()))));
                g->setPen(QPen(color, mup ? 2.0 : 1.5, mup ? Qt::SolidLine : Qt::DashLine));
                g->setScatterStyle(QCPScatterStyle(
                    mup ? QCPScatterStyle::ssCircle : QCPScatterStyle::ssSquare, color, 5));
                for (const auto& [w, v] : byWidth) {
                    if (!(v > 0)) continue;
                    g->addData(w, v);
                    lo = std::min(lo, v);
                    hi = std::max(hi, v);
                    wLo = std::min(wLo, double(w));
                    wHi = std::max(wHi, double(w));
                }
            }
        }
        if (hi > 0) {
            plot->yAxis->setRange(lo / 1.6, hi * 1.6);
            plot->xAxis->setRange(wLo / 1.3, wHi * 1.3);
        }
        // One legend, right of the last panel and outside its axes, so it hides no line.
        plot->legend->setVisible(step == steps.back());
        plot->legend->setFont(QFont(font().family(), std::max(7, font().pointSize() - 1)));
        if (step == steps.back()) {
            plot->axisRect()->insetLayout()->take(plot->legend);
            plot->plotLayout()->addElement(1, 1, plot->legend);
            plot->plotLayout()->setColumnStretchFactor(1, 0.001);
        }
        m_panelsLayout->addWidget(plot, 1);
        plot->show();
        m_panels.push_back(plot);
        plot->replot();
    }
}

}  // namespace ws::ui
