// SPDX-License-Identifier: GPL-3.0-or-later
// ConfigTab: see config_tab.h.
#include "ui/config/config_tab.h"

#include <QLabel>
#include <QListWidget>
#include <QScrollArea>
#include <QSplitter>
#include <QTimer>
#include <QVBoxLayout>

#include "engine/core/units.h"
#include "engine/model/model_facts.h"
#include "engine/wafer/run_fit.h"
#include "engine/wafer/spec.h"
#include "ui/config/config_form.h"
#include "ui/config/yaml_editor.h"

namespace ws::ui {

ConfigTab::ConfigTab(ConfigDocument* document, QWidget* parent)
    : QWidget(parent), m_document(document) {
    m_form = new ConfigForm(document, this);
    auto* scroll = new QScrollArea(this);
    m_formScroll = scroll;
    scroll->setWidget(m_form);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    m_yaml = new YamlEditor(this);
    m_yaml->setPlainText(document->yaml());

    auto* splitter = new QSplitter(Qt::Horizontal, this);
    splitter->addWidget(scroll);
    splitter->addWidget(m_yaml);
    splitter->setStretchFactor(0, 1);
    splitter->setStretchFactor(1, 1);
    splitter->setChildrenCollapsible(false);

    m_facts = new QLabel(this);
    m_facts->setObjectName(QStringLiteral("configFacts"));
    m_facts->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_facts->setWordWrap(true);
    m_facts->setContentsMargins(10, 6, 10, 6);
    m_facts->setAutoFillBackground(true);
    m_facts->setBackgroundRole(QPalette::AlternateBase);

    // How the step fits the wafer: the micro-batches a step needs (what the lessons ask about).
    m_fit = new QLabel(this);
    m_fit->setObjectName(QStringLiteral("configFit"));
    m_fit->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_fit->setWordWrap(true);
    m_fit->setContentsMargins(10, 2, 10, 6);
    m_fit->setAutoFillBackground(true);
    m_fit->setBackgroundRole(QPalette::AlternateBase);

    m_problems = new QListWidget(this);
    m_problems->setObjectName(QStringLiteral("configProblems"));
    m_problems->setWordWrap(true);
    connect(m_problems, &QListWidget::itemActivated, this, [this](QListWidgetItem* item) {
        if (const int line = item->data(Qt::UserRole).toInt(); line > 0) m_yaml->goToLine(line);
    });
    connect(m_problems, &QListWidget::itemClicked, this, [this](QListWidgetItem* item) {
        if (const int line = item->data(Qt::UserRole).toInt(); line > 0) m_yaml->goToLine(line);
    });

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    layout->addWidget(m_facts);
    layout->addWidget(m_fit);
    layout->addWidget(splitter, 1);
    layout->addWidget(m_problems);

    m_yamlDebounce = new QTimer(this);
    m_yamlDebounce->setSingleShot(true);
    m_yamlDebounce->setInterval(300);
    connect(m_yamlDebounce, &QTimer::timeout, this, &ConfigTab::applyPendingYaml);
    connect(m_yaml, &QPlainTextEdit::textChanged, this, [this] {
        if (!m_updatingYaml) m_yamlDebounce->start();
    });
    m_documentChanged =
        connect(document, &ConfigDocument::changed, this, &ConfigTab::onDocumentChanged);
    onDocumentChanged();
}

ConfigTab::~ConfigTab() {
    // A top-level tab's ~QWidget closes it, taking the focus from a form field whose commit
    // changes the document: by then this is a bare QWidget, so the document must not call back.
    disconnect(m_documentChanged);
}

void ConfigTab::applyPendingYaml() {
    m_yamlDebounce->stop();
    m_document->setYaml(m_yaml->toPlainText());
}

void ConfigTab::applyPendingEdits() {
    if (m_yamlDebounce->isActive()) applyPendingYaml();
    m_form->commitFocusedField();
}

bool ConfigTab::showField(const QString& path) {
    QWidget* editor = m_form->editorFor(path);
    if (editor && editor->isEnabled()) {
        m_formScroll->ensureWidgetVisible(editor, 20, 40);
        editor->setFocus(Qt::OtherFocusReason);
        return true;
    }
    const int line = m_document->lineOfPath(path);
    if (line <= 0) return editor != nullptr;
    m_yaml->goToLine(line);
    m_yaml->setFocus(Qt::OtherFocusReason);
    return true;
}

void ConfigTab::onDocumentChanged() {
    if (m_yaml->toPlainText() != m_document->yaml()) {
        m_updatingYaml = true;
        m_yaml->replaceText(m_document->yaml());
        m_updatingYaml = false;
    }
    m_yaml->showProblems(m_document->problems());

    m_problems->clear();
    for (const auto& p : m_document->problems()) {
        auto* item = new QListWidgetItem(
            style()->standardIcon(QStyle::SP_MessageBoxCritical),
            p.line > 0 ? tr("line %1: %2").arg(p.line).arg(p.message) : p.message, m_problems);
        item->setData(Qt::UserRole, p.line);
    }
    m_problems->setVisible(!m_document->problems().empty());
    sizeProblems();

    if (!m_document->isParsed()) {
        // The facts of a config: there is none until the text parses (never another file's).
        m_facts->setText(
            tr("<span style='color:#e53935'><b>The YAML has %n problem(s)</b></span> "
               "(listed below): the model's facts and Run wait until it parses.",
               nullptr, int(m_document->problems().size())));
        return;
    }
    const config::Config& c = m_document->config();
    const model::ModelFacts facts = model::deriveFacts(c);
    const double memory = double(facts.weightBytes + facts.gradientBytes + facts.optimizerBytes);
    QString text = tr("<b>%1</b> &nbsp; %2 layers × %3 wide &nbsp;·&nbsp; <b>%4</b> parameters "
                      "&nbsp;·&nbsp; %5FLOP per token &nbsp;·&nbsp; %6 tokens per step "
                      "&nbsp;·&nbsp; MemoryX: %7 (weights %8, gradients %9, optimizer %10)")
                       .arg(QString::fromStdString(c.model.name).toHtmlEscaped())
                       .arg(c.model.numHiddenLayers)
                       .arg(c.model.hiddenSize)
                       .arg(QString::fromStdString(formatCount(double(facts.parameters))))
                       .arg(QString::fromStdString(formatCount(facts.trainingFlopsPerToken)))
                       .arg(QString::fromStdString(formatCount(double(facts.tokensPerStep))))
                       .arg(QString::fromStdString(formatBytes(memory)))
                       .arg(QString::fromStdString(formatBytes(double(facts.weightBytes))))
                       .arg(QString::fromStdString(formatBytes(double(facts.gradientBytes))))
                       .arg(QString::fromStdString(formatBytes(double(facts.optimizerBytes))));
    // What generation caches per token: only the KV heads' keys and values.
    text += tr(" &nbsp;·&nbsp; KV cache %1 per token, %2 at %3 tokens")
                .arg(QString::fromStdString(formatBytes(double(facts.kvCacheBytesPerToken))))
                .arg(QString::fromStdString(formatBytes(double(facts.kvCacheBytes))))
                .arg(c.model.maxPositionEmbeddings);
    text +=
        tr(" &nbsp;·&nbsp; wafer buffer %1, %2 streamed in per forward + backward (%3 weights)")
            .arg(QString::fromStdString(formatBytes(double(facts.waferBufferBytes))))
            .arg(QString::fromStdString(formatBytes(double(facts.streamedBytesPerPass))))
            .arg(facts.streamBytesPerWeight == 2 ? QStringLiteral("bf16") : QStringLiteral("fp32"));
    if (const std::string path = model::precisionPath(c); !path.empty()) {
        text += tr(" &nbsp;·&nbsp; %1").arg(QString::fromStdString(path).toHtmlEscaped());
    }
    if (!m_document->canRun()) {
        text +=
            tr(" &nbsp;·&nbsp; <span style='color:#e53935'><b>%n problem(s): Run is "
               "disabled</b></span>",
               nullptr, int(m_document->problems().size()));
    }
    m_facts->setText(text);
    m_fit->setText(fitText(c, facts));
}

void ConfigTab::sizeProblems() {
    // Tall enough for every problem's wrapped text (a long fit message runs to three lines at a
    // laptop's width), up to a third of the tab; beyond that the list scrolls.
    const QFontMetrics fm(m_problems->font());
    const int textWidth = std::max(
        120, m_problems->viewport()->width() - m_problems->iconSize().width() - 2 * fm.height());
    int total = 8;
    for (int i = 0; i < m_problems->count(); ++i)
        total += fm.boundingRect(QRect(0, 0, textWidth, 100000), Qt::TextWordWrap,
                                 m_problems->item(i)->text())
                     .height() +
                 8;
    m_problems->setFixedHeight(std::min(total, std::max(fm.height() * 4, height() / 3)));
}

void ConfigTab::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    sizeProblems();
}

