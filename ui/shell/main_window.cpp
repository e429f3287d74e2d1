// SPDX-License-Identifier: GPL-3.0-or-later
// MainWindow: see main_window.h. Wiring only; each behaviour lives in its own class.
#include "ui/shell/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QSettings>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>
#include <algorithm>

#include "engine/core/paths.h"
#include "engine/finetune/finetune_plan.h"
#include "engine/model/model_facts.h"
#include "engine/session/chat_run_data.h"
#include "engine/session/folder_lock.h"
#include "engine/session/run_control.h"
#include "engine/store/run_store.h"
#include "engine/store/store_recovery.h"
#include "ui/answers/answers_tab.h"
#include "ui/chat/chat_tab.h"
#include "ui/cluster/cluster_controller.h"
#include "ui/cluster/cluster_job.h"
#include "ui/cluster/slurm_job.h"
#include "ui/common/run_controller.h"
#include "ui/common/status_panel.h"
#include "ui/common/store_follower.h"
#include "ui/config/config_document.h"
#include "ui/config/config_tab.h"
#include "ui/config/yaml_editor.h"
#include "ui/lessons/lessons_panel.h"
#include "ui/samples/finetune_wizard.h"
#include "ui/samples/samples_tab.h"
#include "ui/shell/config_files.h"
#include "ui/shell/failure_banner.h"
#include "ui/shell/help_browser.h"
#include "ui/shell/log_dock.h"
#include "ui/shell/resume_dialog.h"
#include "ui/shell/runs_dock.h"
#include "ui/shell/screen_fit.h"
#include "ui/shell/store_recovery_dialog.h"
#include "ui/shell/studio_actions.h"
#include "ui/shell/studio_lesson_host.h"
#include "ui/sweeps/sweep_controller.h"
#include "ui/sweeps/sweep_presenter.h"
#include "ui/sweeps/sweeps_tab.h"
#include "ui/teaching/auto_step.h"
#include "ui/teaching/presenter_mode.h"
#include "ui/teaching/teaching.h"
#include "ui/training/training_tab.h"
#include "ui/wafer/wafer_tab.h"

namespace ws::ui {
MainWindow::MainWindow(const QString& dbPath, QWidget* parent)
    : QMainWindow(parent), m_dbPath(dbPath) {
    setObjectName(QStringLiteral("MainWindow"));
    setAcceptDrops(true);
    setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks);
    m_document = new ConfigDocument(this);
    m_controller = new RunController(this);
    m_teaching = new Teaching(this, m_controller);
    createTabs();
    m_files = new ConfigFiles(m_document, m_configTab, this);
    m_sweeps = new SweepController(this);
    // The narration line sits above the tabs, where the whole room sees it whichever tab shows.
    auto* central = new QWidget(this);
    auto* centralLayout = new QVBoxLayout(central);
    centralLayout->setContentsMargins(0, 0, 0, 0);
    centralLayout->setSpacing(0);
    centralLayout->addWidget(m_teaching->createNarrationLine(central));
    // Why a run did not start or failed, where the user is looking whichever tab shows.
    m_failures = new FailureBanner(central);
    centralLayout->addWidget(m_failures);
    centralLayout->addWidget(m_tabs, 1);
    setCentralWidget(central);
    connect(m_teaching, &Teaching::statusMessage, statusBar(), &QStatusBar::showMessage);
    createDocks();
    createActions();
    createMenus();
    openStore();

    // Wiring: document -> actions/title; controller -> charts, status, log, runs.
    wireDocument();
    wireFiles();
    wireRunController();
    wireRunsDock();
    wireSweeps();
    followStore();
    wireCluster();

    restoreWindowState();
    updateActions();
    m_files->updateTitle();
}

void MainWindow::createTabs() {
    m_tabs = new QTabWidget(this);
    m_tabs->setObjectName(QStringLiteral("mainTabs"));
    m_tabs->setDocumentMode(true);
    m_configTab = new ConfigTab(m_document, m_tabs);
    m_configTab->setObjectName(QStringLiteral("configTab"));
    m_trainingTab = new TrainingTab(m_tabs);
    m_trainingTab->setObjectName(QStringLiteral("trainingTab"));
    m_tabs->addTab(m_configTab, tr("Config"));
    m_tabs->addTab(m_trainingTab, tr("Training"));
    m_waferTab = new WaferTab(m_tabs);  // "waferTab"
    m_tabs->addTab(m_waferTab, tr("Wafer"));
    m_samplesTab = new SamplesTab(m_tabs);
    m_samplesTab->setObjectName(QStringLiteral("samplesTab"));
    m_tabs->addTab(m_samplesTab, tr("Samples"));
    // Panes are titled as the Runs dock names the runs; the shipped base is no run.
    m_samplesTab->setModelNamer([this](const QString& path) {
        const QFileInfo shipped(FinetuneWizard::shippedBaseModel());
        if (shipped.exists() && QFileInfo(path).canonicalFilePath() == shipped.canonicalFilePath())
            return tr("shipped base model");
        return runTitleForModel(path, m_store.get());
    });
    m_chatTab = new ChatTab(m_tabs);
    m_chatTab->setObjectName(QStringLiteral("chatTab"));
    m_tabs->addTab(m_chatTab, tr("Chat"));
    m_sweepsTab = new SweepsTab(m_tabs);  // "SweepsTab"
    m_tabs->addTab(m_sweepsTab, tr("Sweeps"));
    // Held-out answers of a chat fine-tune, base and checkpoints side by side.
    m_answersTab = new AnswersTab(m_tabs);
    m_answersTab->setObjectName(QStringLiteral("answersTab"));
    m_answersTab->setDbPath(m_dbPath);
    m_tabs->addTab(m_answersTab, tr("Answers"));
}

