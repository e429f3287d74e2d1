// SPDX-License-Identifier: GPL-3.0-or-later
// ScheduleEditor: see schedule_editor.h.
#include "ui/config/schedule_editor.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QRegularExpressionValidator>
#include <QStackedWidget>
#include <QTableWidget>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <string_view>

#include "engine/config/fields.h"
#include "engine/optim/schedule.h"

namespace ws::ui {
namespace {

constexpr int kMaxPreviewPoints = 4000;

QString fromView(std::string_view text) {
    return QString::fromUtf8(text.data(), qsizetype(text.size()));
}

// One column per field of the SchedulerConfig declaration, in its order (a new field becomes a
// new column); values are read and written through the same visit().
struct PieceField {
    QString key;
    QString help;
    QStringList choices;  // non-empty: a choice (shown as a combo box)
};

struct FieldLister {
    std::vector<PieceField> fields;
    template <class T>
    void field(T&, const config::FieldInfo& info) {
        PieceField f{fromView(info.key), fromView(info.help), {}};
        for (auto c : info.choices) f.choices << fromView(c);
        fields.push_back(std::move(f));
    }
};

// Shortest round-trip text, in plain decimals where people read them that way (0.0003, not
// 3e-04); YAML reads both.
QString number(double v) {
    const double a = std::abs(v);
    const char format = (a == 0 || (a >= 1e-5 && a < 1e7)) ? 'f' : 'g';
    return QString::number(v, format, QLocale::FloatingPointShortest);
}

struct FieldGetter {
    QString key;
    QString value;
    template <class T>
    void field(T& member, const config::FieldInfo& info) {
        if (fromView(info.key) != key) return;
        if constexpr (std::is_same_v<T, std::string>) {
            value = QString::fromStdString(member);
        } else if constexpr (std::is_floating_point_v<T>) {
            value = number(member);
        } else {
            value = QString::number(member);
        }
    }
};

// Parses `text` into the field `key`; false (piece unchanged) when it is not a value the
// field's declaration allows.
struct FieldSetter {
    QString key;
    QString text;
    bool ok = false;
    template <class T>
    void field(T& member, const config::FieldInfo& info) {
        if (fromView(info.key) != key) return;
        if constexpr (std::is_same_v<T, std::string>) {
            member = text.toStdString();
            ok = true;
        } else {
            bool parsed = false;
            const double v = std::is_floating_point_v<T> ? text.toDouble(&parsed)
                                                         : double(text.toLongLong(&parsed));
            if (!parsed || v < info.min || v > info.max) return;
            member = T(v);
            ok = true;
        }
    }
};

const std::vector<PieceField>& pieceFields() {
    static const std::vector<PieceField> fields = [] {
        config::SchedulerConfig piece;
        FieldLister lister;
        piece.visit(lister);
        return lister.fields;
    }();
    return fields;
}

QString fieldValue(config::SchedulerConfig piece, const QString& key) {
    FieldGetter getter{key, {}};
    piece.visit(getter);
    return getter.value;
}

bool setFieldValue(config::SchedulerConfig& piece, const QString& key, const QString& text) {
    FieldSetter setter{key, text};
    piece.visit(setter);
    return setter.ok;
}

// Which fields a piece of this kind reads (the YAML reader requires the same ones).
bool fieldApplies(const QString& scheduler, const QString& key) {
    if (key == QLatin1String("scheduler") || key == QLatin1String("total_iters")) return true;
    if (scheduler == QLatin1String("Constant")) return key == QLatin1String("learning_rate");
    return key == QLatin1String("initial_learning_rate") ||
           key == QLatin1String("end_learning_rate");
}

}  // namespace

QString ScheduleEditor::toFlowYaml(const config::LearningRate& rate) {
    if (rate.schedule.empty()) return number(rate.constant);
    QStringList pieces;
    for (const auto& piece : rate.schedule) {
        const QString scheduler = QString::fromStdString(piece.scheduler);
        QStringList parts;
        for (const PieceField& f : pieceFields()) {
            if (!fieldApplies(scheduler, f.key)) continue;
            QString value = fieldValue(piece, f.key);
            if (!f.choices.isEmpty()) value = '"' + value + '"';
            parts << f.key + QStringLiteral(": ") + value;
        }
        pieces << '{' + parts.join(QStringLiteral(", ")) + '}';
    }
    return '[' + pieces.join(QStringLiteral(", ")) + ']';
}

ScheduleEditor::ScheduleEditor(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(4);

    m_mode = new QComboBox(this);
    m_mode->setObjectName(QStringLiteral("scheduleMode"));
    m_mode->addItem(tr("Constant learning rate"));
    m_mode->addItem(tr("Schedule: pieces run one after the other"));
    layout->addWidget(m_mode);

    m_pages = new QStackedWidget(this);
    m_constant = new QLineEdit(this);
    m_constant->setObjectName(QStringLiteral("constantLearningRate"));
    m_constant->setToolTip(tr("The learning rate of every step"));
    // Number characters only (1e-4 included), like the form's other number fields.
    m_constant->setValidator(new QRegularExpressionValidator(
        QRegularExpression(QStringLiteral(R"([-+]?[0-9]*\.?[0-9]*(?:[eE][-+]?[0-9]*)?)")),
        m_constant));
    auto* constantPage = new QWidget(this);
    auto* constantLayout = new QHBoxLayout(constantPage);
    constantLayout->setContentsMargins(0, 0, 0, 0);
    constantLayout->addWidget(m_constant);
    m_pages->addWidget(constantPage);

    auto* schedulePage = new QWidget(this);
    auto* scheduleLayout = new QHBoxLayout(schedulePage);
    scheduleLayout->setContentsMargins(0, 0, 0, 0);
    m_table = new QTableWidget(0, int(pieceFields().size()), this);
    m_table->setObjectName(QStringLiteral("schedulePieces"));
    QStringList headers;
    for (const PieceField& f : pieceFields()) {
        QString header = f.key;
        header.replace(QLatin1String("_learning_rate"), QLatin1String(" LR"));
        header.replace(QLatin1String("learning_rate"), QLatin1String("LR"));
        header.replace('_', ' ');
        headers << header;
    }
    m_table->setHorizontalHeaderLabels(headers);
    for (int c = 0; c < int(pieceFields().size()); ++c) {
        m_table->horizontalHeaderItem(c)->setToolTip(
            QStringLiteral("<b>%1</b><br>%2")
                .arg(pieceFields()[size_t(c)].key, pieceFields()[size_t(c)].help.toHtmlEscaped()));
    }
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_table->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scheduleLayout->addWidget(m_table, 1);
    auto* buttons = new QVBoxLayout;
    buttons->setSpacing(2);
    auto makeButton = [&](const QString& text, const QString& tip) {
        auto* b = new QToolButton(this);
        b->setText(text);
        b->setToolTip(tip);
        b->setAutoRaise(true);
        b->setMinimumWidth(28);
        buttons->addWidget(b);
        return b;
    };
    m_add = makeButton(QStringLiteral("+"), tr("Add a piece after the selected one"));
    m_remove = makeButton(QStringLiteral("−"), tr("Remove the selected piece"));
    m_up = makeButton(QStringLiteral("▲"), tr("Move the selected piece earlier"));
    m_down = makeButton(QStringLiteral("▼"), tr("Move the selected piece later"));
    buttons->addStretch(1);
    scheduleLayout->addLayout(buttons);
    m_pages->addWidget(schedulePage);
    layout->addWidget(m_pages);

    m_plot = new QCustomPlot(this);
    m_plot->setObjectName(QStringLiteral("schedulePreview"));
    m_plot->setMinimumHeight(110);
    m_plot->setMaximumHeight(130);
    m_plot->xAxis->setLabel(tr("step"));
    m_plot->yAxis->setLabel(tr("LR"));
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis}) {
        axis->setTickLabelFont(small);
        axis->setLabelFont(small);
        axis->setBasePen(QPen(palette().color(QPalette::Mid)));
        axis->setTickPen(QPen(palette().color(QPalette::Mid)));
        axis->setSubTickPen(Qt::NoPen);
        axis->setTickLabelColor(palette().color(QPalette::Text));
        axis->setLabelColor(palette().color(QPalette::Text));
        axis->grid()->setPen(QPen(palette().color(QPalette::Midlight), 0, Qt::DotLine));
    }
    m_plot->setBackground(palette().brush(QPalette::Base));
    m_plot->axisRect()->setAutoMargins(QCP::msLeft | QCP::msBottom);
    m_plot->axisRect()->setMargins(QMargins(0, 6, 10, 0));
    m_plot->yAxis->ticker()->setTickCount(3);  // a 110 px plot: more labels would collide
    m_plot->xAxis->ticker()->setTickCount(6);
    m_graph = m_plot->addGraph();
    m_graph->setPen(QPen(QColor(0x1e, 0x88, 0xe5), 1.6));
    m_graph->setBrush(QColor(0x1e, 0x88, 0xe5, 40));
    layout->addWidget(m_plot);
    m_summary = new QLabel(this);
    m_summary->setObjectName(QStringLiteral("scheduleSummary"));
    m_summary->setWordWrap(true);
    m_summary->setForegroundRole(QPalette::PlaceholderText);
    layout->addWidget(m_summary);

    connect(m_mode, &QComboBox::activated, this, [this](int index) {
        if (index == 0 && !m_rate.schedule.empty()) {
            // The constant keeps the schedule's peak, the value people usually mean.
            double peak = 0;
            optim::LearningRateSchedule schedule(m_rate, m_maxSteps);
            for (int64_t s = 0; s < m_maxSteps; s += std::max<int64_t>(1, m_maxSteps / 500))
                peak = std::max(peak, schedule.at(s));
            m_rate.constant = peak > 0 ? peak : m_rate.constant;
            m_rate.schedule.clear();
        } else if (index == 1 && m_rate.schedule.empty()) {
            config::SchedulerConfig piece;
            piece.scheduler = "Constant";
            piece.learningRate = m_rate.constant;
            m_rate.schedule.push_back(piece);
        } else {
            return;
        }
        rebuildTable();
        emitEdited();
    });
    connect(m_constant, &QLineEdit::editingFinished, this, [this] {
        bool ok = false;
        const double v = m_constant->text().trimmed().toDouble(&ok);
        if (!ok || v == m_rate.constant) {
            if (!ok) m_constant->setText(number(m_rate.constant));
            return;
        }
        m_rate.constant = v;
        updatePreview();
        emitEdited();
    });
    connect(m_table, &QTableWidget::cellChanged, this, &ScheduleEditor::onCellChanged);
    connect(m_table, &QTableWidget::itemSelectionChanged, this, &ScheduleEditor::updateButtons);
    connect(m_add, &QToolButton::clicked, this, &ScheduleEditor::addPiece);
    connect(m_remove, &QToolButton::clicked, this, [this] { removePiece(m_table->currentRow()); });
    connect(m_up, &QToolButton::clicked, this, [this] { movePiece(m_table->currentRow(), -1); });
    connect(m_down, &QToolButton::clicked, this, [this] { movePiece(m_table->currentRow(), 1); });
    rebuildTable();
}

