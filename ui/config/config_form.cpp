// SPDX-License-Identifier: GPL-3.0-or-later
// ConfigForm: see config_form.h.
#include "ui/config/config_form.h"

#include <QAbstractScrollArea>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpressionValidator>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <algorithm>
#include <cctype>
#include <filesystem>

#include "engine/session/chat_run_data.h"
#include "engine/wafer/spec.h"
#include "ui/config/schedule_editor.h"

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

// The characters a number field may hold, so letters cannot be typed or pasted. Any text of these
// characters is Acceptable (a malformed number such as "1e" still commits and gets the
// document's message instead of silently never committing, as an Intermediate state would).
QValidator* numberValidator(const QString& type, QObject* parent) {
    QString pattern;
    if (type == QLatin1String("int") || type == QLatin1String("int64"))
        pattern = QStringLiteral(R"([-+]?[0-9]*)");
    else if (type == QLatin1String("double"))
        pattern = QStringLiteral(R"([-+]?[0-9]*\.?[0-9]*(?:[eE][-+]?[0-9]*)?)");
    else if (type == QLatin1String("double[2]") || type == QLatin1String("int64[]"))
        pattern = QStringLiteral(R"([-+0-9.eE\[\], ]*)");
    if (pattern.isEmpty()) return nullptr;
    return new QRegularExpressionValidator(QRegularExpression(pattern), parent);
}

// Every form field whose key path `message` names as a whole key (not "model.name" inside
// "model.name_x"), so a rule about two fields shows under both, e.g. hidden_size and num_heads.
QStringList pathsNamedIn(const QString& message, const QStringList& fields) {
    QStringList named;
    for (const QString& path : fields) {
        for (qsizetype at = message.indexOf(path); at >= 0; at = message.indexOf(path, at + 1)) {
            const qsizetype end = at + path.size();
            const auto partOfKey = [](QChar c) { return c.isLetterOrNumber() || c == '_'; };
            if (end < message.size() && partOfKey(message[end])) continue;
            if (at > 0 && (partOfKey(message[at - 1]) || message[at - 1] == '.')) continue;
            named << path;
            break;
        }
    }
    return named;
}

}  // namespace

ConfigForm::ConfigForm(ConfigDocument* document, QWidget* parent)
    : QWidget(parent), m_document(document) {
    build();
    connect(m_document, &ConfigDocument::changed, this, &ConfigForm::refresh);
    refresh();
}

