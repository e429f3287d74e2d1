// MainWindow's sweep wiring (see main_window.h): Run Sweep plans the document's sweep with the
// engine, times a few steps of each trial shape (engine/sweep/eta.h) and asks first, saying how
// many trials and how long they will take, then hands it to the SweepController; the
// controller's events feed the Sweeps tab, the Runs dock and the Log. Kept apart from
// main_window.cpp so the shell stays a list of connections per concept.
#include <QAction>
#include <QApplication>
#include <QDir>
#include <QDoubleSpinBox>
#include <QEventLoop>
#include <QFileInfo>
#include <QMessageBox>
#include <QPushButton>
#include <QSpinBox>
#include <QTabWidget>
#include <QTextDocumentFragment>
#include <QTimer>
#include <algorithm>
#include <cmath>
#include <future>

#include "engine/core/units.h"
#include "engine/session/events.h"
#include "engine/session/folder_lock.h"
#include "engine/store/run_store.h"
#include "engine/sweep/eta.h"
#include "engine/sweep/space.h"
#include "ui/common/status_panel.h"
#include "ui/config/config_document.h"
#include "ui/config/config_tab.h"
#include "ui/shell/failure_banner.h"
#include "ui/shell/log_dock.h"
#include "ui/shell/main_window.h"
#include "ui/shell/run_controller.h"
#include "ui/shell/runs_dock.h"
#include "ui/sweeps/coord_check_view.h"
#include "ui/sweeps/sweep_controller.h"
#include "ui/sweeps/sweeps_tab.h"
#include "ui/sweeps/transfer_dialog.h"

