// SPDX-License-Identifier: GPL-3.0-or-later
// TrainingTab: see training_tab.h.
#include "ui/training/training_tab.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QPainter>
#include <QPdfWriter>
#include <QSlider>
#include <QSvgGenerator>
#include <QTextStream>
#include <QTimer>
#include <QToolButton>
#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/config/config_yaml.h"
#include "engine/model/model_facts.h"
#include "engine/session/chat_run_data.h"
#include "engine/store/run_store.h"
#include "ui/common/run_names.h"
#include "ui/common/wafer_history.h"

namespace ws::ui {
namespace {

// Distinct hues readable on light and dark backgrounds (Tableau 10).
const QColor kPalette[] = {QColor(0x4e, 0x79, 0xa7), QColor(0xf2, 0x8e, 0x2b),
                           QColor(0x59, 0xa1, 0x4f), QColor(0xe1, 0x57, 0x59),
                           QColor(0x76, 0xb7, 0xb2), QColor(0xed, 0xc9, 0x48),
                           QColor(0xb0, 0x7a, 0xa1), QColor(0xff, 0x9d, 0xa7),
                           QColor(0x9c, 0x75, 0x5f), QColor(0xba, 0xb0, 0xac)};

// A stored run's tokens per step and what its loss counts, from its config.
void scaleFromConfig(const std::string& configYaml, RunSeries& run) {
    auto parsed = config::parseConfig(configYaml, "run config", {});
    if (!parsed.ok()) return;
    run.tokensPerStep = double(model::deriveFacts(parsed->config).tokensPerStep);
    run.lossCounts = session::lossCountsLabel(parsed->config.trainInput);
}

}  // namespace

TrainingTab::TrainingTab(QWidget* parent) : QWidget(parent) {
    m_smoothing = new QSlider(Qt::Horizontal, this);
    m_smoothing->setObjectName(QStringLiteral("smoothing"));
    m_smoothing->setRange(0, 99);
    m_smoothing->setValue(60);
    // Narrower beside docks on a laptop (issue 17), never wider than it reads well.
    m_smoothing->setMinimumWidth(90);
    m_smoothing->setMaximumWidth(160);
    m_smoothing->setToolTip(tr("EMA smoothing weight; the raw values stay visible, faint, behind"));
    m_smoothingValue = new QLabel(QStringLiteral("0.60"), this);
    m_smoothingValue->setMinimumWidth(32);
    m_logY = new QCheckBox(tr("Log scale (loss)"), this);
    m_logY->setObjectName(QStringLiteral("logY"));
    m_logY->setToolTip(
        tr("Log y for the loss chart; right-click any chart to set its own scale (the learning "
           "rate stays linear unless chosen there)"));
    m_xAxis = new QComboBox(this);
    m_xAxis->setObjectName(QStringLiteral("xAxis"));
    m_xAxis->addItem(tr("Step"), int(XAxisKind::Step));
    m_xAxis->addItem(tr("Tokens seen"), int(XAxisKind::Tokens));
    m_xAxis->addItem(tr("Wall time"), int(XAxisKind::WallTime));
    auto* fit = new QToolButton(this);
    fit->setText(tr("Fit"));
    fit->setToolTip(tr("Follow the data again after zooming (or double-click a chart)"));
    auto* exportButton = new QToolButton(this);
    exportButton->setText(tr("Export…"));
    exportButton->setToolTip(tr("Save the charts as PNG, SVG or PDF, or the data as CSV"));

    auto* controls = new QHBoxLayout;
    controls->setContentsMargins(10, 6, 10, 0);
    controls->setSpacing(8);
    controls->addWidget(new QLabel(tr("Smoothing"), this));
    controls->addWidget(m_smoothing);
    controls->addWidget(m_smoothingValue);
    controls->addSpacing(12);
    controls->addWidget(m_logY);
    controls->addSpacing(12);
    controls->addWidget(new QLabel(tr("X axis"), this));
    controls->addWidget(m_xAxis);
    controls->addStretch(1);
    controls->addWidget(fit);
    controls->addWidget(exportButton);

    m_panels = {new ChartPanel(tr("Loss"), tr("cross-entropy (nats/token)"), this),
                new ChartPanel(tr("Learning rate"), tr("learning rate"), this),
                new ChartPanel(tr("Gradient norm"), tr("global L2 norm"), this),
                new ChartPanel(tr("Throughput"), tr("tokens / s"), this)};
    auto* grid = new QGridLayout;
    grid->setContentsMargins(6, 0, 6, 6);
    grid->setSpacing(6);
    for (int i = 0; i < 4; ++i) grid->addWidget(m_panels[size_t(i)], i / 2, i % 2);
    m_panelLogY.assign(m_panels.size(), false);
    grid->setRowStretch(0, 3);
    grid->setRowStretch(1, 2);

    m_emptyHint = new QLabel(tr("No run to show yet. Press <b>Run</b> to train the current config, "
                                "or select runs in the Runs panel to compare them."),
                             this);
    m_emptyHint->setAlignment(Qt::AlignCenter);
    m_emptyHint->setWordWrap(true);
    m_emptyHint->setForegroundRole(QPalette::PlaceholderText);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(4);
    layout->addLayout(controls);
    layout->addWidget(m_emptyHint);
    layout->addLayout(grid, 1);

    m_redrawTimer = new QTimer(this);
    m_redrawTimer->setSingleShot(true);
    m_redrawTimer->setInterval(40);
    connect(m_redrawTimer, &QTimer::timeout, this, &TrainingTab::redrawNow);

    auto optionsChanged = [this] {
        ChartPanel::Options o;
        o.smoothing = m_smoothing->value() / 100.0;
        o.logY = m_logY->isChecked();
        o.xAxis = XAxisKind(m_xAxis->currentData().toInt());
        m_smoothingValue->setText(QString::number(o.smoothing, 'f', 2));
        setOptions(o);
    };
    connect(m_smoothing, &QSlider::valueChanged, this, optionsChanged);
    connect(m_logY, &QCheckBox::toggled, this, optionsChanged);
    connect(m_xAxis, &QComboBox::currentIndexChanged, this, optionsChanged);
    connect(fit, &QToolButton::clicked, this, [this] {
        for (auto* p : m_panels) p->followData();
    });
    connect(exportButton, &QToolButton::clicked, this, &TrainingTab::exportDialog);

    for (ChartPanel* panel : m_panels) {
        connect(panel, &ChartPanel::crosshairMoved, this, [this, panel](double x, bool visible) {
            for (auto* other : m_panels) {
                if (other != panel) other->setCrosshair(x, visible);
            }
        });
        panel->setContextMenuPolicy(Qt::CustomContextMenu);
        connect(panel, &QWidget::customContextMenuRequested, this,
                [this, panel](const QPoint& pos) {
                    QMenu* menu = chartMenu(panel->xAxis->pixelToCoord(pos.x()), panel);
                    menu->setAttribute(Qt::WA_DeleteOnClose);
                    menu->popup(panel->mapToGlobal(pos));
                });
        // Zoom and pan one chart, and the others follow along x.
        connect(panel, &ChartPanel::userChangedXRange, this, [this, panel](const QCPRange& r) {
            if (m_syncingRange) return;
            m_syncingRange = true;
            for (auto* other : m_panels) {
                if (other == panel) continue;
                other->xAxis->setRange(r);
            }
            m_syncingRange = false;
            scheduleRedraw();
        });
    }
    m_options.smoothing = 0.6;
    applyPanelOptions();
    rebuildCurves();
}

QColor TrainingTab::colorFor(int64_t runId) const {
    size_t index = 0;
    for (const auto& [id, unused] : m_runs) {
        if (id == runId) break;
        ++index;
    }
    return kPalette[index % std::size(kPalette)];
}

void TrainingTab::setOptions(const ChartPanel::Options& options) {
    m_options = options;
    m_panelLogY[0] = options.logY;
    applyPanelOptions();
}

void TrainingTab::setPanelLogY(size_t panel, bool logY) {
    m_panelLogY.at(panel) = logY;
    if (panel == 0) {
        m_options.logY = logY;
        const QSignalBlocker block(m_logY);
        m_logY->setChecked(logY);
    }
    applyPanelOptions();
}

void TrainingTab::applyPanelOptions() {
    for (size_t i = 0; i < m_panels.size(); ++i) {
        ChartPanel::Options o = m_options;
        o.logY = m_panelLogY[i];
        m_panels[i]->setOptions(o);
    }
    scheduleRedraw();
}

namespace {

// The metric keys a stored run is drawn from (loss first: the wall time counts from it).
constexpr const char* kStoredKeys[] = {kLoss, kEvalLoss, kLearningRate, kGradNorm, kTokensPerSec};

// A stored run's series up to step `lastStep` (metrics above it are dropped). `wallOrigin`, if
// given, receives the wall time its x axis counts from (NaN while the run has no points).
RunSeries loadStoredRun(store::RunStore& store, const store::RunInfo& info, int64_t lastStep,
                        double* wallOrigin = nullptr) {
    RunSeries run;
    run.runId = info.id;
    run.name = info.name;
    scaleFromConfig(info.configYaml, run);
    double wall0 = std::nan("");
    for (const char* key : kStoredKeys) {
        auto points = store.metrics(info.id, key);
        if (!points.ok() || points->empty()) continue;
        // Wall time counts from the run's first logged point (loss comes first).
        if (std::isnan(wall0)) wall0 = points->front().wallTime;
        MetricSeries& s = run.metrics[key];
        for (const auto& p : *points) {
            if (p.step <= lastStep) s.append(double(p.step), p.wallTime - wall0, p.value);
        }
    }
    if (wallOrigin) *wallOrigin = wall0;
    return run;
}

}  // namespace

void TrainingTab::forgetEndedRuns() {
    bool any = false;
    for (int64_t id : m_endedLive) {
        if (std::find(m_overlay.begin(), m_overlay.end(), id) != m_overlay.end()) continue;
        any = m_runs.erase(id) > 0 || any;
        m_wallOrigin.erase(id);
    }
    m_endedLive.clear();
    if (any) runsChanged();
}

void TrainingTab::beginLiveRun(const QString& name, double tokensPerStep,
                               const QString& lossCounts) {
    forgetEndedRuns();
    RunSeries live;
    live.runId = 0;
    live.name = name.toStdString();
    live.tokensPerStep = tokensPerStep;
    live.lossCounts = lossCounts.toStdString();
    m_runs[0] = std::move(live);
    m_liveWallStart = -1;
    m_liveWallOffset = 0;
    m_waferRunId = 0;
    m_trainingNow = true;
    runsChanged();
    for (auto* p : m_panels) p->followData();
}

void TrainingTab::continueLiveRun(int64_t runId, store::RunStore* store, int64_t fromStep,
                                  double tokensPerStep, const QString& lossCounts) {
    beginLiveRun(tr("run %1").arg(runId), tokensPerStep, lossCounts);
    if (!store) return;
    auto info = store->getRun(runId);
    if (!info.ok()) return;
    RunSeries live = loadStoredRun(*store, *info, fromStep);
    live.runId = 0;
    live.name = info->name;
    live.tokensPerStep = tokensPerStep;
    live.lossCounts = lossCounts.toStdString();
    for (const auto& [key, series] : live.metrics) {
        if (!series.wall.empty()) m_liveWallOffset = std::max(m_liveWallOffset, series.wall.back());
    }
    m_runs.erase(runId);  // drawn as the live run until it ends, then adopted back
    m_wallOrigin.erase(runId);
    m_runs[0] = std::move(live);
    runsChanged();
}

void TrainingTab::appendLive(const std::vector<session::StepMetrics>& metrics) {
    auto it = m_runs.find(0);
    if (it == m_runs.end() || metrics.empty()) return;
    auto& series = it->second.metrics;
    const size_t keysBefore = series.size();
    for (const auto& m : metrics) {
        const double step = double(m.step);
        const double wall = m_liveWallOffset + m.elapsedSec;
        series[kLoss].append(step, wall, m.loss);
        series[kLearningRate].append(step, wall, m.learningRate);
        series[kGradNorm].append(step, wall, m.gradNorm);
        if (!std::isnan(m.evalLoss)) series[kEvalLoss].append(step, wall, m.evalLoss);
        if (m.logStep) series[kTokensPerSec].append(step, wall, m.tokensPerSec);
    }
    // A new metric key (eval loss at the first evaluation) needs its curve; new points of the
    // curves drawn only extend them (the charts keep their prepared data).
    if (series.size() != keysBefore) m_curvesDirty = true;
    scheduleRedraw();
}

void TrainingTab::adoptLiveRun(int64_t runId) {
    if (m_trainingNow) {
        m_trainingNow = false;  // ended, numbered or not: no longer "(now)"
        m_curvesDirty = true;
        scheduleRedraw();
    }
    auto it = m_runs.find(0);
    if (it == m_runs.end() || runId <= 0) return;
    RunSeries run = std::move(it->second);
    m_runs.erase(it);
    run.runId = runId;
    m_runs[runId] = std::move(run);
    m_endedLive.push_back(runId);
    if (m_waferRunId == 0) m_waferRunId = runId;
    runsChanged();
}

void TrainingTab::addRun(RunSeries run) {
    const int64_t id = run.runId;
    m_runs[id] = std::move(run);
    runsChanged();
}

void TrainingTab::setOverlayRuns(const std::vector<int64_t>& runIds, store::RunStore* store) {
    m_overlay = runIds;
    for (auto it = m_runs.begin(); it != m_runs.end();) {
        const bool keep =
            it->first == 0 || std::find(runIds.begin(), runIds.end(), it->first) != runIds.end();
        if (!keep) m_wallOrigin.erase(it->first);
        it = keep ? std::next(it) : m_runs.erase(it);
    }
    if (store) {
        for (int64_t id : runIds) {
            if (m_runs.count(id)) continue;
            auto info = store->getRun(id);
            if (!info.ok()) continue;
            // The run training now is already drawn live (as id 0 until it ends).
            if ((info->status == "running" || info->status == "paused") && m_runs.count(0))
                continue;
            m_runs[id] = loadStoredRun(*store, *info, std::numeric_limits<int64_t>::max(),
                                       &m_wallOrigin[id]);
        }
    }
    runsChanged();
    for (auto* p : m_panels) p->followData();
}

std::vector<StoreFollower::Tail> TrainingTab::followRequests() const {
    std::vector<StoreFollower::Tail> tails;
    for (const auto& [id, run] : m_runs) {
        if (id <= 0 || !m_wallOrigin.count(id)) continue;  // live, or not from the store
        for (const char* key : kStoredKeys) {
            const auto it = run.metrics.find(key);
            const bool any = it != run.metrics.end() && it->second.size() > 0;
            tails.push_back({id,
                             key,
                             any ? int64_t(std::llround(it->second.step.back()))
                                 : std::numeric_limits<int64_t>::min(),
                             {}});
        }
    }
    return tails;
}

void TrainingTab::appendStored(const std::vector<StoreFollower::Tail>& tails) {
    bool any = false;
    bool newKey = false;
    for (const auto& tail : tails) {
        const auto run = m_runs.find(tail.runId);
        const auto origin = m_wallOrigin.find(tail.runId);
        if (run == m_runs.end() || origin == m_wallOrigin.end() || tail.points.empty()) continue;
        // Wall time counts from the run's first logged point, as when it was loaded whole.
        if (std::isnan(origin->second)) origin->second = tail.points.front().wallTime;
        newKey = newKey || !run->second.metrics.count(tail.key);
        MetricSeries& series = run->second.metrics[tail.key];
        // The series may have been reloaded since the poll asked: only what it lacks is added.
        const double last = series.size() ? series.step.back() : -HUGE_VAL;
        for (const auto& p : tail.points) {
            if (double(p.step) <= last) continue;
            series.append(double(p.step), p.wallTime - origin->second, p.value);
            any = true;
        }
    }
    if (!any) return;
    if (newKey) m_curvesDirty = true;  // eval loss at the first evaluation, say
    scheduleRedraw();
}

void TrainingTab::setStepInspector(std::function<bool(int64_t)> canInspect) {
    m_canInspect = std::move(canInspect);
}

int64_t TrainingTab::stepAt(double x) const {
    const auto run = m_runs.find(m_waferRunId);
    if (run == m_runs.end() || !std::isfinite(x)) return -1;
    const auto loss = run->second.metrics.find(kLoss);
    if (loss == run->second.metrics.end() || loss->second.size() == 0) return -1;
    // The run's own points map any x axis back to steps (wall time is not linear in steps).
    const MetricSeries& series = loss->second;
    const std::vector<double> xs = series.xs(m_options.xAxis, run->second.tokensPerStep);
    const auto it = std::lower_bound(xs.begin(), xs.end(), x);
    size_t at = size_t(it - xs.begin());
    if (at == xs.size() || (at > 0 && x - xs[at - 1] < xs[at] - x)) --at;
    return int64_t(std::llround(series.step[at]));
}

QMenu* TrainingTab::chartMenu(double x, QWidget* parent) {
    auto* menu = new QMenu(parent);
    menu->setToolTipsVisible(true);
    const int64_t step = stepAt(x);
    QAction* inspect = menu->addAction(step >= 1 ? tr("Inspect step %1 on the Wafer tab").arg(step)
                                                 : tr("Inspect this step on the Wafer tab"));
    inspect->setObjectName(QStringLiteral("inspectStep"));
    if (step < 1) {
        inspect->setEnabled(false);
        inspect->setToolTip(
            tr("Only the run trained in this window can be inspected step by "
               "step; it has no points here."));
    } else if (!canInspect(step)) {
        inspect->setEnabled(false);
        inspect->setToolTip(tr("The Wafer tab no longer holds step %1: it keeps the last %2 "
                               "steps of the run trained in this window.")
                                .arg(step)
                                .arg(WaferHistory::kMaxSteps));
    } else {
        inspect->setToolTip(tr("Show this step's heatmap, timeline and gradient norm per layer"));
        connect(inspect, &QAction::triggered, this, [this, step] { inspectStep(step); });
    }
    const auto panel = std::find(m_panels.begin(), m_panels.end(), parent);
    if (panel != m_panels.end()) {
        menu->addSeparator();
        const size_t index = size_t(panel - m_panels.begin());
        QAction* log = menu->addAction(tr("Log scale"));
        log->setObjectName(QStringLiteral("logScale"));
        log->setCheckable(true);
        log->setChecked(m_panelLogY[index]);
        log->setToolTip(tr("Log y for this chart only"));
        connect(log, &QAction::toggled, this, [this, index](bool on) { setPanelLogY(index, on); });
        if (index == 0) {
            // The legend below the loss chart names the runs of all four; it folds away.
            QAction* shown = menu->addAction(tr("Show legend"));
            shown->setObjectName(QStringLiteral("showLegend"));
            shown->setCheckable(true);
            shown->setChecked(m_panels[0]->legendShown());
            shown->setToolTip(
                tr("The runs' names below the loss chart (the colours hold for "
                   "every chart)"));
            connect(shown, &QAction::toggled, this,
                    [this](bool on) { m_panels[0]->setLegendShown(on); });
        }
    }
    return menu;
}

bool TrainingTab::inspectStep(int64_t step) {
    if (!canInspect(step)) return false;
    emit inspectStepRequested(step);
    return true;
}

void TrainingTab::runsChanged() {
    // The panels point into m_runs: they get the new curves before anything can draw them
    // (followData() redraws at once, and so does a mouse move over a chart), never after.
    rebuildCurves();
    scheduleRedraw();
}

void TrainingTab::scheduleRedraw() {
    if (!m_redrawTimer->isActive()) m_redrawTimer->start();
}

void TrainingTab::rebuildCurves() {
    std::vector<ChartPanel::Curve> loss, lr, norm, speed;
    const bool several = m_runs.size() > 1;
    bool anyEval = false;
    // The loss chart's legend (below it) names the runs for all four charts: a run has one
    // colour everywhere. Long names (a sweep trial's) are shortened and elided.
    const QFontMetrics metrics(m_panels[0]->legend->font());
    for (const auto& [id, run] : m_runs) {
        const QColor color = colorFor(id);
        QString name = metrics.elidedText(legendRunName(QString::fromStdString(run.name)),
                                          Qt::ElideMiddle, 300);
        if (id == 0 && m_trainingNow) name += tr(" (now)");
        auto series = [&](const char* key) -> const MetricSeries* {
            const auto it = run.metrics.find(key);
            return it == run.metrics.end() ? nullptr : &it->second;
        };
        // A chat run's loss counts its answers only, and the legend says so.
        const QString counts = run.lossCounts.empty()
                                   ? QString()
                                   : QString::fromStdString(" (" + run.lossCounts + ")");
        loss.push_back(
            {several ? name : tr("train") + counts, color, series(kLoss), run.tokensPerStep});
        if (const auto* eval = series(kEvalLoss)) {
            anyEval = true;
            // Several runs: one legend entry says what dashed means, not one per run.
            loss.push_back({several ? tr("%1 (eval)").arg(name) : tr("eval") + counts,
                            color.darker(several ? 130 : 100), eval, run.tokensPerStep, true, true,
                            !several});
            if (!several) loss.back().color = kPalette[1];
        }
        // The learning rate is a schedule, not a measurement: smoothing would only draw it late.
        lr.push_back(
            {name, color, series(kLearningRate), run.tokensPerStep, false, false, false, false});
        norm.push_back({name, color, series(kGradNorm), run.tokensPerStep, false, false, false});
        speed.push_back(
            {name, color, series(kTokensPerSec), run.tokensPerStep, false, false, false});
    }
    if (several && anyEval) {
        ChartPanel::Curve key{tr("dashed: eval loss"), palette().color(QPalette::Mid), nullptr};
        key.dashed = true;
        loss.push_back(key);
    }
    m_panels[0]->setCurves(std::move(loss));
    m_panels[1]->setCurves(std::move(lr));
    m_panels[2]->setCurves(std::move(norm));
    m_panels[3]->setCurves(std::move(speed));
    m_emptyHint->setVisible(m_runs.empty());
    m_curvesDirty = false;
}

void TrainingTab::redrawNow() {
    m_redrawTimer->stop();
    if (m_curvesDirty) rebuildCurves();
    for (auto* p : m_panels) p->redraw();
}

bool TrainingTab::exportPng(const QString& path) {
    redrawNow();
    // redraw() queues its replot; the grab below must see this data, not the last frame.
    for (auto* p : m_panels) p->replot(QCustomPlot::rpImmediateRefresh);
    // The charts only: the toolbar above them (smoothing, log scale, Export…) is not a figure.
    QRect charts;
    for (const ChartPanel* p : m_panels) charts |= p->geometry();
    const QPixmap pixmap = grab(charts);
    return pixmap.save(path, "PNG");
}

// Draws every chart as vectors (lines, text) into `device`, two by two, each at its size on
// screen so fonts keep their proportions; `page` is the device's drawing area.
bool TrainingTab::paintCharts(QPaintDevice* device, const QRectF& page) {
    redrawNow();
    QCPPainter painter(device);
    if (!painter.isActive()) return false;
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);
    const QSize chart = m_panels.front()->size();
    const double scale =
        std::min(page.width() / (2.0 * chart.width()), page.height() / (2.0 * chart.height()));
    for (size_t i = 0; i < m_panels.size(); ++i) {
        painter.save();
        painter.translate(page.left() + double(i % 2) * chart.width() * scale,
                          page.top() + double(i / 2) * chart.height() * scale);
        painter.scale(scale, scale);
        m_panels[i]->toPainter(&painter, chart.width(), chart.height());
        painter.restore();
    }
    return true;
}