namespace {

// Does the input read CSV/TSV columns (a zip may hold them too)? Only then do the column keys
// mean anything.
bool readsColumns(const config::InputConfig& input) {
    if (!session::readsRecords(input)) return false;
    if (input.format == "columns") return true;
    if (input.format != "auto") return false;
    return std::any_of(input.dataDir.begin(), input.dataDir.end(), [](const std::string& entry) {
        std::string ext = std::filesystem::path(entry).extension().string();
        std::transform(ext.begin(), ext.end(), ext.begin(),
                       [](unsigned char ch) { return char(std::tolower(ch)); });
        return ext == ".csv" || ext == ".tsv" || ext == ".tab" || ext == ".zip";
    });
}

// The chat and instruction keys of train_input / eval_input (format itself always shows: it is
// the switch): the column mapping with CSV/TSV data only, the rest with record data only.
ConfigForm::RowCondition recordConditionFor(const QString& path) {
    static const QStringList columns = {
        QStringLiteral("prompt_column"), QStringLiteral("answer_column"),
        QStringLiteral("system_column"), QStringLiteral("id_column"),
        QStringLiteral("parent_id_column")};
    static const QStringList records = {
        QStringLiteral("chat_template"), QStringLiteral("train_on_inputs"),
        QStringLiteral("mask_history"),  QStringLiteral("pack_examples"),
        QStringLiteral("long_examples"), QStringLiteral("validation_records")};
    const bool train = path.startsWith(QLatin1String("train_input."));
    if (!train && !path.startsWith(QLatin1String("eval_input."))) return nullptr;
    const QString key = path.section(QLatin1Char('.'), 1);
    if (columns.contains(key)) {
        if (train) return [](const config::Config& c) { return readsColumns(c.trainInput); };
        return [](const config::Config& c) { return readsColumns(c.evalInput); };
    }
    if (records.contains(key)) {
        if (train)
            return [](const config::Config& c) { return session::readsRecords(c.trainInput); };
        return [](const config::Config& c) { return session::readsRecords(c.evalInput); };
    }
    return nullptr;
}

// Fields that mean something only under another setting are shown only then: the sweep's with a
// sweep: section, rotary's with rotary positions, the KV groups with multi-query attention, the
// chat keys with record data (recordConditionFor).
ConfigForm::RowCondition conditionFor(const QString& path) {
    if (const ConfigForm::RowCondition records = recordConditionFor(path)) return records;
    if (path.startsWith(QLatin1String("sweep.")))
        return [](const config::Config& c) { return c.sweep.has_value(); };
    static const QStringList rotary = {
        QStringLiteral("model.rotary_dim"), QStringLiteral("model.rope_theta"),
        QStringLiteral("model.pos_scaling_factor"), QStringLiteral("model.pos_scaling_type"),
        QStringLiteral("model.pos_scaling_extra_args")};
    if (rotary.contains(path))
        return [](const config::Config& c) { return c.model.positionEmbeddingType == "rotary"; };
    if (path == QLatin1String("model.extra_attention_params") ||
        path.startsWith(QLatin1String("model.extra_attention_params.")))
        return [](const config::Config& c) {
            return c.model.attentionModule == "multiquery_attention";
        };
    return nullptr;
}

}  // namespace

