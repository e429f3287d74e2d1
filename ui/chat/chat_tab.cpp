// SPDX-License-Identifier: GPL-3.0-or-later
// ChatTab: see chat_tab.h.
#include "ui/chat/chat_tab.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTextCursor>
#include <QTextEdit>
#include <QVBoxLayout>

#include "engine/modelio/load_model.h"
#include "engine/sample/chat_model.h"
#include "engine/store/run_store.h"
#include "ui/chat/chat_presenter.h"
#include "ui/samples/finetune_wizard.h"

namespace ws::ui {
namespace {

constexpr int kPathRole = Qt::UserRole;

QDoubleSpinBox* doubleBox(QWidget* parent, double lo, double hi, double step, double value) {
    auto* box = new QDoubleSpinBox(parent);
    box->setRange(lo, hi);
    box->setSingleStep(step);
    box->setValue(value);
    return box;
}

QSpinBox* intBox(QWidget* parent, int lo, int hi, int value) {
    auto* box = new QSpinBox(parent);
    box->setRange(lo, hi);
    box->setValue(value);
    return box;
}

}  // namespace

ChatTab::ChatTab(QWidget* parent) : QWidget(parent) {
    m_presenter = new ChatPresenter(this);
    m_model = new QComboBox(this);
    m_model->setObjectName(QStringLiteral("chatModel"));
    m_model->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_model->setMinimumContentsLength(16);
    m_model->setToolTip(
        tr("The model to chat with: a run, one of its checkpoints, the shipped "
           "base model, or a folder"));
    m_folder = new QPushButton(tr("Folder…"), this);
    m_folder->setToolTip(tr("A run, checkpoint-<step> or Hugging Face model folder"));
    m_template = new QComboBox(this);
    m_template->setObjectName(QStringLiteral("chatTemplate"));
    m_template->addItem(tr("auto"), QStringLiteral("auto"));
    for (const std::string& name : sample::chatTemplateNames())
        m_template->addItem(QString::fromStdString(name), QString::fromStdString(name));
    m_template->addItem(tr("File…"), QString());
    m_template->setToolTip(
        tr("auto: the template the run was fine-tuned with, else the model's own, else ChatML. "
           "plain writes \"User:\" and \"Assistant:\" as text, for models not fine-tuned on chat"));
    m_adapters = new QCheckBox(tr("LoRA adapters"), this);
    m_adapters->setObjectName(QStringLiteral("chatAdapters"));
    m_adapters->setChecked(true);
    m_adapters->setVisible(false);
    m_adapters->setToolTip(tr("A LoRA run: chat with its adapters, or without them (its base)"));
    m_system = new QLineEdit(this);
    m_system->setObjectName(QStringLiteral("chatSystem"));
    m_system->setPlaceholderText(tr("optional: how the assistant should answer"));
    m_temperature = doubleBox(this, 0.0, 2.0, 0.05, 0.7);
    m_temperature->setToolTip(tr("0 picks the most likely token every time"));
    m_topK = intBox(this, 0, 100000, 40);
    m_topK->setSpecialValueText(tr("all"));
    m_topP = doubleBox(this, 0.01, 1.0, 0.05, 0.95);
    m_maxTokens = intBox(this, 1, 4096, 200);
    m_maxTokens->setSuffix(tr(" tokens"));
    m_maxTokens->setToolTip(tr("The most tokens in one reply; it ends sooner at the end of turn"));
    m_seed = intBox(this, 0, 1'000'000'000, 0);
    m_templateInfo = new QLabel(this);
    m_templateInfo->setObjectName(QStringLiteral("chatTemplateInfo"));
    m_templateInfo->setWordWrap(true);
    m_templateInfo->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_usePlain = new QPushButton(tr("Use the plain template"), this);
    m_usePlain->setObjectName(QStringLiteral("chatUsePlain"));
    m_usePlain->setToolTip(
        tr("Write the conversation as \"User:\" and \"Assistant:\" text, "
           "which any model can continue"));
    m_usePlain->setVisible(false);
    m_transcript = new QTextEdit(this);
    m_transcript->setObjectName(QStringLiteral("chatTranscript"));
    m_transcript->setReadOnly(true);
    m_transcript->setPlaceholderText(tr("Type a message below and press Enter."));
    m_input = new QLineEdit(this);
    m_input->setObjectName(QStringLiteral("chatInput"));
    m_input->setPlaceholderText(tr("Message"));
    m_send = new QPushButton(tr("Send"), this);
    m_send->setDefault(true);
    m_stop = new QPushButton(tr("Stop"), this);
    m_new = new QPushButton(tr("New conversation"), this);
    m_save = new QPushButton(tr("Save conversation…"), this);
    m_save->setToolTip(
        tr("Write the conversation as JSON Lines in the messages shape: training "
           "data for a chat fine-tune"));
    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("chatStatus"));
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);