void MainWindow::createDocks() {
    m_runsDock = new RunsDock(this);  // "RunsDock"
    addDockWidget(Qt::LeftDockWidgetArea, m_runsDock);
    m_logDock = new LogDock(this);  // "LogDock"
    addDockWidget(Qt::BottomDockWidgetArea, m_logDock);
    m_statusPanel = new StatusPanel(this);
    m_statusPanel->setObjectName(QStringLiteral("statusPanel"));
    statusBar()->addPermanentWidget(m_statusPanel, 1);
    StudioLessonHost::Pieces pieces;
    pieces.controller = m_controller;
    pieces.autoStep = m_teaching->autoStep();
    pieces.document = m_document;
    pieces.configTab = m_configTab;
    pieces.trainingTab = m_trainingTab;
    pieces.sweepsTab = m_sweepsTab;
    pieces.sweeps = m_sweeps;
    pieces.runsDock = m_runsDock;
    pieces.answersTab = m_answersTab;
    pieces.chatTab = m_chatTab;
    m_teaching->createLessonsDock(new StudioLessonHost(this, pieces));
}

bool MainWindow::startLessonRun(const config::LoadedConfig& config, session::SessionOptions options,
                                bool paused) {
    if (m_sweeps->isActive()) {
        reportStartRefused(tr("The lesson's run could not start"),
                           tr("a sweep is running; stop it before a lesson's run"), false);
        return false;
    }
    // The lesson's run name ("lesson: ..., step 2") tells a dense run from a sparse one on the
    // loss chart, where every run of the lesson's preset has the same model name.
    const QString title = QString::fromStdString(options.runName.empty() ? config.config.model.name
                                                                         : options.runName);
    return launchRun(config, std::move(options), {title}, paused);
}

void MainWindow::showLessonStart(const config::Config& config, const QString& lessonTitle) {
    if (m_controller->isActive() || m_sweeps->isActive() || m_cluster->isActive()) return;
    QString error;
    if (!m_waferTab->showPlannedRun(config, tr("“%1”").arg(lessonTitle), &error,
                                    tr("The lesson's preset")) &&
        !error.isEmpty())
        m_logDock->append(int(session::LogLine::Level::Warning), error);
}

void MainWindow::openStore() {
    const std::filesystem::path db = m_dbPath.isEmpty()
                                         ? store::RunStore::defaultPath()
                                         : std::filesystem::path(m_dbPath.toStdString());
    m_storePath = db;
    auto opened = store::RunStore::open(db);
    if (opened.ok()) {
        m_store = std::move(opened).value();
        m_runsDock->setStore(m_store.get());
        m_chatTab->setRunStore(m_store.get(), QString::fromStdString(db.string()));
    } else {
        const QString message = QString::fromStdString(opened.error().message);
        m_logDock->append(int(session::LogLine::Level::Error), message);
        // A store that does not open is never shown as an empty list: the Runs dock says so,
        // and a damaged one is offered the routes back once the window is up.
        m_runsDock->showStoreProblem(
            tr("The run store could not be opened, so no runs are listed: %1")
                .arg(message.section(QLatin1Char('\n'), 0, 0)),
            false);
        QTimer::singleShot(0, this, [this] { offerRecoveryIfDamaged(); });
    }
}

void MainWindow::wireDocument() {
    connect(m_document, &ConfigDocument::changed, this, &MainWindow::updateActions);
    connect(m_document, &ConfigDocument::fileChanged, m_files, &ConfigFiles::updateTitle);
    connect(m_document, &ConfigDocument::note, this, [this](const QString& message) {
        m_logDock->append(int(session::LogLine::Level::Info), message);
    });
}

void MainWindow::wireRunController() {
    connect(m_controller, &RunController::metrics, this,
            [this](const std::vector<session::StepMetrics>& batch) {
                m_trainingTab->appendLive(batch);
                m_statusPanel->showMetrics(batch.back());
            });
    connect(m_controller, &RunController::metrics, m_waferTab, &WaferTab::appendMetrics);
    // Drill-down: a chart point of the run trained here opens that step on the Wafer tab
    // (StepMetrics steps count from 1, the Wafer tab's from 0).
    m_trainingTab->setStepInspector([this](int64_t step) { return m_waferTab->hasStep(step - 1); });
    connect(m_trainingTab, &TrainingTab::inspectStepRequested, this, [this](int64_t step) {
        m_tabs->setCurrentWidget(m_waferTab);
        m_waferTab->showStep(step - 1);
    });
    connect(m_controller, &RunController::spans, m_waferTab, &WaferTab::appendSpans);
    connect(m_controller, &RunController::emulatedStep, m_waferTab, &WaferTab::addEmulatedStep);
    connect(m_controller, &RunController::logLine, m_logDock, &LogDock::append);
    connect(m_controller, &RunController::logLine, m_waferTab, &WaferTab::noteLog);
    connect(m_controller, &RunController::prepareProgress, m_statusPanel,
            &StatusPanel::showPreparing);
    connect(m_controller, &RunController::stateChanged, this,
            [this](session::RunState state, const QString& detail) {
                m_statusPanel->showState(state, detail);
                m_waferTab->setRunState(state);
                if (state == session::RunState::Running) m_runsDock->refresh();
                updateActions();
            });
    connect(m_controller, &RunController::finished, this, &MainWindow::onRunFinished);
    connect(m_failures, &FailureBanner::showKeyRequested, this, [this](const QString& key) {
        m_tabs->setCurrentWidget(m_configTab);
        m_configTab->showField(key);
    });
    connect(m_failures, &FailureBanner::showLogRequested, this, [this] {
        m_logDock->show();
        m_logDock->raise();
    });
}

