// SPDX-License-Identifier: GPL-3.0-or-later
// FinetuneWizard: see finetune_wizard.h.
#include "ui/samples/finetune_wizard.h"

#include <QButtonGroup>
#include <QCheckBox>
#include <QDoubleValidator>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMimeData>
#include <QPushButton>
#include <QRadioButton>
#include <QScreen>
#include <QSettings>
#include <QSpinBox>
#include <QTimer>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <QWizardPage>
#include <algorithm>
#include <cmath>
#include <functional>

#include "engine/core/paths.h"
#include "engine/core/units.h"
#include "engine/data/chat_records.h"
#include "engine/data/corpus.h"
#include "engine/data/text_check.h"
#include "engine/model/parameters.h"
#include "engine/modelio/hf_cache.h"
#include "engine/store/run_store.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/wafer/cycle_model.h"
#include "engine/wafer/spec.h"
#include "ui/samples/finetune_method_panel.h"
#include "ui/samples/record_preview_panel.h"

namespace ws::ui {
namespace {

// A page whose Next/Finish button follows `complete`, and which takes dropped local files.
class Page : public QWizardPage {
public:
    std::function<bool()> complete;
    std::function<void(const QStringList&)> dropped;
    void changed() { emit completeChanged(); }
    bool isComplete() const override { return complete ? complete() : true; }

protected:
    void dragEnterEvent(QDragEnterEvent* event) override {
        if (!dropped || !event->mimeData()->hasUrls()) return;
        for (const QUrl& url : event->mimeData()->urls()) {
            if (!url.isLocalFile()) return;
        }
        event->acceptProposedAction();
    }
    void dropEvent(QDropEvent* event) override {
        QStringList paths;
        for (const QUrl& url : event->mimeData()->urls()) paths << url.toLocalFile();
        if (dropped) dropped(paths);
        event->acceptProposedAction();
    }
};

QString errorText(const QString& message) {
    return QStringLiteral("<span style='color:#b00020'>%1</span>")
        .arg(message.toHtmlEscaped().replace('\n', QStringLiteral("<br>")));
}

QString grouped(int64_t n) {
    return QLocale(QLocale::English).toString(qlonglong(n));
}

// The base's tokenizer in a few words: "byte", "BPE, 270 tokens", "GPT-2 BPE, 50257 tokens".
QString tokenizerText(const finetune::BaseModel& base) {
    const tokenizer::Tokenizer& tok = *base.tokenizer;
    if (tok.kind() != "bpe") return QString::fromStdString(tok.kind());
    return (base.huggingFace ? QStringLiteral("GPT-2 BPE, %1 tokens")
                             : QStringLiteral("BPE, %1 tokens"))
        .arg(tok.vocabSize());
}

// The base's blocks in a few words: "GPT-2 blocks", or what differs from them ("rotary, RMSNorm,
// SwiGLU, 2 KV heads" for a Llama-family model).
QString blocksText(const config::ModelConfig& m) {
    QStringList parts;
    if (m.positionEmbeddingType != "learned")
        parts << QString::fromStdString(m.positionEmbeddingType == "alibi" ? "ALiBi" : "rotary");
    if (m.normType == "rmsnorm") parts << QStringLiteral("RMSNorm");
    if (m.nonlinearity == "swiglu") parts << QStringLiteral("SwiGLU");
    const int kv = m.extraAttentionParams.numKvGroups;
    if (kv > 0 && kv < m.numHeads) parts << QStringLiteral("%1 KV heads").arg(kv);
    return parts.isEmpty() ? QStringLiteral("GPT-2 blocks") : parts.join(QStringLiteral(", "));
}

// planFinetune reports a missing path, but text that is too short only as a token count: an empty
// or unreadable file is named here, so the user knows which one to replace.
Status checkTextFiles(const std::vector<std::string>& paths) {
    for (const std::string& p : paths) {
        std::error_code ec;
        if (!std::filesystem::is_regular_file(p, ec)) continue;  // folders and missing: the engine
        const auto size = std::filesystem::file_size(p, ec);
        if (!ec && size == 0) return Error{"'" + p + "' is empty: remove it or add text to it"};
        QFile file(QString::fromStdString(p));
        if (!file.open(QIODevice::ReadOnly))
            return Error{"cannot read '" + p + "': " + file.errorString().toStdString()};
    }
    return Status::success();
}

// The files of `paths` (as data loading lists them) that do not look like plain text, each as a
// sentence naming it and what it looks like. Missing paths are left to planFinetune's message.
QStringList findNonTextFiles(const std::vector<std::string>& paths) {
    QStringList found;
    auto files = data::listCorpusFiles(paths);
    if (!files.ok()) return found;
    for (const auto& file : *files) {
        auto what = data::checkTextFile(file);
        if (what.ok() && what->has_value())
            found << QString::fromStdString(data::nonTextMessage(file, **what));
    }
    return found;
}

}  // namespace

FinetuneWizard::FinetuneWizard(store::RunStore* store, const QString& dbPath, QWidget* parent)
    : QWizard(parent), m_store(store), m_dbPath(dbPath) {
    setObjectName(QStringLiteral("FinetuneWizard"));
    setWindowTitle(tr("Fine-tune a model"));
    setWizardStyle(QWizard::ClassicStyle);
    setOption(QWizard::NoBackButtonOnStartPage);
    setButtonText(QWizard::FinishButton, tr("&Run"));
    m_pool.setMaxThreadCount(1);
    m_planTimer = new QTimer(this);
    m_planTimer->setSingleShot(true);
    m_planTimer->setInterval(150);  // coalesces typing and a burst of dropped files
    connect(m_planTimer, &QTimer::timeout, this, &FinetuneWizard::startPlan);
    setPage(BasePage, makeBasePage());
    setPage(DataPage, makeDataPage());
    setPage(MethodPage, makeMethodPage());
    setPage(SettingsPage, makeSettingsPage());
    resize(760, 560);
    reloadRuns();
    reloadCachedModels();
    useShippedBase();
    restoreDataPaths();
}

namespace {
const QString kDataFilesKey = QStringLiteral("finetune/dataFiles");
}

void FinetuneWizard::restoreDataPaths() {
    QStringList kept, gone;
    for (const QString& path : QSettings().value(kDataFilesKey).toStringList()) {
        (QFileInfo::exists(path) ? kept : gone) << path;
    }
    if (!gone.isEmpty()) {
        QStringList names;
        for (const QString& path : gone) names << QFileInfo(path).fileName();
        m_dataNote->setText(tr("Left out from the last fine-tune's files, as they no longer "
                               "exist: %1")
                                .arg(names.join(QStringLiteral(", "))));
        m_dataNote->setToolTip(gone.join('\n'));
        m_dataNote->show();
    }
    if (!kept.isEmpty()) addDataPaths(kept);
}

void FinetuneWizard::accept() {
    QSettings().setValue(kDataFilesKey, dataPaths());
    QWizard::accept();
}

QString FinetuneWizard::dataNote() const {
    return m_dataNote->isHidden() ? QString() : m_dataNote->text();
}

FinetuneWizard::~FinetuneWizard() {
    m_pool.waitForDone();
}

QString FinetuneWizard::shippedBaseModel() {
    return QString::fromStdString((appDataDir() / "resources" / "base-model").string());
}

QWizardPage* FinetuneWizard::makeBasePage() {
    auto* page = new Page;
    m_basePage = page;
    page->setTitle(tr("1. Base model"));
    page->setSubTitle(
        tr("Fine-tuning keeps the base model's architecture and tokenizer and "
           "starts from its weights."));
    m_shipped = new QRadioButton(tr("The base model shipped with Wafer Studio"), page);
    m_fromRun = new QRadioButton(tr("A previous run"), page);
    m_fromFolder = new QRadioButton(
        tr("A folder: run, checkpoint-<step> or Hugging Face (GPT-2, Llama family)"), page);
    m_fromCache = new QRadioButton(page);
    auto* group = new QButtonGroup(page);
    for (QRadioButton* b : {m_shipped, m_fromRun, m_fromFolder, m_fromCache}) group->addButton(b);
    m_cached = new QTreeWidget(page);
    m_cached->setObjectName(QStringLiteral("finetuneCachedModels"));
    m_cached->setHeaderLabels(
        {tr("Hugging Face model"), tr("Architecture"), tr("Size"), tr("Parameters"), tr("Use")});
    m_cached->setRootIsDecorated(false);
    m_cached->header()->setSectionResizeMode(0, QHeaderView::Stretch);
    m_runs = new QTreeWidget(page);
    m_runs->setObjectName(QStringLiteral("finetuneRuns"));
    m_runs->setHeaderLabels({tr("Run"), tr("Name"), tr("Kind"), tr("Steps"), tr("Final loss")});
    m_runs->setRootIsDecorated(false);
    m_runs->header()->setSectionResizeMode(1, QHeaderView::Stretch);
    m_folder = new QLineEdit(page);
    m_folder->setPlaceholderText(tr("a folder holding model.safetensors or pytorch_model.bin"));
    auto* browse = new QPushButton(tr("Browse…"), page);
    m_baseInfo = new QLabel(page);
    m_baseInfo->setObjectName(QStringLiteral("baseInfo"));
    m_baseInfo->setWordWrap(true);
    m_baseInfo->setTextFormat(Qt::RichText);
    m_baseInfo->setMinimumHeight(70);
    m_baseInfo->setAlignment(Qt::AlignTop | Qt::AlignLeft);

    auto* layout = new QVBoxLayout(page);
    layout->addWidget(m_shipped);
    layout->addWidget(m_fromRun);
    layout->addWidget(m_runs, 1);
    layout->addWidget(m_fromFolder);
    auto* row = new QHBoxLayout;
    row->addWidget(m_folder, 1);
    row->addWidget(browse);
    layout->addLayout(row);
    layout->addWidget(m_fromCache);
    layout->addWidget(m_cached, 1);
    layout->addWidget(m_baseInfo);

    page->complete = [this] { return m_baseOk; };
    connect(group, &QButtonGroup::buttonToggled, this, [this](QAbstractButton*, bool on) {
        if (on) inspectBase();
    });
    connect(m_runs, &QTreeWidget::itemSelectionChanged, this, [this] {
        if (!m_runs->selectedItems().isEmpty()) m_fromRun->setChecked(true);
        inspectBase();
    });
    connect(m_cached, &QTreeWidget::itemSelectionChanged, this, [this] {
        if (!m_cached->selectedItems().isEmpty()) m_fromCache->setChecked(true);
        inspectBase();
    });
    connect(m_folder, &QLineEdit::editingFinished, this, [this] {
        m_fromFolder->setChecked(true);
        inspectBase();
    });
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString dir =
            QFileDialog::getExistingDirectory(this, tr("Base model folder"), m_folder->text());
        if (!dir.isEmpty()) useFolder(dir);
    });
    return page;
}

