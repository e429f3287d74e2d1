// SPDX-License-Identifier: GPL-3.0-or-later
// The fine-tune wizard's defaults (issue 31): a run the user named carries that name on the loss
// chart's legend and in Runs (every fine-tune was "gpt-base fine-tune"), one left unnamed gets a
// default naming its base and data, distinct from the store's runs; page 4 says what the default
// learning rate is for the method chosen, from the plan's own rule (it said "a third of the base's"
// while LoRA's default is 10 × a full fine-tune's); the data files come back the next time the
// wizard opens, less a file that no longer exists, which a note names. Screenshots of page 4 and
// page 2 go to $WAFER_TEST_ARTIFACTS.
#include <QAbstractButton>
#include <QLineEdit>
#include <QSettings>
#include <QSignalSpy>
#include <QTest>

#include "engine/finetune/finetune_plan.h"
#include "support/finetune_wizard_support.h"
#include "support/gui_test.h"
#include "support/studio_window.h"
#include "ui/common/run_controller.h"
#include "ui/samples/finetune_method_panel.h"
#include "ui/samples/finetune_wizard.h"
#include "ui/samples/samples_tab.h"
#include "ui/shell/main_window.h"
#include "ui/training/training_tab.h"

using namespace ws::ui;

namespace {

using ws::testing::saveWizard;
using ws::testing::writeFile;

bool waitForPlan(FinetuneWizard* wizard) {
    QTest::qWait(200);  // the plan timer coalesces edits
    return QTest::qWaitFor([&] { return !wizard->isPlanning(); }, 30000) &&
           wizard->plan().has_value();
}

}  // namespace

class FinetuneDefaultsTest : public QObject {
    Q_OBJECT
private slots:
    void init() { QVERIFY(m_window.open()); }
    void cleanup() { m_window.close(); }

    void runsCarryTheGivenOrADistinctName() {
        const QString data = m_window.filePath("lighthouse.txt");
        QVERIFY(writeFile(data, ws::testing::lighthouseText()));
        // Named by the user.
        QCOMPARE(finetune(data, QStringLiteral("keeper's log")), QStringLiteral("keeper's log"));
        // Unnamed: the base and the data, and distinct on the second time.
        const QString first = finetune(data, {});
        QCOMPARE(first, QStringLiteral("llama-base fine-tune on lighthouse.txt"));
        FinetuneWizard* third = m_window->openFinetuneWizard();
        third->next();
        third->clearData();
        third->addDataPaths({data});
        QVERIFY2(waitForPlan(third), qPrintable(third->planError()));
        QCOMPARE(third->suggestedRunName(),
                 QStringLiteral("llama-base fine-tune on lighthouse.txt (2)"));
        QCOMPARE(third->findChild<QLineEdit*>("runName")->placeholderText(),
                 third->suggestedRunName());
        QCOMPARE(third->choice().runName, third->suggestedRunName());
        third->reject();
    }

    void theLearningRateTextSaysWhatTheDefaultIs() {
        const QString data = m_window.filePath("lighthouse.txt");
        QVERIFY(writeFile(data, ws::testing::lighthouseText()));
        FinetuneWizard* wizard = m_window->openFinetuneWizard();
        wizard->next();
        wizard->clearData();
        wizard->addDataPaths({data});
        QVERIFY2(waitForPlan(wizard), qPrintable(wizard->planError()));
        wizard->next();
        wizard->next();
        QCOMPARE(wizard->currentId(), int(FinetuneWizard::SettingsPage));
        const ws::finetune::FinetuneSummary full = wizard->plan()->summary;  // a copy: replanned
        QVERIFY2(wizard->settingsSubtitle().contains(
                     QString::fromStdString(ws::finetune::explainLearningRate(full))),
                 qPrintable(wizard->settingsSubtitle()));
        QVERIFY(wizard->settingsSubtitle().contains("a third of the base's peak"));
        wizard->method()->setLora(true);
        QVERIFY2(waitForPlan(wizard), qPrintable(wizard->planError()));
        const ws::finetune::FinetuneSummary lora = wizard->plan()->summary;
        QVERIFY(lora.lora);
        QCOMPARE(lora.peakLearningRate,
                 full.peakLearningRate * ws::finetune::kLoraLearningRateMultiplier);
        const QString subtitle = wizard->settingsSubtitle();
        QVERIFY2(subtitle.contains(QStringLiteral("%1: 10 × a full fine-tune's %2")
                                       .arg(lora.peakLearningRate, 0, 'g', 3)
                                       .arg(full.peakLearningRate, 0, 'g', 3)),
                 qPrintable(subtitle));
        saveWizard(wizard, "finetune-wizard-4-lora-learning-rate.png");
        wizard->reject();
    }

