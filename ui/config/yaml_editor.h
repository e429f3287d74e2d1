// SPDX-License-Identifier: GPL-3.0-or-later
// YamlEditor: the Config tab's YAML text view. Syntax highlighting (keys, strings, numbers,
// comments), problem lines marked with a tinted background and a wavy underline whose tooltip
// is the message, and programmatic replacement that stays on the undo stack so undo/redo covers
// edits made in the form too. GUI thread only.
#pragma once

#include <QPlainTextEdit>
#include <QRegularExpression>
#include <QSyntaxHighlighter>

#include "ui/config/config_document.h"

namespace ws::ui {

class YamlHighlighter : public QSyntaxHighlighter {
    Q_OBJECT
public:
    explicit YamlHighlighter(QTextDocument* document);
    // Picks colours that read on `palette`'s base (light or dark) and re-highlights.
    void setPalette(const QPalette& palette);
    bool darkColours() const { return m_dark; }

protected:
    void highlightBlock(const QString& text) override;

private:
    QTextCharFormat m_key, m_string, m_number, m_comment, m_section, m_keyword;
    bool m_dark = false;
};

class YamlEditor : public QPlainTextEdit {
    Q_OBJECT
public:
    explicit YamlEditor(QWidget* parent = nullptr);
    // Replaces the whole text as one undoable edit (no-op when equal), keeping the scroll place.
    void replaceText(const QString& text);
    void showProblems(const std::vector<ConfigProblem>& problems);
    void goToLine(int line);

    YamlHighlighter* highlighter() const { return m_highlighter; }

protected:
    bool event(QEvent* e) override;        // tooltips over marked lines
    void changeEvent(QEvent* e) override;  // follows a light/dark palette switch live

private:
    std::vector<ConfigProblem> m_problems;
    YamlHighlighter* m_highlighter;
};

}  // namespace ws::ui