    layOut();
    wire();
    reloadModels();
    updateButtons();
    showTemplate();
}

void ChatTab::layOut() {
    auto* modelRow = new QHBoxLayout;
    modelRow->addWidget(m_model, 1);
    modelRow->addWidget(m_folder);
    auto* templateRow = new QHBoxLayout;
    templateRow->addWidget(m_template);
    templateRow->addWidget(m_adapters);
    templateRow->addStretch(1);
    // Two rows of knobs, so the tab stays narrower than a laptop's screen beside the docks.
    auto knobRow = [this](std::initializer_list<std::pair<QString, QWidget*>> knobs) {
        auto* row = new QHBoxLayout;
        row->setSpacing(8);
        for (const auto& [label, widget] : knobs) {
            row->addWidget(new QLabel(label, this));
            row->addWidget(widget);
        }
        row->addStretch(1);
        return row;
    };
    auto* form = new QFormLayout;
    form->addRow(tr("Model"), modelRow);
    form->addRow(tr("Template"), templateRow);
    form->addRow(tr("System"), m_system);
    form->addRow(tr("Sampling"), knobRow({{tr("Temperature"), m_temperature},
                                          {tr("Top-k"), m_topK},
                                          {tr("Top-p"), m_topP}}));
    form->addRow(tr("Reply"), knobRow({{tr("up to"), m_maxTokens}, {tr("Seed"), m_seed}}));
    auto* inputRow = new QHBoxLayout;
    inputRow->addWidget(m_input, 1);
    inputRow->addWidget(m_send);
    inputRow->addWidget(m_stop);
    auto* actions = new QHBoxLayout;
    actions->addWidget(m_status, 1);
    actions->addWidget(m_new);
    actions->addWidget(m_save);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    auto* infoRow = new QHBoxLayout;
    infoRow->addWidget(m_templateInfo, 1);
    infoRow->addWidget(m_usePlain, 0, Qt::AlignTop);
    layout->addLayout(infoRow);
    layout->addWidget(m_transcript, 1);
    layout->addLayout(inputRow);
    layout->addLayout(actions);
}

void ChatTab::wire() {
    connect(m_folder, &QPushButton::clicked, this, &ChatTab::chooseFolder);
    connect(m_model, &QComboBox::currentIndexChanged, this, &ChatTab::onModelChanged);
    connect(m_template, &QComboBox::activated, this, [this](int index) {
        if (m_template->itemData(index).toString().isEmpty()) chooseTemplateFile();
        showTemplate();
    });
    connect(m_adapters, &QCheckBox::toggled, this, &ChatTab::showTemplate);
    connect(m_usePlain, &QPushButton::clicked, this,
            [this] { setTemplateChoice(QString::fromUtf8(sample::kPlainTemplateName)); });
    connect(m_system, &QLineEdit::editingFinished, this,
            [this] { m_presenter->setSystemPrompt(m_system->text()); });
    connect(m_input, &QLineEdit::returnPressed, this, [this] {
        if (send(m_input->text())) m_input->clear();
    });
    connect(m_send, &QPushButton::clicked, this, [this] {
        if (send(m_input->text())) m_input->clear();
    });
    connect(m_stop, &QPushButton::clicked, this, &ChatTab::stop);
    connect(m_new, &QPushButton::clicked, this, &ChatTab::newConversation);
    connect(m_save, &QPushButton::clicked, this, &ChatTab::saveWithDialog);
    connect(m_presenter, &ChatPresenter::modelLoaded, this, &ChatTab::showTemplate);
    connect(m_presenter, &ChatPresenter::replyText, this, [this](const QString& piece) {
        // The reply as it will be kept: without the whitespace a template leaves before it.
        QString text = piece;
        if (m_replyStart) {
            qsizetype skip = 0;
            while (skip < text.size() && text.at(skip).isSpace()) ++skip;
            text.remove(0, skip);
            if (text.isEmpty()) return;
            m_replyStart = false;
        }
        QTextCursor cursor(m_transcript->document());
        cursor.movePosition(QTextCursor::End);
        cursor.insertText(text, QTextCharFormat());
        m_transcript->ensureCursorVisible();
    });
    connect(m_presenter, &ChatPresenter::replyFinished, this, &ChatTab::onReplyFinished);
}

ChatTab::~ChatTab() = default;

void ChatTab::setRunStore(const store::RunStore* store, const QString& dbPath) {
    m_store = store;
    m_presenter->setDbPath(dbPath);
    reloadModels();
}