QWizardPage* FinetuneWizard::makeDataPage() {
    auto* page = new Page;
    m_dataPage = page;
    page->setTitle(tr("2. Text to fine-tune on"));
    page->setSubTitle(
        tr("Drop text files or folders here, or add them. The end of the text is "
           "held out to measure the fine-tuned model."));
    page->setAcceptDrops(true);
    m_files = new QListWidget(page);
    m_files->setObjectName(QStringLiteral("finetuneFiles"));
    m_files->setSelectionMode(QAbstractItemView::ExtendedSelection);
    auto* addFiles = new QPushButton(tr("Add Files…"), page);
    auto* addFolder = new QPushButton(tr("Add Folder…"), page);
    auto* remove = new QPushButton(tr("Remove"), page);
    m_allowBinary =
        new QCheckBox(tr("Train on it anyway (the model learns its bytes as they are)"), page);
    m_allowBinary->setObjectName(QStringLiteral("allowBinary"));
    m_allowBinary->hide();  // shown when a file does not look like text
    m_summary = new QLabel(page);
    m_summary->setObjectName(QStringLiteral("dataSummary"));
    m_summary->setWordWrap(true);
    m_summary->setTextFormat(Qt::RichText);
    m_summary->setMinimumHeight(90);
    m_summary->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    m_dataNote = new QLabel(page);
    m_dataNote->setObjectName(QStringLiteral("dataNote"));
    m_dataNote->setWordWrap(true);
    m_dataNote->hide();  // restoreDataPaths(): files of the last Run that are gone
    m_records = new RecordPreviewPanel(page);
    m_records->hide();  // shown for record files (showDataKind)
    auto* layout = new QVBoxLayout(page);
    layout->addWidget(m_dataNote);
    layout->addWidget(m_files, 1);
    auto* row = new QHBoxLayout;
    row->addWidget(addFiles);
    row->addWidget(addFolder);
    row->addWidget(remove);
    row->addStretch(1);
    layout->addLayout(row);
    layout->addWidget(m_records, 4);
    layout->addWidget(m_summary);
    layout->addWidget(m_allowBinary);

    page->complete = [this] { return !isPlanning() && m_plan.has_value(); };
    connect(m_allowBinary, &QCheckBox::toggled, this, &FinetuneWizard::schedulePlan);
    connect(m_records, &RecordPreviewPanel::choicesChanged, this, &FinetuneWizard::schedulePlan);
    page->dropped = [this](const QStringList& paths) { addDataPaths(paths); };
    connect(addFiles, &QPushButton::clicked, this, [this] {
        addDataPaths(QFileDialog::getOpenFileNames(
            this, tr("Data files"), {},
            tr("Text, chat and instruction data (*.txt *.md *.jsonl *.json *.csv *.tsv *.zip);;"
               "Text (*.txt *.md);;Chat and instruction records (*.jsonl *.json *.csv *.tsv "
               "*.zip);;All files (*)")));
    });
    connect(addFolder, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Folder of text files"));
        if (!dir.isEmpty()) addDataPaths({dir});
    });
    connect(remove, &QPushButton::clicked, this, [this] {
        qDeleteAll(m_files->selectedItems());
        schedulePlan();
    });
    return page;
}

