// SPDX-License-Identifier: GPL-3.0-or-later
// ConfigForm: the Config tab's form, generated from ws::config::describeFields() (the same
// declarations that drive YAML load/save), one group per section, tooltips from the help text
// and unit, choices as combo boxes; the sweep: section's settings (max_steps, seeds,
// parallel_trials, early stopping, ...) while the config has one (its axes: YAML view), rotary's
// settings with rotary positions and the KV groups with multi-query attention. Edits go to
// the ConfigDocument as "path=value" overrides; the document's problems show inline under every
// field they name. Number fields take only number characters; combo and spin boxes take the mouse
// wheel only when focused, so scrolling the form never changes a value. While the document's text
// does not parse the form is read-only: it shows what the text says (ConfigDocument::fieldValue)
// under a note that says why, and commits nothing. GUI thread only.
#pragma once

#include <QWidget>
#include <map>
#include <utility>
#include <vector>

#include "ui/config/config_document.h"

class QFormLayout;
class QLabel;

namespace ws::ui {

class ConfigForm : public QWidget {
    Q_OBJECT
public:
    explicit ConfigForm(ConfigDocument* document, QWidget* parent = nullptr);

    // The editor widget of a field (QLineEdit, QComboBox, QCheckBox or, for
    // optimizer.learning_rate, a ScheduleEditor), or nullptr.
    QWidget* editorFor(const QString& path) const;
    // The inline error label of a field (hidden when the field has no problem), or nullptr.
    QLabel* errorLabelFor(const QString& path) const;
    // Commits the field that has the keyboard focus, as leaving it would (a typed value not yet
    // confirmed with Return or Tab); nothing when no field of the form has the focus.
    void commitFocusedField();
    // The note above the fields while the YAML has errors ("formReadOnlyNote").
    QLabel* readOnlyNote() const { return m_readOnlyNote; }

    // Whether a field's row applies to a config (rows without one always show).
    using RowCondition = bool (*)(const config::Config&);

protected:
    void resizeEvent(QResizeEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    struct Row {
        QString type;
        QWidget* editor = nullptr;
        QLabel* error = nullptr;
        QFormLayout* form = nullptr;  // holds the error's row
    };
    void build();
    void refresh();
    void wrapErrors();
    void commit(const QString& path);
    void guardWheel();

    ConfigDocument* m_document;
    std::map<QString, Row> m_rows;
    // The sweep: section's fields and headings, shown while the config has one.
    // Rows shown only while their condition holds for the document's config (conditionFor).
    std::vector<std::pair<QWidget*, RowCondition>> m_conditionalRows;
    QLabel* m_sweepNote = nullptr;
    std::vector<QWidget*> m_groups;  // the sections' group boxes, disabled while read-only
    QLabel* m_readOnlyNote = nullptr;
    bool m_refreshing = false;
};

}  // namespace ws::ui
