// ConfigTab: the Config tab. The generated form (left) and the YAML view (right) edit one
// ConfigDocument and stay in sync (YAML edits apply 300 ms after typing stops); derived facts
// (parameters, FLOPs/token, memory) update live above them; every problem is listed below with
// a click taking you to its YAML line. GUI thread only.
#pragma once

#include <QWidget>

#include "ui/config/config_document.h"

class QLabel;
class QListWidget;
class QScrollArea;
class QTimer;

namespace ws::ui {

class ConfigForm;
class YamlEditor;

class ConfigTab : public QWidget {
    Q_OBJECT
public:
    explicit ConfigTab(ConfigDocument* document, QWidget* parent = nullptr);

    ConfigForm* form() const { return m_form; }
    YamlEditor* yamlEditor() const { return m_yaml; }
    QLabel* factsLabel() const { return m_facts; }
    // Applies pending YAML typing now (normally 300 ms after the last keystroke).
    void applyPendingYaml();
    // Applies what the user typed and has not confirmed yet: the YAML view's pending typing and
    // the form field being edited (before "Save them first?" is asked).
    void applyPendingEdits();
    // Brings `path` into view: its form field scrolled to and focused, else (a key the form does
    // not edit, or a read-only form) its line in the YAML view. False when neither has it.
    bool showField(const QString& path);

private:
    void onDocumentChanged();

    ConfigDocument* m_document;
    ConfigForm* m_form;
    YamlEditor* m_yaml;
    QLabel* m_facts;
    QListWidget* m_problems;
    QScrollArea* m_formScroll;
    QTimer* m_yamlDebounce;
    bool m_updatingYaml = false;
};

}  // namespace ws::ui
