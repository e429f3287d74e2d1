// SPDX-License-Identifier: GPL-3.0-or-later
// The fine-tune wizard's first page lists the models of the local Hugging Face cache (issue 33),
// offscreen: a cache laid out as huggingface_hub lays it out (tests/app/hf_tool.py: a GPT-2
// folder with sharded weights, its files symlinks into blobs/, refs/main) under HF_HUB_CACHE,
// plus a model this version does not compute. The GPT-2 model is listed with its architecture,
// size and parameters and can be chosen: the base checks out as a cached model used in place, and
// the plan starts from its shard index. The other is listed greyed and cannot be chosen. With no
// cache, the choice is disabled and says where it looked. A screenshot of the page goes to
// $WAFER_TEST_ARTIFACTS.
#include <QAbstractButton>
#include <QDir>
#include <QProcess>
#include <QRadioButton>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>

#include "engine/finetune/finetune_plan.h"
#include "support/finetune_wizard_support.h"
#include "support/gui_test.h"
#include "support/studio_window.h"
#include "ui/samples/finetune_wizard.h"
#include "ui/shell/main_window.h"

using namespace ws::ui;

namespace {

using ws::testing::saveWizard;
using ws::testing::writeFile;

bool runTool(const QStringList& args) {
    QProcess tool;
    tool.start(QStringLiteral("/usr/bin/python3"),
               QStringList{QStringLiteral(WAFER_SOURCE_DIR "/tests/app/hf_tool.py")} + args);
    return tool.waitForStarted() && tool.waitForFinished(120000) && tool.exitCode() == 0;
}

}  // namespace

class FinetuneCachedModelsTest : public QObject {
    Q_OBJECT
private slots:
    void init() { QVERIFY(m_window.open()); }
    void cleanup() {
        m_window.close();
        qunsetenv("HF_HUB_CACHE");
    }

    void listsTheCachedModelsAndFinetunesFromOne() {
        QTemporaryDir dir;
        const QString hub = dir.filePath("hub");
        if (!runTool({"write", dir.filePath("hf"), "--dtype", "BF16", "--prefix"}))
            QSKIP("python3 is not available");
        QVERIFY(runTool({"shard", dir.filePath("hf"), dir.filePath("hf-sharded"), "2"}));
        QVERIFY(runTool({"cache", dir.filePath("hf-sharded"), hub, "tiny-org/tiny-gpt2"}));
        QDir().mkpath(dir.filePath("bert"));
        QVERIFY(writeFile(dir.filePath("bert/config.json"),
                          R"({"architectures": ["BertForMaskedLM"], "model_type": "bert"})"));
        QVERIFY(runTool({"cache", dir.filePath("bert"), hub, "google/bert-tiny"}));
        qputenv("HF_HUB_CACHE", hub.toUtf8());

        FinetuneWizard* wizard = m_window->openFinetuneWizard();
        QCOMPARE(wizard->cachedModelIds(), (QStringList{"google/bert-tiny", "tiny-org/tiny-gpt2"}));
        auto* list = wizard->findChild<QTreeWidget*>(QStringLiteral("finetuneCachedModels"));
        QVERIFY(list && list->isVisible());
        const QTreeWidgetItem* gpt = list->topLevelItem(1);
        QCOMPARE(gpt->text(1), QStringLiteral("GPT2LMHeadModel"));
        QVERIFY(gpt->text(2).contains("KiB"));
        QVERIFY(gpt->text(3) != QStringLiteral("-"));
        QCOMPARE(gpt->text(4), QStringLiteral("yes"));
        const QTreeWidgetItem* bert = list->topLevelItem(0);
        QCOMPARE(bert->text(4), QStringLiteral("no"));
        QVERIFY(!(bert->flags() & Qt::ItemIsEnabled));
        QVERIFY2(!bert->toolTip(0).isEmpty(), "the reason is the tooltip");

        QVERIFY(!wizard->useCachedModel(QStringLiteral("google/bert-tiny")));
        QVERIFY(!wizard->useCachedModel(QStringLiteral("no/such-model")));
        QVERIFY(wizard->useCachedModel(QStringLiteral("tiny-org/tiny-gpt2")));
        QCOMPARE(wizard->baseRef(), QStringLiteral("tiny-org/tiny-gpt2"));
        QVERIFY2(wizard->baseOk(), qPrintable(wizard->baseInfo()));
        QVERIFY2(wizard->baseInfo().contains("from the local Hugging Face cache"),
                 qPrintable(wizard->baseInfo()));
        QVERIFY2(wizard->baseInfo().contains("2 layers × width 16"),
                 qPrintable(wizard->baseInfo()));
        saveWizard(wizard, "finetune-wizard-1-base-hf-cache.png");

        const QString data = m_window.filePath("lighthouse.txt");
        QVERIFY(writeFile(data, ws::testing::lighthouseText()));
        wizard->next();
        wizard->addDataPaths({data});
        QTest::qWait(200);  // the plan timer coalesces edits
        QVERIFY(QTest::qWaitFor([&] { return !wizard->isPlanning(); }, 30000));
        QVERIFY2(wizard->plan().has_value(), qPrintable(wizard->planError()));
        const QString start =
            QString::fromStdString(wizard->plan()->config.config.runconfig.checkpointPath);
        QVERIFY2(start.endsWith("/model.safetensors.index.json") && start.contains(hub),
                 qPrintable(start));
    }

    void withoutACacheTheChoiceSaysWhereItLooked() {
        QTemporaryDir dir;
        qputenv("HF_HUB_CACHE", dir.filePath("nothing-here").toUtf8());
        FinetuneWizard* wizard = m_window->openFinetuneWizard();
        QVERIFY(wizard->cachedModelIds().isEmpty());
        QRadioButton* choice = nullptr;
        for (auto* b : wizard->findChildren<QRadioButton*>())
            if (b->text().contains("Hugging Face cache")) choice = b;
        QVERIFY(choice);
        QVERIFY(!choice->isEnabled());
        QVERIFY2(choice->text().contains(dir.filePath("nothing-here")), qPrintable(choice->text()));
        QVERIFY2(wizard->baseOk(), "the shipped base stays the default");
    }

private:
    ws::testing::StudioWindow m_window;
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<FinetuneCachedModelsTest>(argc, argv);
}

#include "finetune_cached_models_test.moc"
