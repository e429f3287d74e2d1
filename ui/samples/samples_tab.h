// SPDX-License-Identifier: GPL-3.0-or-later
// SamplesTab: the Samples tab. Generates text from a model (a run folder, one of its
// checkpoint-<step> folders, or a .safetensors file) for a prompt, temperature, top-k, length and
// seed, streamed token by token (SampleStream: a worker thread per generation, the GUI never
// blocks). "Compare with" names a second model: both then generate from the same prompt, seed and
// settings in parallel, in two panes side by side (base vs fine-tuned, early vs late checkpoint).
// The panes are titled with run names (as in the Runs dock) when a namer knows the model, and a
// note above them can carry a fine-tune's before/after result. A model with LoRA adapters (a LoRA
// run, imported PEFT adapters) and nothing to compare with is shown base vs adapter: the same
// model sampled with its adapters and without them (its base), same prompt and seed, side by
// side (a check box turns it off). The panes show text of the models named above them only: another
// model (a new fine-tune, a run selected in Runs) empties them until Generate. The prompt is kept
// across restarts (QSettings "samples/prompt", the last one shown).
// GUI thread only.
#pragma once

#include <QWidget>
#include <functional>

class QCheckBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QSplitter;

namespace ws::store {
class RunStore;
}

namespace ws::ui {

class SampleStream;

// The title of the run a model path belongs to, as the Runs dock names it: "my fine-tune" for a
// run folder or its model.safetensors, "my fine-tune · step 40" for a checkpoint-40 folder.
// Empty when no run of `store` (may be null) has that folder.
QString runTitleForModel(const QString& path, const store::RunStore* store);

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
    QString prompt() const;
    // Titles the panes: returns a name for a model path, or "" to fall back to the folder name.
    void setModelNamer(std::function<QString(const QString& path)> namer);
    QString paneTitle(int pane) const;  // 0: the model, 1: the one compared with
    // The model holds LoRA adapters of this rank (0: none, or not loadable).
    int modelLoraRank() const { return m_loraRank; }
    // Pane 1 shows the model's base (adapters off) beside pane 0 (adapters on).
    bool comparesAdaptersWithBase() const;
    void setCompareAdaptersWithBase(bool on);
    // A line above the panes (a fine-tune's result) until the model changes; empty hides it.
    void setNote(const QString& note);
    QString note() const;
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
    // What the panes' text was generated from (models and mode); another choice empties them.
    QString outputKey() const;
    void clearStaleOutput();
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
    QCheckBox* m_loraCompare;
    QString m_loraCheckedPath;  // the model path m_loraRank was read for
    int m_loraRank = 0;
    QLabel* m_note;
    QSplitter* m_panes;
    std::function<QString(const QString&)> m_namer;
    Pane m_a, m_b;
    int m_running = 0;
    bool m_allOk = true;
    QStringList m_messages;
    QString m_outputFor;  // outputKey() of the text in the panes (empty: none)
};

}  // namespace ws::ui
