// SPDX-License-Identifier: GPL-3.0-or-later
// ChatPresenter: the Chat tab's engine side: one conversation with one model (sample/
// chat_session.h) driven from the GUI without blocking it. A worker thread loads the model
// (interop/model_ref.h: run, checkpoint or Hugging Face folder, the shipped base) and prepares it
// for its chat template, and generates each reply; it only appends text under a lock and posts
// one queued wake-up, and the GUI drains the batch at most every 33 ms (as SampleStream does).
// The model is loaded again only when the model, the template choice or the adapters change.
// The conversation is read and changed on the GUI thread only while no worker runs.
// GUI thread only, except the worker's hook.
#pragma once

#include <QObject>
#include <QString>
#include <memory>
#include <thread>

#include "engine/chat/conversation.h"
#include "engine/core/result.h"
#include "engine/sample/sampler.h"

class QTimer;

namespace ws::sample {
class ChatSession;
}

namespace ws::ui {

// What a conversation is held with: another choice loads the model again (and starts a new
// conversation, keeping the system prompt).
struct ChatModelChoice {
    QString model;                                  // a folder or .safetensors path, or a run id
    QString chatTemplate = QStringLiteral("auto");  // auto, a built-in name, or a .jinja file
    bool adapters = true;                           // a LoRA model: false chats with its base

    bool operator==(const ChatModelChoice&) const = default;
};

class ChatPresenter : public QObject {
    Q_OBJECT
public:
    explicit ChatPresenter(QObject* parent = nullptr);
    ~ChatPresenter() override;  // cancels and joins a running worker

    // The run store that resolves run ids (empty: the user's).
    void setDbPath(const QString& dbPath) { m_dbPath = dbPath; }

    // Sends the user's message: loads the model first if `choice` differs from the loaded one.
    // False (nothing started) while a reply is being generated or for an empty message.
    bool send(const ChatModelChoice& choice, const QString& text,
              const sample::SamplingOptions& options);
    void stop();
    bool isBusy() const { return m_worker.joinable(); }

    // The conversation's system prompt (kept by newConversation and model changes).
    void setSystemPrompt(const QString& text);
    void newConversation();
    const chat::Conversation& conversation() const { return m_conversation; }
    // Writes the conversation as one `messages` JSON line (chat/conversation_file.h).
    Status save(const QString& file) const;

    // The model the conversation is held with (being loaded while the first reply runs).
    const ChatModelChoice& loadedChoice() const { return m_loaded; }
    // The template of the loaded model ("chatml"), and why it was chosen; empty before a load.
    QString templateName() const { return m_templateName; }
    QString templateWhy() const { return m_templateWhy; }

signals:
    void modelLoaded(const QString& templateName, const QString& why);
    // The user's message has been taken: the transcript shows it, then the reply's pieces.
    void replyStarted();
    void replyText(const QString& piece);
    // ok false: `message` says why (the model could not be loaded or cannot chat, ...); the
    // user's message is then not part of the conversation.
    void replyFinished(bool ok, const QString& message);

private:
    struct Shared;
    void drain();
    void onWorkerDone();

    QString m_dbPath;
    QTimer* m_drainTimer;
    std::shared_ptr<Shared> m_shared;
    std::thread m_worker;
    // Owned here between replies, by the worker during one.
    std::shared_ptr<sample::ChatSession> m_session;
    ChatModelChoice m_loaded;
    chat::Conversation m_conversation;  // the GUI's copy, updated after each reply
    QString m_systemPrompt;
    QString m_templateName, m_templateWhy;
};

}  // namespace ws::ui
