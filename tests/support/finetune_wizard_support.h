// SPDX-License-Identifier: GPL-3.0-or-later
// What the fine-tune wizard's GUI tests share: a few KB of new text unlike the base's corpus, a
// file writer, and a screenshot of a wizard page into the test artifacts.
// Thread-safety: GUI thread only (Qt Test).
#pragma once

#include <QByteArray>
#include <QCoreApplication>
#include <QFile>
#include <QString>
#include <QTest>

#include "support/gui_test.h"
#include "ui/samples/finetune_wizard.h"

namespace ws::testing {

inline bool writeFile(const QString& path, const QByteArray& text) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) return false;
    return f.write(text) == text.size();
}

// A few KB of new text unlike the base's corpus (the King James Bible).
inline QByteArray lighthouseText() {
    QByteArray text;
    for (int i = 0; i < 60; ++i) {
        text += "The lighthouse keeper wrote in the log: wind from the west, ";
        text += QByteArray::number(i % 7 + 2) + " ships passed, the lamp burned all night.\n";
    }
    return text;
}

inline void saveWizard(ws::ui::FinetuneWizard* wizard, const QString& name) {
    QCoreApplication::processEvents();
    QVERIFY(wizard->grab().save(artifactPath(name), "PNG"));
}

}  // namespace ws::testing