QWizardPage* FinetuneWizard::makeMethodPage() {
    auto* page = new Page;
    m_methodPage = page;
    page->setTitle(tr("3. Method"));
    page->setSubTitle(
        tr("LoRA trains small adapters and leaves the base frozen: far fewer trained parameters, "
           "less memory and time. A full fine-tune trains every weight."));
    m_method = new FinetuneMethodPanel(page);
    auto* layout = new QVBoxLayout(page);
    layout->addWidget(m_method);
    page->complete = [this] { return m_method->valid() && !isPlanning() && m_plan.has_value(); };
    connect(m_method, &FinetuneMethodPanel::changed, this, [this] {
        // LoRA freezes the whole base already; the plan's default LR follows the method.
        m_freezeEmbeddings->setEnabled(!m_method->lora());
        m_freezeBlocks->setEnabled(!m_method->lora());
        schedulePlan();
    });
    return page;
}

QWizardPage* FinetuneWizard::makeSettingsPage() {
    auto* page = new Page;
    m_settingsPage = page;
    page->setTitle(tr("4. Hyperparameters"));
    page->setSubTitle(tr("Fine-tune defaults: %1; a short warmup, then a cosine decay to a tenth "
                         "of the peak. Run starts training.")
                          .arg(QString::fromStdString(finetune::learningRateRule())));
    m_learningRate = new QLineEdit(page);
    m_learningRate->setObjectName(QStringLiteral("learningRate"));
    auto* validator = new QDoubleValidator(0.0, 10.0, 12, m_learningRate);
    validator->setNotation(QDoubleValidator::ScientificNotation);
    validator->setLocale(QLocale::c());
    m_learningRate->setValidator(validator);
    m_epochs = new QSpinBox(page);
    m_epochs->setRange(1, 1000);
    m_epochs->setValue(3);
    m_maxSteps = new QSpinBox(page);
    m_maxSteps->setRange(0, 10'000'000);
    m_maxSteps->setSpecialValueText(tr("from epochs"));
    m_epochs->setToolTip(
        tr("Passes over the training part of your text. Steps = epochs × steps per epoch, where "
           "a step trains on batch size × sequence length tokens; Max steps, when set, wins."));
    m_maxSteps->setToolTip(tr("Train exactly this many steps instead (epochs then do not count)"));
    m_warmup = new QSpinBox(page);
    m_warmup->setRange(0, 1'000'000);
    m_warmup->setSuffix(tr(" step(s)"));
    m_freezeEmbeddings =
        new QCheckBox(tr("Freeze the embeddings (token and position; tied output too)"), page);
    m_freezeEmbeddings->setObjectName(QStringLiteral("freezeEmbeddings"));
    m_freezeBlocks = new QSpinBox(page);
    m_freezeBlocks->setSuffix(tr(" blocks"));
    m_overrides = new QLineEdit(page);
    m_overrides->setPlaceholderText(tr("key=value … (as wafer finetune --set)"));
    m_runName = new QLineEdit(page);
    m_runName->setObjectName(QStringLiteral("runName"));
    m_estimate = new QLabel(page);
    m_estimate->setObjectName(QStringLiteral("settingsEstimate"));
    m_estimate->setWordWrap(true);
    m_estimate->setTextFormat(Qt::RichText);
    m_estimate->setMinimumHeight(90);
    m_estimate->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    auto* form = new QFormLayout(page);
    form->addRow(tr("Peak learning rate"), m_learningRate);
    form->addRow(tr("Epochs"), m_epochs);
    form->addRow(tr("Max steps"), m_maxSteps);
    form->addRow(tr("Warmup"), m_warmup);
    form->addRow(QString(), m_freezeEmbeddings);
    form->addRow(tr("Freeze the first"), m_freezeBlocks);
    form->addRow(tr("Other settings"), m_overrides);
    form->addRow(tr("Run name"), m_runName);
    form->addRow(m_estimate);

    page->complete = [this] {
        return !isPlanning() && m_plan.has_value() && m_learningRate->hasAcceptableInput();
    };
    connect(m_learningRate, &QLineEdit::textEdited, this, [this] {
        m_lrEdited = true;
        refreshComplete();
    });
    connect(m_warmup, &QSpinBox::valueChanged, this, [this] {
        if (m_warmup->hasFocus()) m_warmupEdited = true;
    });
    connect(m_epochs, &QSpinBox::valueChanged, this, &FinetuneWizard::schedulePlan);
    connect(m_maxSteps, &QSpinBox::valueChanged, this, [this](int steps) {
        m_epochs->setEnabled(steps == 0);
        schedulePlan();
    });
    connect(m_freezeEmbeddings, &QCheckBox::toggled, this, &FinetuneWizard::schedulePlan);
    connect(m_freezeBlocks, &QSpinBox::valueChanged, this, &FinetuneWizard::schedulePlan);
    connect(m_overrides, &QLineEdit::editingFinished, this, &FinetuneWizard::schedulePlan);
    return page;
}

