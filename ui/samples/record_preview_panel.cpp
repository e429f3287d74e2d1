// SPDX-License-Identifier: GPL-3.0-or-later
// RecordPreviewPanel: see record_preview_panel.h.
#include "ui/samples/record_preview_panel.h"

#include <qcustomplot.h>
#include <QComboBox>
#include <QEvent>
#include <QFontDatabase>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QSplitter>
#include <QTextCursor>
#include <QTextEdit>
#include <QVBoxLayout>
#include <algorithm>
#include <filesystem>

#include "engine/config/config_yaml.h"
#include "engine/data/record_format.h"
#include "ui/common/plot_theme.h"

namespace ws::ui {

namespace {

using Kind = session::PreviewSegment::Kind;

const data::RecordFormat kFormats[] = {data::RecordFormat::Auto,
                                       data::RecordFormat::Messages,
                                       data::RecordFormat::ShareGpt,
                                       data::RecordFormat::Alpaca,
                                       data::RecordFormat::PromptCompletion,
                                       data::RecordFormat::TextRecords,
                                       data::RecordFormat::Columns};

const char* const kColumnKeys[] = {"prompt_column", "answer_column", "system_column", "id_column",
                                   "parent_id_column"};

QString qs(const std::string& s) {
    return QString::fromStdString(s);
}

QString grouped(int64_t n) {
    return QLocale(QLocale::English).toString(qlonglong(n));
}

QString plural(int64_t n, const QString& one, const QString& many) {
    return grouped(n) + ' ' + (n == 1 ? one : many);
}

// The mapping the preview used for a column (RecordOptions' names).
std::string usedColumn(const data::RecordOptions& o, RecordPreviewPanel::Column column) {
    switch (column) {
        case RecordPreviewPanel::Prompt:
            return o.promptColumn;
        case RecordPreviewPanel::Answer:
            return o.answerColumn;
        case RecordPreviewPanel::System:
            return o.systemColumn;
        case RecordPreviewPanel::Id:
            return o.idColumn;
        default:
            return o.parentIdColumn;
    }
}

bool optionalColumn(RecordPreviewPanel::Column column) {
    return column != RecordPreviewPanel::Prompt && column != RecordPreviewPanel::Answer;
}

// A value for a YAML override: quoted, so any column name stays a string.
std::string yamlString(const QString& s) {
    QString q = s;
    q.replace('\'', QStringLiteral("''"));
    return QStringLiteral("'%1'").arg(q).toStdString();
}

}  // namespace

RecordPreviewPanel::RecordPreviewPanel(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("recordPreview"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(4);
    layout->addLayout(makeChoices());

    m_counts = new QLabel(this);
    m_counts->setObjectName(QStringLiteral("recordCounts"));
    m_counts->setWordWrap(true);
    m_counts->setTextFormat(Qt::RichText);
    layout->addWidget(m_counts);

    // The key to the examples' colours, drawn with the same formats.
    auto* legend = new QLabel(this);
    legend->setObjectName(QStringLiteral("recordLegend"));
    legend->setTextFormat(Qt::RichText);
    legend->setText(
        tr("First examples as the model sees them: <span style='background:rgba(59,125,216,38)'>"
           "trained on</span> · <span style='color:gray'>seen, not trained on</span> · "
           "<span style='color:#b00020; text-decoration:line-through'>cut (past the sequence "
           "length)</span> · ↵ a trained line end"));
    layout->addWidget(legend);

    auto* split = new QSplitter(Qt::Horizontal, this);
    m_examples = new QTextEdit(split);
    m_examples->setObjectName(QStringLiteral("recordExamples"));
    m_examples->setReadOnly(true);
    m_examples->setLineWrapMode(QTextEdit::WidgetWidth);
    m_examples->setMinimumHeight(160);
    m_examples->setPlaceholderText(
        tr("The first examples show here once the records are read (see the message below)."));
    m_examples->setToolTip(
        tr("The first training examples as the model sees them: trained text "
           "in the normal colour, prompts and template markup greyed out, "
           "text past the sequence length struck through"));
    makeHistogram(split);
    split->addWidget(m_examples);
    split->addWidget(m_plot);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    layout->addWidget(split, 1);

    m_messages = new QLabel(this);
    m_messages->setObjectName(QStringLiteral("recordWarnings"));
    m_messages->setWordWrap(true);
    m_messages->setTextFormat(Qt::RichText);
    m_messages->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_messages);

    connect(m_format, qOverload<int>(&QComboBox::activated), this,
            &RecordPreviewPanel::choicesChanged);
    connect(m_trainOn, qOverload<int>(&QComboBox::activated), this,
            &RecordPreviewPanel::choicesChanged);
    m_mappingRow->hide();
    m_mappingLabel->hide();
}

QGridLayout* RecordPreviewPanel::makeChoices() {
    auto* grid = new QGridLayout;
    grid->setHorizontalSpacing(8);
    grid->setVerticalSpacing(3);
    m_format = new QComboBox(this);
    m_format->setObjectName(QStringLiteral("recordFormat"));
    for (const data::RecordFormat f : kFormats) {
        const QString key = qs(std::string(data::recordFormatKey(f)));
        m_format->addItem(
            f == data::RecordFormat::Auto
                ? tr("detect (auto)")
                : QStringLiteral("%1 (%2)").arg(key, qs(std::string(data::recordFormatName(f)))),
            key);
    }
    m_format->setToolTip(tr("train_input.format: detected from the files, or forced"));
    m_detected = new QLabel(this);
    m_detected->setObjectName(QStringLiteral("recordDetected"));
    m_detected->setWordWrap(true);
    m_detected->setTextFormat(Qt::PlainText);
    grid->addWidget(new QLabel(tr("Format:"), this), 0, 0);
    grid->addWidget(m_format, 0, 1);
    grid->addWidget(m_detected, 0, 2);

    makeMappingRow();
    grid->addWidget(new QLabel(tr("Columns:"), this), 1, 0);
    grid->addWidget(m_mappingRow, 1, 1, 1, 2);

    m_trainOn = new QComboBox(this);
    m_trainOn->setObjectName(QStringLiteral("recordTrainOn"));
    m_trainOn->addItem(tr("answers only"));
    m_trainOn->addItem(tr("everything"));
    m_trainOn->addItem(tr("last answer only"));
    m_trainOn->setToolTip(
        tr("answers only: the assistant's turns (default); everything: train_input."
           "train_on_inputs; last answer only: train_input.mask_history"));
    m_template = new QLabel(this);
    m_template->setObjectName(QStringLiteral("recordTemplate"));
    m_template->setWordWrap(true);
    m_template->setTextFormat(Qt::PlainText);
    grid->addWidget(new QLabel(tr("Train on:"), this), 2, 0);
    grid->addWidget(m_trainOn, 2, 1);
    grid->addWidget(m_template, 2, 2);
    grid->setColumnStretch(2, 1);
    for (QComboBox* combo : {m_format, m_trainOn}) {
        combo->setSizeAdjustPolicy(QComboBox::AdjustToContents);
        combo->setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Fixed);
    }
    m_mappingLabel = grid->itemAtPosition(1, 0)->widget();
    return grid;
}

