// SPDX-License-Identifier: GPL-3.0-or-later
// The Lessons panel drives the studio only through LessonHost (ui/lessons/lesson_host.h): here
// a recording host without any main window. Opening lesson 1 puts the lesson's config in the
// host's document, shows the step's tab and asks for its highlight by name; a step that starts
// a run asks the host for it, and a host that refuses ends the step with the reason.
#include <QLabel>
#include <QPushButton>
#include <QTest>
#include <vector>

#include "engine/mup/coord_check.h"
#include "support/gui_test.h"
#include "support/lesson_test_support.h"
#include "ui/common/run_controller.h"
#include "ui/lessons/lesson_host.h"
#include "ui/lessons/lessons_panel.h"

using namespace ws::ui;
namespace lesson = ws::lesson;

namespace {

// Records what the panel asks; owns an idle run controller; refuses to start runs.
class RecordingHost : public LessonHost {
public:
    RunController* runController() const override { return m_controller; }
    bool startLessonRun(const ws::config::LoadedConfig&, ws::session::SessionOptions options,
                        bool paused) override {
        runsAsked.push_back({QString::fromStdString(options.runName), paused});
        return false;
    }
    void showLessonStart(const ws::config::Config&, const QString& title) override {
        lessonStarts << title;
    }
    QWidget* createAutoStepControls(QWidget* parent) override { return new QWidget(parent); }
    std::optional<ws::config::LoadedConfig> runnableConfig() const override { return m_config; }
    QString configDisplayName() const override { return m_name; }
    QString configUntitledName() const override { return m_name; }
    bool configModified() const override { return false; }
    bool maybeSaveConfig() override { return true; }
    void setUntitledConfig(const QString& yaml, const QString& name, const QString&) override {
        auto parsed = ws::config::parseConfig(yaml.toStdString(), "the lesson", {}, {});
        QVERIFY2(parsed.ok(), parsed.ok() ? "" : parsed.error().message.c_str());
        m_config = *parsed;
        m_name = name;
    }
    bool runCoordCheck(const ws::config::Config&, const ws::mup::CoordCheckOptions&) override {
        return false;
    }
    const ws::mup::CoordCheckResult* lastCoordCheck() const override { return nullptr; }
    bool startSweep() override { return false; }
    void stopSweep() override {}
    bool checkAnswers(const QString& model, const QString&, int) override {
        answersAsked << model;
        return false;
    }
    void showTab(const QString& name) override { tabs << name; }
    QWidget* viewWidget(lesson::View, const QString&) const override { return nullptr; }
    QWidget* highlightTarget(const QString& highlight) const override {
        highlights << highlight;
        return nullptr;
    }
    void selectRuns(const std::vector<int64_t>& ids) override { selections.push_back(ids); }
    void forgetEndedRuns() override { ++forgotten; }

    struct RunAsked {
        QString name;
        bool paused;
    };
    std::vector<RunAsked> runsAsked;
    QStringList lessonStarts, tabs, answersAsked;
    mutable QStringList highlights;
    std::vector<std::vector<int64_t>> selections;
    int forgotten = 0;

private:
    RunController* m_controller = new RunController(this);
    std::optional<ws::config::LoadedConfig> m_config;
    QString m_name;
};

}  // namespace

class LessonHostTest : public QObject {
    Q_OBJECT
private slots:
    void theLessonDrivesOnlyItsHost();
};

void LessonHostTest::theLessonDrivesOnlyItsHost() {
    RecordingHost host;
    LessonsPanel panel(&host);
    panel.setActionTimeout(std::chrono::milliseconds(ws::testing::kActionTimeoutMs));
    panel.show();
    QVERIFY(panel.openLesson(ws::testing::lessonFile("01-weight-streaming.yaml")));
    const lesson::Lesson* shown = panel.lesson();
    QVERIFY(shown != nullptr);
    // Opening: the runs of the lesson before are forgotten, the lesson's config is the host's.
    QCOMPARE(host.forgotten, 1);
    QVERIFY(!host.selections.empty() && host.selections.front().empty());
    QCOMPARE(host.configUntitledName(),
             QStringLiteral("lesson: %1").arg(QString::fromStdString(shown->title)));
    QVERIFY(host.runnableConfig().has_value());
    QCOMPARE(host.lessonStarts, QStringList{QString::fromStdString(shown->title)});
    // Step 1 shows the Wafer tab and asks for the cluster diagram by its lesson name.
    QCOMPARE(host.tabs, QStringList{"wafer"});
    QCOMPARE(host.highlights, QStringList{"cluster_diagram"});
    QVERIFY(host.runsAsked.empty());
    // Step 2 starts a paused run through the host; refused, the step says so.
    QVERIFY(panel.next());
    QTRY_VERIFY(!panel.isBusy());
    QCOMPARE(int(host.runsAsked.size()), 1);
    QVERIFY(host.runsAsked.front().paused);
    QVERIFY2(host.runsAsked.front().name.endsWith(QStringLiteral("step 2")),
             qPrintable(host.runsAsked.front().name));
    QVERIFY2(panel.actionError().contains(QStringLiteral("the run cannot start")),
             qPrintable(panel.actionError()));
    QCOMPARE(host.tabs.last(), QStringLiteral("wafer"));
    QCOMPARE(host.highlights.last(), QStringLiteral("timeline"));
}

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<LessonHostTest>(argc, argv);
}
#include "lesson_host_test.moc"
