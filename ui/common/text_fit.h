// SPDX-License-Identifier: GPL-3.0-or-later
// Fitting text to a width when a widget draws it itself (charts' titles, diagram labels): word
// wrap, and eliding only what still does not fit. Pure functions of the font's metrics.
#pragma once

#include <QFontMetrics>
#include <QString>
#include <QStringList>

namespace ws::ui {

// What wrapping does with a word wider than the width on its own.
enum class LongWord {
    Elide,  // cut with "…"
    Break,  // broken between characters onto as many lines as it needs (nothing hidden)
};
// Each of `lines` broken at spaces into lines at most `width` px wide.
QStringList wrapLines(const QStringList& lines, const QFontMetrics& fm, int width,
                      LongWord longWord = LongWord::Elide);
// `text` ('\n' between its lines) wrapped as wrapLines does, joined by '\n'.
QString wrapText(const QString& text, const QFontMetrics& fm, int width);
// At most `maxLines` lines no wider than `width`: `lines` wrapped when that fits, else the first
// `maxLines` of `lines` each elided to the width.
QStringList fitLines(const QStringList& lines, const QFontMetrics& fm, int width, int maxLines);

}  // namespace ws::ui
