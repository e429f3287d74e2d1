// SPDX-License-Identifier: GPL-3.0-or-later
// LessonHost: what a lesson drives in the studio, and all the lessons know of it. The Lessons
// panel performs a step through these few operations (put the step's config in the window, start
// the step's run, step it, run a coord check or a sweep, check held-out answers, show a tab,
// outline a named thing, select the runs a step compares) and never reaches into the tabs' widgets
// itself; the shell implements it (ui/shell/studio_lesson_host.h), so a tab may rename or move its
// widgets by changing that one place. The run itself is the studio's RunController (ui/common),
// whose eventBatch the lessons observe. GUI thread only.
#pragma once

#include <QObject>
#include <QString>
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/config/config_yaml.h"
#include "engine/lesson/lesson.h"
#include "engine/session/session.h"

class QWidget;

namespace ws::mup {
struct CoordCheckOptions;
struct CoordCheckResult;
}  // namespace ws::mup
namespace ws::sweep {
struct SweepOutcome;
}

namespace ws::ui {

class RunController;

class LessonHost : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;

    // --- The run: the studio's one run controller; a lesson's run starts as Run does
    // (recorded, charted live), with `options` and, when `paused`, paused before its first
    // layer. False with the reason in the Log.
    virtual RunController* runController() const = 0;
    virtual bool startLessonRun(const config::LoadedConfig& config, session::SessionOptions options,
                                bool paused) = 0;
    // A lesson just opened: while nothing trains, the Wafer tab shows the step its preset plans.
    virtual void showLessonStart(const config::Config& config, const QString& lessonTitle) = 0;
    // Auto-step's controls (Run → Auto-step), for the panel.
    virtual QWidget* createAutoStepControls(QWidget* parent) = 0;

    // --- The studio's config document
    // The config, when it has no problems (nullopt otherwise).
    virtual std::optional<config::LoadedConfig> runnableConfig() const = 0;
    virtual QString configDisplayName() const = 0;
    virtual QString configUntitledName() const = 0;  // empty when it has a file
    virtual bool configModified() const = 0;
    // "Save them first?" about unsaved edits; true when the document may be replaced.
    virtual bool maybeSaveConfig() = 0;
    // Replaces the document by an untitled one named `name` (relative paths from `baseDir`).
    virtual void setUntitledConfig(const QString& yaml, const QString& name,
                                   const QString& baseDir) = 0;

    // --- Studies: the Sweeps tab's coord check and the studio's Run Sweep. Their ends arrive
    // as coordCheckFinished and sweepFinished.
    // False when a coord check is already running.
    virtual bool runCoordCheck(const config::Config& base,
                               const mup::CoordCheckOptions& options) = 0;
    virtual const mup::CoordCheckResult* lastCoordCheck() const = 0;
    virtual bool startSweep() = 0;  // as Run Sweep: false (the reason in the Log) when refused
    virtual void stopSweep() = 0;

    // --- Held-out answers (a check_answers action): the Answers tab asks the run folder
    // `model` (beside `compareWith`, the run before it, when not empty) the first `cases`
    // held-out records of its run, and the Chat tab is given `model` to talk to. The end arrives
    // as answersChecked. False when a check is already running.
    virtual bool checkAnswers(const QString& model, const QString& compareWith, int cases) = 0;

    // --- Views
    // Shows a tab by name (lesson::viewName: config, training, wafer, samples, sweeps).
    virtual void showTab(const QString& name) = 0;
    // The widget of a step's sub-view ("wafer" "timeline": the timeline), null when none.
    virtual QWidget* viewWidget(lesson::View view, const QString& subView) const = 0;
    // The widget a lesson's highlight name stands for (README "Lessons": "run_button",
    // "heatmap", ...): the first one shown now, else the first that exists; null when none.
    virtual QWidget* highlightTarget(const QString& highlight) const = 0;

    // --- Runs: the Runs dock's selection (the Training tab overlays the runs selected), and
    // the Training tab's curves of ended runs dropped.
    virtual void selectRuns(const std::vector<int64_t>& runIds) = 0;
    virtual void forgetEndedRuns() = 0;

signals:
    void coordCheckFinished(bool ok, const QString& message);
    void sweepFinished(const ws::sweep::SweepOutcome& outcome);
    // `answers`: how `model` answered (valid when ok); `message`: why not.
    void answersChecked(bool ok, const QString& message,
                        const ws::lesson::RunObservation::Answers& answers);
};

}  // namespace ws::ui
