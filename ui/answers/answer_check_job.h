// SPDX-License-Identifier: GPL-3.0-or-later
// AnswerCheckJob: the held-out answers of several models (a fine-tune, its checkpoints, its base)
// checked on one worker thread (engine/sample/answer_check.h), without blocking the GUI. The
// cases are the records of a file, or, when none is given, the held-out records of the first
// model's run (the split its training made: session::readRunRecords). Each model is loaded,
// made ready to chat with its template (sample::prepareChatModel, `auto` unless chosen), and
// answers every case in turn; a model that cannot (no run config, a vocabulary without the
// template's tokens) is reported and the others go on. The worker only appends results under a
// lock and posts one queued wake-up; the GUI drains them. GUI thread only, except the worker.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <memory>
#include <thread>
#include <vector>

#include "engine/sample/answer_check.h"

namespace ws::ui {

class AnswerCheckJob : public QObject {
    Q_OBJECT
public:
    explicit AnswerCheckJob(QObject* parent = nullptr);
    ~AnswerCheckJob() override;  // cancels and joins a running check

    struct Request {
        QStringList models;  // run / checkpoint folders, model files (loadModelRef's forms)
        QString records;     // a record file; empty: the first model's run's held-out records
        int maxCases = 20;   // the first N cases
        QString chatTemplate = QStringLiteral("auto");
        int maxNewTokens = 32;
        QString dbPath;  // the run store, for models given as run ids
    };
    // False when one is already running or there is no model.
    bool start(const Request& request);
    void cancel();
    bool isRunning() const { return m_worker.joinable(); }

signals:
    // The cases, once read (before any outcome): their questions and answers in order.
    void casesReady(const std::vector<ws::sample::AnswerCase>& cases, const QString& source);
    // Model `model` (an index into Request::models) is loaded: "chat template chatml", and why
    // when `auto` fell back to the plain template.
    void modelReady(int model, const QString& description);
    void outcomeReady(int model, int caseIndex, const ws::sample::AnswerOutcome& outcome);
    void modelFailed(int model, const QString& message);
    // Everything done (ok), cancelled or failed before any model could run (message).
    void finished(bool ok, const QString& message);

private:
    struct Shared;
    void drain();

    std::shared_ptr<Shared> m_shared;
    std::thread m_worker;
};

}  // namespace ws::ui