void ScheduleEditor::setSchedule(const config::LearningRate& rate, int64_t maxSteps) {
    const int64_t steps = std::max<int64_t>(1, maxSteps);
    if (rate == m_rate && rate.constant == m_rate.constant && steps == m_maxSteps) return;
    m_rate = rate;
    m_maxSteps = steps;
    // While our own edit is being applied, a table widget may be inside its signal: later.
    if (m_emitting) {
        QTimer::singleShot(0, this, &ScheduleEditor::rebuildTable);
        return;
    }
    rebuildTable();
}

void ScheduleEditor::rebuildTable() {
    m_updating = true;
    const bool isSchedule = !m_rate.schedule.empty();
    m_mode->setCurrentIndex(isSchedule ? 1 : 0);
    m_pages->setCurrentIndex(isSchedule ? 1 : 0);
    m_constant->setText(number(m_rate.constant));
    const int keepRow = m_table->currentRow();
    m_table->setRowCount(0);
    m_table->setRowCount(int(m_rate.schedule.size()));
    const auto& fields = pieceFields();
    for (int row = 0; row < int(m_rate.schedule.size()); ++row) {
        const config::SchedulerConfig& piece = m_rate.schedule[size_t(row)];
        const QString scheduler = QString::fromStdString(piece.scheduler);
        for (int col = 0; col < int(fields.size()); ++col) {
            const PieceField& f = fields[size_t(col)];
            if (!f.choices.isEmpty()) {
                auto* combo = new QComboBox(m_table);
                combo->addItems(f.choices);
                combo->setCurrentText(fieldValue(piece, f.key));
                combo->setToolTip(f.help);
                combo->setFrame(false);
                // Queued: the new kind rebuilds the table, which deletes this combo box.
                connect(
                    combo, &QComboBox::textActivated, this,
                    [this, guard = QPointer<QComboBox>(combo)](const QString& text) {
                        for (int r = 0; guard && r < m_table->rowCount(); ++r) {
                            if (m_table->cellWidget(r, 0) == guard) onSchedulerChosen(r, text);
                        }
                    },
                    Qt::QueuedConnection);
                m_table->setCellWidget(row, col, combo);
                continue;
            }
            auto* item = new QTableWidgetItem;
            const bool applies = fieldApplies(scheduler, f.key);
            if (!applies) {
                item->setFlags(Qt::NoItemFlags);
                item->setText(QStringLiteral("—"));
                item->setToolTip(tr("A %1 piece does not use %2").arg(scheduler, f.key));
            } else {
                const QString value = fieldValue(piece, f.key);
                item->setText(value);
                item->setToolTip(f.key == QLatin1String("total_iters") &&
                                         value == QLatin1String("0")
                                     ? tr("0: until the end of training")
                                     : f.help);
            }
            item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            m_table->setItem(row, col, item);
        }
    }
    // As tall as its rows: the form scrolls, the table should not.
    int height = m_table->horizontalHeader()->sizeHint().height() + 2 * m_table->frameWidth();
    for (int r = 0; r < m_table->rowCount(); ++r)
        height += m_table->verticalHeader()->sectionSize(r);
    m_table->setFixedHeight(std::max(height, 60));
    if (keepRow >= 0 && keepRow < m_table->rowCount()) m_table->selectRow(keepRow);
    m_updating = false;
    updateButtons();
    updatePreview();
}

