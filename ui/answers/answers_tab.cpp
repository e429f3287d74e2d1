// SPDX-License-Identifier: GPL-3.0-or-later
// AnswersTab: see answers_tab.h.
#include "ui/answers/answers_tab.h"

#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>
#include <numeric>

#include "ui/answers/answer_check_job.h"

namespace ws::ui {

namespace {

constexpr int kFixedColumns = 3;  // #, question, answer

const QColor kExact(0xd8, 0xf0, 0xd8);
const QColor kWrong(0xf6, 0xdc, 0xdc);

// "run-12 / checkpoint-300" for a checkpoint folder, the folder or file name otherwise.
QString shortModelName(const QString& path) {
    const QFileInfo info(path);
    const QString name = info.fileName().isEmpty() ? path : info.fileName();
    if (name.startsWith(QLatin1String("checkpoint-")) || name == QLatin1String("model.safetensors"))
        return info.dir().dirName() + QStringLiteral(" / ") + name;
    return name;
}

QString oneLine(const std::string& text) {
    return QString::fromStdString(text).replace(QLatin1Char('\n'), QStringLiteral(" ⏎ "));
}

}  // namespace

AnswersTab::AnswersTab(QWidget* parent) : QWidget(parent), m_job(new AnswerCheckJob(this)) {
    auto* form = new QFormLayout;
    const QString labels[kModels] = {tr("Model"), tr("Compare with"), tr("and with")};
    for (int i = 0; i < kModels; ++i) {
        m_models[i] = new QLineEdit(this);
        m_models[i]->setObjectName(QStringLiteral("answersModel%1").arg(i));
        m_models[i]->setPlaceholderText(
            i == 0 ? tr("a run or checkpoint folder (a fine-tune on chat records)")
                   : tr("optional: its base, an earlier checkpoint"));
        auto* browse = new QToolButton(this);
        browse->setText(tr("…"));
        QLineEdit* target = m_models[i];
        connect(browse, &QToolButton::clicked, this, [this, target] {
            const QString dir = QFileDialog::getExistingDirectory(
                this, tr("Choose a run or checkpoint folder"), target->text());
            if (!dir.isEmpty()) target->setText(dir);
        });
        auto* row = new QHBoxLayout;
        row->addWidget(m_models[i], 1);
        row->addWidget(browse);
        form->addRow(labels[i], row);
    }
    m_records = new QLineEdit(this);
    m_records->setObjectName(QStringLiteral("answersRecords"));
    m_records->setPlaceholderText(tr("the run's own held-out records"));
    auto* browseRecords = new QToolButton(this);
    browseRecords->setText(tr("…"));
    connect(browseRecords, &QToolButton::clicked, this, [this] {
        const QString file = QFileDialog::getOpenFileName(
            this, tr("Choose held-out records"), m_records->text(),
            tr("Chat and instruction records (*.jsonl *.json *.csv *.tsv *.zip)"));
        if (!file.isEmpty()) m_records->setText(file);
    });
    auto* recordsRow = new QHBoxLayout;
    recordsRow->addWidget(m_records, 1);
    recordsRow->addWidget(browseRecords);
    form->addRow(tr("Held-out records"), recordsRow);
    m_template = new QComboBox(this);
    m_template->setObjectName(QStringLiteral("answersTemplate"));
    m_template->setEditable(true);  // a .jinja file's path may be typed
    m_template->addItem(QStringLiteral("auto"));
    for (const std::string& name : sample::chatTemplateNames())
        m_template->addItem(QString::fromStdString(name));
    m_template->setToolTip(
        tr("auto: the template the run trained with, else the model's own, else ChatML; plain: "
           "for a model without chat tokens (a base that was never fine-tuned on chat data)"));
    form->addRow(tr("Chat template"), m_template);

    m_maxCases = new QSpinBox(this);
    m_maxCases->setObjectName(QStringLiteral("answersMaxCases"));
    m_maxCases->setRange(1, 1000);
    m_maxCases->setValue(20);
    m_order = new QComboBox(this);
    m_order->setObjectName(QStringLiteral("answersOrder"));
    m_order->addItems({tr("in record order"), tr("best first (the model's answer loss)"),
                       tr("worst first (the model's answer loss)")});
    connect(m_order, &QComboBox::currentIndexChanged, this, [this] { rebuildTable(); });
    m_check = new QPushButton(tr("Check answers"), this);
    m_check->setObjectName(QStringLiteral("answersCheck"));
    m_stop = new QPushButton(tr("Stop"), this);
    m_stop->setEnabled(false);
    connect(m_check, &QPushButton::clicked, this, [this] { check(); });
    connect(m_stop, &QPushButton::clicked, this, &AnswersTab::stop);
    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("First"), this));
    controls->addWidget(m_maxCases);
    controls->addWidget(new QLabel(tr("records, greedy replies, shown"), this));
    controls->addWidget(m_order);
    controls->addStretch(1);
    controls->addWidget(m_check);
    controls->addWidget(m_stop);

    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("answersStatus"));
    m_status->setWordWrap(true);
    auto* summaries = new QHBoxLayout;
    for (int i = 0; i < kModels; ++i) {
        m_summaries[i] = new QLabel(this);
        m_summaries[i]->setObjectName(QStringLiteral("answersSummary%1").arg(i));
        m_summaries[i]->setWordWrap(true);
        summaries->addWidget(m_summaries[i], 1);
    }

    m_table = new QTableWidget(this);
    m_table->setObjectName(QStringLiteral("answersTable"));
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setWordWrap(false);
    // A narrowed cell keeps both ends: a question's own words are often at its end (the verse
    // after a fixed instruction), a reply's mistake anywhere.
    m_table->setTextElideMode(Qt::ElideMiddle);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addLayout(controls);
    layout->addWidget(m_status);
    layout->addLayout(summaries);
    layout->addWidget(m_table, 1);

    connect(m_job, &AnswerCheckJob::casesReady, this, &AnswersTab::onCases);
    connect(m_job, &AnswerCheckJob::modelReady, this, [this](int model, const QString& text) {
        const int slot = m_slotModels.at(size_t(model));
        m_templates[slot] = text;
        updateSummaries();
    });
    connect(m_job, &AnswerCheckJob::outcomeReady, this, &AnswersTab::onOutcome);
    connect(m_job, &AnswerCheckJob::modelFailed, this, &AnswersTab::onModelFailed);
    connect(m_job, &AnswerCheckJob::finished, this, &AnswersTab::onFinished);
    m_status->setText(
        tr("Choose a fine-tuned model and press Check answers: each model answers "
           "the same held-out questions, and its replies are compared with the "
           "records' answers."));
}

