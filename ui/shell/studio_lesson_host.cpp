// SPDX-License-Identifier: GPL-3.0-or-later
// StudioLessonHost: see studio_lesson_host.h.
#include "ui/shell/studio_lesson_host.h"

#include <QAction>
#include <QHash>
#include <QToolBar>
#include <algorithm>

#include "ui/answers/answers_tab.h"
#include "ui/chat/chat_tab.h"
#include "ui/config/config_document.h"
#include "ui/config/config_form.h"
#include "ui/config/config_tab.h"
#include "ui/config/yaml_editor.h"
#include "ui/shell/main_window.h"
#include "ui/shell/runs_dock.h"
#include "ui/sweeps/coord_check_view.h"
#include "ui/sweeps/sweep_controller.h"
#include "ui/sweeps/sweeps_tab.h"
#include "ui/teaching/auto_step.h"
#include "ui/training/training_tab.h"

namespace ws::ui {
namespace {

QWidget* findNamed(QWidget* root, const QString& name) {
    if (name.endsWith(QLatin1Char('*'))) {
        const QString prefix = name.chopped(1);
        for (QWidget* w : root->findChildren<QWidget*>())
            if (w->objectName().startsWith(prefix)) return w;
        return nullptr;
    }
    return root->findChild<QWidget*>(name);
}

// The widget a sub-view name stands for, per tab (lesson::subViewNames).
QString subViewObjectName(lesson::View view, const QString& sub) {
    static const QHash<QString, QString> wafer = {{"heatmap", "utilizationMap"},
                                                  {"timeline", "timelineView"},
                                                  {"cluster", "clusterDiagram"},
                                                  {"layer_norms", "layerNormChart"}};
    static const QHash<QString, QString> training = {{"loss", "Loss"},
                                                     {"learning_rate", "Learning rate"},
                                                     {"grad_norm", "Gradient norm"},
                                                     {"throughput", "Throughput"}};
    static const QHash<QString, QString> sweeps = {{"table", "SweepTable"},
                                                   {"heatmap", "heatmap_*"},
                                                   {"parallel", "parallel_coords"},
                                                   {"transfer", "transfer_*"},
                                                   {"coord_check", "CoordVerdict"}};
    switch (view) {
        case lesson::View::Wafer:
            return wafer.value(sub);
        case lesson::View::Training:
            return training.value(sub);
        case lesson::View::Sweeps:
            return sweeps.value(sub);
        default:
            return {};
    }
}

}  // namespace

StudioLessonHost::StudioLessonHost(MainWindow* window, Pieces pieces)
    : LessonHost(window), m_window(window), m_pieces(pieces) {
    connect(m_pieces.sweepsTab->coordCheck(), &CoordCheckView::finished, this,
            &LessonHost::coordCheckFinished);
    connect(m_pieces.sweeps, &SweepController::finished, this, &LessonHost::sweepFinished);
    connect(m_pieces.answersTab, &AnswersTab::finished, this,
            [this](bool ok, const QString& message) {
                if (!m_checkingAnswers) return;  // the learner's own check
                m_checkingAnswers = false;
                const auto& outcomes = m_pieces.answersTab->outcomes(0);
                const sample::AnswerSummary s = sample::summarize(outcomes);
                // Every case answered: a model that failed to load leaves none.
                const bool answered =
                    ok && s.cases > 0 &&
                    std::all_of(outcomes.begin(), outcomes.end(),
                                [](const sample::AnswerOutcome& o) { return o.answerTokens > 0; });
                emit answersChecked(
                    answered, ok && !answered ? m_pieces.answersTab->status() : message,
                    lesson::RunObservation::Answers{s.cases, s.exact, s.meanAnswerLoss});
            });
}

bool StudioLessonHost::startLessonRun(const config::LoadedConfig& config,
                                      session::SessionOptions options, bool paused) {
    return m_window->startLessonRun(config, std::move(options), paused);
}

void StudioLessonHost::showLessonStart(const config::Config& config, const QString& lessonTitle) {
    m_window->showLessonStart(config, lessonTitle);
}

QWidget* StudioLessonHost::createAutoStepControls(QWidget* parent) {
    return m_pieces.autoStep->createControls(parent);
}

std::optional<config::LoadedConfig> StudioLessonHost::runnableConfig() const {
    if (!m_pieces.document->canRun()) return std::nullopt;
    return m_pieces.document->loadedConfig();
}

QString StudioLessonHost::configDisplayName() const {
    return m_pieces.document->displayName();
}

QString StudioLessonHost::configUntitledName() const {
    return m_pieces.document->untitledName();
}

bool StudioLessonHost::configModified() const {
    return m_pieces.document->isModified();
}

bool StudioLessonHost::maybeSaveConfig() {
    return m_window->maybeSave();
}

void StudioLessonHost::setUntitledConfig(const QString& yaml, const QString& name,
                                         const QString& baseDir) {
    m_pieces.document->setUntitled(yaml, name, baseDir);
}

bool StudioLessonHost::runCoordCheck(const config::Config& base,
                                     const mup::CoordCheckOptions& options) {
    return m_pieces.sweepsTab->coordCheck()->runOn(base, options);
}

const mup::CoordCheckResult* StudioLessonHost::lastCoordCheck() const {
    return m_pieces.sweepsTab->coordCheck()->lastResult();
}

bool StudioLessonHost::startSweep() {
    return m_window->startSweep();
}

void StudioLessonHost::stopSweep() {
    m_pieces.sweeps->stop();
}

bool StudioLessonHost::checkAnswers(const QString& model, const QString& compareWith, int cases) {
    AnswersTab* tab = m_pieces.answersTab;
    if (tab->isChecking()) return false;
    tab->setModelPath(0, model);
    tab->setModelPath(1, compareWith);
    for (int i = 2; i < AnswersTab::kModels; ++i) tab->setModelPath(i, {});
    tab->setRecordsPath({});  // the run's own held-out records
    tab->setMaxCases(cases);
    tab->setChatTemplate(QStringLiteral("auto"));
    tab->setOrder(AnswersTab::Order::Records);
    m_pieces.chatTab->setModelPath(model);
    m_checkingAnswers = tab->check();
    return m_checkingAnswers;
}

void StudioLessonHost::showTab(const QString& name) {
    m_window->showTab(name);
}

QWidget* StudioLessonHost::viewWidget(lesson::View view, const QString& sub) const {
    if (view == lesson::View::None || sub.isEmpty()) return nullptr;
    if (view == lesson::View::Config) {
        ConfigTab* tab = m_pieces.configTab;
        return sub == QLatin1String("yaml") ? static_cast<QWidget*>(tab->yamlEditor())
                                            : static_cast<QWidget*>(tab->form());
    }
    const QString name = subViewObjectName(view, sub);
    return name.isEmpty() ? nullptr : findNamed(m_window, name);
}

QWidget* StudioLessonHost::highlightTarget(const QString& highlight) const {
    // The first candidate the step's view shows; else the first that exists.
    QWidget* hidden = nullptr;
    for (const QString& candidate : highlightObjectNames(highlight)) {
        QWidget* found = nullptr;
        if (candidate.startsWith(QLatin1String("action:"))) {
            auto* action = m_window->findChild<QAction*>(candidate.mid(7));
            auto* toolbar = m_window->findChild<QToolBar*>(QStringLiteral("RunToolBar"));
            if (action && toolbar) found = toolbar->widgetForAction(action);
        } else {
            found = findNamed(m_window, candidate);
        }
        if (found && found->isVisible()) return found;
        if (found && !hidden) hidden = found;
    }
    return hidden;
}

void StudioLessonHost::selectRuns(const std::vector<int64_t>& runIds) {
    m_pieces.runsDock->selectRuns(runIds);
}

void StudioLessonHost::forgetEndedRuns() {
    m_pieces.trainingTab->forgetEndedRuns();
}

QStringList StudioLessonHost::highlightObjectNames(const QString& highlight) {
    static const QHash<QString, QStringList> names = {
        {"run_button", {"action:runAction"}},
        {"pause_button", {"action:pauseAction"}},
        {"step_layer_button", {"action:stepLayerAction"}},
        {"continue_button", {"action:continueAction"}},
        {"stop_button", {"action:stopAction"}},
        {"wafer_spec", {"wafer.spec"}},
        {"num_systems", {"runconfig.num_csx"}},
        {"weight_buffer_layers", {"wafer.weight_buffer_layers"}},
        {"micro_batch_size",
         {"runconfig.micro_batch_size", "train_input.micro_batch_size", "configFacts"}},
        {"learning_rate",
         {"optimizer.learning_rate", "constantLearningRate", "schedulePieces", "Learning rate"}},
        {"loss_chart", {"Loss"}},
        {"heatmap", {"utilizationMap"}},
        {"timeline", {"timelineView"}},
        {"cluster_diagram", {"clusterDiagram"}},
        {"buffer_slots", {"waferBufferSlots", "bufferSlots", "timelineView"}},
        {"phase_label", {"waferPhase"}},
        {"step_time", {"waferSummary"}},
        {"mfu", {"waferSummary"}},
        {"sparsity", {"model.sparsity", "sparsity", "utilizationMap"}},
        {"coord_check", {"coordCheckView", "CoordVerdict"}},
        {"wafer_fit", {"configFit"}},
        {"answers_table", {"answersTable"}},
        {"chat_transcript", {"chatTranscript"}},
        {"train_on_inputs", {"train_input.train_on_inputs"}},
    };
    return names.value(highlight);
}

}  // namespace ws::ui
