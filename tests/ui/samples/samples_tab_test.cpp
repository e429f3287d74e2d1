// SPDX-License-Identifier: GPL-3.0-or-later
// The Samples tab's text belongs to the models named above it (issue 31): after another model is
// chosen (a new fine-tune, a run selected in Runs) the panes are emptied until Generate, instead
// of showing the previous model's text under the new name; choosing the same model again keeps
// the text. The prompt is kept across restarts (it fell back to "And God said").
#include <QLabel>
#include <QSignalSpy>
#include <QTest>

#include "support/gui_test.h"
#include "ui/samples/samples_tab.h"

using ws::ui::SamplesTab;

namespace {
const QString kBase = QStringLiteral(WAFER_SOURCE_DIR "/resources/base-model");
}

class SamplesTabTest : public QObject {
    Q_OBJECT
private slots:
    void thePromptIsKeptAcrossRestarts() {
        {
            SamplesTab tab;
            tab.setPrompt(QStringLiteral("The lighthouse keeper wrote"));
        }
        SamplesTab again;
        QCOMPARE(again.prompt(), QStringLiteral("The lighthouse keeper wrote"));
    }

    void anotherModelEmptiesThePanes() {
        SamplesTab tab;
        tab.resize(900, 600);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        tab.setLength(4);
        tab.setModelPath(kBase);
        QVERIFY(generate(tab));
        const QString text = tab.output();
        QVERIFY(!text.isEmpty());
        tab.setModelPath(kBase);  // the same model again: its text stays
        QCOMPARE(tab.output(), text);

        tab.setModelPath(kBase + QStringLiteral("/model.safetensors"));
        QCOMPARE(tab.output(), QString());
        QVERIFY(generate(tab));
        QVERIFY(!tab.output().isEmpty());

        // A model to compare with is a new choice too: both panes are emptied.
        tab.setCompareModelPath(kBase);
        QCOMPARE(tab.output(), QString());
        QVERIFY(generate(tab));
        QVERIFY(!tab.output().isEmpty() && !tab.compareOutput().isEmpty());
        tab.setCompareModelPath({});
        QCOMPARE(tab.output(), QString());
        QCOMPARE(tab.compareOutput(), QString());
    }

private:
    static bool generate(SamplesTab& tab) {
        QSignalSpy finished(&tab, &SamplesTab::finished);
        if (!tab.generate()) return false;
        return (!finished.isEmpty() || finished.wait(60000)) && finished.front().front().toBool();
    }
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<SamplesTabTest>(argc, argv);
}

#include "samples_tab_test.moc"
