// SPDX-License-Identifier: GPL-3.0-or-later
// The fine-tune wizard, offscreen: with the shipped base model and a text file the test writes,
// page 2's numbers are planFinetune's; Run (Finish) trains a run of kind "finetune" (max steps
// lowered on page 4) that shows in the Training tab and the run store, puts its config in the
// Config tab, and leaves the Samples tab comparing the fine-tuned model with the base: panes
// titled with the run names, a prompt taken from the held-out end of the user's text, and the
// before/after eval loss in a note and the log. Page 3 (the method) keeps a full fine-tune for
// this small base; page 4 explains how the step count follows from epochs and data. An empty or
// missing file shows its error and keeps Next disabled; a dropped PDF is named as one and used only
// once "Train on it anyway" is ticked. Screenshots of each page and of the comparison go to
// $WAFER_TEST_ARTIFACTS.
#include <QAbstractButton>
#include <QApplication>
#include <QDir>
#include <QDropEvent>
#include <QFile>
#include <QFileInfo>
#include <QMimeData>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>
#include <memory>

#include "engine/finetune/finetune_plan.h"
#include "support/finetune_wizard_support.h"
#include "support/gui_test.h"
#include "support/studio_window.h"
#include "ui/common/run_controller.h"
#include "ui/config/config_document.h"
#include "ui/samples/finetune_wizard.h"
#include "ui/samples/samples_tab.h"
#include "ui/shell/log_dock.h"
#include "ui/shell/main_window.h"

using namespace ws::ui;