void FinetuneWizard::reloadRuns() {
    m_runs->clear();
    m_takenNames.clear();
    if (!m_store) return;
    auto runs = m_store->listRuns();
    if (!runs.ok()) return;
    for (const store::RunInfo& run : *runs) {
        m_takenNames.push_back(run.name);
        if (run.modelDir.empty() || run.kind == "sweep") continue;
        QString steps, loss;
        const QJsonObject summary =
            QJsonDocument::fromJson(QByteArray::fromStdString(run.summaryJson)).object();
        if (summary.value(QLatin1String("steps")).isDouble())
            steps = QString::number(summary.value(QLatin1String("steps")).toInteger());
        if (summary.value(QLatin1String("final_loss")).isDouble())
            loss = QString::number(summary.value(QLatin1String("final_loss")).toDouble(), 'f', 3);
        auto* item =
            new QTreeWidgetItem(m_runs, {QString::number(run.id), QString::fromStdString(run.name),
                                         QString::fromStdString(run.kind), steps, loss});
        item->setData(0, Qt::UserRole, qlonglong(run.id));
    }
}

void FinetuneWizard::useShippedBase() {
    m_shipped->setChecked(true);
    inspectBase();
}

bool FinetuneWizard::useRun(int64_t runId) {
    for (int i = 0; i < m_runs->topLevelItemCount(); ++i) {
        QTreeWidgetItem* item = m_runs->topLevelItem(i);
        if (item->data(0, Qt::UserRole).toLongLong() == runId) {
            m_runs->setCurrentItem(item);
            m_fromRun->setChecked(true);
            inspectBase();
            return true;
        }
    }
    return false;
}

