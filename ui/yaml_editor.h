// YamlEditor: the Config tab's YAML text view. Syntax highlighting (keys, strings, numbers,
// comments), problem lines marked with a tinted background and a wavy underline whose tooltip
// is the message, and programmatic replacement that stays on the undo stack so undo/redo covers
// edits made in the form too. GUI thread only.
#pragma once

#include <QPlainTextEdit>
#include <QRegularExpression>
#include <QSyntaxHighlighter>

#include "ui/config_document.h"

namespace ws::ui {

class YamlHighlighter : public QSyntaxHighlighter {
    Q_OBJECT
public:
    explicit YamlHighlighter(QTextDocument* document);

protected:
    void highlightBlock(const QString& text) override;

private:
    QTextCharFormat m_key, m_string, m_number, m_comment, m_section, m_keyword;
};

class YamlEditor : public QPlainTextEdit {
    Q_OBJECT
public:
    explicit YamlEditor(QWidget* parent = nullptr);
    // Replaces the whole text as one undoable edit (no-op when equal), keeping the scroll place.
    void replaceText(const QString& text);
    void showProblems(const std::vector<ConfigProblem>& problems);
    void goToLine(int line);

protected:
    bool event(QEvent* e) override;  // tooltips over marked lines

private:
    std::vector<ConfigProblem> m_problems;
};

}  // namespace ws::ui
