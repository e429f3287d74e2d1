// SPDX-License-Identifier: GPL-3.0-or-later
// SampleStream: one text generation from one model, streamed into one output pane without
// blocking the GUI. A worker thread loads the model (engine/modelio/load_model.h) and generates;
// it only appends text under a lock and posts one queued wake-up, and the GUI drains the batch at
// most every 33 ms. Several streams (the Samples tab's side-by-side compare) run in parallel,
// each on its own worker. GUI thread only, except the worker's hook.
#pragma once

#include <QObject>
#include <QString>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "engine/sample/sampler.h"

class QLabel;
class QPlainTextEdit;
class QTimer;

namespace ws::ui {

class SampleStream : public QObject {
    Q_OBJECT
public:
    // `output` and `status` are not owned and must outlive the stream.
    SampleStream(QPlainTextEdit* output, QLabel* status, QObject* parent = nullptr);
    ~SampleStream() override;  // cancels and joins a running generation

    // Starts generating from `model` (a run folder, checkpoint folder or .safetensors); the
    // output pane starts with the prompt. adapters false: a model with LoRA adapters is sampled
    // without them (its base). False if one is already running.
    bool start(const std::filesystem::path& model, const std::string& prompt,
               const sample::SamplingOptions& options, bool adapters = true);
    void cancel();
    bool isRunning() const { return m_worker.joinable(); }

signals:
    void finished(bool ok, const QString& message);

private:
    struct Shared;
    void drain();
    void onWorkerDone();

    QPlainTextEdit* m_output;
    QLabel* m_status;
    QTimer* m_drainTimer;
    std::shared_ptr<Shared> m_shared;
    std::thread m_worker;
};

}  // namespace ws::ui
