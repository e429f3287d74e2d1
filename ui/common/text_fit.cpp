// SPDX-License-Identifier: GPL-3.0-or-later
// Text fitting: see text_fit.h.
#include "ui/common/text_fit.h"

#include <algorithm>

namespace ws::ui {

QStringList wrapLines(const QStringList& lines, const QFontMetrics& fm, int width,
                      LongWord longWord) {
    width = std::max(1, width);
    QStringList out;
    for (const QString& line : lines) {
        if (fm.horizontalAdvance(line) <= width) {
            out << line;
            continue;
        }
        QString current;
        for (QString word : line.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
            const QString joined = current.isEmpty() ? word : current + QLatin1Char(' ') + word;
            if (fm.horizontalAdvance(joined) <= width) {
                current = joined;
                continue;
            }
            if (!current.isEmpty()) out << current;
            if (longWord == LongWord::Elide) {
                current = fm.horizontalAdvance(word) <= width
                              ? word
                              : fm.elidedText(word, Qt::ElideRight, width);
                continue;
            }
            while (word.size() > 1 && fm.horizontalAdvance(word) > width) {
                qsizetype n = word.size() - 1;
                while (n > 1 && fm.horizontalAdvance(word.left(n)) > width) --n;
                out << word.left(n);
                word = word.mid(n);
            }
            current = word;
        }
        if (!current.isEmpty()) out << current;
    }
    return out;
}

QString wrapText(const QString& text, const QFontMetrics& fm, int width) {
    return wrapLines(text.split(QLatin1Char('\n')), fm, width).join(QLatin1Char('\n'));
}

QStringList fitLines(const QStringList& lines, const QFontMetrics& fm, int width, int maxLines) {
    maxLines = std::max(1, maxLines);
    const QStringList wrapped = wrapLines(lines, fm, width);
    if (wrapped.size() <= maxLines) return wrapped;
    QStringList shown = lines.mid(0, maxLines);
    for (QString& l : shown) l = fm.elidedText(l, Qt::ElideRight, std::max(0, width));
    return shown;
}

}  // namespace ws::ui
