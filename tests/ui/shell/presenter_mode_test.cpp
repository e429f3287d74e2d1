// Presenter mode (issue 17): F11 enters full screen with the docks (but an open lesson) hidden, a
// large-type scale (the application font and the charts' fonts and lines) and a high-contrast
// palette; Esc and F11 leave and put back the window state, the docks, the font and the palette;
// Space and the arrow keys stay unbound (the Lessons panel's). Screenshots of the Training and
// Wafer tabs at 1920 x 1080 in presenter mode, after a short run of the teaching preset, are saved
// as artifacts ($WAFER_TEST_ARTIFACTS: presenter-training.png, presenter-wafer.png).
#include <qcustomplot.h>

#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QTest>

#include "support/gui_test.h"
#include "support/studio_window.h"
#include "ui/config/config_document.h"
#include "ui/shell/main_window.h"
#include "ui/shell/presenter_mode.h"
#include "ui/training/training_tab.h"

using namespace ws::ui;

namespace {
const QString kTeaching = QStringLiteral(WAFER_SOURCE_DIR "/presets/teaching-stream.yaml");

QStringList visibleDocks(const MainWindow* window) {
    QStringList names;
    for (const QDockWidget* d : window->findChildren<QDockWidget*>())
        if (d->isVisible()) names << d->objectName();
    names.sort();
    return names;
}

// The tick-label point size of the first chart of the Training tab.
double chartTickFontSize(const MainWindow* window) {
    auto* tab = window->findChild<QWidget*>(QStringLiteral("trainingTab"));
    auto* plot = tab ? tab->findChild<QCustomPlot*>() : nullptr;
    return plot ? plot->xAxis->tickLabelFont().pointSizeF() : -1;
}
}  // namespace

class PresenterModeTest : public QObject {
    Q_OBJECT
private slots:
    void init() {
        QVERIFY(m_window.open());
        QVERIFY(m_window->openConfig(kTeaching));
    }
    void cleanup() { m_window.close(); }

    void enterAndLeaveRestoreEverything() {
        MainWindow* w = m_window.get();
        QAction* toggle = m_window.action("presenterAction");
        QCOMPARE(toggle->shortcut(), QKeySequence(Qt::Key_F11));
        const QStringList docksBefore = visibleDocks(w);
        QVERIFY(!docksBefore.isEmpty());
        const Qt::WindowStates stateBefore = w->windowState();
        const QSize sizeBefore = w->size();
        const double fontBefore = QApplication::font().pointSizeF();
        const QColor windowBefore = QApplication::palette().color(QPalette::Window);
        const double tickBefore = chartTickFontSize(w);
        QVERIFY(tickBefore > 0);

        for (int key : {int(Qt::Key_Escape), int(Qt::Key_F11)}) {
            QTest::keyClick(w, Qt::Key_F11);
            QVERIFY(w->presenterMode()->isActive());
            QVERIFY(toggle->isChecked());
            QVERIFY(w->windowState() & Qt::WindowFullScreen);
            QVERIFY(visibleDocks(w).isEmpty());
            QCOMPARE(QApplication::font().pointSizeF(), fontBefore * PresenterMode::kScale);
            QCOMPARE(QApplication::palette().color(QPalette::Window), QColor(Qt::black));
            QCOMPARE(QApplication::palette().color(QPalette::Text), QColor(Qt::white));
            QVERIFY(qAbs(chartTickFontSize(w) - tickBefore * PresenterMode::kScale) < 1e-6);

            QTest::keyClick(w, Qt::Key(key));
            QVERIFY2(!w->presenterMode()->isActive(), qPrintable(QKeySequence(key).toString()));
            QVERIFY(!toggle->isChecked());
            QCOMPARE(w->windowState(), stateBefore);
            QTRY_COMPARE(w->size(), sizeBefore);
            QCOMPARE(visibleDocks(w), docksBefore);
            QCOMPARE(QApplication::font().pointSizeF(), fontBefore);
            QCOMPARE(QApplication::palette().color(QPalette::Window), windowBefore);
            QCOMPARE(chartTickFontSize(w), tickBefore);
        }
        // Esc means nothing to the window outside presenter mode.
        QVERIFY(!m_window.action("leavePresenterAction")->isEnabled());
    }

    // A lesson being taught stays beside the views in presenter mode; the other docks go.
    void anOpenLessonStaysInPresenterMode() {
        MainWindow* w = m_window.get();
        w->showLessons();
        QVERIFY(visibleDocks(w).contains("LessonsDock"));
        w->presenterMode()->setActive(true);
        QCOMPARE(visibleDocks(w), QStringList{"LessonsDock"});
        w->presenterMode()->setActive(false);
        QVERIFY(visibleDocks(w).contains("LessonsDock"));
        QVERIFY(visibleDocks(w).size() > 1);
    }

    void leavesSpaceAndArrowsUnbound() {
        for (QAction* a : m_window->findChildren<QAction*>())
            for (const QKeySequence& k : a->shortcuts())
                for (int key : {int(Qt::Key_Space), int(Qt::Key_Left), int(Qt::Key_Right)})
                    QVERIFY2(k != QKeySequence(key), qPrintable(a->objectName()));
    }

    // Screenshots at a projector's 1920 x 1080 (looked at: see the README's presenter section).
    void screenshotsAt1920x1080() {
        QVERIFY(m_window->document()->setField("runconfig.max_steps", "30"));
        QVERIFY(m_window.runToEnd(120000));
        m_window->presenterMode()->setActive(true);
        // The offscreen platform's screen is smaller than a projector and full screen follows
        // it: out of full screen at 1920 x 1080, everything else presenter mode set stays.
        m_window->setWindowState(Qt::WindowNoState);
        m_window->resize(1920, 1080);
        QTRY_COMPARE(m_window->size(), QSize(1920, 1080));
        QVERIFY(m_window->findChild<QDockWidget*>("RunsDock")->isHidden());
        QTest::qWait(200);  // the tool bar lays its larger buttons out
        for (const char* tab : {"training", "wafer"}) {
            QVERIFY(m_window->showTab(QLatin1String(tab)));
            const QString path =
                ws::testing::artifactPath(QStringLiteral("presenter-%1.png").arg(tab));
            QVERIFY(m_window->saveScreenshot(path));
            QImage shot(path);
            QCOMPARE(shot.size(), QSize(1920, 1080));
        }
        m_window->presenterMode()->setActive(false);
    }

private:
    ws::testing::StudioWindow m_window;
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<PresenterModeTest>(argc, argv);
}
#include "presenter_mode_test.moc"
