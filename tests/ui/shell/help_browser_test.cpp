// The Help menu: the guide renders the shipped README with its sections, opens at a section the
// menu names, and the About text carries the version and git revision.
#include <QAction>
#include <QListWidget>
#include <QMenuBar>
#include <QScrollBar>
#include <QTextBrowser>

#include "support/gui_test.h"
#include "support/studio_window.h"
#include "ui/shell/help_browser.h"
#include "ui/shell/main_window.h"
#include "wafer/version.h"

class HelpBrowserTest : public QObject {
    Q_OBJECT
private slots:
    void everyMenuSectionExistsInTheReadme();
    void helpMenuOpensTheGuideAtASection();
    void versionTextNamesVersionAndRevision();
};

void HelpBrowserTest::everyMenuSectionExistsInTheReadme() {
    ws::ui::HelpBrowser browser;
    QVERIFY(browser.loaded());
    for (const QString& section : ws::ui::helpMenuSections())
        QVERIFY2(browser.showSection(section), qPrintable(section));
    QVERIFY(!browser.showSection("No such heading anywhere"));
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
    QVERIFY(browser->findChild<QListWidget*>()->count() >= 10);
    browser->grab().save(ws::testing::artifactPath("help-browser.png"));
}

void HelpBrowserTest::versionTextNamesVersionAndRevision() {
    const QString text = ws::ui::studioVersionText();
    QVERIFY(text.contains(WAFER_VERSION));
    QVERIFY(text.contains(WAFER_GIT_REVISION));
}

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<HelpBrowserTest>(argc, argv);
}

#include "help_browser_test.moc"