bool TrainingTab::exportPdf(const QString& path) {
    QPdfWriter writer(path);
    writer.setPageSize(QPageSize(QPageSize::A4));
    writer.setPageOrientation(QPageLayout::Landscape);
    writer.setTitle(tr("Wafer Studio training charts"));
    writer.setCreator(QStringLiteral("Wafer Studio"));
    const QRect page = writer.pageLayout().paintRectPixels(writer.resolution());
    return paintCharts(&writer, QRectF(0, 0, page.width(), page.height()));
}

bool TrainingTab::exportSvg(const QString& path) {
    const QSize chart = m_panels.front()->size();
    QSvgGenerator svg;
    svg.setFileName(path);
    svg.setSize(QSize(2 * chart.width(), 2 * chart.height()));
    svg.setViewBox(QRect(0, 0, 2 * chart.width(), 2 * chart.height()));
    svg.setTitle(tr("Wafer Studio training charts"));
    if (!paintCharts(&svg, QRectF(0, 0, 2 * chart.width(), 2 * chart.height()))) return false;
    return QFileInfo(path).size() > 0;
}

bool TrainingTab::exportCsv(const QString& path) const {
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Text)) return false;
    QTextStream out(&file);
    out << "run_id,run,metric,step,tokens,wall_s,value\n";
    for (const auto& [id, run] : m_runs) {
        QString name = QString::fromStdString(run.name);
        name.replace('"', QStringLiteral("\"\""));
        for (const auto& [key, s] : run.metrics) {
            for (size_t i = 0; i < s.size(); ++i) {
                out << id << ",\"" << name << "\"," << QString::fromStdString(key) << ','
                    << qint64(s.step[i]) << ',' << qint64(s.step[i] * run.tokensPerStep) << ','
                    << QString::number(s.wall[i], 'g', 10) << ','
                    << QString::number(s.value[i], 'g', 10) << '\n';
            }
        }
    }
    return out.status() == QTextStream::Ok && file.error() == QFile::NoError;
}

void TrainingTab::exportDialog() {
    QString filter;
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export charts"), QStringLiteral("training.png"),
        tr("PNG image (*.png);;SVG image (*.svg);;PDF document (*.pdf);;CSV data (*.csv)"),
        &filter);
    if (path.isEmpty()) return;
    bool ok = false;
    if (path.endsWith(QLatin1String(".pdf"), Qt::CaseInsensitive)) {
        ok = exportPdf(path);
    } else if (path.endsWith(QLatin1String(".svg"), Qt::CaseInsensitive)) {
        ok = exportSvg(path);
    } else if (path.endsWith(QLatin1String(".csv"), Qt::CaseInsensitive)) {
        ok = exportCsv(path);
    } else {
        ok = exportPng(path);
    }
    if (!ok) {
        QMessageBox::warning(
            this, tr("Export failed"),
            tr("Could not write %1. Check that the folder exists and is writable.").arg(path));
    }
}

}  // namespace ws::ui
