// SPDX-License-Identifier: GPL-3.0-or-later
// SamplesTab: see samples_tab.h.
#include "ui/samples/samples_tab.h"

#include <QCheckBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QToolButton>
#include <QVBoxLayout>

#include "engine/modelio/load_model.h"
#include "engine/store/run_store.h"
#include "ui/samples/sample_stream.h"

namespace ws::ui {
namespace {

// "run-3/checkpoint-40" or "run-3": enough to tell two panes apart.
QString shortModelName(const QString& path) {
    QFileInfo info(path.trimmed());
    if (info.fileName().endsWith(QLatin1String(".safetensors"))) info = QFileInfo(info.path());
    const QString name = info.fileName();
    if (name.startsWith(QLatin1String("checkpoint-"))) {
        return QFileInfo(info.path()).fileName() + '/' + name;
    }
    return name.isEmpty() ? path : name;
}

}  // namespace

QString runTitleForModel(const QString& path, const store::RunStore* store) {
    if (!store || path.trimmed().isEmpty()) return {};
    QFileInfo info(path.trimmed());
    if (info.fileName().endsWith(QLatin1String(".safetensors"))) info = QFileInfo(info.path());
    QString step;
    if (info.fileName().startsWith(QLatin1String("checkpoint-"))) {
        step = info.fileName().mid(int(qstrlen("checkpoint-")));
        info = QFileInfo(info.path());
    }
    if (!info.exists()) return {};
    const QString folder = info.canonicalFilePath();
    auto runs = store->listRuns();
    if (!runs.ok()) return {};
    for (const store::RunInfo& run : *runs) {
        if (run.modelDir.empty()) continue;
        const QFileInfo runFolder(QString::fromStdString(run.modelDir));
        if (!runFolder.exists() || runFolder.canonicalFilePath() != folder) continue;
        const QString name = QString::fromStdString(run.name);
        return step.isEmpty() ? name : QObject::tr("%1 · step %2").arg(name, step);
    }
    return {};
}

SamplesTab::SamplesTab(QWidget* parent) : QWidget(parent) {
    m_model = new QLineEdit(this);
    m_model->setObjectName(QStringLiteral("samplesModel"));
    m_model->setPlaceholderText(
        tr("a run folder, a checkpoint-<step> folder or a .safetensors file (select a run, or "
           "train one)"));
    m_compareModel = new QLineEdit(this);
    m_compareModel->setObjectName(QStringLiteral("samplesCompareModel"));
    m_compareModel->setPlaceholderText(
        tr("optional: a second model, sampled side by side with the same prompt and seed"));
    m_compareModel->setClearButtonEnabled(true);
    auto browseButton = [this](QLineEdit* target, const QString& text) {
        auto* button = new QToolButton(this);
        button->setText(text);
        button->setPopupMode(QToolButton::InstantPopup);
        auto* menu = new QMenu(button);
        menu->addAction(tr("Run or checkpoint folder…"), this,
                        [this, target] { chooseModel(target, false); });
        menu->addAction(tr("Weights file (.safetensors)…"), this,
                        [this, target] { chooseModel(target, true); });
        button->setMenu(menu);
        return button;
    };
    m_prompt = new QPlainTextEdit(this);
    m_prompt->setObjectName(QStringLiteral("samplesPrompt"));
    // The last prompt (a fine-tune's words from the user's own text), else one for the shipped
    // base model, which learned the King James Bible.
    m_prompt->setPlainText(
        QSettings()
            .value(QStringLiteral("samples/prompt"), QStringLiteral("And God said"))
            .toString());
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
    m_seed = new QSpinBox(this);
    m_seed->setRange(0, 1'000'000'000);
    m_seed->setValue(0);
    m_seed->setToolTip(
        tr("The random stream's seed: the same seed and settings give the same "
           "text from the same model, so two models are compared fairly"));
    m_generate = new QPushButton(tr("Generate"), this);
    m_generate->setDefault(true);
    m_stop = new QPushButton(tr("Stop"), this);
    m_stop->setEnabled(false);

    auto* modelRow = new QHBoxLayout;
    modelRow->addWidget(m_model, 1);
    modelRow->addWidget(browseButton(m_model, tr("Browse…")));
    m_loraCompare = new QCheckBox(tr("Base vs adapters"), this);
    m_loraCompare->setObjectName(QStringLiteral("samplesLoraCompare"));
    m_loraCompare->setChecked(true);
    m_loraCompare->setToolTip(
        tr("This model holds LoRA adapters: sample it with them and its base model without them, "
           "side by side, with the same prompt and seed"));
    auto* compareRow = new QHBoxLayout;
    compareRow->addWidget(m_compareModel, 1);
    compareRow->addWidget(browseButton(m_compareModel, tr("Compare with…")));
    compareRow->addWidget(m_loraCompare);
    auto* form = new QFormLayout;
    form->addRow(tr("Weights"), modelRow);
    form->addRow(tr("Compare"), compareRow);
    form->addRow(tr("Prompt"), m_prompt);
    auto* knobs = new QHBoxLayout;
    knobs->setSpacing(8);
    knobs->addWidget(new QLabel(tr("Temperature"), this));
    knobs->addWidget(m_temperature);
    knobs->addSpacing(12);
    knobs->addWidget(new QLabel(tr("Top-k"), this));
    knobs->addWidget(m_topK);
    knobs->addStretch(1);
    knobs->addWidget(m_generate);
    knobs->addWidget(m_stop);
    form->addRow(QString(), knobs);
    // Length and seed on a second row: one row of all the knobs is wider than a laptop allows
    // beside the docks (issue 17).
    auto* moreKnobs = new QHBoxLayout;
    moreKnobs->setSpacing(8);
    moreKnobs->addWidget(new QLabel(tr("Length"), this));
    moreKnobs->addWidget(m_length);
    moreKnobs->addSpacing(12);
    moreKnobs->addWidget(new QLabel(tr("Seed"), this));
    moreKnobs->addWidget(m_seed);
    moreKnobs->addStretch(1);
    form->addRow(QString(), moreKnobs);

    m_note = new QLabel(this);
    m_note->setObjectName(QStringLiteral("samplesNote"));
    m_note->setWordWrap(true);
    m_note->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_note->setStyleSheet(
        QStringLiteral("QLabel { background: #e8f5e9; border: 1px solid #a5d6a7; padding: 6px; }"));
    m_note->hide();
    m_panes = new QSplitter(Qt::Horizontal, this);
    m_panes->setChildrenCollapsible(false);
    m_a = makePane(QStringLiteral("samplesOutput"));
    m_b = makePane(QStringLiteral("samplesCompareOutput"));
    m_panes->addWidget(m_a.box);
    m_panes->addWidget(m_b.box);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(10, 10, 10, 6);
    layout->addLayout(form);
    layout->addWidget(m_note);
    layout->addWidget(m_panes, 1);

    connect(m_generate, &QPushButton::clicked, this, &SamplesTab::generate);
    connect(m_stop, &QPushButton::clicked, this, &SamplesTab::stop);
    connect(m_model, &QLineEdit::textChanged, this, &SamplesTab::updatePanes);
    // The note speaks of one model (a fine-tune's result): another model makes it stale.
    connect(m_model, &QLineEdit::textChanged, this, [this] { setNote({}); });
    connect(m_compareModel, &QLineEdit::textChanged, this, &SamplesTab::updatePanes);
    connect(m_loraCompare, &QCheckBox::toggled, this, &SamplesTab::updatePanes);
    connect(m_prompt, &QPlainTextEdit::textChanged, this, [this] {
        QSettings().setValue(QStringLiteral("samples/prompt"), m_prompt->toPlainText());
    });
    updatePanes();
}

QString SamplesTab::outputKey() const {
    return m_model->text().trimmed() + '\n' +
           (comparesAdaptersWithBase() ? QStringLiteral("(adapters off)")
                                       : m_compareModel->text().trimmed());
}

void SamplesTab::clearStaleOutput() {
    if (m_running > 0 || m_outputFor.isEmpty() || m_outputFor == outputKey()) return;
    m_outputFor.clear();
    for (Pane* pane : {&m_a, &m_b}) {
        pane->output->clear();
        pane->status->setText(m_model->text().trimmed().isEmpty()
                                  ? QString()
                                  : tr("Generate samples from the model named above."));
    }
}

SamplesTab::Pane SamplesTab::makePane(const QString& objectName) {
    Pane pane;
    pane.box = new QWidget(this);
    auto* layout = new QVBoxLayout(pane.box);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    pane.title = new QLabel(pane.box);
    QFont bold = pane.title->font();
    bold.setBold(true);
    pane.title->setFont(bold);
    pane.output = new QPlainTextEdit(pane.box);
    pane.output->setObjectName(objectName);
    pane.output->setReadOnly(true);
    pane.output->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    pane.status = new QLabel(pane.box);
    pane.status->setForegroundRole(QPalette::PlaceholderText);
    pane.status->setWordWrap(true);
    layout->addWidget(pane.title);
    layout->addWidget(pane.output, 1);
    layout->addWidget(pane.status);
    pane.stream = new SampleStream(pane.output, pane.status, this);
    connect(pane.stream, &SampleStream::finished, this, &SamplesTab::onStreamFinished);
    return pane;
}

SamplesTab::~SamplesTab() = default;  // the streams cancel and join their workers

void SamplesTab::updatePanes() {
    // Whether the model holds adapters: read from its config and weights header (no tensors),
    // once per path, and only for a path that exists (not on every keystroke of a typed one).
    const QString path = m_model->text().trimmed();
    if (path != m_loraCheckedPath) {
        m_loraCheckedPath = path;
        m_loraRank = 0;
        if (!path.isEmpty() && QFileInfo::exists(path)) {
            auto info = modelio::loadModelInfo(path.toStdString());
            if (info.ok()) m_loraRank = info->shape.loraRank;
        }
    }
    const bool otherModel = !m_compareModel->text().trimmed().isEmpty();
    m_loraCompare->setVisible(m_loraRank > 0 && !otherModel);
    const bool adapters = comparesAdaptersWithBase();
    const bool comparing = otherModel || adapters;
    m_b.box->setVisible(comparing);
    m_a.title->setVisible(comparing);
    const auto title = [this](const QString& p) {
        const QString name = m_namer ? m_namer(p.trimmed()) : QString();
        return name.isEmpty() ? shortModelName(p) : name;
    };
    if (adapters) {
        m_a.title->setText(
            tr("%1 · with LoRA adapters (rank %2)").arg(title(path)).arg(m_loraRank));
        m_b.title->setText(tr("%1 · base model (adapters off)").arg(title(path)));
        m_a.title->setToolTip(path);
        m_b.title->setToolTip(path);
        clearStaleOutput();
        return;
    }
    m_a.title->setText(title(m_model->text()));
    m_b.title->setText(title(m_compareModel->text()));
    m_a.title->setToolTip(m_model->text());
    m_b.title->setToolTip(m_compareModel->text());
    clearStaleOutput();
}

bool SamplesTab::comparesAdaptersWithBase() const {
    return m_loraRank > 0 && m_compareModel->text().trimmed().isEmpty() &&
           m_loraCompare->isChecked();
}

void SamplesTab::setCompareAdaptersWithBase(bool on) {
    m_loraCompare->setChecked(on);
}

void SamplesTab::chooseModel(QLineEdit* target, bool file) {
    const QString start = target->text().isEmpty() ? m_model->text() : target->text();
    const QString path =
        file ? QFileDialog::getOpenFileName(this, tr("Weights file"), start,
                                            tr("safetensors (*.safetensors);;All files (*)"))
             : QFileDialog::getExistingDirectory(this, tr("Run or checkpoint folder"), start);
    if (!path.isEmpty()) target->setText(QDir::toNativeSeparators(path));
}

void SamplesTab::setModelPath(const QString& path) {
    m_model->setText(path);
}
QString SamplesTab::modelPath() const {
    return m_model->text();
}
void SamplesTab::setCompareModelPath(const QString& path) {
    m_compareModel->setText(path);
}
QString SamplesTab::compareModelPath() const {
    return m_compareModel->text();
}
void SamplesTab::setPrompt(const QString& prompt) {
    m_prompt->setPlainText(prompt);
}
QString SamplesTab::prompt() const {
    return m_prompt->toPlainText();
}
void SamplesTab::setModelNamer(std::function<QString(const QString&)> namer) {
    m_namer = std::move(namer);
    updatePanes();
}
QString SamplesTab::paneTitle(int pane) const {
    return (pane == 0 ? m_a : m_b).title->text();
}
void SamplesTab::setNote(const QString& note) {
    m_note->setText(note);
    m_note->setVisible(!note.isEmpty());
}
QString SamplesTab::note() const {
    return m_note->text();
}
void SamplesTab::setLength(int tokens) {
    m_length->setValue(tokens);
}
void SamplesTab::setSeed(int seed) {
    m_seed->setValue(seed);
}
QString SamplesTab::output() const {
    return m_a.output->toPlainText();
}
QString SamplesTab::compareOutput() const {
    return m_b.output->toPlainText();
}
bool SamplesTab::isGenerating() const {
    return m_running > 0;
}

bool SamplesTab::generate() {
    if (m_running > 0) return false;
    if (m_model->text().trimmed().isEmpty()) {
        m_a.status->setText(tr("Choose the weights to sample from first."));
        return false;
    }
    sample::SamplingOptions options;
    options.temperature = m_temperature->value();
    options.topK = m_topK->value();
    options.maxTokens = m_length->value();
    options.seed = uint64_t(m_seed->value());
    const std::string prompt = m_prompt->toPlainText().toStdString();
    m_allOk = true;
    m_messages.clear();
    m_outputFor = outputKey();
    // Both in parallel: each stream loads its own model on its own worker.
    if (m_a.stream->start(m_model->text().trimmed().toStdString(), prompt, options)) ++m_running;
    const QString compare = m_compareModel->text().trimmed();
    if (comparesAdaptersWithBase()) {
        // The same model without its adapters: base vs adapter, same prompt and seed.
        if (m_b.stream->start(m_model->text().trimmed().toStdString(), prompt, options, false))
            ++m_running;
    } else if (!compare.isEmpty() && m_b.stream->start(compare.toStdString(), prompt, options)) {
        ++m_running;
    }
    m_generate->setEnabled(m_running == 0);
    m_stop->setEnabled(m_running > 0);
    return m_running > 0;
}

void SamplesTab::stop() {
    m_a.stream->cancel();
    m_b.stream->cancel();
}

void SamplesTab::onStreamFinished(bool ok, const QString& message) {
    m_allOk = m_allOk && ok;
    m_messages << message;
    if (--m_running > 0) return;
    m_generate->setEnabled(true);
    m_stop->setEnabled(false);
    emit finished(m_allOk, m_messages.join(QStringLiteral("; ")));
    clearStaleOutput();  // the models were changed while it generated
}

}  // namespace ws::ui