void FinetuneWizard::useFolder(const QString& path) {
    m_folder->setText(path);
    m_fromFolder->setChecked(true);
    inspectBase();
}

void FinetuneWizard::reloadCachedModels() {
    m_cached->clear();
    const modelio::HfHub hub = modelio::hfHubCache();
    const auto models = modelio::listCachedHfModels(hub.dir);
    for (const auto& m : models) {
        auto* item = new QTreeWidgetItem(m_cached);
        item->setText(0, QString::fromStdString(m.id));
        item->setText(1, QString::fromStdString(m.architecture.empty() ? "-" : m.architecture));
        item->setText(2, QString::fromStdString(formatBytes(double(m.bytes))));
        item->setText(3, m.parameters > 0 ? grouped(m.parameters) : QStringLiteral("-"));
        item->setText(4, m.usable() ? tr("yes") : tr("no"));
        const QString why = m.usable() ? QString::fromStdString(m.snapshot.string())
                                       : QString::fromStdString(m.problem);
        for (int col = 0; col < 5; ++col) item->setToolTip(col, why);
        // A model this version cannot compute is shown, greyed, with the reason as its tooltip.
        if (!m.usable()) item->setFlags(item->flags() & ~Qt::ItemIsEnabled);
    }
    const QString where = QString::fromStdString(hub.dir.string());
    m_fromCache->setText(models.empty()
                             ? tr("A model in the Hugging Face cache (none in %1)").arg(where)
                             : tr("A model in the Hugging Face cache (%1)").arg(where));
    m_fromCache->setEnabled(!models.empty());
    m_cached->setVisible(!models.empty());
    for (int col = 1; col < 5; ++col) m_cached->resizeColumnToContents(col);
}

bool FinetuneWizard::useCachedModel(const QString& id) {
    const auto found = m_cached->findItems(id, Qt::MatchExactly, 0);
    if (found.isEmpty() || !(found.front()->flags() & Qt::ItemIsEnabled)) return false;
    m_cached->setCurrentItem(found.front());
    found.front()->setSelected(true);
    m_fromCache->setChecked(true);
    inspectBase();
    return true;
}

QStringList FinetuneWizard::cachedModelIds() const {
    QStringList ids;
    for (int i = 0; i < m_cached->topLevelItemCount(); ++i)
        ids << m_cached->topLevelItem(i)->text(0);
    return ids;
}

QString FinetuneWizard::baseRef() const {
    if (m_shipped->isChecked()) return shippedBaseModel();
    if (m_fromCache->isChecked()) {
        const auto items = m_cached->selectedItems();
        return items.isEmpty() ? QString() : items.front()->text(0);
    }
    if (m_fromRun->isChecked()) {
        const auto items = m_runs->selectedItems();
        return items.isEmpty() ? QString() : items.front()->text(0);
    }
    return m_folder->text().trimmed();
}

QString FinetuneWizard::baseInfo() const {
    return m_baseInfo->text();
}

void FinetuneWizard::inspectBase() {
    const QString ref = baseRef();
    m_baseOk = false;
    m_basePath.clear();
    if (ref.isEmpty()) {
        m_baseInfo->setText(m_fromRun->isChecked() || m_fromCache->isChecked()
                                ? tr("Choose a model in the list.")
                                : tr("Choose a folder."));
    } else {
        // The plan's own check of the base: config, tokenizer and weights header, no tensors.
        auto base = finetune::inspectBase(ref.toStdString(), m_dbPath.toStdString());
        if (!base.ok()) {
            m_baseInfo->setText(errorText(QString::fromStdString(base.error().message)));
        } else {
            const QString kind =
                m_shipped->isChecked()
                    ? tr("shipped with Wafer Studio, pretrained on the bundled corpus")
                : m_fromCache->isChecked() ? tr("from the local Hugging Face cache (used in place)")
                : base->huggingFace        ? QStringLiteral("Hugging Face folder (used in place)")
                : base->runId              ? QStringLiteral("run %1").arg(*base->runId)
                                           : QStringLiteral("model folder");
            const config::ModelConfig& m = base->config.model;
            m_baseInfo->setText(
                tr("<b>%1</b> — %2<br>%3 parameters: %4 layers × width %5, %6 heads, %7 "
                   "positions; %8<br>tokenizer: %9%10")
                    .arg(QString::fromStdString(m.name).toHtmlEscaped(), kind,
                         grouped(base->parameters))
                    .arg(m.numHiddenLayers)
                    .arg(m.hiddenSize)
                    .arg(m.numHeads)
                    .arg(m.maxPositionEmbeddings)
                    .arg(blocksText(m), tokenizerText(*base),
                         base->step >= 0 ? tr(", weights of step %1").arg(base->step) : QString()));
            m_baseOk = true;
            m_method->setBase(base->config, base->parameters);
            m_freezeEmbeddings->setEnabled(!m_method->lora());
            m_freezeBlocks->setEnabled(!m_method->lora());
            m_baseLayers = m.numHiddenLayers;
            m_freezeBlocks->setMaximum(m.numHiddenLayers);
            m_basePath = QString::fromStdString(base->path.string());
        }
    }
    static_cast<Page*>(m_basePage)->changed();
    schedulePlan();
}