void MainWindow::reportStartRefused(const QString& headline, const QString& message,
                                    bool aboutDocument) {
    m_logDock->append(int(session::LogLine::Level::Error), message);
    m_failures->showFailure(headline, message, aboutDocument);
}

void MainWindow::onRunFinished(const session::RunSummary& s) {
    m_failures->runEnded(s);  // a failure is shown above the tabs, not only as "Failed" below
    m_trainingTab->adoptLiveRun(s.runId);  // no longer "(now)"; numbered when runId > 0
    m_waferTab->setLiveRunId(s.runId);     // its recorded steps are the tab's, not a plan
    if (!s.modelDir.empty()) {
        m_samplesTab->setModelPath(QString::fromStdString(s.modelDir.string()));
        m_answersTab->setModelPath(0, QString::fromStdString(s.modelDir.string()));
    }
    m_chatTab->reloadModels();  // the new run (a chat fine-tune) can be chatted with
    m_runsDock->refresh();
    if (m_finetuneRunning) {
        m_finetuneRunning = false;
        if (s.state != session::RunState::Failed) {
            // The fine-tune's before/after, where the user looks next: the Log and Samples
            // (the status bar's left is the run panel's, so a message there stays hidden).
            const QString change = QString::fromStdString(finetune::describeEvalChange(
                s.initialEvalLoss, s.finalEvalLoss, m_finetuneLossCounts));
            const QString line = tr("Fine-tune %1 after %2 steps: %3")
                                     .arg(QString::fromStdString(session::runStateName(s.state)))
                                     .arg(s.steps)
                                     .arg(change);
            m_logDock->append(int(session::LogLine::Level::Info), line);
            if (m_finetuneOnRecords && !s.modelDir.empty()) {
                // The Chat tab talks to the fine-tune (a chat model now), not the shipped base.
                m_chatTab->setModelPath(QString::fromStdString(s.modelDir.string()));
                m_logDock->append(int(session::LogLine::Level::Info),
                                  tr("Chat with it on the Chat tab; Check answers on the Answers "
                                     "tab asks it and its base the held-out questions."));
            }
            m_samplesTab->setNote(tr("%1. Generate shows the fine-tuned model beside its base, "
                                     "continuing words of your held-out text.")
                                      .arg(line));
        }
    }
    // A failure's detail is the error the session has just logged: once is enough.
    if (!s.detail.empty() && s.state != session::RunState::Failed) {
        m_logDock->append(int(session::LogLine::Level::Info), QString::fromStdString(s.detail));
    }
    updateActions();
}

void MainWindow::wireRunsDock() {
    connect(m_runsDock, &RunsDock::selectionChanged, this, [this](const std::vector<int64_t>& ids) {
        m_trainingTab->setOverlayRuns(ids, m_store.get());
        if (ids.size() == 1 && m_store) {
            if (auto run = m_store->getRun(ids.front()); run.ok() && !run->modelDir.empty()) {
                m_samplesTab->setModelPath(QString::fromStdString(run->modelDir));
                m_answersTab->setModelPath(0, QString::fromStdString(run->modelDir));
            }
        }
    });
    connect(m_runsDock, &RunsDock::selectionChanged, this, &MainWindow::updateActions);
    // One stored run selected while nothing trains: the Wafer tab shows (and can replay) the
    // step its config plans; the run trained in this window keeps its recorded steps.
    connect(m_runsDock, &RunsDock::selectionChanged, this, [this](const std::vector<int64_t>& ids) {
        if (ids.size() != 1 || !m_store || m_controller->isActive() || m_sweeps->isActive() ||
            m_cluster->isActive())
            return;
        auto run = m_store->getRun(ids.front());
        if (!run.ok() || run->kind == "sweep") return;
        QString error;
        if (!m_waferTab->showStoredRun(run->id, QString::fromStdString(run->name), run->configYaml,
                                       &error, m_store.get()) &&
            !error.isEmpty())
            m_logDock->append(int(session::LogLine::Level::Warning), error);
    });
    // The status bar follows the selection while nothing trains: the run selected, or nothing.
    connect(m_runsDock, &RunsDock::selectionChanged, this, [this](const std::vector<int64_t>& ids) {
        if (m_controller->isActive() || m_sweeps->isActive()) return;
        auto run = ids.size() == 1 && m_store ? m_store->getRun(ids.front())
                                              : Result<store::RunInfo>(Error{"no single run"});
        if (!run.ok()) {
            m_statusPanel->clear();
            return;
        }
        m_statusPanel->showStoredRun(
            tr("run %1 “%2”").arg(run->id).arg(QString::fromStdString(run->name)),
            QString::fromStdString(session::shownRunStatus(run->status, run->modelDir)),
            run->summaryJson);
    });
    connect(m_runsDock, &RunsDock::resumeRequested, this, &MainWindow::resumeRun);
    m_runsDock->setResumeCheck([this](int64_t id) { return canResumeNow(id); });
    connect(m_runsDock, &RunsDock::openConfigRequested, this,
            [this](const QString& yaml, const QString& runName) {
                if (!maybeSave()) return;
                // Its own untitled document: saving must not write it over the open file.
                m_document->setUntitled(yaml, tr("config of %1").arg(runName));
                m_tabs->setCurrentWidget(m_configTab);
            });
    connect(m_runsDock, &RunsDock::errorOccurred, this, [this](const QString& message) {
        m_logDock->append(int(session::LogLine::Level::Error), message);
    });
    // A list that could not be read may be a damaged file: checked, and recovery offered.
    connect(m_runsDock, &RunsDock::readFailed, this,
            [this] { QTimer::singleShot(0, this, [this] { offerRecoveryIfDamaged(); }); });
    connect(m_runsDock, &RunsDock::recoverRequested, this, [this] {
        // Mended or moved away since it was found damaged: open what is there now.
        if (store::checkStore(m_storePath).state == store::StoreHealth::State::Damaged)
            offerRecoveryIfDamaged();
        else if (!m_store)
            reopenStore();
    });
}

