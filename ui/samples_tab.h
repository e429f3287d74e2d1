// SamplesTab: the Samples tab. Generates text from a run's weights (a run folder or its
// model.safetensors): prompt, temperature, top-k and length, streamed token by token. Loading
// and generation run on a worker thread; text pieces cross to the GUI through a locked buffer
// and one coalesced wake-up (drained every 33 ms at most), so the window never freezes; Stop
// cancels within one layer's work. GUI thread only (except the worker it owns).
#pragma once

#include <QWidget>
#include <atomic>
#include <memory>
#include <thread>

class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QTimer;

namespace ws::ui {

class SamplesTab : public QWidget {
    Q_OBJECT
public:
    explicit SamplesTab(QWidget* parent = nullptr);
    ~SamplesTab() override;  // cancels and joins a running generation

    void setModelPath(const QString& path);  // a run folder or a .safetensors file
    QString modelPath() const;
    void setPrompt(const QString& prompt);
    void setLength(int tokens);
    bool generate();  // false if already generating or nothing to generate from
    void stop();
    bool isGenerating() const { return m_worker.joinable(); }
    QString output() const;

signals:
    void finished(bool ok, const QString& message);

private:
    struct Shared;
    void drain();
    void onWorkerDone();

    QLineEdit* m_model;
    QPlainTextEdit* m_prompt;
    QDoubleSpinBox* m_temperature;
    QSpinBox* m_topK;
    QSpinBox* m_length;
    QPushButton* m_generate;
    QPushButton* m_stop;
    QPlainTextEdit* m_output;
    QLabel* m_status;
    QTimer* m_drainTimer;
    std::shared_ptr<Shared> m_shared;
    std::thread m_worker;
};

}  // namespace ws::ui