void FinetuneWizard::addDataPaths(const QStringList& paths) {
    for (const QString& p : paths) {
        if (p.isEmpty()) continue;
        const QString absolute = QFileInfo(p).absoluteFilePath();
        if (m_files->findItems(absolute, Qt::MatchExactly).isEmpty()) m_files->addItem(absolute);
    }
    schedulePlan();
}

void FinetuneWizard::clearData() {
    m_files->clear();
    schedulePlan();
}

QStringList FinetuneWizard::dataPaths() const {
    QStringList paths;
    for (int i = 0; i < m_files->count(); ++i) paths << m_files->item(i)->text();
    return paths;
}

void FinetuneWizard::setAllowBinary(bool allow) {
    m_allowBinary->setChecked(allow);
}
bool FinetuneWizard::allowBinary() const {
    return m_allowBinary->isChecked();
}

void FinetuneWizard::setEpochs(int epochs) {
    m_epochs->setValue(epochs);
}
void FinetuneWizard::setMaxSteps(int steps) {
    m_maxSteps->setValue(steps);
}
void FinetuneWizard::setFreezeEmbeddings(bool freeze) {
    m_freezeEmbeddings->setChecked(freeze);
}
void FinetuneWizard::setFreezeBlocks(int blocks) {
    m_freezeBlocks->setValue(blocks);
}
void FinetuneWizard::setLearningRate(double lr) {
    m_learningRate->setText(QString::number(lr, 'g', 6));
    m_lrEdited = true;
    refreshComplete();
}
void FinetuneWizard::setWarmupSteps(int steps) {
    m_warmup->setValue(steps);
    m_warmupEdited = true;
}
void FinetuneWizard::setOverrides(const QString& overrides) {
    m_overrides->setText(overrides);
    schedulePlan();
}
void FinetuneWizard::setRunName(const QString& name) {
    m_runName->setText(name);
}

QString FinetuneWizard::suggestedRunName() const {
    std::vector<std::string> files;
    for (const QString& p : dataPaths()) files.push_back(p.toStdString());
    const std::string base = m_plan ? m_plan->config.config.model.name : std::string();
    return QString::fromStdString(finetune::suggestRunName(base, files, m_takenNames));
}

QString FinetuneWizard::settingsSubtitle() const {
    return m_settingsPage->subTitle();
}

finetune::FinetuneRequest FinetuneWizard::request() const {
    finetune::FinetuneRequest r;
    r.base = baseRef().toStdString();
    for (const QString& p : dataPaths()) r.dataFiles.push_back(p.toStdString());
    r.freezeEmbeddings = m_freezeEmbeddings->isChecked();
    r.freezeBlocks = m_freezeBlocks->value();
    r.epochs = m_epochs->value();
    r.allowBinary = m_allowBinary->isChecked();
    m_method->applyTo(r);
    if (readsRecords()) {
        for (std::string& o : m_records->overrides()) r.overrides.push_back(std::move(o));
    }
    if (m_maxSteps->value() > 0)
        r.overrides.push_back("runconfig.max_steps=" + std::to_string(m_maxSteps->value()));
    for (const QString& o : m_overrides->text().split(' ', Qt::SkipEmptyParts))
        r.overrides.push_back(o.toStdString());
    r.dbPath = m_dbPath.toStdString();
    return r;
}

bool FinetuneWizard::readsRecords() const {
    if (m_files->count() == 0) return false;
    for (const QString& path : dataPaths()) {
        const QFileInfo info(path);
        if (!info.isFile() || !data::isRecordFile(path.toStdString())) return false;
    }
    return true;
}

void FinetuneWizard::showDataKind() {
    const bool records = readsRecords();
    if (records == !m_records->isHidden()) return;
    m_records->setVisible(records);
    // The files take two lines; the preview the rest, in a window grown for it (within the
    // screen).
    m_files->setMaximumHeight(records ? 2 * m_files->fontMetrics().height() + 12 : QWIDGETSIZE_MAX);
    if (records) {
        QSize room(980, 740);
        const QScreen* s = screen();
        const QRect available = s ? s->availableGeometry() : QRect();
        // Room for the window frame inside the screen.
        if (s) room = room.boundedTo(available.size() - QSize(16, 48));
        resize(size().expandedTo(room));
        if (s && isVisible()) {
            const QRect frame = frameGeometry();
            const QPoint fits(
                std::clamp(frame.left(), available.left(),
                           std::max(available.left(), available.right() - frame.width())),
                std::clamp(frame.top(), available.top(),
                           std::max(available.top(), available.bottom() - frame.height())));
            if (fits != frame.topLeft()) move(fits);
        }
    }
    m_dataPage->setTitle(records ? tr("2. Data to fine-tune on") : tr("2. Text to fine-tune on"));
    m_dataPage->setSubTitle(
        records ? tr("Chat and instruction records: what the model sees and what it is trained "
                     "on, before training.")
                : tr("Drop text files or folders here, or add them. The end of the text is "
                     "held out to measure the fine-tuned model."));
}

