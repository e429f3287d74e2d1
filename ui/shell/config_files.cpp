// SPDX-License-Identifier: GPL-3.0-or-later
// ConfigFiles: see config_files.h.
#include "ui/shell/config_files.h"

#include <QAction>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QSettings>
#include <QStandardPaths>

#include "engine/core/paths.h"
#include "engine/session/events.h"
#include "ui/config/config_document.h"
#include "ui/config/config_tab.h"

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

ConfigFiles::ConfigFiles(ConfigDocument* document, ConfigTab* configTab, QWidget* window)
    : QObject(window), m_document(document), m_configTab(configTab), m_window(window) {}

bool ConfigFiles::isShippedPreset(const QString& path) {
    const QString dir = canonicalOrAbsolute(presetsDir());
    return canonicalOrAbsolute(path).startsWith(dir + QLatin1Char('/'));
}

bool ConfigFiles::openConfig(const QString& path) {
    const bool ok = isShippedPreset(path)
                        ? m_document->loadUntitledCopy(
                              path, tr("%1 (preset)").arg(QFileInfo(path).completeBaseName()))
                        : m_document->loadFile(path);
    addRecentFile(path);
    updateTitle();
    return ok;
}

QMessageBox::StandardButton ConfigFiles::ask(const QString& title, const QString& text,
                                             QMessageBox::StandardButtons buttons,
                                             QMessageBox::StandardButton defaultButton) {
    return askQuestion(m_window, m_ask, title, text, buttons, defaultButton);
}

bool ConfigFiles::maybeSave() {
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

bool ConfigFiles::save() {
    m_configTab->applyPendingYaml();
    // An untitled document (a preset's copy, a fine-tune's config) has no file of its own yet.
    if (m_document->isUntitled() || isShippedPreset(m_document->filePath())) return saveAs();
    return m_document->saveFile(m_document->filePath());
}

QString ConfigFiles::suggestedSavePath() const {
    if (!m_document->isUntitled() && !isShippedPreset(m_document->filePath()))
        return m_document->filePath();
    // The last folder saved into, else the user's documents: never the shipped presets.
    QString dir = QSettings().value(QStringLiteral("lastSaveDir")).toString();
    if (dir.isEmpty() || !QFileInfo(dir).isDir() || isShippedPreset(dir + "/x.yaml"))
        dir = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
    if (dir.isEmpty()) dir = QDir::homePath();
    return QDir(dir).filePath(m_document->suggestedFileName());
}

bool ConfigFiles::saveAs() {
    m_configTab->applyPendingYaml();
    const QString suggested = suggestedSavePath();
    const QString path =
        m_chooseSaveFile ? m_chooseSaveFile(suggested)
                         : QFileDialog::getSaveFileName(m_window, tr("Save config as"), suggested,
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
            emit logLine(int(session::LogLine::Level::Info),
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

void ConfigFiles::openDialog() {
    if (!maybeSave()) return;
    const QString path = QFileDialog::getOpenFileName(
        m_window, tr("Open config"), QFileInfo(m_document->filePath()).absolutePath(),
        tr("YAML config (*.yaml *.yml);;All files (*)"));
    if (!path.isEmpty()) openConfig(path);
}

void ConfigFiles::newFromPreset(const QString& path) {
    if (!maybeSave()) return;
    openConfig(path);
}

void ConfigFiles::addRecentFile(const QString& path) {
    QSettings settings;
    QStringList files = settings.value(QStringLiteral("recentFiles")).toStringList();
    const QString absolute = QFileInfo(path).absoluteFilePath();
    files.removeAll(absolute);
    files.prepend(absolute);
    while (files.size() > kMaxRecentFiles) files.removeLast();
    settings.setValue(QStringLiteral("recentFiles"), files);
    rebuildRecentMenu();
}

void ConfigFiles::rebuildRecentMenu() {
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

void ConfigFiles::useAsTrainingData(const QStringList& paths) {
    QStringList entries;
    for (QString path : paths) {
        path.replace('\\', QStringLiteral("\\\\")).replace('"', QStringLiteral("\\\""));
        entries << '"' + path + '"';
    }
    if (entries.isEmpty()) return;
    // Refused while the YAML has errors (the document's note says why, in the Log).
    if (m_document->setField(QStringLiteral("train_input.data_dir"),
                             '[' + entries.join(", ") + ']'))
        emit logLine(int(session::LogLine::Level::Info),
                     tr("training data set to %1 (train_input.data_dir)").arg(entries.join(", ")));
    emit showConfigTabRequested();
}

void ConfigFiles::setRecentMenu(QMenu* menu) {
    m_recentMenu = menu;
    rebuildRecentMenu();
}

void ConfigFiles::updateTitle() {
    m_window->setWindowFilePath(m_document->filePath());
    m_window->setWindowModified(m_document->isModified());
    m_window->setWindowTitle(QStringLiteral("%1[*] — Wafer Studio").arg(m_document->displayName()));
}

}  // namespace ws::ui
