// SPDX-License-Identifier: GPL-3.0-or-later
// HelpBrowser and the About box (see help_browser.h).
#include "ui/shell/help_browser.h"

#include <QAbstractTextDocumentLayout>
#include <QDesktopServices>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QListWidget>
#include <QMessageBox>
#include <QRegularExpression>
#include <QScrollBar>
#include <QSplitter>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextDocument>
#include <QUrl>

#include "engine/core/paths.h"
#include "wafer/version.h"

namespace ws::ui {

namespace {

QString readUtf8(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) return {};
    return QString::fromUtf8(file.readAll());
}

// The first Markdown heading of a chapter ("# The studio" -> "The studio").
QString firstHeading(const QString& markdown) {
    static const QRegularExpression heading(QStringLiteral("^#{1,6}\\s+(.+?)\\s*$"),
                                            QRegularExpression::MultilineOption);
    const QRegularExpressionMatch m = heading.match(markdown);
    return m.hasMatch() ? m.captured(1).remove(QLatin1Char('`')) : QString();
}

}  // namespace

QStringList guideChapters(const QString& docsDir) {
    const QDir dir(docsDir);
    const QString contents = readUtf8(dir.filePath(QStringLiteral("guide.md")));
    if (contents.isEmpty()) return {};
    QStringList chapters{QStringLiteral("guide.md")};
    // Markdown links to a file of this folder: ](name.md) or ](name.md#section).
    static const QRegularExpression link(
        QStringLiteral("\\]\\(([A-Za-z0-9_.-]+\\.md)(#[^)]*)?\\)"));
    for (auto it = link.globalMatch(contents); it.hasNext();) {
        const QString name = it.next().captured(1);
        if (!chapters.contains(name) && QFileInfo(dir.filePath(name)).isFile()) chapters << name;
    }
    return chapters;
}

QString headingAnchor(const QString& heading) {
    QString anchor;
    for (const QChar c : heading.trimmed().toLower()) {
        if (c.isLetterOrNumber() || c == QLatin1Char('-') || c == QLatin1Char('_'))
            anchor += c;
        else if (c == QLatin1Char(' '))
            anchor += QLatin1Char('-');
    }
    return anchor;
}

QStringList helpMenuSections() {
    return {QStringLiteral("Quick start"),  QStringLiteral("The studio"),
            QStringLiteral("Command line"), QStringLiteral("Checkpoints and resume"),
            QStringLiteral("Sweeps"),       QStringLiteral("Import, export and fine-tuning"),
            QStringLiteral("Presets"),      QStringLiteral("Config reference")};
}

QString studioVersionText() {
    return QStringLiteral("Wafer Studio %1 (%2)").arg(WAFER_VERSION, WAFER_GIT_REVISION);
}

QString aboutText() {
    return QObject::tr(
               "<h3>%1</h3><p>Train and fine-tune GPT-style language models on an emulated "
               "wafer-scale machine with weight streaming.</p><p>Free software under the GNU "
               "General Public License, version 3 or (at your option) any later version "
               "(GPL-3.0-or-later), with no warranty; the licence is in COPYING, and installed in "
               "/usr/share/doc/wafer-studio/copyright with the bundled files' own.</p><p>Qt %2. "
               "The guide (Help ▸ Wafer Studio Guide, F1) is in %3.</p>")
        .arg(studioVersionText().toHtmlEscaped(), QString::fromLatin1(qVersion()),
             QString::fromStdString((appDataDir() / "docs").string()).toHtmlEscaped());
}

void showAboutBox(QWidget* parent) {
    QMessageBox::about(parent, QObject::tr("About Wafer Studio"), aboutText());
}

