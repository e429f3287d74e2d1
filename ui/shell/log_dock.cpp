// SPDX-License-Identifier: GPL-3.0-or-later
// LogDock: see log_dock.h.
#include "ui/shell/log_dock.h"

#include <QFontDatabase>
#include <QPlainTextEdit>
#include <QTime>

#include "engine/session/events.h"

namespace ws::ui {
namespace {
// A log starts slim (QPlainTextEdit asks for ~190 px); the user can drag it taller.
class LogView : public QPlainTextEdit {
public:
    using QPlainTextEdit::QPlainTextEdit;
    QSize sizeHint() const override { return {600, 120}; }
};
}  // namespace

LogDock::LogDock(QWidget* parent) : QDockWidget(tr("Log"), parent) {
    setObjectName(QStringLiteral("LogDock"));
    m_text = new LogView(this);
    m_text->setObjectName(QStringLiteral("logText"));
    m_text->setReadOnly(true);
    m_text->setMaximumBlockCount(5000);
    m_text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_text->setLineWrapMode(QPlainTextEdit::WidgetWidth);
    setWidget(m_text);
}

void LogDock::append(int level, const QString& message) {
    using Level = session::LogLine::Level;
    const QString time = QTime::currentTime().toString(QStringLiteral("HH:mm:ss"));
    QString color;
    QString tag;
    if (level == int(Level::Warning)) {
        color = QStringLiteral("#f57c00");
        tag = tr("warning: ");
    } else if (level == int(Level::Error)) {
        color = QStringLiteral("#e53935");
        tag = tr("error: ");
    }
    const QString body = (tag + message).toHtmlEscaped().replace('\n', QStringLiteral("<br>"));
    m_text->appendHtml(
        color.isEmpty()
            ? QStringLiteral("<span style='opacity:0.6'>%1</span>&nbsp; %2").arg(time, body)
            : QStringLiteral("%1&nbsp; <span style='color:%2'>%3</span>").arg(time, color, body));
}

QString LogDock::text() const {
    return m_text->toPlainText();
}

}  // namespace ws::ui