namespace ws::ui {
namespace {

// What the confirmation says: the trials, their steps, how many at once and how long.
QString sweepQuestion(const sweep::SweepPlan& plan,
                      const Result<sweep::SweepCalibration>& calibration) {
    int64_t steps = 0;
    for (const auto& t : plan.trials)
        steps = std::max<int64_t>(steps, t.config.config.runconfig.maxSteps);
    QString text;
    if (plan.needsConfirmation) text += QString::fromStdString(plan.confirmationMessage) + "\n\n";
    const QString trials = plan.sweep.seeds > 1 ? QObject::tr("%1 trials (%2 points × %3 seeds)")
                                                      .arg(plan.trials.size())
                                                      .arg(plan.points)
                                                      .arg(plan.sweep.seeds)
                                                : QObject::tr("%1 trials").arg(plan.trials.size());
    text += QObject::tr("Run %1 of %2 steps, %3 at a time?")
                .arg(trials)
                .arg(steps)
                .arg(std::min<size_t>(size_t(std::max(1, plan.sweep.parallelTrials)),
                                      std::max<size_t>(1, plan.trials.size())));
    if (calibration.ok()) {
        const size_t shapes = calibration->secondsPerStep.size();
        text += "\n\n" + QObject::tr(
                             "Estimated time: %1 (from a few timed steps of each of the "
                             "%2 model shape(s) on this machine; the Sweeps tab "
                             "refines it as the trials run).")
                             .arg(QString::fromStdString(formatRoughDuration(
                                 sweep::estimateSweepSeconds(plan, *calibration))))
                             .arg(shapes);
    } else {
        text += "\n\n" + QObject::tr("The time could not be estimated: %1")
                             .arg(QString::fromStdString(calibration.error().message));
    }
    return text;
}

}  // namespace

void MainWindow::wireSweeps() {
    // The status bar shows the sweep (trials done, ETA) from its start, not the last run's step.
    auto showSweepStatus = [this](const QString& state) {
        m_statusPanel->showSweep(state, m_sweepsTab->results().size(), m_sweepsTab->plannedTrials(),
                                 m_sweepsTab->etaSeconds());
    };
    connect(m_sweeps, &SweepController::started, this,
            [this, showSweepStatus](const sweep::SweepPlan& plan) {
                m_failures->dismiss();
                m_sweepsTab->beginSweep(plan);
                showSweepStatus(tr("Sweep running"));
                updateActions();
            });
    connect(m_sweeps, &SweepController::trialStarted, this,
            [this](const sweep::TrialStarted& trial) {
                m_sweepsTab->noteTrialStarted(trial);
                m_runsDock->refresh();  // the trial's run now exists
            });
    connect(m_sweeps, &SweepController::trialProgress, this,
            [this, showSweepStatus](const std::vector<sweep::TrialProgress>& batch) {
                m_sweepsTab->noteProgress(batch);
                showSweepStatus(tr("Sweep running"));
            });
    connect(m_sweeps, &SweepController::trialFinished, this,
            [this, showSweepStatus](const sweep::TrialResult& result) {
                m_sweepsTab->addResult(result);
                showSweepStatus(tr("Sweep running"));
                m_runsDock->refresh();
            });
    connect(m_sweeps, &SweepController::logLine, m_logDock, &LogDock::append);
    connect(m_sweeps, &SweepController::finished, this, [this](const sweep::SweepOutcome& out) {
        m_sweepsTab->endSweep(out);
        m_statusPanel->showSweep(tr("Sweep %1").arg(QString::fromStdString(out.status)),
                                 m_sweepsTab->results().size(), m_sweepsTab->plannedTrials(),
                                 std::nan(""));
        m_runsDock->refresh();
        QString message = tr("sweep %1 %2 in %3 s (%4 trials with a result)")
                              .arg(out.sweepRunId)
                              .arg(QString::fromStdString(out.status))
                              .arg(out.elapsedSec, 0, 'f', 1)
                              .arg(out.trials.size());
        if (out.status == "stopped")
            message += tr("; select it in Runs and choose Resume Run to continue");
        if (!out.detail.empty()) message += ": " + QString::fromStdString(out.detail);
        m_logDock->append(int(out.status == "failed" ? session::LogLine::Level::Error
                                                     : session::LogLine::Level::Info),
                          message);
        // A sweep whose every trial failed (its data missing, say) failed as a whole too
        const bool allTrialsFailed =
            !out.trials.empty() &&
            std::all_of(out.trials.begin(), out.trials.end(), [](const sweep::TrialResult& t) {
                return t.status == sweep::TrialStatus::Failed;
            });
        // (the engine records it as failed; the first trial's reason names the key to fix).
        if (allTrialsFailed) {
            m_failures->showFailure(
                tr("Sweep %1: all %n trial(s) failed", nullptr, int(out.trials.size()))
                    .arg(out.sweepRunId),
                tr("trial %1: %2")
                    .arg(out.trials.front().trial)
                    .arg(QString::fromStdString(out.trials.front().reason)),
                m_document->canRun() && m_document->config().sweep.has_value());
        } else if (out.status == "failed") {
            m_failures->showFailure(
                tr("Sweep %1 failed").arg(out.sweepRunId),
                out.detail.empty() ? message : QString::fromStdString(out.detail), false);
        }
        updateActions();
    });
    connect(m_sweepsTab, &SweepsTab::transferRequested, this, [this] {
        double width = 0.0;
        const double best = m_sweepsTab->proxyBestLog2Lr(&width);
        const config::Config* proxy = m_sweepsTab->mupProxy();
        if (!proxy || !std::isfinite(best)) return;
        const QString dir = m_document->filePath().isEmpty()
                                ? QDir::homePath()
                                : QFileInfo(m_document->filePath()).absolutePath();
        TransferDialog dialog(*proxy, int(width), best,
                              dir + QStringLiteral("/mutransfer-target.yaml"), this);
        if (dialog.exec() != QDialog::Accepted) return;
        m_logDock->append(int(session::LogLine::Level::Info),
                          tr("μTransfer: wrote %1 (width %2, learning rate 2^%3)")
                              .arg(dialog.outputPath())
                              .arg(dialog.targetWidth()->value())
                              .arg(dialog.log2Lr()->value()));
        if (maybeSave()) openConfig(dialog.outputPath());
    });
    // The coord check runs on the Config tab's config (its sweep: section, if any, ignored).
    CoordCheckView* coord = m_sweepsTab->coordCheck();
    connect(coord, &CoordCheckView::runRequested, this, [this, coord] {
        m_configTab->applyPendingYaml();
        if (!m_document->canRun()) {
            m_tabs->setCurrentWidget(m_configTab);
            return;
        }
        config::Config base = m_document->config();
        base.sweep.reset();
        mup::CoordCheckOptions options;
        options.threshold = 0.3;  // as `wafer coord-check` (coord_check.h says why)
        coord->runOn(base, options);
    });
    connect(coord, &CoordCheckView::finished, this, [this](bool ok, const QString& message) {
        m_logDock->append(
            int(ok ? session::LogLine::Level::Info : session::LogLine::Level::Error),
            tr("coord check: %1").arg(QTextDocumentFragment::fromHtml(message).toPlainText()));
    });
    // A sweep selected in Runs (while none is running) is shown in the Sweeps tab.
    connect(m_runsDock, &RunsDock::selectionChanged, this, [this](const std::vector<int64_t>& ids) {
        if (ids.size() != 1 || !m_store || m_sweeps->isActive()) return;
        auto run = m_store->getRun(ids.front());
        if (!run.ok() || run->kind != "sweep") return;
        QString error;
        if (!m_sweepsTab->showStoredSweep(m_store.get(), ids.front(), &error))
            reportSweepError(error);
    });
}

void MainWindow::reportSweepError(const QString& message) {
    for (const QString& line : message.split('\n', Qt::SkipEmptyParts))
        m_logDock->append(int(session::LogLine::Level::Error), line);
    m_sweepsTab->showError(message);
    m_tabs->setCurrentWidget(m_sweepsTab);
}

bool MainWindow::refuseSweep(const QString& headline, const QString& message, bool aboutDocument) {
    reportSweepError(message);
    m_failures->showFailure(headline, message, aboutDocument);
    return false;
}

bool MainWindow::startSweep() {
    if (m_estimatingSweep) return false;  // asked already: the question is coming
    const QString refused = tr("The sweep could not start");
    if (m_controller->isActive() || m_sweeps->isActive()) {
        reportStartRefused(refused, tr("a run or sweep is active; stop it before starting a sweep"),
                           false);
        return false;
    }
    m_configTab->applyPendingYaml();
    if (!m_document->canRun()) {
        QStringList problems;
        for (const auto& p : m_document->problems()) problems << p.message;
        reportStartRefused(refused, problems.join('\n'), true);
        m_tabs->setCurrentWidget(m_configTab);
        return false;
    }
    // A sweep file naming its base config is combined with that config by the engine, from
    // the saved file (the same as `wafer sweep FILE`).
    Result<config::LoadedConfig> definition = Error{""};
    const auto& sweepSection = m_document->config().sweep;
    if (!sweepSection) {
        return refuseSweep(refused,
                           tr("the config has no sweep: section; open a sweep (e.g. the "
                              "mup-sweep preset) or add one"),
                           true);
    }
    if (!sweepSection->base.empty()) {
        // The engine reads the saved file; an untitled document is saved (Save As) first.
        if ((m_document->isModified() || m_document->isUntitled()) && !save()) return false;
        definition = sweep::loadSweepFile(m_document->filePath().toStdString());
    } else {
        definition = m_document->loadedConfig();
    }
    if (!definition.ok())
        return refuseSweep(refused, QString::fromStdString(definition.error().message), true);
    auto plan = sweep::planSweep(*definition);
    if (!plan.ok()) {
        return refuseSweep(
            refused,
            tr("the sweep cannot be planned:\n") + QString::fromStdString(plan.error().message),
            true);
    }
    sweep::RunnerOptions options;
    options.dbPath = m_dbPath.toStdString();
    // How long it will take, from a few timed steps of each shape: on a helper thread, the
    // window kept live meanwhile (Run Sweep is refused until the answer is in).
    m_estimatingSweep = true;
    updateActions();
    m_statusPanel->showPreparing(0.0, tr("timing a few steps of each trial shape…"));
    QApplication::setOverrideCursor(Qt::BusyCursor);
    auto timing = std::async(std::launch::async, [&plan] {
        return sweep::calibrateSweep(*plan, sweep::CalibrationOptions{});
    });
    {
        QEventLoop wait;
        QTimer poll;
        connect(&poll, &QTimer::timeout, &wait, [&] {
            if (timing.wait_for(std::chrono::seconds(0)) == std::future_status::ready) wait.quit();
        });
        poll.start(20);
        wait.exec(QEventLoop::ExcludeUserInputEvents);
    }  // the poll ends here: the future is consumed below
    const Result<sweep::SweepCalibration> calibration = timing.get();
    QApplication::restoreOverrideCursor();
    m_statusPanel->clear();
    m_estimatingSweep = false;
    updateActions();
    const QString question = sweepQuestion(*plan, calibration);
    m_logDock->append(int(session::LogLine::Level::Info),
                      tr("sweep: %1").arg(QString(question).replace('\n', ' ')));
    if (!(m_confirmSweep ? m_confirmSweep(question) : askToRunSweep(question))) return false;
    options.confirmed = true;
    m_sweepsTab->setCalibration(calibration.ok() ? std::optional(*calibration) : std::nullopt);
    QString error;
    if (!m_sweeps->start(std::move(plan).value(), options, &error))
        return refuseSweep(refused, error, true);
    m_tabs->setCurrentWidget(m_sweepsTab);
    updateActions();
    return true;
}

bool MainWindow::askToRunSweep(const QString& question) {
    QMessageBox box(QMessageBox::Question, tr("Run the sweep?"), question, QMessageBox::Cancel,
                    this);
    box.setObjectName(QStringLiteral("sweepConfirmBox"));
    QPushButton* run = box.addButton(tr("Run Sweep"), QMessageBox::AcceptRole);
    run->setObjectName(QStringLiteral("runSweepButton"));
    box.setDefaultButton(run);
    box.exec();
    return box.clickedButton() == run;
}

bool MainWindow::resumeSweep(int64_t sweepRunId) {
    const QString refused = tr("Sweep %1 could not resume").arg(sweepRunId);
    if (m_controller->isActive() || m_sweeps->isActive()) {
        reportStartRefused(
            refused,
            tr("a run or sweep is active; stop it before resuming sweep %1").arg(sweepRunId),
            false);
        return false;
    }
    sweep::RunnerOptions options;
    options.dbPath = m_dbPath.toStdString();
    options.confirmed = true;  // it was confirmed when it started
    QString error;
    if (!m_sweeps->resume(sweepRunId, options, &error)) return refuseSweep(refused, error, false);
    m_tabs->setCurrentWidget(m_sweepsTab);
    updateActions();
    return true;
}

bool MainWindow::isStoppedSweep(int64_t runId) const {
    if (!m_store) return false;
    auto run = m_store->getRun(runId);
    if (!run.ok() || run->kind != "sweep") return false;
    const std::string status = session::shownRunStatus(run->status, run->modelDir);
    return status != "finished" && status != "running";  // stopped, failed or interrupted
}

}  // namespace ws::ui
