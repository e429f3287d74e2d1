// MainWindow's config files (see main_window.h): opening (dialog, drag and drop, recent files,
// presets as untitled copies), saving (never over a shipped preset) and asking before changes are
// lost. Kept apart from main_window.cpp so the shell stays a list of connections per concept.
#include "ui/shell/main_window.h"

#include <QAction>
#include <QDir>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QSettings>
#include <QStandardPaths>
#include <QTabWidget>

#include "engine/core/paths.h"
#include "engine/session/events.h"
#include "ui/config/config_document.h"
#include "ui/config/config_tab.h"
#include "ui/shell/log_dock.h"

namespace ws::ui {

namespace {

constexpr int kMaxRecentFiles = 8;

QString presetsDir() {
    return QString::fromStdString((ws::appDataDir() / "presets").string());
}

// Canonical when the path exists (symlinks and ".." resolved), else clean absolute.
QString canonicalOrAbsolute(const QString& path) {
    const QFileInfo info(path);
    const QString canonical = info.canonicalFilePath();
    return canonical.isEmpty() ? QDir::cleanPath(info.absoluteFilePath()) : canonical;
}

}  // namespace

bool MainWindow::isShippedPreset(const QString& path) {
    const QString dir = canonicalOrAbsolute(presetsDir());
    return canonicalOrAbsolute(path).startsWith(dir + QLatin1Char('/'));
}

bool MainWindow::openConfig(const QString& path) {
    const bool ok = isShippedPreset(path)
                        ? m_document->loadUntitledCopy(
                              path, tr("%1 (preset)").arg(QFileInfo(path).completeBaseName()))
                        : m_document->loadFile(path);
    addRecentFile(path);
    updateTitle();
    return ok;
}

QMessageBox::StandardButton MainWindow::ask(const QString& title, const QString& text,
                                            QMessageBox::StandardButtons buttons,
                                            QMessageBox::StandardButton defaultButton) {
    if (m_ask) return m_ask(title, text, buttons, defaultButton);
    QMessageBox box(QMessageBox::Question, title, text, buttons, this);
    box.setDefaultButton(defaultButton);
    return QMessageBox::StandardButton(box.exec());
}

bool MainWindow::maybeSave() {
    // A value typed into a form field but not confirmed yet is an unsaved change too: it would
    // otherwise be committed once a file dialog takes the focus, and lost without asking.
    m_configTab->applyPendingEdits();
    if (!m_document->isModified()) return true;
    const auto answer =
        ask(tr("Unsaved changes"),
            tr("“%1” has unsaved changes. Save them first?").arg(m_document->displayName()),
            QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
    if (answer == QMessageBox::Save) return save();
    return answer == QMessageBox::Discard;
}

bool MainWindow::save() {
    m_configTab->applyPendingYaml();
    // An untitled document (a preset's copy, a fine-tune's config) has no file of its own yet.
    if (m_document->isUntitled() || isShippedPreset(m_document->filePath())) return saveAs();
    return m_document->saveFile(m_document->filePath());
}

QString MainWindow::suggestedSavePath() const {
    if (!m_document->isUntitled() && !isShippedPreset(m_document->filePath()))
        return m_document->filePath();
    // The last folder saved into, else the user's documents: never the shipped presets.
    QString dir = QSettings().value(QStringLiteral("lastSaveDir")).toString();
    if (dir.isEmpty() || !QFileInfo(dir).isDir() || isShippedPreset(dir + "/x.yaml"))
        dir = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
    if (dir.isEmpty()) dir = QDir::homePath();
    return QDir(dir).filePath(m_document->suggestedFileName());
}

bool MainWindow::saveAs() {
    m_configTab->applyPendingYaml();
    const QString suggested = suggestedSavePath();
    const QString path = m_chooseSaveFile
                             ? m_chooseSaveFile(suggested)
                             : QFileDialog::getSaveFileName(this, tr("Save config as"), suggested,
                                                            tr("YAML config (*.yaml *.yml)"));
    if (path.isEmpty()) return false;
    if (isShippedPreset(path)) {
        // The presets ship with the app: overwriting one changes every later "New from Preset".
        const auto answer = ask(tr("Shipped preset"),
                                tr("%1 is in the shipped presets folder (%2). Writing there "
                                   "changes the preset for every later launch and New from "
                                   "Preset. Save there anyway?")
                                    .arg(QFileInfo(path).fileName(), presetsDir()),
                                QMessageBox::Save | QMessageBox::Cancel, QMessageBox::Cancel);
        if (answer != QMessageBox::Save) {
            m_logDock->append(
                int(session::LogLine::Level::Info),
                tr("not saved: %1 is a shipped preset; choose another folder").arg(path));
            return false;
        }
    }
    const bool ok = m_document->saveFile(path);
    if (ok) {
        QSettings().setValue(QStringLiteral("lastSaveDir"), QFileInfo(path).absolutePath());
        addRecentFile(path);
        updateTitle();
    }
    return ok;
}

void MainWindow::openDialog() {
    if (!maybeSave()) return;
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Open config"), QFileInfo(m_document->filePath()).absolutePath(),
        tr("YAML config (*.yaml *.yml);;All files (*)"));
    if (!path.isEmpty()) openConfig(path);
}

void MainWindow::newFromPreset(const QString& path) {
    if (!maybeSave()) return;
    openConfig(path);
}

void MainWindow::addRecentFile(const QString& path) {
    QSettings settings;
    QStringList files = settings.value(QStringLiteral("recentFiles")).toStringList();
    const QString absolute = QFileInfo(path).absoluteFilePath();
    files.removeAll(absolute);
    files.prepend(absolute);
    while (files.size() > kMaxRecentFiles) files.removeLast();
    settings.setValue(QStringLiteral("recentFiles"), files);
    rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
    if (!m_recentMenu) return;
    m_recentMenu->clear();
    const QStringList files = QSettings().value(QStringLiteral("recentFiles")).toStringList();
    for (const QString& f : files) {
        m_recentMenu
            ->addAction(QFileInfo(f).fileName(), this,
                        [this, f] {
                            if (maybeSave()) openConfig(f);
                        })
            ->setToolTip(f);
    }
    m_recentMenu->setEnabled(!files.isEmpty());
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (event->mimeData()->hasUrls()) {
        for (const QUrl& url : event->mimeData()->urls()) {
            if (!url.isLocalFile()) return;
        }
        event->acceptProposedAction();
    }
}

void MainWindow::dropEvent(QDropEvent* event) {
    QStringList entries;
    for (const QUrl& url : event->mimeData()->urls()) {
        QString path = url.toLocalFile();
        path.replace('\\', QStringLiteral("\\\\")).replace('"', QStringLiteral("\\\""));
        entries << '"' + path + '"';
    }
    if (entries.isEmpty()) return;
    // Refused while the YAML has errors (the document's note says why, in the Log).
    if (m_document->setField(QStringLiteral("train_input.data_dir"),
                             '[' + entries.join(", ") + ']'))
        m_logDock->append(
            int(session::LogLine::Level::Info),
            tr("training data set to %1 (train_input.data_dir)").arg(entries.join(", ")));
    m_tabs->setCurrentWidget(m_configTab);
    event->acceptProposedAction();
}

}  // namespace ws::ui