void MainWindow::followStore() {
    // Runs written by other processes (`wafer train --db`, sweeps) appear, change status and
    // grow on the charts while the studio is open.
    m_follower = new StoreFollower(this);
    m_follower->setObjectName(QStringLiteral("storeFollower"));
    m_follower->setTailRequests([this] { return m_trainingTab->followRequests(); });
    connect(m_follower, &StoreFollower::runsChanged, m_runsDock, &RunsDock::showRuns);
    connect(m_follower, &StoreFollower::metricsArrived, m_trainingTab, &TrainingTab::appendStored);
    connect(m_follower, &StoreFollower::readFailed, this, [this](const QString& message) {
        m_logDock->append(int(session::LogLine::Level::Error), message);
        offerRecoveryIfDamaged();  // damaged under the studio (by another program)
    });
    m_follower->setStore(m_store.get());
}

void MainWindow::restoreWindowState() {
    QSettings settings;
    // 1400 x 900, or the screen less its panels on a laptop; a saved geometry only when it
    // still fits the screen (it may come from a larger one).
    auto* fit = new ScreenFit(this, QSize(1400, 900));
    fit->restoreOrFit(settings.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    if (!settings.contains(QStringLiteral("window/state"))) {
        // First start: a slim log and a runs list wide enough for names and losses, but not
        // more than a fifth of the window (at 1400 px the Wafer tab needs the room). Applied
        // once the window has its size, or the docks keep their minimum sizes.
        QTimer::singleShot(0, this, [this] {
            resizeDocks({m_runsDock}, {std::min(440, width() / 5)}, Qt::Horizontal);
            resizeDocks({m_logDock}, {130}, Qt::Vertical);
        });
    }
    m_tabs->setCurrentIndex(settings.value(QStringLiteral("window/tab"), 0).toInt());
}

MainWindow::~MainWindow() {
    m_follower->stop();  // its poll reads m_store, which goes before the child objects
    // ~QWidget closes the window, taking the focus from a form field; its commit must not reach
    // updateActions, which reads m_store (already destroyed by then).
    disconnect(m_document, nullptr, this, nullptr);
}

void MainWindow::createActions() {
    m_actions = StudioActions::create(this);
    m_actions.addRunToolBar(this);
    const StudioActions& a = m_actions;
    connect(a.runCluster, &QAction::triggered, this, [this] { openClusterDialog(); });
    connect(a.finetune, &QAction::triggered, this, &MainWindow::openFinetuneWizard);
    connect(a.run, &QAction::triggered, this, &MainWindow::startRun);
    // The commands act on the run this window trains, else on one another process trains (the
    // cluster job's, or the one selected in Runs) through its control requests.
    using session::ControlCommand;
    auto route = [this](void (RunController::*own)(), ControlCommand other) {
        return [this, own, other] {
            if (m_controller->isActive()) {
                (m_controller->*own)();
            } else {
                m_cluster->controlExternalRun(other);
            }
        };
    };
    connect(a.pause, &QAction::triggered, this,
            route(&RunController::pause, ControlCommand::Pause));
    connect(a.stepLayer, &QAction::triggered, this,
            route(&RunController::stepLayer, ControlCommand::StepLayer));
    connect(a.continueRun, &QAction::triggered, this,
            route(&RunController::resume, ControlCommand::Continue));
    connect(a.stop, &QAction::triggered, this, [this] {
        if (m_controller->isActive()) {
            m_controller->stop();
        } else if (m_sweeps->isActive()) {
            m_sweeps->stop();
        } else if (m_cluster->isActive()) {
            m_cluster->stopJob();
        } else {
            m_cluster->controlExternalRun(ControlCommand::Stop);
        }
    });
    connect(a.runSweep, &QAction::triggered, this, &MainWindow::startSweep);
    connect(a.checkpoint, &QAction::triggered, this,
            route(&RunController::requestCheckpoint, ControlCommand::Checkpoint));
    connect(a.resumeRun, &QAction::triggered, this, [this] {
        const auto ids = m_runsDock->selectedRunIds();
        if (ids.size() == 1) resumeRun(ids.front());
    });
    connect(a.open, &QAction::triggered, m_files, &ConfigFiles::openDialog);
    connect(a.save, &QAction::triggered, m_files, &ConfigFiles::save);
    connect(a.saveAs, &QAction::triggered, m_files, &ConfigFiles::saveAs);
    connect(a.quit, &QAction::triggered, this, &QWidget::close);
    YamlEditor* editor = m_configTab->yamlEditor();
    connect(a.undo, &QAction::triggered, editor, &QPlainTextEdit::undo);
    connect(editor, &QPlainTextEdit::undoAvailable, a.undo, &QAction::setEnabled);
    connect(a.redo, &QAction::triggered, editor, &QPlainTextEdit::redo);
    connect(editor, &QPlainTextEdit::redoAvailable, a.redo, &QAction::setEnabled);
    // The editor has its own Ctrl+Z while focused; the menu actions cover the form too.
    for (QAction* action : {a.undo, a.redo}) {
        action->setShortcutContext(Qt::WidgetWithChildrenShortcut);
        m_configTab->addAction(action);
    }
}

void MainWindow::createMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QMenu* presets = file->addMenu(tr("&New from Preset"));
    const QDir presetDir(QString::fromStdString((appDataDir() / "presets").string()));
    for (const QFileInfo& info :
         presetDir.entryInfoList({QStringLiteral("*.yaml")}, QDir::Files, QDir::Name)) {
        presets->addAction(info.completeBaseName(), this, [this, path = info.absoluteFilePath()] {
            m_files->newFromPreset(path);
        });
    }
    presets->setEnabled(!presets->isEmpty());
    file->addAction(m_actions.open);
    m_files->setRecentMenu(file->addMenu(tr("Open &Recent")));
    file->addSeparator();
    file->addAction(m_actions.save);
    file->addAction(m_actions.saveAs);
    file->addSeparator();
    file->addAction(m_actions.quit);
    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    edit->addAction(m_actions.undo);
    edit->addAction(m_actions.redo);
    QMenu* run = menuBar()->addMenu(tr("&Run"));
    for (QAction* a : {m_actions.run, m_actions.runSweep, m_actions.pause, m_actions.continueRun,
                       m_actions.stepLayer, m_actions.stop})
        run->addAction(a);
    m_teaching->addRunMenuItems(run);
    run->addSeparator();
    run->addAction(m_actions.runCluster);
    run->addSeparator();
    for (QAction* a : {m_actions.checkpoint, m_actions.resumeRun}) run->addAction(a);
    run->addSeparator();
    run->addAction(m_actions.finetune);
    QMenu* view = menuBar()->addMenu(tr("&View"));
    view->addAction(m_runsDock->toggleViewAction());
    view->addAction(m_logDock->toggleViewAction());
    m_teaching->addViewMenuItems(view);
    view->addSeparator();
    const QStringList names = {tr("&Config"),  tr("&Training"), tr("&Wafer"),
                               tr("&Samples"), tr("C&hat"),     tr("S&weeps")};
    for (int i = 0; i < names.size(); ++i) {
        QAction* a = view->addAction(names[i], this, [this, i] { m_tabs->setCurrentIndex(i); });
        a->setShortcut(QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_1 + i)));
    }
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    QAction* guide = help->addAction(tr("Wafer Studio &Guide"), this, [this] { showHelp({}); });
    guide->setShortcut(QKeySequence::HelpContents);
    help->addAction(tr("&Lessons"), m_teaching, &Teaching::showLessons)
        ->setObjectName(QStringLiteral("lessonsAction"));
    QMenu* sections = help->addMenu(tr("Guide &Sections"));
    for (const QString& section : helpMenuSections())
        sections->addAction(section, this, [this, section] { showHelp(section); });
    help->addSeparator();
    help->addAction(tr("&About Wafer Studio"), this, [this] { showAboutBox(this); });
    help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);
}

