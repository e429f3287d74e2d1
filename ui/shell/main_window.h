// SPDX-License-Identifier: GPL-3.0-or-later
// MainWindow: the studio's thin shell. It builds the tabs (Config, Training, Wafer, Samples,
// Sweeps), the Runs and Log docks, the status bar, menus and toolbar, and puts the features
// together: one ConfigDocument and its files (ConfigFiles), one RunController, the sweeps
// (SweepPresenter), Run on Cluster (ClusterController), the lessons and teaching aids, and the
// run store; each feature owns its wiring. Window layout, recent files and the last tab are
// kept with QSettings. A dropped text file or folder becomes the training data
// (train_input.data_dir). GUI thread only.
#pragma once

#include <QMainWindow>
#include <QMessageBox>
#include <functional>
#include <memory>

#include "engine/store/run_store.h"
#include "ui/common/asker.h"
#include "ui/shell/studio_actions.h"

class QAction;
class QDockWidget;
class QLabel;
class QMenu;
class QTabWidget;

namespace ws::config {
struct Config;
struct LoadedConfig;
}  // namespace ws::config
namespace ws::session {
struct RunSummary;
struct SessionOptions;
}  // namespace ws::session

namespace ws::ui {

class AutoStep;
class ClusterController;
class ClusterDialog;
class ClusterJob;
class ConfigFiles;
class ConfigDocument;
class ConfigTab;
class FailureBanner;
class FinetuneWizard;
class HelpBrowser;
class LessonsPanel;
class LogDock;
class NarrationLine;
class PresenterMode;
class RunController;
class RunsDock;
class SamplesTab;
class ChatTab;
class AnswersTab;
class StatusPanel;
class StoreFollower;
class SweepController;
class SweepPresenter;
class SweepsTab;
class Teaching;
class TrainingTab;
class WaferTab;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    // `dbPath` empty: the user's run store (userDataDir()/runs.sqlite).
    explicit MainWindow(const QString& dbPath = {}, QWidget* parent = nullptr);
    ~MainWindow() override;

    // Opens a config file; a shipped preset (appDataDir()/presets) opens as an untitled copy,
    // so that saving never writes over it.
    bool openConfig(const QString& path);
    // True for files inside the shipped presets folder.
    static bool isShippedPreset(const QString& path);
    ConfigFiles* files() const { return m_files; }
    // Starts training the document's config; false (with the reason in the log) if it cannot.
    bool startRun();
    // Continues a stopped or finished run from its newest checkpoint after the resume dialog
    // (resume_dialog.h) says it can; false when refused or cancelled.
    bool resumeRun(int64_t runId);
    // Plans the sweep of the document's config (its sweep: section, or a sweep file whose
    // sweep.base names the config) and runs it once the user confirms (every sweep: the question
    // says how many trials and how long, from a few timed steps of each trial shape). False (the
    // planning errors in the Log and the Sweeps tab) if it cannot start or was cancelled.
    bool startSweep();
    // Continues the stopped sweep stored as run `sweepRunId`.
    bool resumeSweep(int64_t sweepRunId);
    // Replaces the confirmation dialog ("sweepConfirmBox"; tests): gets its question (trials,
    // steps, the estimated time; the max_trials warning above it), returns the answer. An empty
    // function brings the dialog back.
    void setSweepConfirmer(std::function<bool(const QString&)> confirm);
    // Opens the fine-tune wizard (window-modal, returns at once); its Run starts a run of kind
    // "finetune", puts its config in the Config tab as an untitled document ("finetune of
    // <base>") and sets Samples to compare it with the base.
    FinetuneWizard* openFinetuneWizard();
    // Run on Cluster…: asks to save the config to a file first (every process reads it), then
    // opens the cluster dialog (window-modal, returns at once; nullptr when it cannot open). Its
    // Start runs mpirun as a child (ClusterJob); the run is followed through the store: it is
    // selected in Runs, the charts grow, the Wafer tab names each system's rank and host, and
    // Pause / Continue / Step Layer / Checkpoint Now / Stop act on it. With `resumeRunId`: the
    // same dialog continues that run from its newest checkpoint ("Resume on Cluster…").
    ClusterDialog* openClusterDialog(int64_t resumeRunId = -1);
    ClusterJob* clusterJob() const;
    ClusterController* cluster() const { return m_cluster; }
    // The `wafer` program cluster jobs run (default: the one beside this studio; tests).
    void setClusterWaferBinary(const QString& path);
    // The run the toolbar's Pause / Continue / Checkpoint Now / Stop act on in another process
    // (through its control requests, session/run_control.h): the cluster job's run, else the one
    // run selected in Runs when another process trains it; -1 when none, or when this window
    // trains a run itself.
    int64_t externalRun() const;
    // Selects stored run `runId` in Runs, as a click would (a sweep is shown in the Sweeps tab);
    // false with the reason in the log when the store has no such run.
    bool openStoredRun(int64_t runId);
    // Shows a tab by name: config, training, wafer, samples, chat or sweeps.
    bool showTab(const QString& name);
    // Opens the guide (the README) at `section` (a heading's start; empty: where it was).
    HelpBrowser* showHelp(const QString& section);
    // The Lessons dock ("LessonsDock", Help → Lessons) and its panel (ui/lessons/lessons_panel.h).
    LessonsPanel* lessonsPanel() const;
    void showLessons();
    // Starts a run for a lesson step as Run does (recorded, charted live), with `options`
    // (stopAfterStep) and, when `paused`, paused before its first layer. False with the reason
    // in the Log.
    bool startLessonRun(const config::LoadedConfig& config, session::SessionOptions options,
                        bool paused);
    // A lesson just opened: while nothing trains, the Wafer tab shows the step its preset plans
    // (not the last run, which may be another lesson's).
    void showLessonStart(const config::Config& config, const QString& lessonTitle);
    // Unsaved edits of the open config: asks "Save them first?" (Save / Discard / Cancel). True
    // when the document may be replaced.
    bool maybeSave();
    // Renders the whole window (charts replotted first) into a PNG.
    bool saveScreenshot(const QString& path);