QString ConfigTab::fitText(const config::Config& c, const model::ModelFacts& facts) const {
    // The engine's own fit (the check Run makes): micro-batches, and where the SRAM goes.
    if (!m_document->problems().empty()) {
        for (const auto& p : m_document->problems())
            if (p.message.contains(QLatin1String("does not fit")))
                return tr("<b>On the wafer:</b> <span style='color:#e53935'><b>does not fit</b>"
                          "</span> (why: under “%1” on the form, and in the list below)")
                    .arg(ConfigDocument::fieldLabel(p.path).toHtmlEscaped());
        return tr("<b>On the wafer:</b> fix the problems below first");
    }
    const auto fit = wafer::fitOnWafer(c);
    const auto spec = wafer::specForConfig(c);
    if (!fit.ok() || !spec.ok()) return {};
    const int perSystem = c.trainInput.batchSize / std::max(1, c.runconfig.numCsx);
    const int micros = fit->microBatch > 0 ? perSystem / fit->microBatch : 0;
    const double sram = c.wafer.sramBytes > 0 ? double(c.wafer.sramBytes)
                                              : double(spec->cores()) * spec->sramBytesPerCore;
    const QString passes = micros == 1 ? tr("1 micro-batch") : tr("%1 micro-batches").arg(micros);
    const QString sequences =
        fit->microBatch == 1 ? tr("1 sequence") : tr("%1 sequences").arg(fit->microBatch);
    return tr("<b>On the wafer</b> (%1): <b>%2</b> of %3 per step and system &nbsp;·&nbsp; SRAM "
              "%4: weight buffer %5 (%6) + activations %7 per micro-batch (%8 a sequence)")
        .arg(QString::fromStdString(spec->name).toHtmlEscaped(), passes, sequences,
             QString::fromStdString(formatBytes(sram)),
             QString::fromStdString(formatBytes(double(facts.waferBufferBytes))),
             c.wafer.weightBufferLayers == 1 ? tr("1 slot")
                                             : tr("%1 slots").arg(c.wafer.weightBufferLayers),
             QString::fromStdString(formatBytes(double(fit->activationBytes))))
        .arg(QString::fromStdString(formatBytes(double(fit->bytesPerSequence))));
}

}  // namespace ws::ui