AnswersTab::~AnswersTab() = default;

void AnswersTab::setModelPath(int index, const QString& path) {
    m_models[index]->setText(path);
}

QString AnswersTab::modelPath(int index) const {
    return m_models[index]->text().trimmed();
}

void AnswersTab::setRecordsPath(const QString& path) {
    m_records->setText(path);
}

void AnswersTab::setMaxCases(int cases) {
    m_maxCases->setValue(cases);
}

void AnswersTab::setChatTemplate(const QString& choice) {
    m_template->setCurrentText(choice);
}

void AnswersTab::setOrder(Order order) {
    m_order->setCurrentIndex(int(order));
}

bool AnswersTab::isChecking() const {
    return m_job->isRunning();
}

const std::vector<sample::AnswerOutcome>& AnswersTab::outcomes(int model) const {
    return m_outcomes[model];
}

QString AnswersTab::status() const {
    return m_status->text();
}

bool AnswersTab::check() {
    if (m_job->isRunning()) return false;
    AnswerCheckJob::Request request;
    m_slotModels.clear();
    for (int i = 0; i < kModels; ++i) {
        m_outcomes[i].clear();
        m_done[i].clear();
        m_templates[i].clear();
        m_failures[i].clear();
        if (modelPath(i).isEmpty()) continue;
        request.models << modelPath(i);
        m_slotModels.push_back(i);
    }
    if (request.models.isEmpty() || modelPath(0).isEmpty()) {
        m_status->setText(tr("Choose the model to check first."));
        return false;
    }
    request.records = m_records->text().trimmed();
    request.maxCases = m_maxCases->value();
    request.chatTemplate = m_template->currentText().trimmed();
    request.dbPath = m_dbPath;
    m_cases.clear();
    rebuildTable();
    updateSummaries();
    if (!m_job->start(request)) return false;
    m_status->setText(tr("Loading %1…").arg(shortModelName(modelPath(0))));
    m_check->setEnabled(false);
    m_stop->setEnabled(true);
    return true;
}

