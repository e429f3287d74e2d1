// SPDX-License-Identifier: GPL-3.0-or-later
// Asker: a modal question (title, text, buttons, default button -> the button pressed), so that
// a feature asking the user something can be driven by a test instead of a QMessageBox.
// askQuestion() asks through `ask` when set, else with a QMessageBox over `parent`. GUI thread.
#pragma once

#include <QMessageBox>
#include <QString>
#include <functional>

namespace ws::ui {

using Asker = std::function<QMessageBox::StandardButton(
    const QString&, const QString&, QMessageBox::StandardButtons, QMessageBox::StandardButton)>;

inline QMessageBox::StandardButton askQuestion(QWidget* parent, const Asker& ask,
                                               const QString& title, const QString& text,
                                               QMessageBox::StandardButtons buttons,
                                               QMessageBox::StandardButton defaultButton) {
    if (ask) return ask(title, text, buttons, defaultButton);
    QMessageBox box(QMessageBox::Question, title, text, buttons, parent);
    box.setDefaultButton(defaultButton);
    return QMessageBox::StandardButton(box.exec());
}

}  // namespace ws::ui