void RecordPreviewPanel::makeMappingRow() {
    m_mappingRow = new QWidget(this);
    auto* mapping = new QHBoxLayout(m_mappingRow);
    mapping->setContentsMargins(0, 0, 0, 0);
    mapping->setSpacing(4);
    const QString labels[] = {tr("prompt"), tr("answer"), tr("system"), tr("id"), tr("parent id")};
    const char* names[] = {"columnPrompt", "columnAnswer", "columnSystem", "columnId",
                           "columnParentId"};
    for (int c = 0; c < ColumnCount; ++c) {
        auto* combo = new QComboBox(m_mappingRow);
        combo->setObjectName(QString::fromLatin1(names[c]));
        combo->setPlaceholderText(tr("choose…"));
        combo->setSizeAdjustPolicy(QComboBox::AdjustToContents);
        combo->setToolTip(tr("train_input.%1").arg(QString::fromLatin1(kColumnKeys[c])));
        m_columns[size_t(c)] = combo;
        mapping->addWidget(new QLabel(labels[c], m_mappingRow));
        mapping->addWidget(combo);
        connect(combo, qOverload<int>(&QComboBox::activated), this, [this, c] {
            m_columnSet[size_t(c)] = true;
            emit choicesChanged();
        });
    }
    mapping->addStretch(1);
}

