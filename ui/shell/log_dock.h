// SPDX-License-Identifier: GPL-3.0-or-later
// LogDock: the Log panel; the session's log lines with a time stamp, warnings and errors in
// color, capped at 5000 lines so a long run never grows memory. GUI thread only.
#pragma once

#include <QDockWidget>

class QPlainTextEdit;

namespace ws::ui {

class LogDock : public QDockWidget {
    Q_OBJECT
public:
    explicit LogDock(QWidget* parent = nullptr);
    void append(int level, const QString& message);  // level: session::LogLine::Level as int
    QString text() const;

private:
    QPlainTextEdit* m_text;
};

}  // namespace ws::ui
