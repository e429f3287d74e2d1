// SPDX-License-Identifier: GPL-3.0-or-later
// The Answers tab (issue 34's "after a fine-tune" view): a model answers held-out records greedily
// on the job's worker, the table shows question, answer and each model's reply coloured by exact
// match, the summary counts what the engine's checker counts (the same replies as
// sample::AnswerChecker run directly), a model that cannot answer is named in its column's
// summary while the others go on, and the order by answer loss sorts the rows. The screenshot goes
// to $WAFER_TEST_ARTIFACTS/answers-tab.png.
#include <QComboBox>
#include <QLabel>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTest>
#include <filesystem>

#include "engine/data/chat_records.h"
#include "engine/modelio/load_model.h"
#include "engine/sample/answer_check.h"
#include "support/gui_test.h"
#include "ui/answers/answers_tab.h"

using ws::testing::artifactPath;
using ws::ui::AnswersTab;
namespace fs = std::filesystem;

class AnswersTabTest : public QObject {
    Q_OBJECT

    const QString m_base = QStringLiteral(WAFER_SOURCE_DIR "/resources/base-model");
    const QString m_records =
        QStringLiteral(WAFER_SOURCE_DIR "/resources/instructions/held-out.jsonl");

private slots:
    void repliesFillTheTableAsTheCheckerGivesThem() {
        AnswersTab tab;
        tab.resize(1200, 700);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        tab.setModelPath(0, m_base);
        tab.setModelPath(1, QStringLiteral("/nonexistent/run-folder"));
        tab.setRecordsPath(m_records);
        tab.setChatTemplate(QStringLiteral("plain"));
        tab.setMaxCases(4);
        QSignalSpy finished(&tab, &AnswersTab::finished);
        QVERIFY(tab.check());
        QVERIFY(tab.isChecking());
        QVERIFY(!tab.check());  // one check at a time
        QVERIFY(finished.wait(120000));
        QCOMPARE(finished.first().at(0).toBool(), true);

        // The same replies the engine's checker gives, case by case.
        auto records = ws::data::readRecordFile(m_records.toStdString());
        QVERIFY(records.ok());
        const auto cases = ws::sample::answerCases(records->conversations, 4);
        auto model = ws::modelio::loadModel(m_base.toStdString());
        QVERIFY(model.ok());
        auto chat = ws::sample::prepareChatModel(std::move(model).value(), "plain");
        QVERIFY(chat.ok());
        auto expected =
            ws::sample::checkAnswers(*chat, true, cases, ws::sample::greedyAnswerOptions(32));
        QVERIFY(expected.ok());
        const auto& got = tab.outcomes(0);
        QCOMPARE(got.size(), size_t(4));
        for (size_t i = 0; i < 4; ++i) {
            QCOMPARE(got[i].reply, (*expected)[i].reply);
            QCOMPARE(got[i].exact, (*expected)[i].exact);
            QCOMPARE(got[i].answerLoss, (*expected)[i].answerLoss);
        }
        const auto summary = ws::sample::summarize(*expected);

        QTableWidget* table = tab.table();
        QCOMPARE(table->rowCount(), 4);
        QCOMPARE(table->columnCount(), 5);  // #, question, answer, two models
        QCOMPARE(table->horizontalHeaderItem(3)->text(), QStringLiteral("base-model"));
        QCOMPARE(table->item(0, 2)->text(),
                 QString::fromStdString(cases[0].conversation.messages.back().content));
        QCOMPARE(table->item(0, 3)->text(),
                 QString::fromStdString(got[0].reply).replace('\n', QStringLiteral(" ⏎ ")));
        QCOMPARE(tab.summary(0), QStringLiteral("%1/4 exact (%2%) · answer loss %3")
                                     .arg(summary.exact)
                                     .arg(100.0 * summary.exactFraction(), 0, 'f', 0)
                                     .arg(summary.meanAnswerLoss, 0, 'f', 3));
        QVERIFY2(tab.summary(1).startsWith(QStringLiteral("cannot answer: ")),
                 qPrintable(tab.summary(1)));
        QVERIFY2(tab.summary(1).contains(QStringLiteral("/nonexistent/run-folder")),
                 qPrintable(tab.summary(1)));
        QVERIFY(tab.status().contains(QStringLiteral("4 questions from")));

        // Worst first: the rows follow the model's answer loss, highest at the top.
        tab.setOrder(AnswersTab::Order::WorstFirst);
        double previous = 1e300;
        for (int row = 0; row < 4; ++row) {
            const int c = table->item(row, 0)->text().toInt() - 1;
            QVERIFY(got[size_t(c)].answerLoss <= previous);
            previous = got[size_t(c)].answerLoss;
        }
        tab.setOrder(AnswersTab::Order::Records);
        QCOMPARE(table->item(0, 0)->text(), QStringLiteral("1"));
        QVERIFY(tab.grab().save(artifactPath("answers-tab.png")));
    }

    // Without a records file, the model's run must have trained on records: the shipped base did
    // not, and the message says to choose a file.
    void aModelWithoutHeldOutRecordsAsksForAFile() {
        AnswersTab tab;
        tab.setModelPath(0, m_base);
        tab.setChatTemplate(QStringLiteral("plain"));
        QSignalSpy finished(&tab, &AnswersTab::finished);
        QVERIFY(tab.check());
        QVERIFY(finished.wait(60000));
        QCOMPARE(finished.first().at(0).toBool(), false);
        QVERIFY2(tab.status().contains(QStringLiteral("choose a records file")),
                 qPrintable(tab.status()));
        QCOMPARE(tab.table()->rowCount(), 0);
    }

    // With the template left at auto, a model without its template's tokens (the shipped base
    // and ChatML) answers through the plain template, and its summary says so.
    void autoFallsBackToPlainForABaseWithoutChatTokens() {
        AnswersTab tab;
        tab.setModelPath(0, m_base);
        tab.setRecordsPath(m_records);
        tab.setMaxCases(1);
        QSignalSpy finished(&tab, &AnswersTab::finished);
        QVERIFY(tab.check());
        QVERIFY(finished.wait(60000));
        QCOMPARE(finished.first().at(0).toBool(), true);
        QCOMPARE(tab.outcomes(0).size(), size_t(1));
        const QString summary = tab.findChild<QLabel*>("answersSummary0")->text();
        QVERIFY2(
            summary.contains(QStringLiteral("chat template plain (its vocabulary has no room")),
            qPrintable(summary));
    }

    void nothingToCheckWithoutAModel() {
        AnswersTab tab;
        QVERIFY(!tab.check());
        QVERIFY(tab.status().contains(QStringLiteral("Choose the model")));
    }
};

QTEST_MAIN(AnswersTabTest)
#include "answers_tab_test.moc"