void ScheduleEditor::updateButtons() {
    const int row = m_table->currentRow();
    const int rows = m_table->rowCount();
    m_remove->setEnabled(row >= 0 && rows > 1);
    m_up->setEnabled(row > 0);
    m_down->setEnabled(row >= 0 && row + 1 < rows);
}

void ScheduleEditor::updatePreview() {
    const optim::LearningRateSchedule schedule(m_rate, m_maxSteps);
    const int64_t count = std::min<int64_t>(m_maxSteps, kMaxPreviewPoints);
    QVector<double> x(count), y(count);
    double top = 0;
    for (int64_t i = 0; i < count; ++i) {
        // Every step when they fit, else evenly spaced steps that include the first and last.
        const int64_t step = count == m_maxSteps ? i : i * (m_maxSteps - 1) / (count - 1);
        x[i] = double(step);
        y[i] = schedule.at(step);
        top = std::max(top, y[i]);
    }
    m_graph->setData(x, y, true);
    m_plot->xAxis->setRange(0, double(std::max<int64_t>(1, m_maxSteps - 1)));
    m_plot->yAxis->setRange(0, top > 0 ? top * 1.1 : 1e-3);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
    m_summary->setText(
        tr("%1 steps: %2").arg(m_maxSteps).arg(QString::fromStdString(schedule.describe())));
}