void MainWindow::offerRecoveryIfDamaged() {
    if (m_offeringRecovery) return;
    const store::StoreHealth health = store::checkStore(m_storePath);
    if (health.state != store::StoreHealth::State::Damaged) return;
    if (m_controller->isActive() || m_sweeps->isActive()) {
        m_logDock->append(int(session::LogLine::Level::Error),
                          QString::fromStdString(store::damagedStoreAdvice(m_storePath, health)));
        return;  // its run holds the store: recovery is offered once it has ended
    }
    m_offeringRecovery = true;
    // Let go of the damaged file first: nothing may write to it while it is replaced.
    m_follower->stop();
    m_runsDock->setStore(nullptr);
    m_chatTab->setRunStore(nullptr, QString::fromStdString(m_storePath.string()));
    m_store.reset();
    const bool recovered = offerStoreRecovery(this, m_storePath, health);
    m_offeringRecovery = false;
    if (!recovered) {
        // Going on without it is allowed, but never looks like a store without runs.
        m_runsDock->showStoreProblem(
            tr("The run store %1 is damaged and not open: its runs are not listed, and new runs "
               "cannot be recorded until it is recovered. The file has not been changed.")
                .arg(QString::fromStdString(m_storePath.string())),
            true);
        return;
    }
    reopenStore();
}

void MainWindow::reopenStore() {
    auto reopened = store::RunStore::open(m_storePath);
    if (!reopened.ok()) {
        const QString message = QString::fromStdString(reopened.error().message);
        m_logDock->append(int(session::LogLine::Level::Error), message);
        m_runsDock->showStoreProblem(tr("The run store could not be opened: %1")
                                         .arg(message.section(QLatin1Char('\n'), 0, 0)),
                                     false);
        return;
    }
    m_store = std::move(reopened).value();
    m_runsDock->setStore(m_store.get());
    m_chatTab->setRunStore(m_store.get(), QString::fromStdString(m_storePath.string()));
    m_follower->setStore(m_store.get());
}

HelpBrowser* MainWindow::showHelp(const QString& section) {
    if (!m_help) m_help = new HelpBrowser(this);
    m_help->show();
    m_help->raise();
    if (!section.isEmpty()) m_help->showSection(section);
    return m_help;
}