void AnswersTab::stop() {
    m_job->cancel();
}

void AnswersTab::onCases(const std::vector<sample::AnswerCase>& cases, const QString& source) {
    m_cases = cases;
    for (int i = 0; i < kModels; ++i) {
        m_outcomes[i].assign(cases.size(), {});
        m_done[i].assign(cases.size(), false);
    }
    m_status->setText(tr("%1 questions from %2").arg(cases.size()).arg(source));
    rebuildTable();
}

void AnswersTab::onOutcome(int model, int caseIndex, const sample::AnswerOutcome& outcome) {
    const int slot = m_slotModels.at(size_t(model));
    m_outcomes[slot][size_t(caseIndex)] = outcome;
    m_done[slot][size_t(caseIndex)] = true;
    // Sorted by the first model's loss, the order changes as its outcomes come in.
    if (m_order->currentIndex() != 0 && slot == 0) {
        rebuildTable();
    } else {
        const std::vector<int> order = rowOrder();
        const auto row = std::find(order.begin(), order.end(), caseIndex) - order.begin();
        int column = kFixedColumns;
        for (int s = 0; s < slot; ++s)
            if (!modelPath(s).isEmpty()) ++column;
        auto* item = new QTableWidgetItem(oneLine(outcome.reply));
        item->setBackground(outcome.exact ? kExact : kWrong);
        item->setToolTip(tr("answer loss %1 nats/token · %2")
                             .arg(outcome.answerLoss, 0, 'f', 3)
                             .arg(QString::fromUtf8(sample::stopReasonName(outcome.stop))));
        m_table->setItem(int(row), column, item);
    }
    updateSummaries();
}

void AnswersTab::onModelFailed(int model, const QString& message) {
    const int slot = m_slotModels.at(size_t(model));
    m_failures[slot] = message;
    updateSummaries();
}

void AnswersTab::onFinished(bool ok, const QString& message) {
    m_check->setEnabled(true);
    m_stop->setEnabled(false);
    if (!ok && message != QLatin1String("stopped")) {
        m_status->setText(tr("Error: %1").arg(message));
    } else if (!ok) {
        m_status->setText(m_status->text() + tr(" · stopped"));
    }
    rebuildTable();
    emit finished(ok, message);
}

std::vector<int> AnswersTab::rowOrder() const {
    std::vector<int> order(m_cases.size());
    std::iota(order.begin(), order.end(), 0);
    if (m_order->currentIndex() == 0 || m_outcomes[0].size() != m_cases.size()) return order;
    const bool best = m_order->currentIndex() == 1;
    // Unchecked cases go last either way.
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        const bool da = m_done[0][size_t(a)], db = m_done[0][size_t(b)];
        if (da != db) return da;
        const double la = m_outcomes[0][size_t(a)].answerLoss;
        const double lb = m_outcomes[0][size_t(b)].answerLoss;
        return best ? la < lb : la > lb;
    });
    return order;
}