int ScheduleEditor::previewPointCount() const {
    return m_graph->dataCount();
}

void ScheduleEditor::emitEdited() {
    emit edited(toFlowYaml(m_rate));
}

void ScheduleEditor::onCellChanged(int row, int column) {
    if (m_updating || row < 0 || row >= int(m_rate.schedule.size())) return;
    const PieceField& f = pieceFields()[size_t(column)];
    config::SchedulerConfig& piece = m_rate.schedule[size_t(row)];
    QTableWidgetItem* item = m_table->item(row, column);
    const bool ok = setFieldValue(piece, f.key, item->text().trimmed());
    // Edited in place (the item is inside its own change signal): the canonical value, or the
    // piece's old value when the text was not one.
    m_updating = true;
    item->setText(fieldValue(piece, f.key));
    m_updating = false;
    if (!ok) return;
    updatePreview();
    emitEdited();
}

void ScheduleEditor::onSchedulerChosen(int row, const QString& scheduler) {
    config::SchedulerConfig& piece = m_rate.schedule[size_t(row)];
    const std::string kind = scheduler.toStdString();
    if (piece.scheduler == kind) return;
    // Carry the rate over so the new kind starts where the old one was.
    if (kind == "Constant") {
        piece.learningRate =
            piece.initialLearningRate > 0 ? piece.initialLearningRate : piece.endLearningRate;
    } else if (piece.scheduler == "Constant") {
        piece.initialLearningRate = piece.learningRate;
        piece.endLearningRate = piece.learningRate * 0.1;
    }
    piece.scheduler = kind;
    rebuildTable();
    emitEdited();
}

