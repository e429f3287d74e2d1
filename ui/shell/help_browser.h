// Help for the studio, from the README that ships with it: a window that renders README.md
// (headings, tables, screenshots) with its sections listed on the left, opened at a chosen
// section from the Help menu; and the About box with the version and git revision. The README is
// read from appDataDir(), where the presets are, so the help matches the build. GUI thread only.
#pragma once

#include <QDialog>
#include <QString>

class QListWidget;
class QTextBrowser;
class QWidget;

namespace ws::ui {

class HelpBrowser : public QDialog {
    Q_OBJECT
public:
    explicit HelpBrowser(QWidget* parent = nullptr);
    // Scrolls to the first heading whose text starts with `heading`; false if there is none.
    bool showSection(const QString& heading);
    QString currentSection() const;
    bool loaded() const { return m_loaded; }

private:
    QListWidget* m_sections;
    QTextBrowser* m_text;
    bool m_loaded = false;
};

// The README's sections a user is sent to from the Help menu, in menu order.
QStringList helpMenuSections();

// "Wafer Studio <version> (<git revision>)".
QString studioVersionText();
void showAboutBox(QWidget* parent);

}  // namespace ws::ui
