// SPDX-License-Identifier: GPL-3.0-or-later
// Shared by the Qt Test GUI tests: where screenshots go, and a main() that keeps the user's
// settings, run store and caches out of the test (XDG dirs in a temporary home) and runs
// offscreen unless a platform is set.
#pragma once

#include <QApplication>
#include <QDir>
#include <QLineEdit>
#include <QTemporaryDir>
#include <QTest>

namespace ws::testing {

// A file in $WAFER_TEST_ARTIFACTS (set by CTest; the temp dir otherwise), created on demand.
inline QString artifactPath(const QString& name) {
    QString dir = qEnvironmentVariable("WAFER_TEST_ARTIFACTS");
    if (dir.isEmpty()) dir = QDir::tempPath();
    QDir().mkpath(dir);
    return dir + '/' + name;
}

// Types `text` into a form's line edit as a user does (focus, select all, type, Return).
inline void commitLine(QLineEdit* line, const QString& text) {
    line->setFocus();
    line->selectAll();
    QTest::keyClicks(line, text);
    QTest::keyClick(line, Qt::Key_Return);
}

template <class Test>
int runIsolatedGuiTest(int argc, char** argv) {
    QTemporaryDir home;
    for (const char* var : {"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"})
        qputenv(var, (home.path() + '/' + var).toUtf8());
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QApplication::setOrganizationName("WaferStudioTest");
    Test test;
    return QTest::qExec(&test, argc, argv);
}

}  // namespace ws::testing