    // The pieces tests and app/studio drive directly. Widgets and actions are found by object
    // name instead (findChild): the tabs "configTab", "trainingTab", "waferTab", "samplesTab",
    // "SweepsTab" in "mainTabs"; "RunsDock", "LogDock", "statusPanel", "storeFollower"; the
    // actions "runAction", "runSweepAction", "pauseAction", "continueAction" (un-pause),
    // "stepLayerAction" (one layer phase while paused), "stopAction", "checkpointAction",
    // "resumeRunAction" (from a checkpoint), "finetuneAction", "runClusterAction",
    // "saveAction", "saveAsAction". The cluster job's dialogs: "clusterWaitBox" (no run yet),
    // "clusterErrorBox" (the job failed; its "resumeOnClusterButton"). Why a run, fine-tune or
    // sweep did not start or failed: the "failureBanner" above the tabs (failure_banner.h).
    ConfigDocument* document() const { return m_document; }
    RunController* controller() const { return m_controller; }
    SweepController* sweepController() const { return m_sweeps; }
    SweepPresenter* sweeps() const { return m_sweepPresenter; }
    // Run → Auto-step ("autoStepAction", Shift+F10) and its pace; it narrates each phase of the
    // paused run in the "narrationLine" above the tabs (auto_step.h).
    AutoStep* autoStep() const;
    // View → Presenter Mode (F11; "presenterAction"): full screen, large type, high contrast.
    PresenterMode* presenterMode() const;
    Teaching* teaching() const { return m_teaching; }
    store::RunStore* runStore() const { return m_store.get(); }

    // Replace the modal questions and the save-file dialog (tests). The asker gets the title,
    // the text, the buttons and the default button and returns the button pressed; the chooser
    // gets the suggested path and returns the chosen one (empty: cancelled).
    using Asker = ws::ui::Asker;
    void setAsker(Asker ask);
    void setSaveFileChooser(std::function<QString(const QString&)> choose);

protected:
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    // What the Training tab draws for a run being launched: a new live curve titled `title`, or
    // the stored run `continuesRun` continued from its checkpoint at `fromStep`.
    struct LiveCurve {
        QString title;
        int64_t continuesRun = -1;
        int64_t fromStep = 0;
    };
    // The one way a run starts (Run, Resume Run, the Fine-tune wizard): the controller trains
    // `config` into the window's run store, the Training tab draws it live and comes to the
    // front. False with the reason in the Log and the failure banner.
    bool launchRun(const config::LoadedConfig& config, session::SessionOptions options,
                   const LiveCurve& curve, bool paused = false);
    void createTabs();
    void createDocks();
    void openStore();
    void wireDocument();
    void wireRunController();
    void onRunFinished(const session::RunSummary& summary);
    void wireRunsDock();
    void followStore();
    void restoreWindowState();
    void createActions();
    void createMenus();
    void wireFiles();
    void wireSweeps();
    void wireCluster();
    void updateActions();
    // When the store file is damaged (found at start or by a failed read): the recovery dialog
    // (store_recovery_dialog.h), then the recovered store is opened and followed again.
    void offerRecoveryIfDamaged();
    // Opens m_storePath again (after a recovery) and lists and follows it; on failure the Runs
    // dock says why.
    void reopenStore();
    // Whether run `runId` can be resumed now: the one rule of the toolbar's Resume Run and the
    // Runs dock's "Resume run…" (a run with a checkpoint or a stopped sweep, nothing training).
    bool canResumeNow(int64_t runId) const;
    // A start refused before any run existed: the Log and the failure banner. `aboutDocument`:
    // the message is about the Config tab's config.
    void reportStartRefused(const QString& headline, const QString& message, bool aboutDocument);
    void log(int level, const QString& line);

    QString m_dbPath;
    std::filesystem::path m_storePath;  // m_dbPath, or the user's run store
    bool m_offeringRecovery = false;
    std::unique_ptr<store::RunStore> m_store;
    ConfigDocument* m_document;
    RunController* m_controller;
    QTabWidget* m_tabs;
    ConfigTab* m_configTab;
    TrainingTab* m_trainingTab;
    SamplesTab* m_samplesTab;
    ChatTab* m_chatTab;
    AnswersTab* m_answersTab;
    WaferTab* m_waferTab;
    SweepsTab* m_sweepsTab;
    SweepController* m_sweeps;
    SweepPresenter* m_sweepPresenter = nullptr;
    ConfigFiles* m_files = nullptr;
    RunsDock* m_runsDock;
    StoreFollower* m_follower;
    LogDock* m_logDock;
    Teaching* m_teaching;
    FailureBanner* m_failures = nullptr;
    StatusPanel* m_statusPanel;
    HelpBrowser* m_help = nullptr;
    bool m_finetuneRunning = false;    // the run in flight came from the Fine-tune wizard
    bool m_finetuneOnRecords = false;  // ... and trains on chat or instruction records
    std::string m_finetuneLossCounts;  // what its eval loss counts (finetune::evalLossCounts)
    ClusterController* m_cluster = nullptr;
    StudioActions m_actions;
};

}  // namespace ws::ui
