// SPDX-License-Identifier: GPL-3.0-or-later
// YamlEditor and YamlHighlighter: see yaml_editor.h.
#include "ui/config/yaml_editor.h"

#include <QFontDatabase>
#include <QHelpEvent>
#include <QScrollBar>
#include <QTextBlock>
#include <QToolTip>

namespace ws::ui {
namespace {
bool darkPalette(const QPalette& palette) {
    return palette.color(QPalette::Base).lightness() < 128;
}
}  // namespace

YamlHighlighter::YamlHighlighter(QTextDocument* document) : QSyntaxHighlighter(document) {
    setPalette(QPalette());
}

void YamlHighlighter::setPalette(const QPalette& palette) {
    // Colors chosen to read on both light and dark bases.
    const bool dark = darkPalette(palette);
    m_dark = dark;
    m_key.setForeground(dark ? QColor(0x7c, 0xb7, 0xff) : QColor(0x1f, 0x5f, 0xbf));
    m_section.setForeground(m_key.foreground());
    m_section.setFontWeight(QFont::Bold);
    m_string.setForeground(dark ? QColor(0x9c, 0xd6, 0x8a) : QColor(0x2e, 0x7d, 0x32));
    m_number.setForeground(dark ? QColor(0xf0, 0xa8, 0x6a) : QColor(0xb3, 0x4d, 0x00));
    m_keyword.setForeground(dark ? QColor(0xd6, 0x9c, 0xe6) : QColor(0x8e, 0x24, 0xaa));
    m_comment.setForeground(dark ? QColor(0x8a, 0x8f, 0x98) : QColor(0x75, 0x75, 0x75));
    m_comment.setFontItalic(true);
    rehighlight();
}

void YamlHighlighter::highlightBlock(const QString& text) {
    static const QRegularExpression key(QStringLiteral(R"(^(\s*(?:-\s+)?)([A-Za-z_][\w.]*)\s*:)"));
    static const QRegularExpression str(QStringLiteral(R"("(?:[^"\\]|\\.)*"|'[^']*')"));
    static const QRegularExpression num(
        QStringLiteral(R"((?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w.]))"));
    static const QRegularExpression keyword(QStringLiteral(R"(\b(?:true|false|null)\b)"));

    // A '#' outside quotes starts a comment.
    qsizetype commentAt = -1;
    QChar quote;
    for (qsizetype i = 0; i < text.size(); ++i) {
        const QChar c = text[i];
        if (!quote.isNull()) {
            if (c == quote) quote = QChar();
        } else if (c == '"' || c == '\'') {
            quote = c;
        } else if (c == '#' && (i == 0 || text[i - 1].isSpace())) {
            commentAt = i;
            break;
        }
    }
    const QString code = commentAt >= 0 ? text.left(commentAt) : text;
    for (auto it = num.globalMatch(code); it.hasNext();) {
        const auto m = it.next();
        setFormat(int(m.capturedStart()), int(m.capturedLength()), m_number);
    }
    for (auto it = keyword.globalMatch(code); it.hasNext();) {
        const auto m = it.next();
        setFormat(int(m.capturedStart()), int(m.capturedLength()), m_keyword);
    }
    for (auto it = str.globalMatch(code); it.hasNext();) {
        const auto m = it.next();
        setFormat(int(m.capturedStart()), int(m.capturedLength()), m_string);
    }
    if (const auto m = key.match(code); m.hasMatch()) {
        setFormat(int(m.capturedStart(2)), int(m.capturedLength(2)),
                  m.capturedLength(1) == 0 ? m_section : m_key);
    }
    if (commentAt >= 0) setFormat(int(commentAt), int(text.size() - commentAt), m_comment);
}

YamlEditor::YamlEditor(QWidget* parent) : QPlainTextEdit(parent) {
    setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    setLineWrapMode(QPlainTextEdit::NoWrap);
    setTabChangesFocus(false);
    setTabStopDistance(fontMetrics().horizontalAdvance(QLatin1Char(' ')) * 4);
    m_highlighter = new YamlHighlighter(document());
    m_highlighter->setPalette(palette());
}

void YamlEditor::changeEvent(QEvent* e) {
    QPlainTextEdit::changeEvent(e);
    if (e->type() == QEvent::PaletteChange) {
        m_highlighter->setPalette(palette());
        showProblems(m_problems);  // their tint follows too
    }
}

void YamlEditor::replaceText(const QString& text) {
    if (text == toPlainText()) return;
    const int scroll = verticalScrollBar()->value();
    const int position = textCursor().position();
    QTextCursor cursor(document());
    cursor.beginEditBlock();
    cursor.select(QTextCursor::Document);
    cursor.insertText(text);
    cursor.endEditBlock();
    QTextCursor restored(document());
    restored.setPosition(std::min(position, document()->characterCount() - 1));
    setTextCursor(restored);
    verticalScrollBar()->setValue(scroll);
}

void YamlEditor::showProblems(const std::vector<ConfigProblem>& problems) {
    m_problems = problems;
    QList<QTextEdit::ExtraSelection> selections;
    const bool dark = darkPalette(palette());
    for (const auto& problem : problems) {
        if (problem.line <= 0) continue;
        const QTextBlock block = document()->findBlockByNumber(problem.line - 1);
        if (!block.isValid()) continue;
        QTextEdit::ExtraSelection line;
        line.cursor = QTextCursor(block);
        line.format.setBackground(dark ? QColor(0x5a, 0x1e, 0x1e) : QColor(0xfd, 0xe7, 0xe7));
        line.format.setProperty(QTextFormat::FullWidthSelection, true);
        selections << line;
        QTextEdit::ExtraSelection underline;
        underline.cursor = QTextCursor(block);
        underline.cursor.movePosition(QTextCursor::EndOfBlock, QTextCursor::KeepAnchor);
        underline.format.setUnderlineStyle(QTextCharFormat::WaveUnderline);
        underline.format.setUnderlineColor(QColor(0xe5, 0x39, 0x35));
        selections << underline;
    }
    setExtraSelections(selections);
}

void YamlEditor::goToLine(int line) {
    const QTextBlock block = document()->findBlockByNumber(line - 1);
    if (!block.isValid()) return;
    setTextCursor(QTextCursor(block));
    centerCursor();
    setFocus();
}

bool YamlEditor::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(e);
        const QTextCursor cursor = cursorForPosition(viewport()->mapFrom(this, help->pos()));
        const int line = cursor.blockNumber() + 1;
        QStringList messages;
        for (const auto& p : m_problems) {
            if (p.line == line) messages << p.message;
        }
        if (messages.isEmpty()) {
            QToolTip::hideText();
        } else {
            QToolTip::showText(help->globalPos(), messages.join('\n'), this);
        }
        return true;
    }
    return QPlainTextEdit::event(e);
}

}  // namespace ws::ui