HelpBrowser::HelpBrowser(QWidget* parent) : QDialog(parent) {
    setObjectName("helpBrowser");
    setWindowTitle(tr("Wafer Studio Guide"));
    m_sections = new QListWidget(this);
    m_text = new QTextBrowser(this);
    // Links are followed here: between chapters they scroll, outward they open a browser.
    m_text->setOpenLinks(false);
    auto* split = new QSplitter(this);
    split->addWidget(m_sections);
    split->addWidget(m_text);
    split->setStretchFactor(1, 1);
    split->setSizes({220, 780});
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(split);
    resize(1000, 720);

    m_docsDir = QString::fromStdString((appDataDir() / "docs").string());
    m_chapters = guideChapters(m_docsDir);
    if (m_chapters.isEmpty()) {
        m_text->setPlainText(tr("The guide (docs/guide.md) was not found in %1; it ships with "
                                "Wafer Studio beside the presets folder.")
                                 .arg(QFileInfo(m_docsDir).absolutePath()));
        return;
    }
    m_loaded = true;
    QString markdown;
    for (const QString& chapter : m_chapters) {
        const QString text = readUtf8(QDir(m_docsDir).filePath(chapter));
        m_chapterTitles.insert(chapter, firstHeading(text));
        markdown += text + QStringLiteral("\n\n");
    }
    // Screenshots are referenced relative to the chapters (../resources/screenshots/...).
    m_text->setSearchPaths({m_docsDir});
    m_text->setMarkdown(markdown);
    for (QTextBlock b = m_text->document()->begin(); b.isValid(); b = b.next()) {
        const int level = b.blockFormat().headingLevel();
        if (level >= 1 && level <= 3) {
            auto* item = new QListWidgetItem(QString(4 * (level - 1), QLatin1Char(' ')) + b.text());
            item->setData(Qt::UserRole, b.text());
            m_sections->addItem(item);
        }
    }
    connect(m_sections, &QListWidget::itemClicked, this,
            [this](QListWidgetItem* item) { showSection(item->data(Qt::UserRole).toString()); });
    connect(m_text, &QTextBrowser::anchorClicked, this,
            [this](const QUrl& url) { followLink(url); });
    // The text is laid out lazily, so a section far down may lie past the scroll range when it is
    // asked for; follow the range as it grows until the section is reached, unless the user
    // scrolls first.
    QScrollBar* bar = m_text->verticalScrollBar();
    connect(bar, &QScrollBar::rangeChanged, this, [this, bar](int, int max) {
        if (m_pendingTop < 0) return;
        bar->setValue(m_pendingTop);
        if (m_pendingTop <= max) m_pendingTop = -1;
    });
    connect(bar, &QScrollBar::actionTriggered, this, [this] { m_pendingTop = -1; });
}

bool HelpBrowser::followLink(const QUrl& link) {
    const QString scheme = link.scheme();
    if (scheme == QLatin1String("http") || scheme == QLatin1String("https") ||
        scheme == QLatin1String("mailto")) {
        return QDesktopServices::openUrl(link);
    }
    const QString file = QFileInfo(link.path()).fileName();  // empty: this chapter's own anchor
    if (!link.path().isEmpty() && !m_chapterTitles.contains(file)) {
        // Beside the guide but not a chapter of it (the CHANGELOG, HACKING.md): open it outside.
        const QString path = QDir(m_docsDir).absoluteFilePath(link.path());
        return QFileInfo::exists(path) && QDesktopServices::openUrl(QUrl::fromLocalFile(path));
    }
    if (link.hasFragment()) return showAnchor(m_chapterTitles.value(file), link.fragment());
    return showSection(m_chapterTitles.value(file));
}

bool HelpBrowser::showAnchor(const QString& chapterTitle, const QString& anchor) {
    // Anchors are per chapter, as on GitHub: look from the chapter's own first heading on.
    bool inChapter = chapterTitle.isEmpty();
    for (QTextBlock b = m_text->document()->begin(); b.isValid(); b = b.next()) {
        if (b.blockFormat().headingLevel() == 0) continue;
        if (!inChapter) inChapter = b.text() == chapterTitle;
        if (inChapter && headingAnchor(b.text()) == anchor) return showSection(b.text());
    }
    return false;
}

bool HelpBrowser::showSection(const QString& heading) {
    if (heading.isEmpty()) return false;
    for (QTextBlock b = m_text->document()->begin(); b.isValid(); b = b.next()) {
        if (b.blockFormat().headingLevel() == 0 || !b.text().startsWith(heading)) continue;
        const QRectF where = m_text->document()->documentLayout()->blockBoundingRect(b);
        m_pendingTop = int(where.top());
        m_text->verticalScrollBar()->setValue(m_pendingTop);
        if (m_text->verticalScrollBar()->value() == m_pendingTop) m_pendingTop = -1;
        for (int i = 0; i < m_sections->count(); ++i) {
            if (m_sections->item(i)->data(Qt::UserRole).toString() == b.text())
                m_sections->setCurrentRow(i);
        }
        return true;
    }
    return false;
}

QString HelpBrowser::currentSection() const {
    const QListWidgetItem* item = m_sections->currentItem();
    return item ? item->data(Qt::UserRole).toString() : QString();
}

}  // namespace ws::ui
