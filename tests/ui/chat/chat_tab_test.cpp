// SPDX-License-Identifier: GPL-3.0-or-later
// The Chat tab with the shipped base model: a conversation of two turns streamed off the GUI
// thread (plain template: the base has no chat tokens), the transcript's turns, the template and
// why; the conversation saved as `messages` JSON Lines that read back through the data readers
// as training data; the base refused with ChatML naming the tokens and the fix; Stop; New
// conversation keeping the system prompt.
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <filesystem>

#include "engine/chat/conversation_file.h"
#include "engine/data/chat_records.h"
#include "engine/store/run_store.h"
#include "support/gui_test.h"
#include "ui/chat/chat_presenter.h"
#include "ui/chat/chat_tab.h"

using ws::ui::ChatTab;

namespace {
const QString kBase = QStringLiteral(WAFER_SOURCE_DIR "/resources/base-model");
}

class ChatTabTest : public QObject {
    Q_OBJECT
private slots:
    void chatsWithTheShippedBaseAndSavesTrainingData() {
        ChatTab tab;
        tab.resize(1000, 700);
        tab.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tab));
        tab.setModelPath(kBase);
        tab.setTemplateChoice(QStringLiteral("plain"));
        tab.setTemperature(0.0);
        tab.setMaxTokens(6);
        tab.setSystemPrompt(QStringLiteral("Answer briefly."));

        QSignalSpy pieces(&tab.presenter(), &ws::ui::ChatPresenter::replyText);
        QVERIFY(reply(tab, QStringLiteral("Who made the heaven?")));
        QVERIFY(!pieces.isEmpty());  // streamed, not shown at the end only
        const auto& first = tab.presenter().conversation().messages;
        QCOMPARE(first.size(), size_t(3));
        QCOMPARE(first[0].content, std::string("Answer briefly."));
        QCOMPARE(first[2].role, std::string("assistant"));
        QVERIFY(!first[2].content.empty());
        QVERIFY2(
            tab.transcript().startsWith(QStringLiteral("You: Who made the heaven?\nAssistant: ")),
            qPrintable(tab.transcript()));
        QVERIFY2(tab.status().contains(QStringLiteral("6 tokens")), qPrintable(tab.status()));
        auto* info = tab.findChild<QLabel*>(QStringLiteral("chatTemplateInfo"));
        QVERIFY(info);
        QCOMPARE(info->text(), QStringLiteral("Template: plain — chosen"));

        // The second turn typed as a user does: Enter sends it and empties the input.
        auto* input = tab.findChild<QLineEdit*>(QStringLiteral("chatInput"));
        QVERIFY(input);
        QSignalSpy finished(&tab, &ChatTab::replyFinished);
        ws::testing::commitLine(input, QStringLiteral("And the earth?"));
        QVERIFY(input->text().isEmpty());
        QVERIFY(finished.wait(60000));
        QCOMPARE(finished.front().at(0).toBool(), true);
        QCOMPARE(tab.presenter().conversation().messages.size(), size_t(5));
        // The transcript shows each reply as the conversation keeps it (trimmed).
        const auto& all = tab.presenter().conversation().messages;
        QVERIFY2(tab.transcript().endsWith(QStringLiteral("Assistant: ") +
                                           QString::fromStdString(all[4].content)),
                 qPrintable(tab.transcript()));
        QVERIFY(tab.grab().save(ws::testing::artifactPath(QStringLiteral("chat_tab.png"))));
        QVERIFY(tab.transcript().contains(QStringLiteral("\n\nYou: And the earth?\nAssistant: ")));

        QTemporaryDir dir;
        const QString file = dir.filePath(QStringLiteral("chat.jsonl"));
        QVERIFY(tab.saveConversation(file));
        QVERIFY2(tab.status().startsWith(QStringLiteral("Saved 5 messages")),
                 qPrintable(tab.status()));
        auto back = ws::chat::loadConversations(file.toStdString());
        QVERIFY(back.ok());
        QCOMPARE(back->size(), size_t(1));
        QVERIFY(back->front().messages == tab.presenter().conversation().messages);
        auto records = ws::data::readRecordFile(file.toStdString());
        QVERIFY2(records.ok(), records.ok() ? "" : records.error().message.c_str());
        QCOMPARE(records->conversations.size(), size_t(1));
        QVERIFY(records->conversations.front().messages == tab.presenter().conversation().messages);

        // New conversation: the turns go, the system prompt stays.
        tab.newConversation();
        QCOMPARE(tab.transcript(), QString());
        QCOMPARE(tab.presenter().conversation().messages.size(), size_t(1));
        QVERIFY(!tab.saveConversation(dir.filePath(QStringLiteral("no/such/folder/x.jsonl"))));
        QVERIFY(tab.status().startsWith(QStringLiteral("Not saved: ")));
    }

    void aModelWithoutTheTemplatesTokensSaysWhyAndHowToFixIt() {
        ChatTab tab;
        tab.setModelPath(kBase);
        tab.setTemplateChoice(QStringLiteral("auto"));
        tab.setMaxTokens(4);
        // Said before any message, from the model's header and tokenizer.
        QVERIFY2(tab.templateInfo().startsWith(QStringLiteral(
                     "This model cannot chat with this template: the chat template chatml")),
                 qPrintable(tab.templateInfo()));
        QSignalSpy finished(&tab, &ChatTab::replyFinished);
        QVERIFY(tab.send(QStringLiteral("Hello")));
        QVERIFY(finished.wait(60000));
        QCOMPARE(finished.front().at(0).toBool(), false);
        const QString status = tab.status();
        QVERIFY2(status.startsWith(QStringLiteral("Cannot chat: the chat template chatml")),
                 qPrintable(status));
        QVERIFY(status.contains(QStringLiteral("<|im_start|>, <|im_end|>")));
        QVERIFY(status.contains(QStringLiteral("\"plain\"")));
        QVERIFY(tab.presenter().conversation().messages.empty());
        // The same tab then chats once the plain template is chosen (the button the message
        // offers).
        auto* usePlain = tab.findChild<QPushButton*>(QStringLiteral("chatUsePlain"));
        QVERIFY(usePlain && !usePlain->isHidden());
        usePlain->click();
        QVERIFY(usePlain->isHidden());
        QCOMPARE(tab.templateInfo(), QStringLiteral("Template: plain — chosen"));
        QVERIFY(reply(tab, QStringLiteral("Hello")));
        QCOMPARE(tab.presenter().conversation().messages.size(), size_t(2));
    }

    void stopEndsAReplyEarlyAndKeepsIt() {
        ChatTab tab;
        tab.setModelPath(kBase);
        tab.setTemplateChoice(QStringLiteral("plain"));
        tab.setMaxTokens(4000);
        QSignalSpy pieces(&tab.presenter(), &ws::ui::ChatPresenter::replyText);
        QSignalSpy finished(&tab, &ChatTab::replyFinished);
        QVERIFY(tab.send(QStringLiteral("Tell me everything.")));
        QVERIFY(tab.isBusy());
        QVERIFY(!tab.send(QStringLiteral("again")));  // one reply at a time
        QVERIFY(pieces.wait(60000));
        tab.stop();
        QVERIFY(!finished.isEmpty() || finished.wait(60000));
        QCOMPARE(finished.front().at(0).toBool(), true);
        QVERIFY2(tab.status().contains(QStringLiteral("stopped")), qPrintable(tab.status()));
        QCOMPARE(tab.presenter().conversation().messages.size(), size_t(2));
    }

    void thePickerListsRunsAndEachCheckpointFolderOnce() {
        // A run with a checkpoint recorded file by file, as a training session records it.
        QTemporaryDir dir;
        const std::filesystem::path run = dir.filePath(QStringLiteral("run")).toStdString();
        std::filesystem::copy(kBase.toStdString(), run);
        std::filesystem::create_directories(run / "checkpoint-5");
        std::filesystem::copy_file(run / "model.safetensors",
                                   run / "checkpoint-5" / "model.safetensors");
        std::filesystem::copy_file(run / "model.safetensors",
                                   run / "checkpoint-5" / "optimizer.safetensors");
        auto store =
            ws::store::RunStore::open(dir.filePath(QStringLiteral("runs.sqlite")).toStdString());
        QVERIFY(store.ok());
        ws::store::NewRun newRun;
        newRun.name = "chatty";
        newRun.configYaml = "x: 1\n";
        newRun.modelDir = run.string();
        auto id = (*store)->createRun(newRun);
        QVERIFY(id.ok());
        const std::string sha(64, 'a');
        QVERIFY((*store)
                    ->recordCheckpoint(*id, 5, run / "checkpoint-5" / "model.safetensors", sha)
                    .ok());
        QVERIFY((*store)
                    ->recordCheckpoint(*id, 5, run / "checkpoint-5" / "optimizer.safetensors", sha)
                    .ok());
        ChatTab tab;
        tab.setRunStore(store->get());
        auto* picker = tab.findChild<QComboBox*>(QStringLiteral("chatModel"));
        QVERIFY(picker);
        QStringList labels;
        for (int i = 0; i < picker->count(); ++i) labels << picker->itemText(i);
        QVERIFY2(labels.contains(QStringLiteral("chatty (run %1)").arg(*id)),
                 qPrintable(labels.join('|')));
        QCOMPARE(labels.count(QStringLiteral("chatty · step 5")), 1);
        QCOMPARE(picker->itemData(labels.indexOf(QStringLiteral("chatty · step 5"))).toString(),
                 QString::fromStdString((run / "checkpoint-5").string()));
    }

private:
    static bool reply(ChatTab& tab, const QString& text) {
        QSignalSpy finished(&tab, &ChatTab::replyFinished);
        if (!tab.send(text)) return false;
        if (finished.isEmpty() && !finished.wait(60000)) return false;
        if (!finished.front().at(0).toBool())
            qWarning("%s", qPrintable(finished.front().at(1).toString()));
        return finished.front().at(0).toBool();
    }
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<ChatTabTest>(argc, argv);
}

#include "chat_tab_test.moc"
