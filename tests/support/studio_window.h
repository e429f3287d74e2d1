// SPDX-License-Identifier: GPL-3.0-or-later
// StudioWindow: the GUI tests' main window, set up one way: a MainWindow on a fresh run store
// (runs.sqlite in its own temporary folder, or a given store), shown at a fixed size and exposed;
// its widgets and actions found by object name (the names main_window.h lists); and a run of the
// document's config trained to its end. A Qt Test class keeps one as a member: open() in init(),
// close() in cleanup(). runIsolatedGuiTest (gui_test.h) keeps the user's settings out. GUI thread
// only.
#pragma once

#include <QAction>
#include <QSignalSpy>
#include <QSize>
#include <QTemporaryDir>
#include <QTest>
#include <memory>

#include "ui/common/run_controller.h"
#include "ui/shell/main_window.h"

namespace ws::testing {

class StudioWindow {
public:
    // A fresh temporary folder, for files the window should find when it opens (open() makes
    // one when none was made).
    [[nodiscard]] bool makeFolder() {
        m_dir = std::make_unique<QTemporaryDir>();
        return m_dir->isValid();
    }
    // Opens the window on `dbPath` (empty: runs.sqlite in the temporary folder) and waits until
    // it is exposed; false when the folder or the window cannot be made.
    [[nodiscard]] bool open(QSize size = {1400, 900}, const QString& dbPath = {}) {
        if (!m_dir && !makeFolder()) return false;
        m_window =
            std::make_unique<ui::MainWindow>(dbPath.isEmpty() ? filePath("runs.sqlite") : dbPath);
        m_window->resize(size);
        m_window->show();
        return QTest::qWaitForWindowExposed(m_window.get());
    }
    // The window goes first (it stops and joins its run), then the folder.
    void close() {
        m_window.reset();
        m_dir.reset();
    }

    ui::MainWindow* get() const { return m_window.get(); }
    ui::MainWindow* operator->() const { return m_window.get(); }
    // A path in the test's temporary folder.
    QString filePath(const QString& name) const { return m_dir->filePath(name); }
    QString dirPath() const { return m_dir->path(); }

    // The window's descendant of type T named `name`. A missing one is a broken test, not a
    // failed check: it stops the test program with the name.
    template <class T>
    T* find(const QString& name) const {
        T* child = m_window->findChild<T*>(name);
        if (!child)
            qFatal("StudioWindow: no %s named \"%s\"", T::staticMetaObject.className(),
                   qPrintable(name));
        return child;
    }
    QAction* action(const QString& name) const { return find<QAction>(name); }

    // Presses Run and waits (at most `timeoutMs`) until the run has ended and its worker has been
    // joined; false when it does not start or does not end in time.
    [[nodiscard]] bool runToEnd(int timeoutMs) {
        QSignalSpy finished(m_window->controller(), &ui::RunController::finished);
        action("runAction")->trigger();
        if (!m_window->controller()->isActive()) return false;
        return !finished.isEmpty() || finished.wait(timeoutMs);
    }

    // Presses Stop and waits (at most `timeoutMs`) until the run has ended and its worker has
    // been joined; false when nothing was running or it does not end in time.
    [[nodiscard]] bool stopRun(int timeoutMs) {
        if (!m_window->controller()->isActive()) return false;
        QSignalSpy finished(m_window->controller(), &ui::RunController::finished);
        action("stopAction")->trigger();
        return !finished.isEmpty() || finished.wait(timeoutMs);
    }

private:
    std::unique_ptr<QTemporaryDir> m_dir;
    std::unique_ptr<ui::MainWindow> m_window;
};

}  // namespace ws::testing
