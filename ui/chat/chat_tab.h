// SPDX-License-Identifier: GPL-3.0-or-later
// ChatTab: the Chat tab. A multi-turn conversation with any model in the store: a run (its model
// folder) or one of its checkpoints, the shipped base, or a folder (a run, a checkpoint, a Hugging
// Face model); LoRA adapters on or off; a system prompt; temperature, top-k, top-p, most tokens
// per reply and seed. The transcript shows the user's and the assistant's turns; the reply's
// tokens appear as they are generated (ChatPresenter: a worker thread) and stop at the chat
// template's end of turn; Stop ends a reply early. The template used and why (the run's, the
// model's own, built-in ChatML, or the one chosen) is shown; a model that cannot chat with it
// (a vocabulary without the template's tokens) says why and how to fix it. New conversation keeps
// the system prompt; Save conversation writes it as `messages` JSON Lines, ready to train on,
// wherever the user chooses (never inside the run store: the dialog starts in the home folder).
// GUI thread only.
#pragma once

#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTextEdit;

#include <memory>

namespace ws::store {
class RunStore;
}
namespace ws::modelio {
struct ModelInfo;
}

namespace ws::ui {

class ChatPresenter;
struct ChatModelChoice;

class ChatTab : public QWidget {
    Q_OBJECT
public:
    explicit ChatTab(QWidget* parent = nullptr);
    ~ChatTab() override;

    // Lists the store's runs and their checkpoints in the model picker (store may be null).
    void setRunStore(const store::RunStore* store, const QString& dbPath = {});
    void reloadModels();
    // Picks a model by path (added to the picker when not listed).
    void setModelPath(const QString& path);
    QString modelPath() const;
    // "auto", "chatml", "plain", or a .jinja file path.
    void setTemplateChoice(const QString& choice);
    void setSystemPrompt(const QString& text);
    void setMaxTokens(int tokens);
    void setTemperature(double temperature);

    bool send(const QString& text);  // false if a reply is running or the text is empty
    void stop();
    void newConversation();
    bool saveConversation(const QString& file);  // false (and the status says why) on failure
    bool isBusy() const;
    QString transcript() const;
    QString status() const;
    // The line naming the template and why (or why the model cannot chat with it).
    QString templateInfo() const;
    const ChatPresenter& presenter() const { return *m_presenter; }

signals:
    void replyFinished(bool ok, const QString& message);

private:
    void layOut();  // the widgets made by the constructor, in rows
    void wire();
    ChatModelChoice choice() const;
    void chooseFolder();
    void chooseTemplateFile();
    void onModelChanged();
    void updateButtons();
    void appendTurn(const QString& who, const QString& text);
    void onReplyFinished(bool ok, const QString& message);
    void showTemplate();
    void saveWithDialog();

    const store::RunStore* m_store = nullptr;
    // The picked model without its weights (null when it cannot be read so): says which
    // template it chats with, or why it cannot, before it is loaded.
    std::shared_ptr<const modelio::ModelInfo> m_info;
    ChatPresenter* m_presenter;
    QComboBox* m_model;
    QPushButton* m_folder;
    QComboBox* m_template;
    QCheckBox* m_adapters;
    QLineEdit* m_system;
    QDoubleSpinBox* m_temperature;
    QSpinBox* m_topK;
    QDoubleSpinBox* m_topP;
    QSpinBox* m_maxTokens;
    QSpinBox* m_seed;
    QLabel* m_templateInfo;
    QPushButton* m_usePlain;  // shown when the model lacks the template's special tokens
    QTextEdit* m_transcript;
    QLineEdit* m_input;
    QPushButton* m_send;
    QPushButton* m_stop;
    QPushButton* m_new;
    QPushButton* m_save;
    QLabel* m_status;
    bool m_replyStart = false;  // no text of the running reply shown yet
};

}  // namespace ws::ui
