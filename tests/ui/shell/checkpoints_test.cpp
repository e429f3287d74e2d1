// SPDX-License-Identifier: GPL-3.0-or-later
// Checkpoints in the studio, offscreen: "Checkpoint Now" writes a checkpoint folder while a run
// trains (the Log names it); "Resume Run" continues the stopped run from its newest checkpoint in
// the same run (same id in the store, steps carry on, one unbroken curve); a config that differs
// from the checkpoint's, or a damaged checkpoint, shows the reason in the resume dialog and starts
// nothing; a finished run says how to go on, and trains further once runconfig.max_steps is
// raised ("Resume anyway"); the Samples tab compares the finished run with its early checkpoint
// folder side by side. Screenshots of the dialogs and tabs go to $WAFER_TEST_ARTIFACTS.
#include <QAction>
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QTreeWidget>
#include <filesystem>
#include <functional>
#include <memory>

#include "engine/modelio/checkpoints.h"
#include "support/gui_test.h"
#include "support/studio_window.h"
#include "ui/common/run_controller.h"
#include "ui/config/config_document.h"
#include "ui/samples/samples_tab.h"
#include "ui/shell/log_dock.h"
#include "ui/shell/main_window.h"
#include "ui/shell/resume_dialog.h"
#include "ui/shell/runs_dock.h"
#include "ui/training/training_tab.h"

using namespace ws::ui;

namespace {
const QString kNano = QStringLiteral(WAFER_SOURCE_DIR "/presets/gpt-nano.yaml");

using ws::testing::artifactPath;

std::vector<double> liveSteps(const TrainingTab* tab) {
    const auto it = tab->runs().find(0);
    if (it == tab->runs().end()) return {};
    const auto loss = it->second.metrics.find("loss");
    if (loss == it->second.metrics.end()) return {};
    return loss->second.step;
}

// Runs `handle` on the resume dialog once it is shown (exec() blocks the test until then).
void whenDialogShows(std::function<void(ResumeDialog*)> handle) {
    auto* poll = new QTimer;
    poll->setInterval(20);
    QObject::connect(poll, &QTimer::timeout, [poll, handle] {
        auto* dialog = qobject_cast<ResumeDialog*>(QApplication::activeModalWidget());
        if (!dialog || !dialog->isVisible()) return;
        poll->stop();
        poll->deleteLater();
        handle(dialog);
    });
    poll->start();
}
}  // namespace

class CheckpointsTest : public QObject {
    Q_OBJECT
private slots:
    void init() {
        QVERIFY(m_window.open());
        QVERIFY(m_window->openConfig(kNano));
        ConfigDocument* doc = m_window->document();
        QVERIFY(doc->setField("runconfig.max_steps", "3000"));
        QVERIFY(doc->setField("runconfig.log_steps", "1"));
        QVERIFY(doc->setField("train_input.batch_size", "4"));
    }
    void cleanup() { m_window.close(); }

