// SamplesTab: see samples_tab.h.
#include "ui/samples_tab.h"

#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTextCursor>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>
#include <mutex>

#include "engine/sample/generator.h"
#include "engine/sample/load_model.h"

namespace ws::ui {

// What the worker and the GUI share; the worker never touches widgets.
struct SamplesTab::Shared {
    std::mutex mutex;
    std::string pending;  // text generated but not yet shown
    bool done = false;
    bool ok = false;
    std::string message;  // the error when !ok
    size_t tokens = 0;
    double tokensPerSecond = 0;
    bool cancelled = false;
    std::atomic<bool> cancel{false};
    std::atomic<bool> wakePending{false};
};

SamplesTab::SamplesTab(QWidget* parent) : QWidget(parent) {
    m_model = new QLineEdit(this);
    m_model->setObjectName(QStringLiteral("samplesModel"));
    m_model->setPlaceholderText(
        tr("a run folder or its model.safetensors (select a run, or train one)"));
    auto* browse = new QToolButton(this);
    browse->setText(tr("Browse…"));
    m_prompt = new QPlainTextEdit(this);
    m_prompt->setObjectName(QStringLiteral("samplesPrompt"));
    m_prompt->setPlainText(QStringLiteral("And God said"));
    m_prompt->setFixedHeight(m_prompt->fontMetrics().lineSpacing() * 4 + 12);
    m_temperature = new QDoubleSpinBox(this);
    m_temperature->setRange(0.0, 2.0);
    m_temperature->setSingleStep(0.05);
    m_temperature->setValue(0.8);
    m_temperature->setToolTip(tr("0 picks the most likely token every time"));
    m_topK = new QSpinBox(this);
    m_topK->setRange(0, 100000);
    m_topK->setValue(40);
    m_topK->setSpecialValueText(tr("all"));
    m_length = new QSpinBox(this);
    m_length->setRange(1, 10000);
    m_length->setValue(300);
    m_length->setSuffix(tr(" tokens"));
    m_generate = new QPushButton(tr("Generate"), this);
    m_generate->setDefault(true);
    m_stop = new QPushButton(tr("Stop"), this);
    m_stop->setEnabled(false);
    m_output = new QPlainTextEdit(this);
    m_output->setObjectName(QStringLiteral("samplesOutput"));
    m_output->setReadOnly(true);
    m_output->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_status = new QLabel(this);
    m_status->setForegroundRole(QPalette::PlaceholderText);

    auto* modelRow = new QHBoxLayout;
    modelRow->addWidget(m_model, 1);
    modelRow->addWidget(browse);
    auto* form = new QFormLayout;
    form->addRow(tr("Weights"), modelRow);
    form->addRow(tr("Prompt"), m_prompt);
    auto* knobs = new QHBoxLayout;
    knobs->setSpacing(8);
    knobs->addWidget(new QLabel(tr("Temperature"), this));
    knobs->addWidget(m_temperature);
    knobs->addSpacing(12);
    knobs->addWidget(new QLabel(tr("Top-k"), this));
    knobs->addWidget(m_topK);
    knobs->addSpacing(12);
    knobs->addWidget(new QLabel(tr("Length"), this));
    knobs->addWidget(m_length);
    knobs->addStretch(1);
    knobs->addWidget(m_generate);
    knobs->addWidget(m_stop);
    form->addRow(QString(), knobs);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(10, 10, 10, 6);
    layout->addLayout(form);
    layout->addWidget(m_output, 1);
    layout->addWidget(m_status);

    m_drainTimer = new QTimer(this);
    m_drainTimer->setSingleShot(true);
    m_drainTimer->setInterval(33);
    connect(m_drainTimer, &QTimer::timeout, this, &SamplesTab::drain);
    connect(m_generate, &QPushButton::clicked, this, &SamplesTab::generate);
    connect(m_stop, &QPushButton::clicked, this, &SamplesTab::stop);
    connect(browse, &QToolButton::clicked, this, [this] {
        const QString path =
            QFileDialog::getExistingDirectory(this, tr("Run folder"), m_model->text());
        if (!path.isEmpty()) m_model->setText(path);
    });
}

SamplesTab::~SamplesTab() {
    if (m_shared) m_shared->cancel = true;
    if (m_worker.joinable()) m_worker.join();
}

void SamplesTab::setModelPath(const QString& path) {
    m_model->setText(path);
}
QString SamplesTab::modelPath() const {
    return m_model->text();
}
void SamplesTab::setPrompt(const QString& prompt) {
    m_prompt->setPlainText(prompt);
}
void SamplesTab::setLength(int tokens) {
    m_length->setValue(tokens);
}
QString SamplesTab::output() const {
    return m_output->toPlainText();
}

bool SamplesTab::generate() {
    if (m_worker.joinable() || m_model->text().trimmed().isEmpty()) {
        if (!m_worker.joinable()) m_status->setText(tr("Choose the weights to sample from first."));
        return false;
    }
    sample::SamplingOptions options;
    options.temperature = m_temperature->value();
    options.topK = m_topK->value();
    options.maxTokens = m_length->value();
    const std::string prompt = m_prompt->toPlainText().toStdString();
    const std::filesystem::path path = m_model->text().trimmed().toStdString();
    m_output->setPlainText(m_prompt->toPlainText());
    m_status->setText(tr("Loading %1…").arg(m_model->text()));
    m_generate->setEnabled(false);
    m_stop->setEnabled(true);

    auto shared = std::make_shared<Shared>();
    m_shared = shared;
    SamplesTab* self = this;  // the destructor joins the worker before `this` goes
    auto wake = [shared, self] {
        if (shared->wakePending.exchange(true)) return;
        QMetaObject::invokeMethod(
            self,
            [self] {
                if (!self->m_drainTimer->isActive()) self->m_drainTimer->start();
            },
            Qt::QueuedConnection);
    };
    m_worker = std::thread([shared, wake, path, prompt, options] {
        auto finish = [&](bool ok, std::string message) {
            std::lock_guard lock(shared->mutex);
            shared->done = true;
            shared->ok = ok;
            shared->message = std::move(message);
        };

        auto model = sample::loadModel(path);
        if (!model.ok()) {
            finish(false, model.error().message);
            wake();
            return;
        }
        sample::Generator generator(*model);
        auto result = generator.generate(
            prompt, options,
            [&](const sample::TokenEvent& e) {
                {
                    std::lock_guard lock(shared->mutex);
                    shared->pending += e.text;
                }
                wake();
            },
            &shared->cancel);
        if (!result.ok()) {
            finish(false, result.error().message);
        } else {
            {
                std::lock_guard lock(shared->mutex);
                shared->tokens = result->tokens.size();
                shared->tokensPerSecond = result->tokensPerSecond();
                shared->cancelled = result->stop == sample::StopReason::Cancelled;
            }
            finish(true, {});
        }
        wake();
    });
    return true;
}

void SamplesTab::stop() {
    if (m_shared) m_shared->cancel = true;
}

void SamplesTab::drain() {
    if (!m_shared) return;
    m_shared->wakePending = false;
    std::string text;
    bool done = false;
    {
        std::lock_guard lock(m_shared->mutex);
        text.swap(m_shared->pending);
        done = m_shared->done;
    }
    if (!text.empty()) {
        QTextCursor cursor(m_output->document());
        cursor.movePosition(QTextCursor::End);
        cursor.insertText(QString::fromStdString(text));
        m_output->ensureCursorVisible();
    }
    if (done) onWorkerDone();
}

void SamplesTab::onWorkerDone() {
    if (m_worker.joinable()) m_worker.join();  // it has finished: only its return is left
    const bool ok = m_shared->ok;
    const QString message = ok ? tr("%1 tokens at %2 tokens/s%3")
                                     .arg(m_shared->tokens)
                                     .arg(m_shared->tokensPerSecond, 0, 'f', 0)
                                     .arg(m_shared->cancelled ? tr(", stopped") : QString())
                               : tr("Error: %1").arg(QString::fromStdString(m_shared->message));
    m_status->setText(message);
    m_generate->setEnabled(true);
    m_stop->setEnabled(false);
    emit finished(ok, message);
}

}  // namespace ws::ui