void MainWindow::updateActions() {
    const bool active = m_controller->isActive();
    const bool sweeping = m_sweeps->isActive();
    const session::RunState state = m_controller->state();
    const bool paused = state == session::RunState::Paused;
    const bool cluster = m_cluster->isActive();
    // A run another process trains (a cluster job's, a `wafer train` beside the studio), as
    // the store shows it.
    const int64_t externalId = m_cluster->externalRun();
    const std::string external = externalId >= 0 ? m_cluster->shownStatusOf(externalId) : "";
    const bool externalRunning = external == "running";
    const bool externalPaused = external == "paused";
    m_actions.run->setEnabled(!active && !sweeping && !cluster && m_document->canRun());
    m_actions.runCluster->setEnabled(!active && !sweeping && !cluster && m_document->canRun());
    const bool hasSweep = m_document->canRun() && m_document->config().sweep.has_value();
    m_actions.runSweep->setEnabled(!active && !sweeping && !cluster && hasSweep &&
                                   !m_sweepPresenter->isEstimating());
    m_actions.runSweep->setToolTip(
        hasSweep ? tr("Run the sweep: section of the current config (Ctrl+F5)")
                 : tr("The current config has no sweep: section (see the "
                      "mup-sweep preset)"));
    m_actions.run->setToolTip(m_document->canRun()
                                  ? tr("Train the current config (F5)")
                                  : tr("Fix the problems listed in the Config tab first"));
    m_actions.pause->setEnabled((active && !paused && state != session::RunState::Preparing) ||
                                externalRunning);
    m_actions.continueRun->setEnabled((active && paused) || externalPaused);
    m_actions.stepLayer->setEnabled((active && paused) || externalPaused);
    m_actions.stop->setEnabled(active || sweeping || (cluster && !m_cluster->job()->isStopping()) ||
                               (!cluster && (externalRunning || externalPaused)));
    m_actions.finetune->setEnabled(!active && !sweeping && !cluster);
    m_actions.checkpoint->setEnabled((active && state == session::RunState::Running) ||
                                     externalRunning);
    const auto selected = m_runsDock->selectedRunIds();
    m_actions.resumeRun->setEnabled(selected.size() == 1 && canResumeNow(selected.front()));
    // One run that cannot resume says why (and how to start it again) where the button is.
    m_actions.resumeRun->setToolTip(
        selected.size() == 1 && !m_sweepPresenter->isStoppedSweep(selected.front())
            ? m_runsDock->resumeToolTip(selected.front()) + tr(" (F8)")
            : tr("Continue the run or stopped sweep selected in Runs (F8)"));
}

bool MainWindow::canResumeNow(int64_t runId) const {
    if (m_controller->isActive() || m_sweeps->isActive() || m_cluster->isActive()) return false;
    return m_runsDock->canResume(runId) || m_sweepPresenter->isStoppedSweep(runId);
}

bool MainWindow::launchRun(const config::LoadedConfig& config, session::SessionOptions options,
                           const LiveCurve& curve, bool paused) {
    options.dbPath = m_dbPath.toStdString();
    const double tokensPerStep = double(model::deriveFacts(config.config).tokensPerStep);
    const QString lossCounts =
        QString::fromStdString(session::lossCountsLabel(config.config.trainInput));
    // The failure banner offers to show the key a message names only for the Config tab's config.
    const bool fromDocument = m_document->canRun() && config.config == m_document->config();
    const QString title =
        curve.continuesRun >= 0 ? tr("run %1").arg(curve.continuesRun) : curve.title;
    QString error;
    if (!m_controller->start(config, options, &error, paused)) {
        reportStartRefused(tr("“%1” could not start").arg(title), error, fromDocument);
        return false;
    }
    m_failures->runStarting(title, fromDocument);
    if (curve.continuesRun >= 0) {
        // The stored curve up to the checkpoint, then the live points; the Wafer tab is left as
        // it was (a resumed run has always been started this way).
        m_trainingTab->continueLiveRun(curve.continuesRun, m_store.get(), curve.fromStep,
                                       tokensPerStep, lossCounts);
    } else {
        m_waferTab->beginRun(config.config);
        m_trainingTab->beginLiveRun(curve.title, tokensPerStep, lossCounts);
    }
    m_tabs->setCurrentWidget(m_trainingTab);
    updateActions();
    return true;
}

bool MainWindow::startRun() {
    if (m_sweeps->isActive()) {
        reportStartRefused(tr("The run could not start"),
                           tr("a sweep is running; stop it before starting a run"), false);
        return false;
    }
    m_configTab->applyPendingYaml();
    if (!m_document->canRun()) {
        QStringList problems;
        for (const auto& p : m_document->problems()) problems << p.message;
        reportStartRefused(tr("Run is disabled: the config has %n problem(s), listed at the "
                              "bottom of the Config tab",
                              nullptr, int(problems.size())),
                           problems.join('\n'), true);
        m_tabs->setCurrentWidget(m_configTab);
        return false;
    }
    const config::LoadedConfig loaded = m_document->loadedConfig();
    // A lesson's config: the run is named after the lesson step, as the step's own runs are.
    session::SessionOptions options;
    const QString lessonRun = m_teaching->lessons()->runNameForDocument();
    options.runName = lessonRun.toStdString();
    return launchRun(
        loaded, std::move(options),
        {lessonRun.isEmpty() ? QString::fromStdString(loaded.config.model.name) : lessonRun});
}

bool MainWindow::resumeRun(int64_t runId) {
    if (m_sweepPresenter->isStoppedSweep(runId)) return resumeSweep(runId);
    if (m_controller->isActive() || m_sweeps->isActive()) {
        reportStartRefused(tr("Run %1 could not resume").arg(runId),
                           tr("a run is training; stop it before resuming run %1").arg(runId),
                           false);
        return false;
    }
    m_configTab->applyPendingYaml();
    std::optional<config::LoadedConfig> editorConfig;
    if (m_document->canRun()) editorConfig = m_document->loadedConfig();
    const ResumeCheck check = checkResume(m_store.get(), runId, editorConfig);
    ResumeDialog dialog(check, this);
    if (dialog.exec() != QDialog::Accepted || dialog.choice() == ResumeDialog::Cancel) return false;
    const bool ownConfig = dialog.choice() == ResumeDialog::ResumeWithCheckpointConfig;
    session::SessionOptions options;
    options.resumeFrom = check.folder;
    options.allowConfigChange = dialog.choice() == ResumeDialog::ResumeAnyway;
    return launchRun(ownConfig ? *check.checkpointConfig : *check.config, options,
                     {{}, runId, check.step});
}