    void checkpointNowThenResumeContinuesTheSameRun() {
        RunController* controller = m_window->controller();
        TrainingTab* training = m_window.find<TrainingTab>("trainingTab");
        QVERIFY(!m_window.action("checkpointAction")->isEnabled());
        m_window.action("runAction")->trigger();
        QTRY_VERIFY_WITH_TIMEOUT(liveSteps(training).size() >= 5, 120000);
        QTRY_VERIFY(m_window.action("checkpointAction")->isEnabled());
        m_window.action("checkpointAction")->trigger();
        QTRY_VERIFY_WITH_TIMEOUT(
            m_window.find<LogDock>("LogDock")->text().contains("checkpoint: wrote"), 60000);
        auto runs = m_window->runStore()->listRuns();
        QVERIFY(runs.ok() && runs->size() == 1);
        const int64_t runId = runs->front().id;
        const std::filesystem::path modelDir = runs->front().modelDir;
        const auto written = ws::modelio::listCheckpoints(modelDir);
        QCOMPARE(written.size(), size_t(1));
        QVERIFY(m_window.find<LogDock>("LogDock")->text().contains(
            QString::fromStdString(written.front().second.string())));
        QVERIFY(std::filesystem::exists(written.front().second / "model.safetensors"));

        QVERIFY(m_window.stopRun(60000));
        const auto afterStop = ws::modelio::listCheckpoints(modelDir);
        QVERIFY(!afterStop.empty());
        const int64_t stoppedAt = afterStop.back().first;
        QVERIFY(stoppedAt >= written.front().first);

        // Select it: Resume Run becomes possible; the dialog says what will happen.
        m_window.find<RunsDock>("RunsDock")->selectRuns({runId});
        QTRY_VERIFY(m_window.action("resumeRunAction")->isEnabled());
        QString shown;
        whenDialogShows([&shown](ResumeDialog* dialog) {
            shown = dialog->message();
            dialog->grab().save(artifactPath("studio-resume-dialog-ok.png"));
            QVERIFY(dialog->resumeButton());
            dialog->resumeButton()->click();
        });
        m_window.action("resumeRunAction")->trigger();
        QVERIFY2(shown.contains("Continue"), qPrintable(shown));
        QVERIFY(controller->isActive());
        // The live curve starts with the stored points and carries on past the checkpoint.
        QVERIFY(!liveSteps(training).empty());
        QTRY_VERIFY_WITH_TIMEOUT(liveSteps(training).back() >= double(stoppedAt + 5), 120000);
        QVERIFY(m_window.stopRun(60000));
        QVERIFY(m_window.find<LogDock>("LogDock")->text().contains(
            QString("continuing run %1").arg(runId)));
        m_window->showTab("training");
        QVERIFY(m_window->saveScreenshot(artifactPath("studio-training-resumed.png")));

        // Still one run in the store; its loss steps go on without a gap or a restart.
        runs = m_window->runStore()->listRuns();
        QVERIFY(runs.ok());
        QCOMPARE(runs->size(), size_t(1));
        QCOMPARE(runs->front().id, runId);
        auto loss = m_window->runStore()->metrics(runId, "loss");
        QVERIFY(loss.ok());
        QVERIFY(loss->back().step > stoppedAt);
        for (size_t i = 1; i < loss->size(); ++i) {
            QCOMPARE((*loss)[i].step, (*loss)[i - 1].step + 1);
        }

        // Samples: the run's final weights beside its early checkpoint folder, same prompt and
        // seed, generated in parallel.
        SamplesTab* samples = m_window.find<SamplesTab>("samplesTab");
        samples->setModelPath(QString::fromStdString(modelDir.string()));
        samples->setCompareModelPath(QString::fromStdString(written.front().second.string()));
        samples->setPrompt("And the");
        samples->setLength(60);
        samples->setSeed(7);
        QSignalSpy sampled(samples, &SamplesTab::finished);
        QVERIFY(samples->generate());
        QVERIFY(samples->isGenerating());
        QTRY_VERIFY_WITH_TIMEOUT(!sampled.isEmpty(), 60000);
        QVERIFY2(sampled.front().at(0).toBool(), qPrintable(sampled.front().at(1).toString()));
        QVERIFY(samples->output().startsWith("And the"));
        QVERIFY(samples->compareOutput().startsWith("And the"));
        QVERIFY(samples->output().size() > 20 && samples->compareOutput().size() > 20);
        m_window->showTab("samples");
        QVERIFY(m_window->saveScreenshot(artifactPath("studio-samples-compare.png")));
    }