void RecordPreviewPanel::makeHistogram(QWidget* parent) {
    m_plot = new QCustomPlot(parent);
    m_plot->setObjectName(QStringLiteral("recordLengths"));
    m_plot->setMinimumSize(240, 160);
    m_plot->setToolTip(
        tr("Training examples by length in tokens; the line is the longest "
           "that fits a sequence (max_sequence_length + 1): longer ones are "
           "truncated"));
    m_fitting = new QCPBars(m_plot->xAxis, m_plot->yAxis);
    m_fitting->setPen(Qt::NoPen);
    m_fitting->setBrush(QColor(0x3b, 0x7d, 0xd8));
    m_longer = new QCPBars(m_plot->xAxis, m_plot->yAxis);
    m_longer->setPen(Qt::NoPen);
    m_longer->setBrush(QColor(0xe0, 0x6c, 0x1f));
    m_limitLine = new QCPItemStraightLine(m_plot);
    m_limitLine->setPen(QPen(QColor(0xb0, 0x00, 0x20), 1.2, Qt::DashLine));
    m_limitLabel = new QCPItemText(m_plot);
    m_limitLabel->setPositionAlignment(Qt::AlignRight | Qt::AlignTop);
    m_limitLabel->position->setTypeX(QCPItemPosition::ptPlotCoords);
    m_limitLabel->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    m_limitLabel->setColor(QColor(0xb0, 0x00, 0x20));
    QFont small = font();
    small.setPointSizeF(font().pointSizeF() * 0.85);
    m_plot->xAxis->setLabel(tr("tokens per example"));
    m_plot->yAxis->setLabel(tr("examples"));
    for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis}) {
        axis->setTickLabelFont(small);
        axis->setLabelFont(small);
    }
    m_limitLabel->setFont(small);
    applyPlotPalette(m_plot);
    m_plot->xAxis->grid()->setVisible(false);
    auto counts = QSharedPointer<QCPAxisTickerFixed>::create();  // whole examples
    counts->setTickStep(1.0);
    counts->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    m_plot->yAxis->setTicker(counts);
}

void RecordPreviewPanel::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::StyleChange) {
        applyPlotPalette(m_plot);
        m_plot->xAxis->grid()->setVisible(false);
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        if (m_shown) showExamples(*m_shown);  // their colours come from the palette
    }
}

std::vector<std::string> RecordPreviewPanel::overrides() const {
    std::vector<std::string> out;
    out.push_back(QStringLiteral("train_input.format=%1")
                      .arg(m_format->currentData().toString())
                      .toStdString());
    for (int c = 0; c < ColumnCount; ++c) {
        const QComboBox* combo = m_columns[size_t(c)];
        // Unset, or set to a column the newest file lacks: the reader's default names it.
        if (!m_columnSet[size_t(c)] || combo->currentIndex() < 0) continue;
        const QString name = combo->currentData().toString();
        out.push_back(QStringLiteral("train_input.%1=")
                          .arg(QString::fromLatin1(kColumnKeys[c]))
                          .toStdString() +
                      yamlString(name));
    }
    out.push_back(std::string("train_input.train_on_inputs=") +
                  (m_trainOn->currentIndex() == Everything ? "true" : "false"));
    out.push_back(std::string("train_input.mask_history=") +
                  (m_trainOn->currentIndex() == LastAnswer ? "true" : "false"));
    return out;
}

void RecordPreviewPanel::setFormat(const QString& key) {
    const int i = m_format->findData(key);
    if (i < 0 || i == m_format->currentIndex()) return;
    m_format->setCurrentIndex(i);
    emit choicesChanged();
}

void RecordPreviewPanel::setColumn(Column column, const QString& name) {
    QComboBox* combo = m_columns[size_t(column)];
    const int i = combo->findData(name);
    if (i < 0) return;
    combo->setCurrentIndex(i);
    m_columnSet[size_t(column)] = true;
    emit choicesChanged();
}

void RecordPreviewPanel::setTrainOn(TrainOn trainOn) {
    if (m_trainOn->currentIndex() == trainOn) return;
    m_trainOn->setCurrentIndex(trainOn);
    emit choicesChanged();
}

QString RecordPreviewPanel::detectedText() const {
    return m_detected->text();
}
QString RecordPreviewPanel::templateText() const {
    return m_template->text();
}
QString RecordPreviewPanel::countsText() const {
    return m_counts->text();
}
QString RecordPreviewPanel::warningsText() const {
    return m_messages->text();
}

void RecordPreviewPanel::setBusy() {
    m_counts->setText(tr("<i>Reading the records and rendering the examples…</i>"));
}