void ChatTab::reloadModels() {
    const QString current = modelPath();
    const QSignalBlocker block(m_model);
    m_model->clear();
    const QString shipped = FinetuneWizard::shippedBaseModel();
    if (QFileInfo::exists(shipped)) m_model->addItem(tr("Shipped base model"), shipped);
    if (m_store) {
        auto runs = m_store->listRuns();
        for (const store::RunInfo& run : runs.ok() ? *runs : std::vector<store::RunInfo>{}) {
            if (run.modelDir.empty() || run.kind == "sweep") continue;
            const QString name = QString::fromStdString(run.name);
            const QString dir = QString::fromStdString(run.modelDir);
            if (QFileInfo::exists(dir + QStringLiteral("/model.safetensors")))
                m_model->addItem(tr("%1 (run %2)").arg(name).arg(run.id), dir);
            auto checkpoints = m_store->checkpoints(run.id);
            if (!checkpoints.ok()) continue;
            // A checkpoint is recorded file by file (weights, optimizer state): one entry per
            // folder that holds the weights.
            for (const store::CheckpointRecord& c : *checkpoints) {
                const QFileInfo file(QString::fromStdString(c.path));
                const QString folder = file.isDir() ? file.filePath() : file.path();
                if (!QFileInfo::exists(folder + QStringLiteral("/model.safetensors")) ||
                    m_model->findData(folder) >= 0)
                    continue;
                m_model->addItem(tr("%1 · step %2").arg(name).arg(c.step), folder);
            }
        }
    }
    if (!current.isEmpty()) setModelPath(current);
    onModelChanged();
}

void ChatTab::setModelPath(const QString& path) {
    int index = m_model->findData(path);
    if (index < 0) {
        m_model->addItem(QFileInfo(path).fileName().isEmpty() ? path : QFileInfo(path).fileName(),
                         path);
        index = m_model->count() - 1;
        m_model->setItemData(index, path, Qt::ToolTipRole);
    }
    m_model->setCurrentIndex(index);
}

QString ChatTab::modelPath() const {
    return m_model->currentData(kPathRole).toString();
}

void ChatTab::setTemplateChoice(const QString& choice) {
    int index = m_template->findData(choice);
    if (index < 0) {
        m_template->insertItem(m_template->count() - 1, QFileInfo(choice).fileName(), choice);
        index = m_template->count() - 2;
    }
    m_template->setCurrentIndex(index);
    showTemplate();
}

void ChatTab::setSystemPrompt(const QString& text) {
    m_system->setText(text);
    m_presenter->setSystemPrompt(text);
}

void ChatTab::setMaxTokens(int tokens) {
    m_maxTokens->setValue(tokens);
}
void ChatTab::setTemperature(double temperature) {
    m_temperature->setValue(temperature);
}

ChatModelChoice ChatTab::choice() const {
    return {modelPath(), m_template->currentData().toString(),
            m_adapters->isHidden() || m_adapters->isChecked()};
}

bool ChatTab::send(const QString& text) {
    if (isBusy() || text.trimmed().isEmpty() || modelPath().isEmpty()) return false;
    m_presenter->setSystemPrompt(m_system->text());
    sample::SamplingOptions options;
    options.temperature = m_temperature->value();
    options.topK = m_topK->value();
    options.topP = m_topP->value();
    options.maxTokens = m_maxTokens->value();
    options.seed = uint64_t(m_seed->value());
    const bool loading = !(m_presenter->loadedChoice() == choice());
    if (!m_presenter->send(choice(), text, options)) return false;
    appendTurn(tr("You"), text.trimmed());
    appendTurn(tr("Assistant"), {});
    m_replyStart = true;
    m_status->setText(loading ? tr("Loading the model…") : tr("Generating…"));
    showTemplate();
    updateButtons();
    return true;
}

void ChatTab::stop() {
    m_presenter->stop();
}

void ChatTab::newConversation() {
    if (isBusy()) return;
    m_presenter->setSystemPrompt(m_system->text());
    m_presenter->newConversation();
    m_transcript->clear();
    m_status->clear();
    updateButtons();
}

bool ChatTab::saveConversation(const QString& file) {
    const Status st = m_presenter->save(file);
    m_status->setText(st.ok()
                          ? tr("Saved %1 messages to %2")
                                .arg(m_presenter->conversation().messages.size())
                                .arg(QDir::toNativeSeparators(file))
                          : tr("Not saved: %1").arg(QString::fromStdString(st.error().message)));
    return st.ok();
}

void ChatTab::saveWithDialog() {
    const QString file = QFileDialog::getSaveFileName(
        this, tr("Save conversation"), QDir::homePath() + QStringLiteral("/conversation.jsonl"),
        tr("Chat records (*.jsonl)"));
    if (!file.isEmpty()) saveConversation(file);
}

bool ChatTab::isBusy() const {
    return m_presenter->isBusy();
}
QString ChatTab::transcript() const {
    return m_transcript->toPlainText();
}
QString ChatTab::status() const {
    return m_status->text();
}