namespace {

using ws::testing::artifactPath;
using ws::testing::saveWizard;
using ws::testing::writeFile;

// Drops local files on a wizard page, as a file manager would.
void dropOn(QWidget* page, const QStringList& paths) {
    QMimeData mime;
    QList<QUrl> urls;
    for (const QString& p : paths) urls << QUrl::fromLocalFile(p);
    mime.setUrls(urls);
    QDragEnterEvent enter(QPoint(20, 20), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(page, &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(20, 20), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(page, &drop);
}

}  // namespace

class FinetuneWizardTest : public QObject {
    Q_OBJECT
private slots:
    void init() { QVERIFY(m_window.open()); }
    void cleanup() { m_window.close(); }

    void shippedBaseFinetunesAndComparesWithTheBase() {
        const QString data = m_window.filePath("lighthouse.txt");
        QVERIFY(writeFile(data, ws::testing::lighthouseText()));
        QVERIFY(m_window.action("finetuneAction")->isEnabled());
        FinetuneWizard* wizard = m_window->openFinetuneWizard();
        QVERIFY(wizard->isVisible());
        QVERIFY2(wizard->baseOk(), qPrintable(wizard->baseInfo()));
        QVERIFY(wizard->baseInfo().contains("llama-base"));
        QVERIFY(wizard->baseInfo().contains("6 layers × width 256"));
        // The blocks in a few words: what differs from GPT-2's.
        QVERIFY2(wizard->baseInfo().contains("positions; rotary, RMSNorm, SwiGLU, 2 KV heads"),
                 qPrintable(wizard->baseInfo()));
        saveWizard(wizard, "finetune-wizard-1-base.png");
        wizard->next();
        QCOMPARE(wizard->currentId(), int(FinetuneWizard::DataPage));
        QVERIFY(!wizard->button(QWizard::NextButton)->isEnabled());  // no text yet

        wizard->addDataPaths({data});
        QTRY_VERIFY_WITH_TIMEOUT(!wizard->isPlanning(), 30000);
        QVERIFY2(wizard->plan().has_value(), qPrintable(wizard->planError()));
        ws::finetune::FinetuneRequest request;
        request.base = FinetuneWizard::shippedBaseModel().toStdString();
        request.dataFiles = {data.toStdString()};
        request.dbPath = m_window.filePath("runs.sqlite").toStdString();
        auto expected = ws::finetune::planFinetune(request);
        QVERIFY2(expected.ok(), expected.ok() ? "" : expected.error().message.c_str());
        const auto& want = expected->summary;
        const auto& got = wizard->plan()->summary;
        QCOMPARE(got.tokens, want.tokens);
        QCOMPARE(got.heldOutTokens, want.heldOutTokens);
        QCOMPARE(got.stepsPerEpoch, want.stepsPerEpoch);
        QCOMPARE(got.estimatedSecondsPerEpoch, want.estimatedSecondsPerEpoch);
        const QString summary = wizard->dataSummary();
        const QLocale english(QLocale::English);
        QVERIFY2(summary.contains(english.toString(qlonglong(want.tokens)) + " tokens"),
                 qPrintable(summary));
        QVERIFY2(summary.contains(english.toString(qlonglong(want.heldOutTokens)) + " held out"),
                 qPrintable(summary));
        const QString stepsPerEpoch =
            QString::number(want.stepsPerEpoch) + (want.stepsPerEpoch == 1 ? " step" : " steps");
        QVERIFY2(summary.contains(stepsPerEpoch), qPrintable(summary));
        QVERIFY(wizard->button(QWizard::NextButton)->isEnabled());
        saveWizard(wizard, "finetune-wizard-2-data.png");

        wizard->next();  // the method page: a full fine-tune for this small base
        QCOMPARE(wizard->currentId(), int(FinetuneWizard::MethodPage));
        QVERIFY(!wizard->plan()->config.config.lora.has_value());
        wizard->next();
        QCOMPARE(wizard->currentId(), int(FinetuneWizard::SettingsPage));
        // The step count is explained from epochs, data size, batch and sequence length.
        const QString explained =
            QStringLiteral(
                "3 epochs × %1 per epoch (%2 training tokens ÷ 2,048 tokens per "
                "step: 16 sequences × 128 tokens, rounded up)")
                .arg(stepsPerEpoch)
                .arg(english.toString(qlonglong(want.trainTokens)));
        QVERIFY2(wizard->settingsEstimate().contains(explained),
                 qPrintable(wizard->settingsEstimate() + "\nwanted: " + explained));
        // A few KB of text is fewer steps than the minimum: the estimate says it was raised.
        QVERIFY(3 * want.stepsPerEpoch < ws::finetune::kMinSteps);
        QVERIFY2(
            wizard->settingsEstimate().contains(QStringLiteral("= %1, raised to the minimum of %2")
                                                    .arg(3 * want.stepsPerEpoch)
                                                    .arg(ws::finetune::kMinSteps)),
            qPrintable(wizard->settingsEstimate()));
        saveWizard(wizard, "finetune-wizard-3-explained.png");
        wizard->setMaxSteps(6);
        wizard->setOverrides("runconfig.log_steps=1");
        wizard->setRunName("lighthouse");
        QTRY_VERIFY_WITH_TIMEOUT(!wizard->isPlanning(), 30000);
        QVERIFY2(wizard->plan().has_value(), qPrintable(wizard->planError()));
        QCOMPARE(wizard->plan()->summary.maxSteps, int64_t(6));
        QVERIFY2(wizard->settingsEstimate().contains("6 steps as set by max_steps"),
                 qPrintable(wizard->settingsEstimate()));
        QVERIFY(wizard->button(QWizard::FinishButton)->isEnabled());
        const QString prompt = wizard->choice().samplePrompt;
        // Words from the held-out end of the text: the last tenth, never trained on.
        const QByteArray text = ws::testing::lighthouseText();
        QVERIFY2(!prompt.isEmpty() && text.indexOf(prompt.toUtf8(), text.size() * 8 / 10) >= 0,
                 qPrintable(prompt));
        saveWizard(wizard, "finetune-wizard-3-settings.png");

        QSignalSpy finished(m_window->controller(), &RunController::finished);
        wizard->button(QWizard::FinishButton)->click();
        QVERIFY(m_window->controller()->isActive());
        QVERIFY(m_window->document()->yaml().contains("checkpoint_path"));
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, 180000);
        auto runs = m_window->runStore()->listRuns();
        QVERIFY(runs.ok() && runs->size() == 1);
        const auto* run = &runs->front();
        QCOMPARE(QString::fromStdString(run->kind), QStringLiteral("finetune"));
        QCOMPARE(QString::fromStdString(run->name), QStringLiteral("lighthouse"));
        QVERIFY(QString::fromStdString(run->summaryJson).contains("\"steps\": 6"));

        SamplesTab* samples = m_window.find<SamplesTab>("samplesTab");
        QCOMPARE(samples->modelPath(), QString::fromStdString(run->modelDir));
        QCOMPARE(samples->compareModelPath(), FinetuneWizard::shippedBaseModel());
        // The prompt comes from the user's text; the panes carry run names, not folder names.
        QCOMPARE(samples->prompt(), prompt);
        QCOMPARE(samples->paneTitle(0), QStringLiteral("lighthouse"));
        QCOMPARE(samples->paneTitle(1), QStringLiteral("shipped base model"));
        const QStringList checkpoints =
            QDir(QString::fromStdString(run->modelDir))
                .entryList({QStringLiteral("checkpoint-*")}, QDir::Dirs);
        QVERIFY(!checkpoints.isEmpty());
        samples->setCompareModelPath(QString::fromStdString(run->modelDir) + '/' +
                                     checkpoints.front());
        QCOMPARE(samples->paneTitle(1), QStringLiteral("lighthouse · step ") +
                                            checkpoints.front().mid(int(qstrlen("checkpoint-"))));
        samples->setCompareModelPath(FinetuneWizard::shippedBaseModel());
        // Before → after, in the Samples tab and the log.
        const auto& result = finished.front().front().value<ws::session::RunSummary>();
        const QString change = QString::fromStdString(
            ws::finetune::describeEvalChange(result.initialEvalLoss, result.finalEvalLoss));
        QVERIFY2(change.contains(QString::number(result.initialEvalLoss, 'f', 3) + " → " +
                                 QString::number(result.finalEvalLoss, 'f', 3)),
                 qPrintable(change));
        QVERIFY2(samples->note().contains(change), qPrintable(samples->note()));
        QVERIFY2(m_window.find<LogDock>("LogDock")->text().contains(
                     "Fine-tune finished after 6 steps: " + change),
                 qPrintable(m_window.find<LogDock>("LogDock")->text()));
        samples->setLength(80);
        QSignalSpy generated(samples, &SamplesTab::finished);
        m_window->showTab("samples");
        QVERIFY(samples->generate());
        QTRY_VERIFY_WITH_TIMEOUT(generated.count() == 1, 60000);
        QVERIFY(generated.front().front().toBool());
        QVERIFY(!samples->output().isEmpty() && !samples->compareOutput().isEmpty());
        QVERIFY(m_window->saveScreenshot(artifactPath("studio-finetune-samples.png")));
        m_window->showTab("training");
        QVERIFY(m_window->saveScreenshot(artifactPath("studio-finetune-training.png")));

        // The fine-tuned run is now a base to choose: listed with its steps and final loss.
        FinetuneWizard* again = m_window->openFinetuneWizard();
        QVERIFY(again->useRun(run->id));
        QVERIFY2(again->baseOk(), qPrintable(again->baseInfo()));
        QVERIFY2(again->baseInfo().contains(QStringLiteral("run %1").arg(run->id)),
                 qPrintable(again->baseInfo()));
        QCOMPARE(again->baseRef(), QString::number(run->id));
        saveWizard(again, "finetune-wizard-1-runs.png");
        again->reject();
    }

    void emptyOrMissingFileShowsTheErrorAndBlocksNext() {
        const QString empty = m_window.filePath("empty.txt");
        QVERIFY(writeFile(empty, {}));
        FinetuneWizard* wizard = m_window->openFinetuneWizard();
        wizard->next();
        // Dropped on the page, as from a file manager.
        QMimeData mime;
        mime.setUrls({QUrl::fromLocalFile(empty)});
        QWidget* page = wizard->currentPage();
        QDragEnterEvent enter(QPoint(20, 20), Qt::CopyAction, &mime, Qt::LeftButton,
                              Qt::NoModifier);
        QApplication::sendEvent(page, &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent drop(QPointF(20, 20), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(page, &drop);
        QCOMPARE(wizard->dataPaths(), QStringList{QFileInfo(empty).absoluteFilePath()});
        QTRY_VERIFY_WITH_TIMEOUT(!wizard->isPlanning(), 30000);
        QVERIFY(!wizard->plan().has_value());
        QVERIFY(!wizard->planError().isEmpty());
        QVERIFY2(wizard->dataSummary().contains("empty.txt"), qPrintable(wizard->dataSummary()));
        QVERIFY(!wizard->button(QWizard::NextButton)->isEnabled());
        saveWizard(wizard, "finetune-wizard-2-error.png");

        wizard->clearData();
        wizard->addDataPaths({m_window.filePath("missing.txt")});
        QTRY_VERIFY_WITH_TIMEOUT(!wizard->isPlanning(), 30000);
        QVERIFY2(wizard->dataSummary().contains("missing.txt"), qPrintable(wizard->dataSummary()));
        QVERIFY(!wizard->button(QWizard::NextButton)->isEnabled());

        wizard->back();
        wizard->useFolder(m_window.dirPath());  // no model in it
        QVERIFY(!wizard->baseOk());
        QVERIFY(!wizard->button(QWizard::NextButton)->isEnabled());
        saveWizard(wizard, "finetune-wizard-1-error.png");
        wizard->reject();
    }

    void droppedPdfIsNamedAndUsedOnlyWhenAllowed() {
        const QString pdf = m_window.filePath("report.pdf");
        QVERIFY(QFile::copy(
            QStringLiteral(WAFER_SOURCE_DIR "/tests/engine/data/fixtures/report.pdf"), pdf));
        const QString data = m_window.filePath("lighthouse.txt");
        QVERIFY(writeFile(data, ws::testing::lighthouseText()));
        FinetuneWizard* wizard = m_window->openFinetuneWizard();
        wizard->next();
        QWidget* allow = wizard->findChild<QWidget*>(QStringLiteral("allowBinary"));
        QVERIFY(allow && allow->isHidden());
        dropOn(wizard->currentPage(), {data, pdf});
        QCOMPARE(wizard->dataPaths().size(), 2);
        QTRY_VERIFY_WITH_TIMEOUT(!wizard->isPlanning(), 30000);
        QVERIFY(!wizard->plan().has_value());
        QCOMPARE(wizard->nonTextFiles().size(), 1);
        const QString summary = wizard->dataSummary();
        QVERIFY2(summary.contains("report.pdf' looks like a PDF document, not plain text: "
                                  "export it as plain text (.txt) first"),
                 qPrintable(summary));
        QVERIFY2(summary.contains("Train on it anyway"), qPrintable(summary));
        QVERIFY(allow->isVisible());
        QVERIFY(!wizard->button(QWizard::NextButton)->isEnabled());
        saveWizard(wizard, "finetune-wizard-2-pdf.png");

        wizard->setAllowBinary(true);  // the user insists
        QTRY_VERIFY_WITH_TIMEOUT(!wizard->isPlanning(), 30000);
        QVERIFY2(wizard->plan().has_value(), qPrintable(wizard->planError()));
        QVERIFY(wizard->plan()->config.config.trainInput.allowBinary);
        QVERIFY2(wizard->dataSummary().contains("Training on it anyway"),
                 qPrintable(wizard->dataSummary()));
        QVERIFY(wizard->button(QWizard::NextButton)->isEnabled());
        saveWizard(wizard, "finetune-wizard-2-pdf-allowed.png");
        wizard->reject();
    }

    void huggingFaceFolderIsUsedInPlace() {
        // Written by the independent writer the CLI tests use (Python standard library only).
        const QString hf = m_window.filePath("hf");
        QProcess writer;
        writer.start(
            QStringLiteral("/usr/bin/python3"),
            {QStringLiteral(WAFER_SOURCE_DIR "/tests/app/hf_tool.py"), QStringLiteral("write"), hf,
             QStringLiteral("--dtype"), QStringLiteral("F16")});
        if (!writer.waitForStarted()) QSKIP("python3 is not available");
        QVERIFY(writer.waitForFinished(60000));
        QVERIFY2(writer.exitCode() == 0, writer.readAllStandardError().constData());
        const QString data = m_window.filePath("lighthouse.txt");
        QVERIFY(writeFile(data, ws::testing::lighthouseText()));
        FinetuneWizard* wizard = m_window->openFinetuneWizard();
        wizard->useFolder(hf);
        QVERIFY2(wizard->baseOk(), qPrintable(wizard->baseInfo()));
        QVERIFY2(wizard->baseInfo().contains("Hugging Face"), qPrintable(wizard->baseInfo()));
        QVERIFY2(wizard->baseInfo().contains("2 layers × width 16"),
                 qPrintable(wizard->baseInfo()));
        saveWizard(wizard, "finetune-wizard-1-hf.png");
        wizard->next();
        wizard->addDataPaths({data});
        QTRY_VERIFY_WITH_TIMEOUT(!wizard->isPlanning(), 30000);
        QVERIFY2(wizard->plan().has_value(), qPrintable(wizard->planError()));
        QCOMPARE(QString::fromStdString(wizard->plan()->summary.tokenizerKind),
                 QStringLiteral("bpe"));
        QCOMPARE(wizard->choice().basePath, QFileInfo(hf).absoluteFilePath());
        wizard->reject();
    }

private:
    ws::testing::StudioWindow m_window;
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<FinetuneWizardTest>(argc, argv);
}

#include "finetune_wizard_test.moc"