void RecordPreviewPanel::setPreview(const session::RecordPreview& p) {
    m_shown = p;
    const bool read = !p.report.evidence.empty();
    m_detected->setText(
        read ? (m_format->currentIndex() == 0 ? tr("detected: %1") : tr("read as: %1"))
                   .arg(qs(p.report.evidence))
             : QString());
    fillColumns(p);
    m_template->setText(
        p.templateName.empty()
            ? QString()
            : tr("chat template %1 — %2").arg(qs(p.templateName), qs(p.templateReason)));
    if (!read) {
        m_counts->clear();
    } else {
        const data::ExampleStats& s = p.stats;
        const int64_t pct = s.tokens > 0 ? (100 * s.trainedTokens + s.tokens / 2) / s.tokens : 0;
        QString steps;
        if (p.rows > 0)
            steps = tr("; %1 of %2 rows × %3 tokens go over the %4 %5 times%6")
                        .arg(plural(p.steps, tr("step"), tr("steps")))
                        .arg(p.batchSize)
                        .arg(p.T)
                        .arg(plural(p.rows, tr("training row"), tr("training rows")))
                        .arg(p.epochs, 0, 'f', 1)
                        .arg(p.stepsCounted ? tr(" (steps counted from the epochs)") : QString());
        m_counts->setText(
            tr("<b>%1</b> for training, %2 held out: %3, %4 tokens, <b>%5 trained on</b> "
               "(%6%)%7%8")
                .arg(plural(int64_t(p.trainRecords), tr("record"), tr("records")),
                     grouped(int64_t(p.heldOutRecords)),
                     plural(s.examples, tr("example"), tr("examples")), grouped(s.tokens),
                     grouped(s.trainedTokens))
                .arg(pct)
                .arg(s.truncated > 0 ? tr(", %1 truncated").arg(s.truncated) : QString(), steps));
    }
    showExamples(p);
    showHistogram(p);
    showMessages(p);
}

void RecordPreviewPanel::fillColumns(const session::RecordPreview& p) {
    const bool table = !p.columns.empty();
    m_mappingRow->setVisible(table);  // CSV/TSV only
    m_mappingLabel->setVisible(table);
    for (int c = 0; c < ColumnCount; ++c) {
        QComboBox* combo = m_columns[size_t(c)];
        const QString keep =
            combo->currentIndex() >= 0 ? combo->currentData().toString() : QString();
        const bool blocked = combo->blockSignals(true);
        combo->clear();
        if (optionalColumn(Column(c))) combo->addItem(tr("none"), QString());
        for (const std::string& name : p.columns) combo->addItem(qs(name), qs(name));
        // The user's choice where the file still has it, else the mapping the reader used.
        const QString used = qs(usedColumn(p.options, Column(c)));
        int index = m_columnSet[size_t(c)] ? combo->findData(keep) : -1;
        if (index < 0) index = combo->findData(used);
        if (index < 0 && optionalColumn(Column(c))) index = 0;  // "none": the file lacks it
        combo->setCurrentIndex(index);
        combo->blockSignals(blocked);
    }
}

void RecordPreviewPanel::showExamples(const session::RecordPreview& p) {
    m_examples->clear();
    QTextCursor cursor(m_examples->document());
    const QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    const QColor text = palette().color(QPalette::Text);
    QColor grey = text;
    grey.setAlphaF(0.45f);
    QTextCharFormat header;
    header.setFontWeight(QFont::Bold);
    header.setForeground(palette().color(QPalette::PlaceholderText));
    QTextCharFormat trained;
    trained.setFont(mono);
    trained.setForeground(text);
    trained.setBackground(QColor(0x3b, 0x7d, 0xd8, 0x26));
    QTextCharFormat context;
    context.setFont(mono);
    context.setForeground(grey);
    QTextCharFormat cut = context;
    cut.setFontStrikeOut(true);
    cut.setForeground(QColor(0xb0, 0x00, 0x20, 0x90));
    bool first = true;
    for (const session::PreviewExample& e : p.examples) {
        if (!first) cursor.insertBlock();
        first = false;
        cursor.insertText(tr("%1 — %2, %3 trained on\n")
                              .arg(qs(std::filesystem::path(e.origin).filename().string()),
                                   plural(e.tokens, tr("token"), tr("tokens")))
                              .arg(e.trainedTokens),
                          header);
        for (const session::PreviewSegment& s : e.segments) {
            const QTextCharFormat& f = s.kind == Kind::Trained ? trained
                                       : s.kind == Kind::Cut   ? cut
                                                               : context;
            // Line ends the model is trained on are shown, so a trained newline is visible.
            QString piece = qs(s.text);
            if (s.kind == Kind::Trained) piece.replace('\n', QStringLiteral("↵\n"));
            cursor.insertText(piece, f);
        }
    }
    m_examples->moveCursor(QTextCursor::Start);
}

