// SPDX-License-Identifier: GPL-3.0-or-later
// The Help menu: the guide renders the shipped user guide (docs/guide.md and every chapter it
// links) with its chapters and sections, opens at a section the menu names, follows links between
// chapters, finds its screenshots, and the About text carries the version and git revision.
#include <QAction>
#include <QDir>
#include <QImage>
#include <QListWidget>
#include <QMenuBar>
#include <QScrollBar>
#include <QTextBlock>
#include <QTextBrowser>
#include <QUrl>

#include "engine/core/paths.h"
#include "support/gui_test.h"
#include "support/studio_window.h"
#include "ui/shell/help_browser.h"
#include "ui/shell/main_window.h"
#include "wafer/version.h"

class HelpBrowserTest : public QObject {
    Q_OBJECT
private slots:
    void everyMenuSectionExistsInTheGuide();
    void everyChapterOfTheGuideIsRendered();
    void linksBetweenChaptersScrollToTheirSection();
    void screenshotsAreFoundBesideTheGuide();
    void anchorsAreGitHubs();
    void helpMenuOpensTheGuideAtASection();
    void versionTextNamesVersionAndRevision();
};

namespace {

QString docsDir() {
    return QString::fromStdString((ws::appDataDir() / "docs").string());
}

int listed(const QListWidget* sections, const QString& heading) {
    for (int i = 0; i < sections->count(); ++i)
        if (sections->item(i)->data(Qt::UserRole).toString() == heading) return i;
    return -1;
}

}  // namespace

void HelpBrowserTest::everyMenuSectionExistsInTheGuide() {
    ws::ui::HelpBrowser browser;
    QVERIFY(browser.loaded());
    for (const QString& section : ws::ui::helpMenuSections())
        QVERIFY2(browser.showSection(section), qPrintable(section));
    QVERIFY(!browser.showSection("No such heading anywhere"));
}

void HelpBrowserTest::everyChapterOfTheGuideIsRendered() {
    ws::ui::HelpBrowser browser;
    QVERIFY(browser.loaded());
    // Every file of docs/ is a chapter (none left unlinked by the contents page), guide.md first.
    QStringList files = QDir(docsDir()).entryList({"*.md"}, QDir::Files);
    QVERIFY(files.size() >= 10);
    QStringList chapters = browser.chapters();
    QCOMPARE(chapters.first(), QString("guide.md"));
    QCOMPARE(chapters, ws::ui::guideChapters(docsDir()));
    files.sort();
    chapters.sort();
    QCOMPARE(chapters, files);
    // Each chapter's title is a top-level entry of the section list, in the contents' order.
    const auto* sections = browser.findChild<QListWidget*>();
    int previous = -1;
    for (const char* title :
         {"Wafer Studio guide", "Installing", "What works today", "The studio", "Command line",
          "Across processes and machines (Open MPI)", "Sweeps", "Import, export and fine-tuning",
          "Lessons", "Presets", "Config reference"}) {
        const int row = listed(sections, QString::fromUtf8(title));
        QVERIFY2(row > previous, title);
        QVERIFY2(!sections->item(row)->text().startsWith(' '), title);
        previous = row;
    }
    // Sections sit under their chapter, indented.
    const int row = listed(sections, "Checkpoints and resume");
    QVERIFY(row > listed(sections, "Command line"));
    QVERIFY(sections->item(row)->text().startsWith("    Checkpoints"));
}

void HelpBrowserTest::linksBetweenChaptersScrollToTheirSection() {
    ws::ui::HelpBrowser browser;
    browser.resize(1000, 720);
    browser.show();
    QVERIFY(QTest::qWaitForWindowExposed(&browser));
    auto* text = browser.findChild<QTextBrowser*>();
    QVERIFY(browser.followLink(QUrl("cli.md#checkpoints-and-resume")));
    QCOMPARE(browser.currentSection(), QString("Checkpoints and resume"));
    const int checkpoints = text->verticalScrollBar()->value();
    QVERIFY(checkpoints > 0);
    QVERIFY(browser.followLink(QUrl("fine-tuning.md")));
    QCOMPARE(browser.currentSection(), QString("Import, export and fine-tuning"));
    QVERIFY(text->verticalScrollBar()->value() > checkpoints);
    QVERIFY(browser.followLink(QUrl("sweeps.md#the-μtransfer-preset")));
    QCOMPARE(browser.currentSection(), QString("The μTransfer preset"));
    QVERIFY(browser.followLink(QUrl("#contents")));
    QCOMPARE(browser.currentSection(), QString("Contents"));
    QVERIFY(!browser.followLink(QUrl("studio.md#no-such-section")));
}

void HelpBrowserTest::screenshotsAreFoundBesideTheGuide() {
    ws::ui::HelpBrowser browser;
    auto* text = browser.findChild<QTextBrowser*>();
    const QVariant image = text->loadResource(QTextDocument::ImageResource,
                                              QUrl("../resources/screenshots/studio-training.png"));
    QVERIFY(image.isValid());
    QVERIFY(!QImage::fromData(image.toByteArray()).isNull());
}

void HelpBrowserTest::anchorsAreGitHubs() {
    QCOMPARE(ws::ui::headingAnchor("Import, export and fine-tuning"),
             QString("import-export-and-fine-tuning"));
    QCOMPARE(ws::ui::headingAnchor("Quick start (Debian 12, as root)"),
             QString("quick-start-debian-12-as-root"));
    QCOMPARE(ws::ui::headingAnchor("The μTransfer preset"), QString("the-μtransfer-preset"));
}

void HelpBrowserTest::helpMenuOpensTheGuideAtASection() {
    ws::testing::StudioWindow window;
    QVERIFY(window.open());
    QMenu* help = nullptr;
    for (QAction* a : window->menuBar()->actions())
        if (a->text() == "&Help") help = a->menu();
    QVERIFY(help);
    QAction* configReference = nullptr;
    for (QAction* a : help->findChildren<QAction*>())
        if (a->text() == "Config reference") configReference = a;
    QVERIFY(configReference);
    configReference->trigger();
    auto* browser = window.find<ws::ui::HelpBrowser>("helpBrowser");
    QTRY_VERIFY(browser->isVisible());
    QCOMPARE(browser->currentSection(), QString("Config reference"));
    auto* text = browser->findChild<QTextBrowser*>();
    QVERIFY(text->verticalScrollBar()->value() > 0);
    // The section's heading is the first line in view (the guide is laid out lazily, so the
    // view follows the scroll range until it gets there).
    QTRY_COMPARE(text->cursorForPosition(QPoint(20, 10)).block().text(),
                 QString("Config reference"));
    QVERIFY(browser->findChild<QListWidget*>()->count() >= 10);
    browser->grab().save(ws::testing::artifactPath("help-browser.png"));
    // The top of the guide, where F1 opens it first.
    QVERIFY(browser->showSection("Wafer Studio guide"));
    browser->grab().save(ws::testing::artifactPath("help-browser-contents.png"));
}

void HelpBrowserTest::versionTextNamesVersionAndRevision() {
    const QString text = ws::ui::studioVersionText();
    QVERIFY(text.contains(WAFER_VERSION));
    QVERIFY(text.contains(WAFER_GIT_REVISION));
    // The About box says the licence.
    const QString about = ws::ui::aboutText();
    QVERIFY2(about.contains(text.toHtmlEscaped()) && about.contains("GPL-3.0-or-later") &&
                 about.contains("GNU General Public License, version 3"),
             qPrintable(about));
}

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<HelpBrowserTest>(argc, argv);
}

#include "help_browser_test.moc"
