// ConfigForm: see config_form.h.
#include "ui/config_form.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QVBoxLayout>

#include "ui/schedule_editor.h"

namespace ws::ui {
namespace {

QString quoteYaml(const QString& text) {
    QString escaped = text;
    escaped.replace(QLatin1Char('\\'), QStringLiteral("\\\\")).replace('"', QStringLiteral("\\\""));
    return '"' + escaped + '"';
}

QString sectionTitle(const QString& key) {
    static const std::map<QString, QString> titles = {
        {"model", QObject::tr("Model")},
        {"optimizer", QObject::tr("Optimizer")},
        {"train_input", QObject::tr("Training data")},
        {"eval_input", QObject::tr("Evaluation data")},
        {"runconfig", QObject::tr("Run")}};
    const auto it = titles.find(key);
    if (it != titles.end()) return it->second;
    QString words = key;
    words.replace('_', ' ');
    if (!words.isEmpty()) words[0] = words[0].toUpper();
    return words;
}

QString tooltipFor(const config::FieldDescription& f) {
    QString tip = QStringLiteral("<b>%1</b><br>%2")
                      .arg(QString::fromStdString(f.path).toHtmlEscaped(),
                           QString::fromStdString(f.help).toHtmlEscaped());
    if (!f.unit.empty()) tip += QObject::tr("<br>Unit: %1").arg(QString::fromStdString(f.unit));
    if (!f.choices.empty()) {
        QStringList choices;
        for (const auto& c : f.choices) choices << QString::fromStdString(c);
        tip += QObject::tr("<br>One of: %1").arg(choices.join(", "));
    }
    tip +=
        QObject::tr("<br>Default: %1").arg(QString::fromStdString(f.defaultValue).toHtmlEscaped());
    return tip;
}

}  // namespace

ConfigForm::ConfigForm(ConfigDocument* document, QWidget* parent)
    : QWidget(parent), m_document(document) {
    build();
    connect(m_document, &ConfigDocument::changed, this, &ConfigForm::refresh);
    refresh();
}

void ConfigForm::build() {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(8, 8, 8, 8);
    outer->setSpacing(12);
    QFormLayout* form = nullptr;
    QString optionalPrefix;
    for (const auto& f : config::describeFields()) {
        const QString path = QString::fromStdString(f.path);
        const QString type = QString::fromStdString(f.type);
        if (path.contains(QLatin1String("[N]")))
            continue;  // schedule pieces: one learning_rate row
        if (!optionalPrefix.isEmpty() && path.startsWith(optionalPrefix)) continue;
        optionalPrefix.clear();
        const QString key = path.section('.', -1);
        if (type == QLatin1String("section") && !path.contains('.')) {
            auto* group = new QGroupBox(sectionTitle(path), this);
            group->setToolTip(QString::fromStdString(f.help));
            form = new QFormLayout(group);
            form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
            form->setLabelAlignment(Qt::AlignRight | Qt::AlignVCenter);
            form->setHorizontalSpacing(10);
            form->setVerticalSpacing(6);
            outer->addWidget(group);
            continue;
        }
        if (!form) continue;
        if (type == QLatin1String("section") || type == QLatin1String("optional_section")) {
            auto* heading = new QLabel(QStringLiteral("<b>%1</b>").arg(sectionTitle(key)), this);
            heading->setToolTip(QString::fromStdString(f.help));
            heading->setContentsMargins(0, 6, 0, 0);
            form->addRow(heading);
            if (type == QLatin1String("optional_section")) {
                auto* note = new QLabel(tr("Optional: %1. Edit it in the YAML view.")
                                            .arg(QString::fromStdString(f.help)),
                                        this);
                note->setWordWrap(true);
                note->setForegroundRole(QPalette::PlaceholderText);
                form->addRow(note);
                optionalPrefix = path + ".";
            }
            continue;
        }
        Row row;
        row.type = type;
        QWidget* editor = nullptr;
        if (type == QLatin1String("bool")) {
            auto* box = new QCheckBox(this);
            connect(box, &QCheckBox::toggled, this, [this, path] { commit(path); });
            editor = box;
        } else if (!f.choices.empty()) {
            auto* combo = new QComboBox(this);
            for (const auto& c : f.choices) combo->addItem(QString::fromStdString(c));
            connect(combo, &QComboBox::activated, this, [this, path] { commit(path); });
            editor = combo;
        } else if (type == QLatin1String("learning_rate")) {
            auto* schedule = new ScheduleEditor(this);
            connect(schedule, &ScheduleEditor::edited, this, [this, path](const QString& yaml) {
                if (!m_refreshing) m_document->setField(path, yaml);
            });
            editor = schedule;
        } else {
            auto* line = new QLineEdit(this);
            connect(line, &QLineEdit::editingFinished, this, [this, path] { commit(path); });
            editor = line;
        }
        editor->setObjectName(path);
        editor->setToolTip(tooltipFor(f));
        row.editor = editor;
        row.error = new QLabel(this);
        row.error->setObjectName(path + QStringLiteral(".error"));
        // Wrapped to the column's width by wrapErrors(); must not widen the form itself.
        row.error->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
        QPalette errorPalette = row.error->palette();
        errorPalette.setColor(QPalette::WindowText, QColor(0xe5, 0x39, 0x35));
        row.error->setPalette(errorPalette);

        auto* cell = new QWidget(this);
        auto* editorLine = new QHBoxLayout(cell);
        editorLine->setContentsMargins(0, 0, 0, 0);
        editorLine->setSpacing(6);
        editorLine->addWidget(editor, 1);
        if (!f.unit.empty()) {
            auto* unit = new QLabel(QString::fromStdString(f.unit), this);
            unit->setForegroundRole(QPalette::PlaceholderText);
            editorLine->addWidget(unit);
        }
        auto* label = new QLabel(key, this);
        label->setToolTip(editor->toolTip());
        form->addRow(label, cell);
        // The error gets its own row under the field, so the form layout sizes its wrapped text.
        form->addRow(QString(), row.error);
        form->setRowVisible(row.error, false);
        row.form = form;
        m_rows[path] = row;
    }
    outer->addStretch(1);
}

QWidget* ConfigForm::editorFor(const QString& path) const {
    const auto it = m_rows.find(path);
    return it == m_rows.end() ? nullptr : it->second.editor;
}

QLabel* ConfigForm::errorLabelFor(const QString& path) const {
    const auto it = m_rows.find(path);
    return it == m_rows.end() ? nullptr : it->second.error;
}

void ConfigForm::refresh() {
    m_refreshing = true;
    std::map<QString, QStringList> problemsByPath;
    for (const auto& p : m_document->problems()) {
        if (!p.path.isEmpty()) problemsByPath[p.path] << p.message;
    }
    for (auto& [path, row] : m_rows) {
        const auto problems = problemsByPath.find(path);
        const bool hasProblem = problems != problemsByPath.end();
        row.form->setRowVisible(row.error, hasProblem);
        row.error->setProperty("fullText", hasProblem ? problems->second.join('\n') : QString());
        row.error->setToolTip(row.error->property("fullText").toString());
        // A tinted base marks the field in light and dark palettes alike, keeping the native
        // frame (a style sheet border would replace the whole style of the widget).
        QPalette pal = palette();
        if (hasProblem) {
            const QColor base = pal.color(QPalette::Base);
            const QColor red(0xe5, 0x39, 0x35);
            pal.setColor(QPalette::Base,
                         QColor::fromRgbF(0.8f * base.redF() + 0.2f * red.redF(),
                                          0.8f * base.greenF() + 0.2f * red.greenF(),
                                          0.8f * base.blueF() + 0.2f * red.blueF()));
        }
        row.editor->setPalette(pal);
        const QString value = m_document->fieldValue(path);
        if (auto* box = qobject_cast<QCheckBox*>(row.editor)) {
            box->setChecked(value == QLatin1String("true"));
        } else if (auto* combo = qobject_cast<QComboBox*>(row.editor)) {
            const int index = combo->findText(value, Qt::MatchFixedString);
            if (index >= 0) combo->setCurrentIndex(index);
        } else if (auto* schedule = qobject_cast<ScheduleEditor*>(row.editor)) {
            const config::Config& config = m_document->config();
            schedule->setSchedule(config.optimizer.learningRate, config.runconfig.maxSteps);
        } else if (auto* line = qobject_cast<QLineEdit*>(row.editor)) {
            // Keep a rejected value on screen so the user sees what the error is about.
            if (!hasProblem || line->text().isEmpty()) line->setText(value);
        }
    }
    m_refreshing = false;
    wrapErrors();
}

void ConfigForm::wrapErrors() {
    // Wrapped by hand: a scroll area sizes its widget from size hints, not height-for-width, so
    // a word-wrapping QLabel would be squeezed to one line.
    for (auto& [path, row] : m_rows) {
        const QString text = row.error->property("fullText").toString();
        if (text.isEmpty()) continue;
        const int width = std::max(row.editor->parentWidget()->width(), 240);
        const QFontMetrics metrics(row.error->font());
        QStringList lines;
        for (const QString& paragraph : text.split('\n')) {
            QString line;
            for (const QString& word : paragraph.split(' ')) {
                const QString candidate = line.isEmpty() ? word : line + ' ' + word;
                if (!line.isEmpty() && metrics.horizontalAdvance(candidate) > width) {
                    lines << line;
                    line = word;
                } else {
                    line = candidate;
                }
            }
            lines << line;
        }
        row.error->setText(lines.join('\n'));
    }
}

void ConfigForm::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    wrapErrors();
}

void ConfigForm::commit(const QString& path) {
    if (m_refreshing) return;
    const Row& row = m_rows.at(path);
    QString value;
    if (auto* box = qobject_cast<QCheckBox*>(row.editor)) {
        value = box->isChecked() ? QStringLiteral("true") : QStringLiteral("false");
    } else if (auto* combo = qobject_cast<QComboBox*>(row.editor)) {
        value = quoteYaml(combo->currentText());
    } else if (auto* line = qobject_cast<QLineEdit*>(row.editor)) {
        value = line->text().trimmed();
        if (row.type == QLatin1String("string")) value = quoteYaml(value);
        if (value.isEmpty()) value = QStringLiteral("\"\"");
    }
    m_document->setField(path, value);
}

}  // namespace ws::ui
