// SPDX-License-Identifier: GPL-3.0-or-later
// StudioLessonHost: the studio as the lessons see it (ui/lessons/lesson_host.h). It knows where
// things are: which widget a lesson's view or highlight name stands for (README "Lessons"), the
// config document, the Sweeps tab's coord check, the Answers and Chat tabs, the Runs dock's
// selection; the lessons know only the interface. GUI thread only.
#pragma once

#include <QStringList>

#include "ui/lessons/lesson_host.h"

namespace ws::ui {

class AnswersTab;
class AutoStep;
class ChatTab;
class ConfigDocument;
class ConfigTab;
class MainWindow;
class RunsDock;
class SweepController;
class SweepsTab;
class TrainingTab;

class StudioLessonHost : public LessonHost {
    Q_OBJECT
public:
    struct Pieces {
        RunController* controller = nullptr;
        AutoStep* autoStep = nullptr;
        ConfigDocument* document = nullptr;
        ConfigTab* configTab = nullptr;
        TrainingTab* trainingTab = nullptr;
        SweepsTab* sweepsTab = nullptr;
        SweepController* sweeps = nullptr;
        RunsDock* runsDock = nullptr;
        AnswersTab* answersTab = nullptr;
        ChatTab* chatTab = nullptr;
    };
    StudioLessonHost(MainWindow* window, Pieces pieces);

    // The object names tried, in order, for a lesson highlight name (README "Lessons");
    // "action:X" is the run toolbar's button for action X, a trailing * matches a prefix.
    static QStringList highlightObjectNames(const QString& highlight);

    RunController* runController() const override { return m_pieces.controller; }
    bool startLessonRun(const config::LoadedConfig& config, session::SessionOptions options,
                        bool paused) override;
    void showLessonStart(const config::Config& config, const QString& lessonTitle) override;
    QWidget* createAutoStepControls(QWidget* parent) override;
    std::optional<config::LoadedConfig> runnableConfig() const override;
    QString configDisplayName() const override;
    QString configUntitledName() const override;
    bool configModified() const override;
    bool maybeSaveConfig() override;
    void setUntitledConfig(const QString& yaml, const QString& name,
                           const QString& baseDir) override;
    bool runCoordCheck(const config::Config& base, const mup::CoordCheckOptions& options) override;
    const mup::CoordCheckResult* lastCoordCheck() const override;
    bool startSweep() override;
    void stopSweep() override;
    bool checkAnswers(const QString& model, const QString& compareWith, int cases) override;
    void showTab(const QString& name) override;
    QWidget* viewWidget(lesson::View view, const QString& subView) const override;
    QWidget* highlightTarget(const QString& highlight) const override;
    void selectRuns(const std::vector<int64_t>& runIds) override;
    void forgetEndedRuns() override;

private:
    MainWindow* m_window;
    Pieces m_pieces;
    bool m_checkingAnswers = false;  // the Answers tab's check is the lesson's
};

}  // namespace ws::ui
