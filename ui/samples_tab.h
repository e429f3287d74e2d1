// SamplesTab: the Samples tab. Generates text from a model (a run folder, one of its
// checkpoint-<step> folders, or a .safetensors file) for a prompt, temperature, top-k, length and
// seed, streamed token by token (SampleStream: a worker thread per generation, the GUI never
// blocks). "Compare with" names a second model: both then generate from the same prompt, seed and
// settings in parallel, in two panes side by side (base vs fine-tuned, early vs late checkpoint).
// GUI thread only.
#pragma once

#include <QWidget>

class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QSplitter;

namespace ws::ui {

class SampleStream;

class SamplesTab : public QWidget {
    Q_OBJECT
public:
    explicit SamplesTab(QWidget* parent = nullptr);
    ~SamplesTab() override;  // cancels and joins running generations

    void setModelPath(const QString& path);  // a run or checkpoint folder, or a .safetensors file
    QString modelPath() const;
    // The second model sampled side by side (empty: no comparison).
    void setCompareModelPath(const QString& path);
    QString compareModelPath() const;
    void setPrompt(const QString& prompt);
    void setLength(int tokens);
    void setSeed(int seed);
    bool generate();  // false if already generating or nothing to generate from
    void stop();
    bool isGenerating() const;
    QString output() const;
    QString compareOutput() const;

signals:
    // Every generation started by generate() has ended; ok when all succeeded.
    void finished(bool ok, const QString& message);

private:
    struct Pane {
        QWidget* box = nullptr;
        QLabel* title = nullptr;
        QPlainTextEdit* output = nullptr;
        QLabel* status = nullptr;
        SampleStream* stream = nullptr;
    };
    Pane makePane(const QString& objectName);
    void updatePanes();
    void chooseModel(QLineEdit* target, bool file);
    void onStreamFinished(bool ok, const QString& message);

    QLineEdit* m_model;
    QLineEdit* m_compareModel;
    QPlainTextEdit* m_prompt;
    QDoubleSpinBox* m_temperature;
    QSpinBox* m_topK;
    QSpinBox* m_length;
    QSpinBox* m_seed;
    QPushButton* m_generate;
    QPushButton* m_stop;
    QSplitter* m_panes;
    Pane m_a, m_b;
    int m_running = 0;
    bool m_allOk = true;
    QStringList m_messages;
};

}  // namespace ws::ui