void FinetuneWizard::schedulePlan() {
    showDataKind();
    m_pending = true;
    m_planTimer->start();
    showPlan();
}

void FinetuneWizard::startPlan() {
    if (m_running) return;  // onPlanned starts the newest request when this one ends
    m_pending = false;
    if (!m_baseOk || m_files->count() == 0 || !m_method->valid()) {
        m_plan.reset();
        m_preview.reset();
        m_nonText.clear();
        m_allowBinary->setVisible(m_allowBinary->isChecked());
        m_planError = !m_baseOk               ? tr("Choose a base model that loads (page 1).")
                      : m_files->count() == 0 ? tr("Add text files or folders to fine-tune on.")
                                              : tr("Choose the layers for LoRA adapters (page 3).");
        showPlan();
        emit planFinished();
        return;
    }
    m_running = true;
    const uint64_t generation = ++m_generation;
    finetune::FinetuneRequest r = request();
    const bool records = readsRecords();
    // Tokenizing a large corpus takes seconds: off the GUI thread. The destructor waits for
    // this job, so `this` outlives it.
    m_pool.start([this, generation, records, r = std::move(r)] {
        Result<finetune::FinetunePlan> result = Error{""};
        std::optional<session::RecordPreview> preview;
        QStringList nonText;
        if (records) {
            // Records are not text: the preview says what is wrong with them, whatever the plan
            // says.
            result = finetune::planFinetune(r);
            preview = previewFinetuneData(r, result.ok() ? &*result : nullptr);
        } else {
            nonText = findNonTextFiles(r.dataFiles);
            if (Status st = checkTextFiles(r.dataFiles); !st.ok()) {
                result = st.error();
            } else if (!nonText.isEmpty() && !r.allowBinary) {
                result = Error{tr("%1\nRemove it, or tick “Train on it anyway” below.")
                                   .arg(nonText.join('\n'))
                                   .toStdString()};
            } else {
                result = finetune::planFinetune(r);
            }
        }
        QMetaObject::invokeMethod(
            this,
            [this, generation, result = std::move(result), nonText,
             preview = std::move(preview)]() mutable {
                onPlanned(generation, std::move(result), nonText, std::move(preview));
            },
            Qt::QueuedConnection);
    });
    showPlan();
}

void FinetuneWizard::onPlanned(uint64_t generation, Result<finetune::FinetunePlan> result,
                               QStringList nonText, std::optional<session::RecordPreview> preview) {
    m_running = false;
    if (generation == m_generation) {
        m_nonText = std::move(nonText);
        m_preview = std::move(preview);
        if (m_preview) m_records->setPreview(*m_preview);
        m_allowBinary->setVisible(!m_nonText.isEmpty() || m_allowBinary->isChecked());
        if (result.ok()) {
            m_plan = std::move(result).value();
            m_planError.clear();
        } else {
            m_plan.reset();
            m_planError = QString::fromStdString(result.error().message);
            // The engine names the CLI's options; here the page is the context.
            for (const QString& option : {QStringLiteral("--data: "), QStringLiteral("--base: ")}) {
                if (m_planError.startsWith(option)) m_planError.remove(0, option.size());
            }
        }
    }
    if (m_pending) {
        if (!m_planTimer->isActive()) startPlan();
    } else {
        showPlan();
        emit planFinished();
    }
}

QString FinetuneWizard::dataSummary() const {
    return m_summary->text();
}
QString FinetuneWizard::settingsEstimate() const {
    return m_estimate->text();
}

