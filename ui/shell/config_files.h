// SPDX-License-Identifier: GPL-3.0-or-later
// ConfigFiles: the studio's config files. Opening (the Open dialog, dropped files, Open Recent,
// New from Preset: a shipped preset opens as an untitled copy, so that saving never writes over
// it), saving (Save, Save As: never over a shipped preset without asking) and asking before
// unsaved changes are lost. It keeps the recent files (QSettings "recentFiles") and their menu,
// and the window's title follows the document. GUI thread only.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <functional>

#include "ui/common/asker.h"

class QMenu;
class QWidget;

namespace ws::ui {

class ConfigDocument;
class ConfigTab;

class ConfigFiles : public QObject {
    Q_OBJECT
public:
    // `window`: the dialogs' parent, whose title (file path, modified mark) follows the document.
    ConfigFiles(ConfigDocument* document, ConfigTab* configTab, QWidget* window);

    // True for files inside the shipped presets folder.
    static bool isShippedPreset(const QString& path);
    // Opens a config file (a shipped preset as an untitled copy) and lists it in Open Recent.
    bool openConfig(const QString& path);
    // Unsaved edits of the open config: asks "Save them first?" (Save / Discard / Cancel). True
    // when the document may be replaced.
    bool maybeSave();
    bool save();    // to its file; Save As when untitled or a shipped preset
    bool saveAs();  // asks for a file (never silently a shipped preset)
    void openDialog();
    void newFromPreset(const QString& path);
    // Dropped files: they become the training data (train_input.data_dir).
    void useAsTrainingData(const QStringList& paths);
    // The Open Recent menu this fills (the File menu's).
    void setRecentMenu(QMenu* menu);
    void updateTitle();

    // Replace the modal questions and the save-file dialog (tests).
    void setAsker(Asker ask) { m_ask = std::move(ask); }
    const Asker& asker() const { return m_ask; }
    void setSaveFileChooser(std::function<QString(const QString&)> choose) {
        m_chooseSaveFile = std::move(choose);
    }
    QMessageBox::StandardButton ask(const QString& title, const QString& text,
                                    QMessageBox::StandardButtons buttons,
                                    QMessageBox::StandardButton defaultButton);

signals:
    void logLine(int level, const QString& line);  // a session::LogLine::Level and the text
    void showConfigTabRequested();

private:
    QString suggestedSavePath() const;
    void addRecentFile(const QString& path);
    void rebuildRecentMenu();

    ConfigDocument* m_document;
    ConfigTab* m_configTab;
    QWidget* m_window;
    QMenu* m_recentMenu = nullptr;
    Asker m_ask;
    std::function<QString(const QString&)> m_chooseSaveFile;
};

}  // namespace ws::ui