void ScheduleEditor::addPiece() {
    if (m_rate.schedule.empty()) return;
    const int row =
        m_table->currentRow() >= 0 ? m_table->currentRow() : int(m_rate.schedule.size()) - 1;
    config::SchedulerConfig piece;
    piece.scheduler = "Constant";
    const optim::LearningRateSchedule schedule(m_rate, m_maxSteps);
    // A new piece continues at the rate the schedule has at the end of the one before it.
    int64_t end = 0;
    for (int r = 0; r <= row; ++r) end += m_rate.schedule[size_t(r)].totalIters;
    piece.learningRate = schedule.at(std::min(end, m_maxSteps - 1));
    piece.totalIters = 0;
    // Only the last piece may run "until the end": the one it follows gets a length.
    auto& before = m_rate.schedule[size_t(row)];
    if (before.totalIters == 0) before.totalIters = std::max<int64_t>(1, m_maxSteps / 4);
    if (row + 1 < int(m_rate.schedule.size()))
        piece.totalIters = std::max<int64_t>(1, m_maxSteps / 4);
    m_rate.schedule.insert(m_rate.schedule.begin() + row + 1, piece);
    rebuildTable();
    m_table->selectRow(row + 1);
    emitEdited();
}

void ScheduleEditor::removePiece(int row) {
    if (row < 0 || row >= int(m_rate.schedule.size()) || m_rate.schedule.size() < 2) return;
    m_rate.schedule.erase(m_rate.schedule.begin() + row);
    rebuildTable();
    emitEdited();
}

void ScheduleEditor::movePiece(int row, int delta) {
    const int other = row + delta;
    if (row < 0 || other < 0 || row >= int(m_rate.schedule.size()) ||
        other >= int(m_rate.schedule.size())) {
        return;
    }
    std::swap(m_rate.schedule[size_t(row)], m_rate.schedule[size_t(other)]);
    rebuildTable();
    m_table->selectRow(other);
    emitEdited();
}

}  // namespace ws::ui