    void refusedResumeShowsWhy() {
        m_window.action("runAction")->trigger();
        QTRY_VERIFY_WITH_TIMEOUT(liveSteps(m_window.find<TrainingTab>("trainingTab")).size() >= 3,
                                 120000);
        QVERIFY(m_window.stopRun(60000));
        auto runs = m_window->runStore()->listRuns();
        QVERIFY(runs.ok() && runs->size() == 1);
        const int64_t runId = runs->front().id;

        // A changed learning rate in the Config tab: listed, "Resume anyway" offered.
        QVERIFY(m_window->document()->setField("optimizer.learning_rate", "0.01"));
        QString shown;
        bool anywayOffered = false;
        whenDialogShows([&](ResumeDialog* dialog) {
            shown = dialog->message();
            anywayOffered = dialog->anywayButton() != nullptr;
            dialog->grab().save(artifactPath("studio-resume-dialog.png"));
            dialog->reject();
        });
        QVERIFY(!m_window->resumeRun(runId));
        QVERIFY2(shown.contains("optimizer.learning_rate"), qPrintable(shown));
        QVERIFY(anywayOffered);
        QVERIFY(!m_window->controller()->isActive());

        // "Resume anyway" continues the same run with the new rate, and the Log says so.
        whenDialogShows([](ResumeDialog* dialog) {
            QVERIFY(dialog->anywayButton());
            dialog->anywayButton()->click();
        });
        const int64_t stoppedAt = ws::modelio::listCheckpoints(runs->front().modelDir).back().first;
        QVERIFY(m_window->resumeRun(runId));
        QTRY_VERIFY_WITH_TIMEOUT(!liveSteps(m_window.find<TrainingTab>("trainingTab")).empty() &&
                                     liveSteps(m_window.find<TrainingTab>("trainingTab")).back() >=
                                         double(stoppedAt + 2),
                                 120000);
        QVERIFY(m_window.stopRun(60000));
        QVERIFY(m_window.find<LogDock>("LogDock")->text().contains("no longer continues exactly"));
        runs = m_window->runStore()->listRuns();
        QVERIFY(runs.ok() && runs->size() == 1);

        // A damaged checkpoint: refused, naming the file; nothing to force.
        const auto checkpoints = ws::modelio::listCheckpoints(runs->front().modelDir);
        QVERIFY(!checkpoints.empty());
        QFile model(
            QString::fromStdString((checkpoints.back().second / ws::modelio::kModelFile).string()));
        QVERIFY(model.open(QIODevice::ReadWrite));
        model.seek(model.size() / 2);
        model.write("damaged");
        model.close();
        whenDialogShows([&](ResumeDialog* dialog) {
            shown = dialog->message();
            anywayOffered = dialog->anywayButton() != nullptr;
            dialog->grab().save(artifactPath("studio-resume-dialog-damaged.png"));
            dialog->reject();
        });
        QVERIFY(!m_window->resumeRun(runId));
        QVERIFY2(shown.contains("cannot be resumed") && shown.contains("model.safetensors"),
                 qPrintable(shown));
        QVERIFY(!anywayOffered);
        QVERIFY(!m_window->controller()->isActive());
    }

    void finishedRunTrainsFurtherAfterRaisingMaxSteps() {
        ConfigDocument* doc = m_window->document();
        QVERIFY(doc->setField("runconfig.max_steps", "6"));
        QVERIFY(m_window.runToEnd(120000));
        auto runs = m_window->runStore()->listRuns();
        QVERIFY(runs.ok() && runs->size() == 1);
        QCOMPARE(runs->front().status, std::string("finished"));
        const int64_t runId = runs->front().id;
        m_window.find<RunsDock>("RunsDock")->selectRuns({runId});
        QTRY_VERIFY(m_window.action("resumeRunAction")->isEnabled());

        // At its last step: the dialog says how to go on and offers nothing to start.
        QString shown;
        bool startable = true;
        whenDialogShows([&](ResumeDialog* dialog) {
            shown = dialog->message();
            startable = dialog->resumeButton() || dialog->anywayButton();
            dialog->reject();
        });
        QVERIFY(!m_window->resumeRun(runId));
        QVERIFY2(shown.contains("already reached its last step"), qPrintable(shown));
        QVERIFY(!startable);

        // With max_steps raised in the Config tab: listed as a change, resumed anyway, and the
        // same run trains on to the new last step.
        QVERIFY(doc->setField("runconfig.max_steps", "12"));
        whenDialogShows([&](ResumeDialog* dialog) {
            shown = dialog->message();
            if (dialog->anywayButton()) dialog->anywayButton()->click();
        });
        QSignalSpy finishedAgain(m_window->controller(), &RunController::finished);
        QVERIFY(m_window->resumeRun(runId));
        QVERIFY2(shown.contains("runconfig.max_steps"), qPrintable(shown));
        QTRY_VERIFY_WITH_TIMEOUT(!finishedAgain.isEmpty(), 120000);
        runs = m_window->runStore()->listRuns();
        QVERIFY(runs.ok() && runs->size() == 1);
        QCOMPARE(runs->front().status, std::string("finished"));
        auto loss = m_window->runStore()->metrics(runId, "loss");
        QVERIFY(loss.ok() && !loss->empty());
        QCOMPARE(loss->back().step, int64_t(12));
        QCOMPARE(loss->size(), size_t(12));
    }

private:
    ws::testing::StudioWindow m_window;
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<CheckpointsTest>(argc, argv);
}
#include "checkpoints_test.moc"