FinetuneWizard* MainWindow::openFinetuneWizard() {
    auto* wizard = new FinetuneWizard(m_store.get(), m_dbPath, this);
    wizard->setAttribute(Qt::WA_DeleteOnClose);
    connect(wizard, &QDialog::accepted, this, [this, wizard] {
        FinetuneChoice choice = wizard->choice();
        if (!maybeSave()) return;
        const config::Config& c = choice.config.config;
        // Its own untitled document: a later Save must not write it over the open file.
        m_document->setUntitled(QString::fromStdString(config::saveConfigYaml(c)),
                                tr("finetune of %1").arg(QString::fromStdString(c.model.name)));
        session::SessionOptions options;
        options.runName = choice.runName.toStdString();
        options.kind = "finetune";
        options.parentRun = choice.parentRun;
        options.evaluateAtStart = true;  // the base's held-out loss is the curve's first point
        // The chart's legend and Runs say the name given (or the wizard's distinct default).
        if (!launchRun(choice.config, options, {choice.runName})) return;
        // When the run finishes, Samples gets its model: base and fine-tuned side by side, from
        // a prompt of the user's own held-out text.
        if (!choice.basePath.isEmpty()) {
            m_samplesTab->setCompareModelPath(choice.basePath);
            m_answersTab->setModelPath(1, choice.basePath);
        }
        if (!choice.samplePrompt.isEmpty()) m_samplesTab->setPrompt(choice.samplePrompt);
        m_samplesTab->setNote({});
        m_finetuneRunning = true;
        m_finetuneOnRecords = session::readsRecords(choice.config.config.trainInput);
        m_finetuneLossCounts = finetune::evalLossCounts(choice.config.config.trainInput);
    });
    wizard->open();
    return wizard;
}

bool MainWindow::openStoredRun(int64_t runId) {
    auto run = m_store ? m_store->getRun(runId) : Result<store::RunInfo>(Error{"no run store"});
    if (!run.ok()) {
        m_logDock->append(int(session::LogLine::Level::Error),
                          tr("cannot open run %1: %2")
                              .arg(runId)
                              .arg(QString::fromStdString(run.error().message)));
        return false;
    }
    m_runsDock->selectRuns({runId});
    if (run->kind == "sweep") m_tabs->setCurrentWidget(m_sweepsTab);
    return true;
}

bool MainWindow::showTab(const QString& name) {
    const QString n = name.toLower();
    const int index = n == QLatin1String("config")     ? 0
                      : n == QLatin1String("training") ? 1
                      : n == QLatin1String("wafer")    ? 2
                      : n == QLatin1String("samples")  ? 3
                      : n == QLatin1String("chat")     ? 4
                      : n == QLatin1String("sweeps")   ? 5
                      : n == QLatin1String("answers")  ? m_tabs->indexOf(m_answersTab)
                                                       : -1;
    if (index < 0) return false;
    m_tabs->setCurrentIndex(index);
    return true;
}

bool MainWindow::saveScreenshot(const QString& path) {
    // Pending layout requests first, so the picture shows the settled window.
    QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
    QCoreApplication::processEvents(QEventLoop::ExcludeUserInputEvents);
    m_trainingTab->redrawNow();
    m_waferTab->redrawNow();
    m_sweepsTab->redrawNow();
    for (auto* panel : m_trainingTab->panels()) panel->replot(QCustomPlot::rpImmediateRefresh);
    return grab().save(path, "PNG");
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (!maybeSave()) {
        event->ignore();
        return;
    }
    if (m_cluster->isActive() && m_cluster->job() == m_cluster->slurmJob()) {
        // A batch job does not need the studio: it may run on.
        const auto answer = m_files->ask(
            tr("Leave the Slurm job running?"),
            tr("Slurm job %1 is in the queue or training, and does not need the studio. Yes "
               "leaves it running (Runs shows its run when the studio opens again, and Stop "
               "reaches it there); No stops it after the step in flight, with a checkpoint to "
               "resume from.")
                .arg(m_cluster->slurmJob()->jobId()),
            QMessageBox::Yes | QMessageBox::No | QMessageBox::Cancel, QMessageBox::Yes);
        if (answer == QMessageBox::Cancel) {
            event->ignore();
            return;
        }
        if (answer == QMessageBox::No) {
            m_cluster->job()->stopAndWait(60000);
        } else {
            m_cluster->slurmJob()->detach();
        }
    } else if (m_cluster->isActive()) {
        const auto answer = m_files->ask(
            tr("Stop the cluster job?"),
            tr("A cluster job is training. Quitting stops it after the step in flight, with a "
               "checkpoint to resume from."),
            QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Yes);
        if (answer != QMessageBox::Yes) {
            event->ignore();
            return;
        }
        m_cluster->job()->stopAndWait(60000);
    }
    m_controller->stop();
    m_sweeps->stop();
    m_teaching->presenterMode()->setActive(
        false);  // the layout kept is the one presenter mode left
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    settings.setValue(QStringLiteral("window/tab"), m_tabs->currentIndex());
    event->accept();
}

// --- The features, put together -----------------------------------------------------------------

