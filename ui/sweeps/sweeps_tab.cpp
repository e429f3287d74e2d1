// SPDX-License-Identifier: GPL-3.0-or-later
// SweepsTab: see sweeps_tab.h.
#include "ui/sweeps/sweeps_tab.h"

#include <qcustomplot.h>
#include <QHBoxLayout>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <optional>

#include "engine/config/config_yaml.h"
#include "engine/core/units.h"
#include "engine/session/folder_lock.h"
#include "engine/store/run_store.h"
#include "engine/store/sweep_records.h"
#include "engine/sweep/space.h"
#include "ui/sweeps/coord_check_view.h"
#include "ui/sweeps/sweep_heatmap.h"
#include "ui/sweeps/sweep_parallel_coords.h"
#include "ui/sweeps/sweep_points.h"
#include "ui/sweeps/sweep_table.h"
#include "ui/sweeps/transfer_chart.h"

namespace ws::ui {
namespace {

// The swept keys in the order the sweep declares them: the parallel-coordinates axes.
std::vector<std::string> sweptKeys(const config::SweepConfig& sweep) {
    std::vector<std::string> keys;
    for (const auto& axis : sweep.parameters.axes) keys.push_back(axis.key);
    return keys;
}

// The config a μP trial ran: the sweep's base with its "mup" bundle applied (the proxy's μP
// fields, e.g. embeddings_scale), for μTransfer. False when the sweep has no mup bundle.
bool mupProxyConfig(config::Config cfg, config::Config& out) {
    if (!cfg.sweep) return false;
    const auto bundles = cfg.sweep->parametrizations.bundles;
    cfg.sweep.reset();
    for (const auto& b : bundles) {
        if (b.name != "mup") continue;
        for (const auto& [key, value] : b.overrides)
            if (!config::applyOverride(cfg, key + "=" + value).ok()) return false;
        out = cfg;
        return true;
    }
    return false;
}

}  // namespace

SweepsTab::SweepsTab(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("SweepsTab"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    auto* top = new QHBoxLayout;
    m_header = new QLabel(tr("No sweep yet: open a config with a sweep: section (e.g. the "
                             "mup-sweep preset) and choose Run ▸ Run Sweep."),
                          this);
    m_header->setObjectName(QStringLiteral("SweepHeader"));
    m_header->setWordWrap(true);
    m_progress = new QProgressBar(this);
    m_progress->setObjectName(QStringLiteral("SweepProgress"));
    m_progress->setMaximumWidth(220);
    // The style draws a bar's own text over its fill in colours a palette may not contrast
    // (hidden under the fill in the high-contrast one): the figures go in a label beside it.
    m_progress->setTextVisible(false);
    m_progress->setVisible(false);
    m_percent = new QLabel(this);
    m_percent->setObjectName(QStringLiteral("SweepPercent"));
    m_percent->setVisible(false);
    m_transferButton = new QPushButton(tr("Transfer μP Optimum…"), this);
    m_transferButton->setToolTip(
        tr("Write a wider config with the μP fields set from the proxy's best "
           "learning rate"));
    m_transferButton->setEnabled(false);
    connect(m_transferButton, &QPushButton::clicked, this, &SweepsTab::transferRequested);
    top->addWidget(m_header, 1);
    top->addWidget(m_progress);
    top->addWidget(m_percent);
    top->addWidget(m_transferButton);
    layout->addLayout(top);

    auto* split = new QSplitter(Qt::Vertical, this);
    m_chart = new TransferChart(split);
    m_views = new QTabWidget(split);
    m_views->setDocumentMode(true);
    m_table = new SweepTable(m_views);
    m_heatmap = new SweepHeatmap(m_views);
    m_views->addTab(m_table, tr("Trials"));
    m_views->addTab(m_heatmap, tr("Heatmap"));
    m_parallel = new SweepParallelCoords(m_views);
    m_views->addTab(m_parallel, tr("Parallel Coordinates"));
    m_coordCheck = new CoordCheckView(m_views);
    m_views->addTab(m_coordCheck, tr("Coord Check"));
    split->addWidget(m_chart);
    split->addWidget(m_views);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    // The chart is the point of the tab: a long trial table must not squeeze it to a strip.
    // 140 px: still a chart, and the tab fits a 768-px laptop screen with a run's narration
    // line under the tabs (issue 17).
    m_chart->setMinimumHeight(140);
    split->setSizes({600, 400});
    layout->addWidget(split, 1);

    m_redrawTimer = new QTimer(this);
    m_redrawTimer->setSingleShot(true);
    m_redrawTimer->setInterval(40);
    connect(m_redrawTimer, &QTimer::timeout, this, &SweepsTab::redrawNow);
}

void SweepsTab::beginSweep(const sweep::SweepPlan& plan) {
    m_results.clear();
    m_running.clear();
    m_transfer.clear();
    m_clock.start();
    m_eta.emplace(sweep::trialCosts(plan), plan.sweep.parallelTrials, std::move(m_calibration));
    m_calibration.reset();
    m_parametrizations = plan.sweep.parametrization;
    m_keys = sweptKeys(plan.sweep);
    m_planned = plan.trials.size();
    m_hasBase = mupProxyConfig(plan.definition.config, m_base);
    m_title = tr("Sweep of %1: %2 trials (%3 points × %4 seeds), %5 at a time")
                  .arg(QString::fromStdString(plan.definition.config.model.name))
                  .arg(plan.trials.size())
                  .arg(plan.points)
                  .arg(plan.sweep.seeds)
                  .arg(plan.sweep.parallelTrials);
    m_state = tr("running");
    m_chart->setParametrizations(m_parametrizations);
    m_table->setPlan(plan);
    redrawNow();
}

void SweepsTab::noteTrialStarted(const sweep::TrialStarted& trial) {
    m_running[trial.trial] = {trial.trial, 0, trial.maxSteps, std::nan("")};
    if (m_eta && m_clock.isValid()) m_eta->started(trial.trial, double(m_clock.elapsed()) / 1e3);
    m_table->markStarted(trial);
    updateHeader();
}

void SweepsTab::noteProgress(const std::vector<sweep::TrialProgress>& batch) {
    std::map<int, sweep::TrialProgress> last;
    for (const auto& p : batch) last[p.trial] = p;
    const double now = double(m_clock.elapsed()) / 1e3;
    for (const auto& [trial, p] : last) {
        m_running[trial] = p;
        m_table->markProgress(p);
        if (m_eta && m_clock.isValid()) m_eta->progress(trial, p.step, now);
    }
    updateHeader();
}

void SweepsTab::addResult(const sweep::TrialResult& result) {
    m_running.erase(result.trial);
    // A trial settled before a resume was never started here: the estimate only stops counting it.
    if (m_eta && m_clock.isValid())
        m_eta->finished(result.trial, result.steps, double(m_clock.elapsed()) / 1e3);
    m_results[result.trial] = result;
    m_table->setResult(result);
    updateHeader();  // the tally and ETA at once; the charts on the coalescing timer
    scheduleRedraw();
}

void SweepsTab::endSweep(const sweep::SweepOutcome& outcome) {
    m_running.clear();
    m_eta.reset();
    m_clock.invalidate();
    for (const auto& t : outcome.trials) {
        if (!m_results.count(t.trial)) m_table->setResult(t);
        m_results[t.trial] = t;
    }
    m_state = outcome.status == "stopped"
                  ? tr("stopped (resume it from the Runs list: sweep %1)").arg(outcome.sweepRunId)
              : outcome.status == "failed"
                  ? tr("failed: %1").arg(QString::fromStdString(outcome.detail))
                  : tr("%1 in %2 s")
                        .arg(QString::fromStdString(outcome.status))
                        .arg(outcome.elapsedSec, 0, 'f', 1);
    redrawNow();
}

bool SweepsTab::showStoredSweep(store::RunStore* store, int64_t sweepRunId, QString* error) {
    if (!store) return false;
    auto run = store->getRun(sweepRunId);
    auto rows = store::sweepTrials(*store, sweepRunId);
    if (!run.ok() || !rows.ok()) {
        if (error)
            *error = QString::fromStdString(!run.ok() ? run.error().message : rows.error().message);
        return false;
    }
    m_results.clear();
    m_running.clear();
    m_eta.reset();
    m_clock.invalidate();
    m_hasBase = false;
    std::vector<std::string> names;
    m_keys.clear();
    // The store holds a row per trial that started; the sweep's size is its plan's (every
    // point, seed and parametrization), planned again from the stored definition as a resume
    // would.
    std::optional<sweep::SweepPlan> plan;
    if (auto cfg = config::parseConfig(run->configYaml, "sweep", {}); cfg.ok()) {
        if (cfg->config.sweep) {
            names = cfg->config.sweep->parametrization;
            m_keys = sweptKeys(*cfg->config.sweep);
        }
        m_hasBase = mupProxyConfig(cfg->config, m_base);
        if (auto planned = sweep::planSweep(*cfg); planned.ok()) plan = std::move(planned).value();
    }
    std::vector<sweep::TrialResult> trials;
    for (const auto& r : *rows) {
        sweep::TrialResult t;
        t.trial = r.trial;
        t.seed = r.seed;
        t.steps = r.steps;
        t.finalLoss = r.finalLoss;
        t.reason = r.reason;
        t.runId = r.run.value_or(-1);
        t.status = sweep::parseTrialStatus(r.status).value_or(sweep::TrialStatus::Failed);
        const QJsonObject params =
            QJsonDocument::fromJson(QByteArray::fromStdString(r.paramsJson)).object();
        for (auto it = params.begin(); it != params.end(); ++it) {
            const QJsonValue v = it.value();
            std::string text = v.isDouble() ? QString::number(v.toDouble(), 'g', 17).toStdString()
                                            : v.toVariant().toString().toStdString();
            if (it.key().toStdString() == sweep::kParametrizationKey) t.parametrization = text;
            t.params.push_back({it.key().toStdString(), text});
        }
        trials.push_back(t);
        m_results[t.trial] = t;
    }
    m_parametrizations = names;
    m_planned = std::max(trials.size(), plan ? plan->trials.size() : size_t(0));
    m_title = tr("Sweep %1 “%2”: %3 trials")
                  .arg(sweepRunId)
                  .arg(QString::fromStdString(run->name))
                  .arg(m_planned);
    if (plan) {
        m_title += tr(" (%1 points × %2 seeds)").arg(plan->points).arg(plan->sweep.seeds);
        if (trials.size() < m_planned) m_title += tr(", %1 started").arg(trials.size());
    }
    m_state = QString::fromStdString(session::shownRunStatus(run->status, run->modelDir));
    m_chart->setParametrizations(names);
    m_table->setTrials(trials);
    redrawNow();
    return true;
}

double SweepsTab::etaSeconds() const {
    if (!m_eta || !m_clock.isValid() || m_planned == 0) return std::nan("");
    return m_eta->remainingSeconds(double(m_clock.elapsed()) / 1e3);
}

QString SweepsTab::headerText() const {
    return m_header->text();
}

std::vector<sweep::TrialResult> SweepsTab::results() const {
    std::vector<sweep::TrialResult> out;
    out.reserve(m_results.size());
    for (const auto& [i, t] : m_results) out.push_back(t);
    return out;
}

double SweepsTab::proxyBestLog2Lr(double* width) const {
    for (const auto& t : m_transfer) {
        if (t.parametrization != "mup") continue;
        for (const auto& w : t.widths) {
            if (std::isnan(w.bestLog2Lr)) continue;
            if (width) *width = w.width;
            return w.bestLog2Lr;
        }
    }
    return std::nan("");
}

void SweepsTab::scheduleRedraw() {
    if (!m_redrawTimer->isActive()) m_redrawTimer->start();
}

void SweepsTab::redrawNow() {
    m_redrawTimer->stop();
    const std::vector<sweep::TrialResult> trials = results();
    m_transfer = sweep::analyzeTransfer(trials, kLrKey, kWidthKey);
    const std::vector<SweepPanelData> panels = groupSweepPoints(trials, m_parametrizations);
    m_chart->setResults(panels, m_transfer);
    m_heatmap->setResults(panels);
    m_parallel->setResults(trials, m_keys);
    m_transferButton->setEnabled(m_hasBase && std::isfinite(proxyBestLog2Lr(nullptr)));
    updateHeader();
    for (int i = 0; i < m_chart->panelCount(); ++i)
        m_chart->panel(i)->replot(QCustomPlot::rpImmediateRefresh);
    for (int i = 0; i < m_heatmap->mapCount(); ++i)
        m_heatmap->plot(i)->replot(QCustomPlot::rpImmediateRefresh);
    // Hundreds of polylines: drawn when its tab is in front (it catches up when shown).
    if (m_parallel->isVisible()) m_parallel->plot()->replot(QCustomPlot::rpImmediateRefresh);
}

void SweepsTab::showError(const QString& message) {
    m_header->setText(QStringLiteral("<span style='color:#d62728'><b>%1</b><br>%2</span>")
                          .arg(tr("The sweep did not start:"),
                               message.toHtmlEscaped().replace('\n', QStringLiteral("<br>"))));
}

void SweepsTab::updateHeader() {
    if (m_title.isEmpty()) return;
    std::map<std::string, int> counts;
    for (const auto& [i, t] : m_results) ++counts[sweep::trialStatusName(t.status)];
    QStringList tally;
    for (const auto& [status, n] : counts)
        tally << QStringLiteral("%1 %2").arg(n).arg(QString::fromStdString(status));
    if (!m_running.empty()) tally << tr("%1 running").arg(m_running.size());
    if (const double eta = etaSeconds(); !std::isnan(eta))
        tally << tr("ETA %1").arg(QString::fromStdString(formatClock(eta)));
    m_header->setText(
        QStringLiteral("<b>%1</b><br>%2 — %3")
            .arg(m_title.toHtmlEscaped(), m_state.toHtmlEscaped(),
                 tally.isEmpty() ? tr("no trial finished yet") : tally.join(QStringLiteral(", "))));
    const bool live = !m_running.empty() || m_state == tr("running");
    m_progress->setVisible(live && m_planned > 0);
    m_progress->setRange(0, int(m_planned));
    m_progress->setValue(int(m_results.size()));
    m_percent->setVisible(m_progress->isVisibleTo(this));
    m_percent->setText(tr("%1 / %2 (%3%)")
                           .arg(m_results.size())
                           .arg(m_planned)
                           .arg(m_planned ? int(100 * m_results.size() / m_planned) : 0));
}

}  // namespace ws::ui