void ConfigForm::build() {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(8, 8, 8, 8);
    outer->setSpacing(12);
    m_readOnlyNote = new QLabel(
        tr("The YAML has errors (listed at the bottom): the form shows the values the text sets "
           "and stays read-only until they are fixed in the YAML view."),
        this);
    m_readOnlyNote->setObjectName(QStringLiteral("formReadOnlyNote"));
    m_readOnlyNote->setWordWrap(true);
    m_readOnlyNote->setFrameShape(QFrame::StyledPanel);
    m_readOnlyNote->setMargin(6);
    m_readOnlyNote->hide();
    outer->addWidget(m_readOnlyNote);
    QFormLayout* form = nullptr;
    QString optionalPrefix;
    for (const auto& f : config::describeFields()) {
        const QString path = QString::fromStdString(f.path);
        const QString type = QString::fromStdString(f.type);
        if (path.contains(QLatin1String("[N]")))
            continue;  // schedule pieces: one learning_rate row
        // A sweep's axes and parametrization bundles are maps keyed by config keys: YAML only.
        if (path.contains(QLatin1String("<key>")) || type == QLatin1String("sweep_parameters") ||
            type == QLatin1String("override_bundles"))
            continue;
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
            m_groups.push_back(group);
            continue;
        }
        if (!form) continue;
        if (type == QLatin1String("section") || type == QLatin1String("optional_section")) {
            auto* heading = new QLabel(QStringLiteral("<b>%1</b>").arg(sectionTitle(key)), this);
            heading->setToolTip(QString::fromStdString(f.help));
            heading->setContentsMargins(0, 6, 0, 0);
            form->addRow(heading);
            const RowCondition condition = conditionFor(path);
            if (condition) m_conditionalRows.push_back({heading, condition});
            if (path == QLatin1String("sweep")) {
                // Its settings are form fields while the config has a sweep: section (hidden
                // otherwise: editing one would add a sweep to a plain run's config).
                m_sweepNote = new QLabel(this);
                m_sweepNote->setWordWrap(true);
                m_sweepNote->setForegroundRole(QPalette::PlaceholderText);
                m_sweepNote->setToolTip(QString::fromStdString(f.help));
                form->addRow(m_sweepNote);
                continue;
            }
            if (type == QLatin1String("optional_section")) {
                auto* note = new QLabel(tr("Optional: %1. Edit it in the YAML view.")
                                            .arg(QString::fromStdString(f.help)),
                                        this);
                note->setWordWrap(true);
                note->setForegroundRole(QPalette::PlaceholderText);
                form->addRow(note);
                if (condition) m_conditionalRows.push_back({note, condition});
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
        } else if (!f.choices.empty() || path == QLatin1String("wafer.spec")) {
            auto* combo = new QComboBox(this);
            // wafer.spec's choices are the spec files the engine finds, not a declared list.
            const std::vector<std::string> choices =
                f.choices.empty() ? wafer::knownSpecNames()
                                  : std::vector<std::string>(f.choices.begin(), f.choices.end());
            for (const auto& c : choices) combo->addItem(QString::fromStdString(c));
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
            line->setValidator(numberValidator(type, line));
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
        auto* label = new QLabel(ConfigDocument::fieldLabel(path), this);
        label->setToolTip(editor->toolTip());
        form->addRow(label, cell);
        if (const RowCondition condition = conditionFor(path))
            m_conditionalRows.push_back({cell, condition});
        // The error gets its own row under the field, so the form layout sizes its wrapped text.
        form->addRow(QString(), row.error);
        form->setRowVisible(row.error, false);
        row.form = form;
        m_rows[path] = row;
    }
    outer->addStretch(1);
    guardWheel();
}

void ConfigForm::guardWheel() {
    // Scrolling the form over a combo or spin box must scroll, not change the value (one notch
    // silently changed an initializer): such fields take the wheel only once focused by a click
    // or Tab. Called again after refreshes, which may create the schedule table's combos.
    const auto guard = [this](QWidget* w) {
        w->setFocusPolicy(Qt::StrongFocus);
        w->installEventFilter(this);  // installing twice keeps one filter
    };
    for (auto* combo : findChildren<QComboBox*>()) guard(combo);
    for (auto* spin : findChildren<QAbstractSpinBox*>()) guard(spin);
}

bool ConfigForm::eventFilter(QObject* watched, QEvent* event) {
    if (event->type() == QEvent::Wheel) {
        auto* widget = qobject_cast<QWidget*>(watched);
        if (widget && !widget->hasFocus()) {
            // Handed to the scroll area around the form (not a nearer one, such as the schedule
            // table's), explicitly: Qt does not pass synthesized wheel events on to parents.
            for (QWidget* w = parentWidget(); w; w = w->parentWidget()) {
                if (auto* area = qobject_cast<QAbstractScrollArea*>(w)) {
                    QCoreApplication::sendEvent(area->viewport(), event);
                    event->accept();
                    return true;
                }
            }
            event->ignore();  // no scroll area: let Qt offer it to the parents
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
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
    const bool editable = m_document->isParsed();
    m_readOnlyNote->setVisible(!editable);
    for (QWidget* group : m_groups) group->setEnabled(editable);
    std::map<QString, QStringList> problemsByPath;
    QStringList fields;
    for (const auto& [path, row] : m_rows) fields << path;
    QStringList rejected;  // fields whose typed value was refused (ConfigDocument's wording)
    for (const auto& p : m_document->problems()) {
        if (p.message.startsWith(
                QStringLiteral("%1 (%2): ").arg(ConfigDocument::fieldLabel(p.path), p.path)))
            rejected << p.path;
        // Under the field the problem is located at and every other field it names: the user
        // may fix either (hidden_size % num_heads), and must see it where the message points. A
        // problem about the config as a whole (the fit, located at the wafer's spec) shows in
        // full once, and the other fields it names point to it (the spec and the buffer's slots
        // are neighbours: the same eight lines twice).
        const bool aboutOneKey = !p.path.isEmpty() && p.message.startsWith(p.path);
        QStringList paths = pathsNamedIn(p.message, fields);
        if (!p.path.isEmpty() && !paths.contains(p.path)) paths << p.path;
        for (const QString& path : paths)
            problemsByPath[path] << (aboutOneKey || path == p.path || !m_rows.count(p.path)
                                         ? p.message
                                         : tr("(see the problem under “%1”)")
                                               .arg(ConfigDocument::fieldLabel(p.path)));
    }
    const bool hasSweep = m_document->config().sweep.has_value();
    for (const auto& [w, condition] : m_conditionalRows)
        if (auto* form = qobject_cast<QFormLayout*>(w->parentWidget()->layout()))
            form->setRowVisible(w, condition(m_document->config()));
    if (m_sweepNote) {
        m_sweepNote->setText(
            hasSweep ? tr("The swept parameters (sweep.parameters) and the parametrizations' "
                          "overrides (sweep.parametrizations) are edited in the YAML view.")
                     : tr("Optional: %1. Edit it in the YAML view.").arg(m_sweepNote->toolTip()));
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
            const QColor red(0xe5, 0x39, 0x35);
            const auto tint = [&](QPalette::ColorRole role) {
                const QColor c = pal.color(role);
                pal.setColor(role, QColor::fromRgbF(0.8f * c.redF() + 0.2f * red.redF(),
                                                    0.8f * c.greenF() + 0.2f * red.greenF(),
                                                    0.8f * c.blueF() + 0.2f * red.blueF()));
            };
            tint(QPalette::Base);
            // A non-editable combo box (wafer.spec) draws as a button, not on Base.
            if (qobject_cast<QComboBox*>(row.editor)) tint(QPalette::Button);
        }
        row.editor->setPalette(pal);
        const QString value = m_document->fieldValue(path);
        if (auto* box = qobject_cast<QCheckBox*>(row.editor)) {
            box->setChecked(value == QLatin1String("true"));
        } else if (auto* combo = qobject_cast<QComboBox*>(row.editor)) {
            // A value that is not one of the choices (a misspelt or a file path wafer.spec) is
            // shown as it is, as an extra last item, with its error under the field.
            const int extra = combo->findData(true, Qt::UserRole);
            if (extra >= 0 && combo->itemText(extra) != value) combo->removeItem(extra);
            int index = combo->findText(value, Qt::MatchFixedString);
            if (index < 0 && !value.isEmpty()) {
                combo->addItem(value, true);
                index = combo->count() - 1;
            }
            if (index >= 0) combo->setCurrentIndex(index);
        } else if (auto* schedule = qobject_cast<ScheduleEditor*>(row.editor)) {
            if (editable) {
                const config::Config& config = m_document->config();
                schedule->setSchedule(config.optimizer.learningRate, config.runconfig.maxSteps);
            } else {
                // What the text sets, read as an override of the defaults would read it.
                config::Config read;
                (void)config::applyOverride(read, (path + '=' + value).toStdString());
                (void)config::applyOverride(
                    read, ("runconfig.max_steps=" + m_document->fieldValue("runconfig.max_steps"))
                              .toStdString());
                schedule->setSchedule(read.optimizer.learningRate, read.runconfig.maxSteps);
            }
        } else if (auto* line = qobject_cast<QLineEdit*>(row.editor)) {
            // Keep a rejected value on screen so the user sees what the error is about (only
            // then: a field that merely shares another field's problem shows its new value).
            if (!rejected.contains(path) || line->text().isEmpty()) line->setText(value);
        }
    }
    m_refreshing = false;
    guardWheel();
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

void ConfigForm::commitFocusedField() {
    QWidget* focus = QApplication::focusWidget();
    if (!focus || !isAncestorOf(focus)) return;
    for (const auto& [path, row] : m_rows) {
        // A line edit commits its text; the other editors commit as they change.
        if (row.editor == focus && qobject_cast<QLineEdit*>(focus)) {
            commit(path);
            return;
        }
    }
}

void ConfigForm::commit(const QString& path) {
    // Read-only while the text does not parse (a field losing focus as the form is disabled
    // must not try to write it).
    if (m_refreshing || !m_document->isParsed()) return;
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
