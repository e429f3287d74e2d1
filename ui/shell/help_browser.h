// SPDX-License-Identifier: GPL-3.0-or-later
// Help for the studio, from the user guide that ships with it: a window that renders the guide
// (docs/guide.md, then each chapter it links, in order: headings, tables, screenshots) with its
// chapters and sections listed on the left, opened at a chosen section from the Help menu; links
// between chapters scroll to their section, web links open in the browser. And the About box
// with the version and git revision. The guide is read from appDataDir()/docs, where the presets
// are, so the help matches the build. GUI thread only.
#pragma once

#include <QDialog>
#include <QHash>
#include <QString>
#include <QStringList>

class QListWidget;
class QTextBrowser;
class QUrl;
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
    // The chapters rendered, as file names in docs/ (guide.md first).
    QStringList chapters() const { return m_chapters; }
    // Follows a link of the guide as a click does: another chapter or one of its sections
    // (`cli.md#checkpoints-and-resume`, `#contents`) scrolls there; a web link opens outside.
    // False for a link into the guide that names nothing in it.
    bool followLink(const QUrl& link);

private:
    bool showAnchor(const QString& chapterTitle, const QString& anchor);

    QListWidget* m_sections;
    QTextBrowser* m_text;
    QString m_docsDir;
    QStringList m_chapters;
    QHash<QString, QString> m_chapterTitles;  // file name -> its first heading
    // Where showSection scrolled to while the document was still being laid out (the scroll
    // range grows as layout goes on); -1 when the view is there.
    int m_pendingTop = -1;
    bool m_loaded = false;
};

// The guide's chapter files in `docsDir`, in reading order: guide.md, then every other .md file
// of that folder that guide.md links, in the order of their first link. Empty if there is no
// guide.md.
QStringList guideChapters(const QString& docsDir);

// A heading's anchor as GitHub makes it (and the guide's links use): lower case, punctuation
// dropped, spaces as hyphens ("Import, export and fine-tuning" -> "import-export-and-fine-tuning").
QString headingAnchor(const QString& heading);

// The guide's sections a user is sent to from the Help menu, in menu order.
QStringList helpMenuSections();

// "Wafer Studio <version> (<git revision>)".
QString studioVersionText();
// The About box's text: what the studio is, its version, its licence (GPL-3.0-or-later, no
// warranty) and where the guide is.
QString aboutText();
void showAboutBox(QWidget* parent);

}  // namespace ws::ui