void FinetuneWizard::showPlan() {
    m_method->setPlan(!isPlanning() && m_plan ? &*m_plan : nullptr);
    const QString busy = tr("<i>Reading and tokenizing the text…</i>");
    if (isPlanning()) {
        m_summary->setText(busy);
        m_estimate->setText(busy);
        if (readsRecords()) m_records->setBusy();
    } else if (!m_plan) {
        m_summary->setText(errorText(m_planError));
        m_estimate->setText(errorText(m_planError));
    } else {
        const finetune::FinetuneSummary& s = m_plan->summary;
        const config::Config& c = m_plan->config.config;
        QString warning;
        if (!m_nonText.isEmpty()) {
            warning = QStringLiteral("<br><span style='color:#b26a00'>%1</span>")
                          .arg(tr("Training on it anyway: %1")
                                   .arg(m_nonText.join(QStringLiteral("; ")))
                                   .toHtmlEscaped());
        }
        m_summary->setText(
            tr("<b>%1 tokens</b> (%2 bytes, %3 tokenizer)<br>"
               "training on %4 tokens, %5 held out (%6%) to evaluate<br>"
               "one epoch: %7 of %8 tokens (%9 sequences × %10 tokens), "
               "estimated <b>%11</b> on this CPU%12")
                .arg(grouped(s.tokens), grouped(s.dataBytes),
                     QString::fromStdString(s.tokenizerKind), grouped(s.trainTokens),
                     grouped(s.heldOutTokens))
                .arg(100 * s.validationFraction, 0, 'f', 0)
                .arg(s.stepsPerEpoch == 1 ? tr("1 step") : tr("%1 steps").arg(s.stepsPerEpoch),
                     grouped(s.tokensPerStep))
                .arg(s.batchSize)
                .arg(s.sequenceLength)
                .arg(QString::fromStdString(formatRoughDuration(s.estimatedSecondsPerEpoch)),
                     warning));
        m_runName->setPlaceholderText(suggestedRunName());
        m_settingsPage->setSubTitle(
            tr("Fine-tune defaults: peak learning rate %1; a short warmup, then a cosine decay "
               "to a tenth of the peak. Run starts training.")
                .arg(QString::fromStdString(finetune::explainLearningRate(s))));
        // Defaults follow the plan until the user edits them.
        if (!m_lrEdited) m_learningRate->setText(QString::number(s.peakLearningRate, 'g', 3));
        if (!m_warmupEdited && !c.optimizer.learningRate.schedule.empty())
            m_warmup->setValue(int(c.optimizer.learningRate.schedule.front().totalIters));
        QString fit;
        if (auto spec = wafer::specForConfig(c); spec.ok()) {
            const int systems = std::max(1, c.runconfig.numCsx);
            const auto f = wafer::activationFit(*spec, model::GptShape::fromConfig(c.model),
                                                std::max(1, c.trainInput.batchSize / systems),
                                                c.trainInput.maxSequenceLength);
            const QString name = QString::fromStdString(spec->name);
            fit = f.fits ? tr("the activations fit the %1 wafer's SRAM").arg(name)
                  : f.fitsWithRecompute
                      ? tr("the activations fit the %1 wafer only with recomputation").arg(name)
                      : tr("<span style='color:#b00020'>the activations do not fit the %1 "
                           "wafer's SRAM</span>")
                            .arg(name);
        } else {
            fit = errorText(QString::fromStdString(spec.error().message));
        }
        QString method = tr("full fine-tune");
        if (c.lora) {
            QStringList targets;
            for (const auto& t : c.lora->targets) targets << QString::fromStdString(t);
            method = tr("LoRA rank %1 (alpha %2) on %3")
                         .arg(c.lora->rank)
                         .arg(c.lora->alpha)
                         .arg(targets.join(QStringLiteral(", ")));
        }
        method += s.bf16 ? tr(", bf16") : tr(", fp32");
        m_estimate->setText(
            tr("<b>%1 steps</b>, estimated <b>%2</b> on this CPU (%8)<br>%3<br>"
               "training %4 of %5 parameters%6<br>%7")
                .arg(s.maxSteps)
                .arg(QString::fromStdString(formatRoughDuration(s.estimatedSeconds)),
                     QString::fromStdString(finetune::explainSteps(s)).toHtmlEscaped(),
                     grouped(s.parameters - s.frozenParameters), grouped(s.parameters),
                     s.frozenParameters > 0 ? tr(" (%1 frozen)").arg(grouped(s.frozenParameters))
                                            : QString(),
                     fit, method.toHtmlEscaped()));
    }
    refreshComplete();
}

void FinetuneWizard::refreshComplete() {
    static_cast<Page*>(m_dataPage)->changed();
    static_cast<Page*>(m_methodPage)->changed();
    static_cast<Page*>(m_settingsPage)->changed();
}

FinetuneChoice FinetuneWizard::choice() const {
    FinetuneChoice choice;
    if (!m_plan) return choice;
    choice.config = m_plan->config;
    choice.parentRun = m_plan->parentRun;
    choice.basePath = m_basePath;
    choice.runName = m_runName->text().trimmed();
    if (choice.runName.isEmpty()) choice.runName = suggestedRunName();
    choice.samplePrompt = QString::fromStdString(m_plan->summary.samplePrompt);
    auto& schedule = choice.config.config.optimizer.learningRate.schedule;
    // The plan's shape (finetune_plan.h): linear warmup, then cosine to a tenth of the peak.
    if ((m_lrEdited || m_warmupEdited) && schedule.size() == 2) {
        bool ok = false;
        const double lr = QLocale::c().toDouble(m_learningRate->text(), &ok);
        if (ok) {
            schedule[0].endLearningRate = lr;
            schedule[1].initialLearningRate = lr;
            schedule[1].endLearningRate = lr / 10.0;
        }
        schedule[0].totalIters = std::max(1, m_warmup->value());
    }
    return choice;
}

}  // namespace ws::ui