void MainWindow::log(int level, const QString& line) {
    m_logDock->append(level, line);
}

void MainWindow::wireFiles() {
    connect(m_files, &ConfigFiles::logLine, this, &MainWindow::log);
    connect(m_files, &ConfigFiles::showConfigTabRequested, this,
            [this] { m_tabs->setCurrentWidget(m_configTab); });
}

void MainWindow::wireSweeps() {
    SweepPresenter::Studio studio;
    studio.window = this;
    studio.document = m_document;
    studio.configTab = m_configTab;
    studio.tab = m_sweepsTab;
    studio.statusPanel = m_statusPanel;
    studio.dbPath = m_dbPath;
    studio.store = [this] { return m_store.get(); };
    studio.runActive = [this] { return m_controller->isActive(); };
    studio.save = [this] { return m_files->save(); };
    studio.showTab = [this](const QString& name) { showTab(name); };
    m_sweepPresenter = new SweepPresenter(m_sweeps, std::move(studio), this);
    connect(m_sweepPresenter, &SweepPresenter::logLine, this, &MainWindow::log);
    connect(m_sweepPresenter, &SweepPresenter::failed, m_failures, &FailureBanner::showFailure);
    connect(m_sweepPresenter, &SweepPresenter::startingAnew, m_failures, &FailureBanner::dismiss);
    connect(m_sweepPresenter, &SweepPresenter::runsChanged, m_runsDock, &RunsDock::refresh);
    connect(m_sweepPresenter, &SweepPresenter::stateChanged, this, &MainWindow::updateActions);
    connect(m_sweepPresenter, &SweepPresenter::openConfigRequested, this,
            [this](const QString& path) {
                if (maybeSave()) openConfig(path);
            });
    connect(m_runsDock, &RunsDock::selectionChanged, m_sweepPresenter,
            &SweepPresenter::showSelected);
}

void MainWindow::wireCluster() {
    ClusterController::Studio studio;
    studio.window = this;
    studio.document = m_document;
    studio.configTab = m_configTab;
    studio.waferTab = m_waferTab;
    studio.statusPanel = m_statusPanel;
    studio.follower = m_follower;
    studio.store = [this] { return m_store.get(); };
    studio.storePath = [this] { return m_storePath; };
    studio.windowBusy = [this] { return m_controller->isActive() || m_sweeps->isActive(); };
    studio.save = [this] { return m_files->save(); };
    studio.isShippedPreset = &ConfigFiles::isShippedPreset;
    studio.ask = [this](const QString& title, const QString& text,
                        QMessageBox::StandardButtons buttons,
                        QMessageBox::StandardButton defaultButton) {
        return m_files->ask(title, text, buttons, defaultButton);
    };
    studio.showTab = [this](const QString& name) { showTab(name); };
    studio.selectedRuns = [this] { return m_runsDock->selectedRunIds(); };
    studio.selectRuns = [this](const std::vector<int64_t>& ids) { m_runsDock->selectRuns(ids); };
    studio.refreshRuns = [this] { m_runsDock->refresh(); };
    studio.canResume = [this](int64_t id) { return m_runsDock->canResume(id); };
    m_cluster = new ClusterController(std::move(studio), this);
    connect(m_cluster, &ClusterController::logLine, this, &MainWindow::log);
    connect(m_cluster, &ClusterController::stateChanged, this, &MainWindow::updateActions);
}

// The public doors of the features (tests and app/studio drive them through the window).
bool MainWindow::isShippedPreset(const QString& path) {
    return ConfigFiles::isShippedPreset(path);
}
bool MainWindow::openConfig(const QString& path) {
    return m_files->openConfig(path);
}
bool MainWindow::maybeSave() {
    return m_files->maybeSave();
}
void MainWindow::setAsker(Asker ask) {
    m_files->setAsker(std::move(ask));
}
void MainWindow::setSaveFileChooser(std::function<QString(const QString&)> choose) {
    m_files->setSaveFileChooser(std::move(choose));
}
bool MainWindow::startSweep() {
    return m_sweepPresenter->start();
}
bool MainWindow::resumeSweep(int64_t sweepRunId) {
    return m_sweepPresenter->resume(sweepRunId);
}
void MainWindow::setSweepConfirmer(std::function<bool(const QString&)> confirm) {
    m_sweepPresenter->setConfirmer(std::move(confirm));
}
ClusterDialog* MainWindow::openClusterDialog(int64_t resumeRunId) {
    return m_cluster->openDialog(resumeRunId);
}
ClusterJob* MainWindow::clusterJob() const {
    return m_cluster->job();
}
void MainWindow::setClusterWaferBinary(const QString& path) {
    m_cluster->setWaferBinary(path);
}
int64_t MainWindow::externalRun() const {
    return m_cluster->externalRun();
}
LessonsPanel* MainWindow::lessonsPanel() const {
    return m_teaching->lessons();
}
void MainWindow::showLessons() {
    m_teaching->showLessons();
}
AutoStep* MainWindow::autoStep() const {
    return m_teaching->autoStep();
}
PresenterMode* MainWindow::presenterMode() const {
    return m_teaching->presenterMode();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (event->mimeData()->hasUrls()) {
        for (const QUrl& url : event->mimeData()->urls()) {
            if (!url.isLocalFile()) return;
        }
        event->acceptProposedAction();
    }
}

void MainWindow::dropEvent(QDropEvent* event) {
    QStringList paths;
    for (const QUrl& url : event->mimeData()->urls()) paths << url.toLocalFile();
    if (paths.isEmpty()) return;
    m_files->useAsTrainingData(paths);
    event->acceptProposedAction();
}

}  // namespace ws::ui