void RecordPreviewPanel::showHistogram(const session::RecordPreview& p) {
    const data::LengthHistogram& h = p.stats.lengths;
    QVector<double> fitX, fitY, longX, longY;
    double top = 0.0, right = double(std::max<int64_t>(h.limit, 1));
    for (size_t k = 0; k < h.counts.size(); ++k) {
        if (h.counts[k] == 0) continue;
        const double centre = (double(k) + 0.5) * double(h.binWidth);
        const bool longer = int64_t(k + 1) * h.binWidth > h.limit;
        (longer ? longX : fitX) << centre;
        (longer ? longY : fitY) << double(h.counts[k]);
        top = std::max(top, double(h.counts[k]));
        right = std::max(right, double(k + 1) * double(h.binWidth));
    }
    if (h.beyond > 0) {  // longer than the bins reach: one bar past them
        const double centre = (double(h.counts.size()) + 0.5) * double(h.binWidth);
        longX << centre;
        longY << double(h.beyond);
        top = std::max(top, double(h.beyond));
        right = centre + double(h.binWidth);
    }
    m_fitting->setWidth(0.85 * double(h.binWidth));
    m_longer->setWidth(0.85 * double(h.binWidth));
    m_fitting->setData(fitX, fitY, true);
    m_longer->setData(longX, longY, true);
    // The row's limit from T, also when no example was made (an error says why).
    const int64_t limitTokens = int64_t(p.T) + 1;
    const double limit = double(limitTokens);
    right = std::max(right, limit);
    m_limitLine->setVisible(p.T > 0);
    m_limitLine->point1->setCoords(limit, 0);
    m_limitLine->point2->setCoords(limit, 1);
    m_limitLabel->setVisible(p.T > 0);
    m_limitLabel->position->setCoords(limit, 0.02);
    m_limitLabel->setText(tr("T + 1 = %1 ").arg(limitTokens));
    m_plot->xAxis->setRange(0, right * 1.08);
    m_plot->yAxis->setRange(0, std::max(1.0, top * 1.15));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void RecordPreviewPanel::showMessages(const session::RecordPreview& p) {
    QStringList lines;
    auto escaped = [](const std::string& s) {
        return qs(s).toHtmlEscaped().replace('\n', QStringLiteral("<br>"));
    };
    if (!p.error.empty())
        lines << QStringLiteral("<span style='color:#b00020'>%1</span>").arg(escaped(p.error));
    // Here the columns are chosen in the combos rather than with config keys.
    if (!p.error.empty() && !p.columns.empty() &&
        (m_columns[Prompt]->currentIndex() < 0 || m_columns[Answer]->currentIndex() < 0))
        lines << tr("<b>Choose the prompt and answer columns above.</b>");
    if (!p.blocking.empty())
        lines << QStringLiteral("<span style='color:#b00020'>%1</span>").arg(escaped(p.blocking));
    for (const std::string& w : p.warnings)
        lines << QStringLiteral("<span style='color:#b26a00'>⚠ %1</span>").arg(escaped(w));
    m_messages->setText(lines.join(QStringLiteral("<br>")));
    m_messages->setVisible(!lines.isEmpty());
}

session::RecordPreview previewFinetuneData(const finetune::FinetuneRequest& request,
                                           const finetune::FinetunePlan* plan) {
    session::RecordPreview failed;
    auto base = finetune::inspectBase(request.base, request.dbPath);
    if (!base.ok()) {
        failed.error = base.error().message;
        return failed;
    }
    session::RecordPreviewRequest r;
    r.tokenizer = base->tokenizer;
    if (plan) {
        r.config = plan->config.config;
        r.steps = plan->summary.maxSteps;
        return session::previewRecords(r);
    }
    // As planFinetune shapes the run (finetune_plan.h): the base's batch and sequence length,
    // the length capped at its positions, the overrides last.
    r.config = base->config;
    r.config.trainInput.dataDir.clear();
    for (const std::string& f : request.dataFiles)
        r.config.trainInput.dataDir.push_back(
            std::filesystem::absolute(f).lexically_normal().string());
    bool stepsSet = false;
    for (const std::string& o : request.overrides) {
        if (Status st = config::applyOverride(r.config, o); !st.ok()) {
            failed.error = st.error().message;
            return failed;
        }
        stepsSet = stepsSet || o.starts_with("runconfig.max_steps=");
    }
    r.config.trainInput.maxSequenceLength =
        std::min(r.config.trainInput.maxSequenceLength, base->config.model.maxPositionEmbeddings);
    r.steps = stepsSet ? r.config.runconfig.maxSteps : 0;
    r.epochs = request.epochs;
    r.minSteps = finetune::kMinSteps;
    r.maxSteps = finetune::kMaxSteps;
    return session::previewRecords(r);
}

}  // namespace ws::ui