    void theDataFilesComeBackLessTheOnesGone() {
        const QString kept = m_window.filePath("kept.txt");
        const QString gone = m_window.filePath("gone.txt");
        QVERIFY(writeFile(kept, ws::testing::lighthouseText()));
        QVERIFY(writeFile(gone, ws::testing::lighthouseText()));
        {
            // On its own: Run remembers the files (the run itself is not needed here).
            FinetuneWizard wizard(m_window->runStore(), m_window.filePath("runs.sqlite"));
            wizard.next();
            wizard.clearData();
            wizard.addDataPaths({kept, gone});
            QVERIFY2(waitForPlan(&wizard), qPrintable(wizard.planError()));
            wizard.accept();
        }
        QVERIFY(QFile::remove(gone));

        FinetuneWizard* again = m_window->openFinetuneWizard();
        QCOMPARE(again->dataPaths(), QStringList{kept});
        QVERIFY2(again->dataNote().contains("gone.txt"), qPrintable(again->dataNote()));
        QVERIFY(!again->dataNote().contains("kept.txt"));
        again->next();
        QVERIFY2(waitForPlan(again), qPrintable(again->planError()));  // no error: it plans
        saveWizard(again, "finetune-wizard-2-remembered-data.png");
        again->reject();
    }

private:
    // Fine-tunes the shipped base on `data` for 2 steps with the Run name field set to `name`;
    // returns the name the Training tab's legend gives the run after it ended, checked to be the
    // one Runs (the store) gives it.
    QString finetune(const QString& data, const QString& name) {
        FinetuneWizard* wizard = m_window->openFinetuneWizard();
        wizard->next();
        wizard->clearData();
        wizard->addDataPaths({data});
        wizard->setMaxSteps(2);
        wizard->setOverrides(QStringLiteral("runconfig.eval_steps=1"));  // seconds, not a minute
        if (!waitForPlan(wizard)) return QStringLiteral("no plan: ") + wizard->planError();
        wizard->next();  // the method page
        wizard->next();  // the settings page, with Run
        if (wizard->currentId() != FinetuneWizard::SettingsPage) return QStringLiteral("no page 4");
        wizard->setRunName(name);
        const QString placeholder = wizard->findChild<QLineEdit*>("runName")->placeholderText();
        QSignalSpy finished(m_window->controller(), &RunController::finished);
        wizard->button(QWizard::FinishButton)->click();
        if (!m_window->controller()->isActive()) return QStringLiteral("did not start");
        if (!finished.wait(120000)) return QStringLiteral("did not finish");
        const auto summary = finished.front().front().value<ws::session::RunSummary>();
        auto run = m_window->runStore()->getRun(summary.runId);
        if (!run.ok()) return QStringLiteral("not stored");
        const auto* training = m_window.find<TrainingTab>("trainingTab");
        const auto it = training->runs().find(summary.runId);
        if (it == training->runs().end()) return QStringLiteral("not on the chart");
        const QString legend = QString::fromStdString(it->second.name);
        if (legend != QString::fromStdString(run->name))
            return QStringLiteral("legend %1 != Runs %2").arg(legend, run->name.c_str());
        if (name.isEmpty() && placeholder != legend)
            return QStringLiteral("placeholder %1 != %2").arg(placeholder, legend);
        return legend;
    }

    ws::testing::StudioWindow m_window;
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<FinetuneDefaultsTest>(argc, argv);
}

#include "finetune_defaults_test.moc"
