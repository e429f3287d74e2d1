// SPDX-License-Identifier: GPL-3.0-or-later
// ConfigTab: the Config tab. The generated form (left) and the YAML view (right) edit one
// ConfigDocument and stay in sync (YAML edits apply 300 ms after typing stops); derived facts
// (parameters, FLOPs/token, memory) and how a step fits the wafer (micro-batches) update live
// above them; every problem is listed below with a click taking you to its YAML line. GUI
// thread only.
#pragma once

#include <QWidget>

#include "engine/model/model_facts.h"
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
    ~ConfigTab() override;

    ConfigForm* form() const { return m_form; }
    YamlEditor* yamlEditor() const { return m_yaml; }
    QLabel* factsLabel() const { return m_facts; }
    // "On the wafer: 2 micro-batches of 4 sequences per step and system · SRAM ...": the
    // engine's fit of the config (wafer/run_fit.h), or that it does not fit ("configFit").
    QLabel* fitLabel() const { return m_fit; }
    // Applies pending YAML typing now (normally 300 ms after the last keystroke).
    void applyPendingYaml();
    // Applies what the user typed and has not confirmed yet: the YAML view's pending typing and
    // the form field being edited (before "Save them first?" is asked).
    void applyPendingEdits();
    // Brings `path` into view: its form field scrolled to and focused, else (a key the form does
    // not edit, or a read-only form) its line in the YAML view. False when neither has it.
    bool showField(const QString& path);

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void onDocumentChanged();
    void sizeProblems();  // the problem list fits its wrapped messages
    QString fitText(const config::Config& config, const model::ModelFacts& facts) const;

    ConfigDocument* m_document;
    // The document's changes, cut in ~ConfigTab (its owner may have deleted it by then: the
    // main window deletes its children in order, the document first).
    QMetaObject::Connection m_documentChanged;
    ConfigForm* m_form;
    YamlEditor* m_yaml;
    QLabel* m_facts;
    QLabel* m_fit;
    QListWidget* m_problems;
    QScrollArea* m_formScroll;
    QTimer* m_yamlDebounce;
    bool m_updatingYaml = false;
};

}  // namespace ws::ui