void AnswersTab::rebuildTable() {
    QStringList headers = {tr("#"), tr("Question"), tr("Answer")};
    std::vector<int> usedSlots;
    for (int i = 0; i < kModels; ++i) {
        if (modelPath(i).isEmpty()) continue;
        usedSlots.push_back(i);
        headers << shortModelName(modelPath(i));
    }
    m_table->clear();
    m_table->setColumnCount(headers.size());
    m_table->setHorizontalHeaderLabels(headers);
    m_table->setRowCount(int(m_cases.size()));
    const std::vector<int> order = rowOrder();
    for (int row = 0; row < int(order.size()); ++row) {
        const int c = order[size_t(row)];
        const chat::Conversation& conv = m_cases[size_t(c)].conversation;
        const std::string& question = conv.messages[conv.messages.size() - 2].content;
        auto* number = new QTableWidgetItem(QString::number(c + 1));
        number->setToolTip(QString::fromStdString(m_cases[size_t(c)].origin));
        m_table->setItem(row, 0, number);
        auto* q = new QTableWidgetItem(oneLine(question));
        q->setToolTip(QString::fromStdString(question));
        m_table->setItem(row, 1, q);
        m_table->setItem(row, 2, new QTableWidgetItem(oneLine(conv.messages.back().content)));
        for (size_t k = 0; k < usedSlots.size(); ++k) {
            const int slot = usedSlots[k];
            if (m_done[slot].size() != m_cases.size() || !m_done[slot][size_t(c)]) continue;
            const sample::AnswerOutcome& o = m_outcomes[slot][size_t(c)];
            auto* item = new QTableWidgetItem(oneLine(o.reply));
            item->setBackground(o.exact ? kExact : kWrong);
            item->setToolTip(tr("answer loss %1 nats/token · %2")
                                 .arg(o.answerLoss, 0, 'f', 3)
                                 .arg(QString::fromUtf8(sample::stopReasonName(o.stop))));
            m_table->setItem(row, kFixedColumns + int(k), item);
        }
    }
    m_table->resizeColumnsToContents();
    int total = 0;
    for (int col = 0; col < m_table->columnCount(); ++col) {
        if (col > 0) m_table->setColumnWidth(col, std::min(m_table->columnWidth(col), 360));
        total += m_table->columnWidth(col);
    }
    // The models' replies are what the table is for: when they would not all show, the question
    // (whole in its tooltip) gives up width first.
    const int excess = total - m_table->viewport()->width();
    if (excess > 0) m_table->setColumnWidth(1, std::max(160, m_table->columnWidth(1) - excess));
}

QString AnswersTab::summary(int model) const {
    if (!m_failures[model].isEmpty()) return tr("cannot answer: %1").arg(m_failures[model]);
    std::vector<sample::AnswerOutcome> done;
    for (size_t c = 0; c < m_done[model].size(); ++c)
        if (m_done[model][c]) done.push_back(m_outcomes[model][c]);
    if (done.empty()) return {};
    const sample::AnswerSummary s = sample::summarize(done);
    return tr("%1/%2 exact (%3%) · answer loss %4")
        .arg(s.exact)
        .arg(s.cases)
        .arg(100.0 * s.exactFraction(), 0, 'f', 0)
        .arg(s.meanAnswerLoss, 0, 'f', 3);
}

void AnswersTab::updateSummaries() {
    for (int i = 0; i < kModels; ++i) {
        const bool used = !modelPath(i).isEmpty() && !m_slotModels.empty();
        m_summaries[i]->setVisible(used);
        if (!used) continue;
        const QString title = shortModelName(modelPath(i));
        const QString text = summary(i);
        m_summaries[i]->setText(QStringLiteral("<b>%1</b><br>%2<br><small>%3</small>")
                                    .arg(title.toHtmlEscaped(),
                                         text.isEmpty() ? tr("waiting…") : text.toHtmlEscaped(),
                                         m_templates[i].toHtmlEscaped()));
        m_summaries[i]->setToolTip(modelPath(i));
    }
}

}  // namespace ws::ui