void ChatTab::chooseFolder() {
    const QString dir = QFileDialog::getExistingDirectory(
        this, tr("Model folder (run, checkpoint-<step> or Hugging Face)"), modelPath());
    if (!dir.isEmpty()) setModelPath(dir);
}

void ChatTab::chooseTemplateFile() {
    const QString file = QFileDialog::getOpenFileName(this, tr("Chat template"), QDir::homePath(),
                                                      tr("Jinja templates (*.jinja)"));
    if (file.isEmpty()) {
        m_template->setCurrentIndex(0);
        return;
    }
    setTemplateChoice(file);
}

void ChatTab::onModelChanged() {
    // The header and tokenizer only (cheap): LoRA adapters to offer, the template to name.
    m_info.reset();
    if (!modelPath().isEmpty()) {
        auto info = modelio::loadModelInfo(modelPath().toStdString());
        if (info.ok()) m_info = std::make_shared<const modelio::ModelInfo>(std::move(info).value());
    }
    const int rank = m_info ? m_info->shape.loraRank : 0;
    m_adapters->setVisible(rank > 0);
    m_adapters->setText(rank > 0 ? tr("LoRA adapters (rank %1)").arg(rank) : tr("LoRA adapters"));
    showTemplate();
}

void ChatTab::showTemplate() {
    QString text, color;
    bool lacksTokens = false;
    if (m_presenter->loadedChoice() == choice() && !m_presenter->templateName().isEmpty()) {
        text = tr("Template: %1 — %2").arg(m_presenter->templateName(), m_presenter->templateWhy());
    } else if (m_info) {
        auto setup = sample::chatSetup(*m_info, m_template->currentData().toString().toStdString());
        if (setup.ok()) {
            text = tr("Template: %1 — %2")
                       .arg(QString::fromStdString(setup->chatTemplate.name()),
                            QString::fromStdString(setup->templateWhy));
        } else {
            text = tr("This model cannot chat with this template: %1")
                       .arg(QString::fromStdString(setup.error().message));
            color = QStringLiteral("#b00020");
            lacksTokens =
                setup.error().message.find("needs the special token") != std::string::npos;
        }
    } else {
        text = tr("Template: %1 — named here once the model is loaded (at the first message)")
                   .arg(m_template->currentText());
    }
    m_templateInfo->setText(text);
    m_usePlain->setVisible(lacksTokens);
    m_templateInfo->setStyleSheet(color.isEmpty() ? QString()
                                                  : QStringLiteral("color: %1;").arg(color));
}

QString ChatTab::templateInfo() const {
    return m_templateInfo->text();
}

void ChatTab::updateButtons() {
    const bool busy = isBusy();
    m_send->setEnabled(!busy);
    m_stop->setEnabled(busy);
    m_new->setEnabled(!busy);
    m_save->setEnabled(!busy && !m_presenter->conversation().messages.empty());
    for (QWidget* w : {static_cast<QWidget*>(m_model), static_cast<QWidget*>(m_folder),
                       static_cast<QWidget*>(m_template), static_cast<QWidget*>(m_system)})
        w->setEnabled(!busy);
}

void ChatTab::appendTurn(const QString& who, const QString& text) {
    QTextCursor cursor(m_transcript->document());
    cursor.movePosition(QTextCursor::End);
    if (!m_transcript->document()->isEmpty()) {
        cursor.insertBlock();
        if (who == tr("You")) cursor.insertBlock();  // a blank line between exchanges
    }
    QTextCharFormat label;
    label.setFontWeight(QFont::Bold);
    label.setForeground(who == tr("You") ? QColor(0x1f, 0x5f, 0xa8) : QColor(0x2e, 0x7d, 0x32));
    cursor.insertText(who + QStringLiteral(": "), label);
    cursor.insertText(text, QTextCharFormat());
    m_transcript->ensureCursorVisible();
}

void ChatTab::onReplyFinished(bool ok, const QString& message) {
    if (ok) {
        // The reply's trailing whitespace goes too, as in the conversation kept.
        QTextCursor cursor(m_transcript->document());
        cursor.movePosition(QTextCursor::End);
        while (cursor.position() > 0 &&
               m_transcript->document()->characterAt(cursor.position() - 1).isSpace() &&
               !m_replyStart)
            cursor.deletePreviousChar();
        m_status->setText(message);
    } else {
        // The message was not answered: the transcript says so, and the status says why.
        QTextCursor cursor(m_transcript->document());
        cursor.movePosition(QTextCursor::End);
        QTextCharFormat error;
        error.setForeground(QColor(0xb0, 0x00, 0x20));
        cursor.insertText(tr("(no reply: see below)"), error);
        m_status->setText(tr("Cannot chat: %1").arg(message));
    }
    showTemplate();
    updateButtons();
    emit replyFinished(ok, message);
}

}  // namespace ws::ui
