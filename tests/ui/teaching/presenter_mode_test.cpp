// SPDX-License-Identifier: GPL-3.0-or-later
// Presenter mode (issue 17): F11 enters full screen with the docks (but an open lesson) hidden, a
// large-type scale (the application font and the charts' fonts and lines) and a high-contrast
// palette; Esc and F11 leave and put back the window state, the docks, the font and the palette;
// Space and the arrow keys stay unbound (the Lessons panel's). Screenshots of the Training and
// Wafer tabs at 1920 x 1080 in presenter mode, after a short run of the teaching preset, are saved
// as artifacts ($WAFER_TEST_ARTIFACTS: presenter-training.png, presenter-wafer.png).
#include <qcustomplot.h>

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QDialog>
#include <QDockWidget>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QStyle>
#include <QStyleOptionButton>
#include <QTest>

#include "support/gui_test.h"
#include "support/studio_window.h"
#include "ui/config/config_document.h"
#include "ui/lessons/lessons_panel.h"
#include "ui/shell/main_window.h"
#include "ui/teaching/presenter_mode.h"
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

// Pixels of `w` as drawn, inside its check box indicator, that are light (outline) or yellow.
QImage indicatorImage(QCheckBox* box) {
    QStyleOptionButton option;
    option.initFrom(box);
    const QRect r = box->style()->subElementRect(QStyle::SE_CheckBoxIndicator, &option, box);
    return box->grab().toImage().copy(r);
}
int lightPixels(QCheckBox* box) {
    const QImage img = indicatorImage(box);
    int n = 0;
    for (int y = 0; y < img.height(); ++y)
        for (int x = 0; x < img.width(); ++x) n += qGray(img.pixel(x, y)) > 200;
    return n;
}
int yellowPixels(QCheckBox* box) {
    const QImage img = indicatorImage(box);
    int n = 0;
    for (int y = 0; y < img.height(); ++y)
        for (int x = 0; x < img.width(); ++x) {
            const QColor c = img.pixelColor(x, y);
            n += c.red() > 200 && c.green() > 150 && c.blue() < 80;
        }
    return n;
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
    void cleanup() {
        m_window->presenterMode()->setActive(false);  // a failed check leaves it on
        m_window.close();
    }

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

    // The docks presenter mode hides came back in its large type and black palette (the Runs
    // dock's filter and list, the Log) when it was left: the style sheet went back before the
    // font and palette, and the application's font change then skipped the hidden widgets that
    // still had the style sheet's mark.
    void hiddenDocksComeBackInTheNormalLook() {
        MainWindow* w = m_window.get();
        auto* filter = w->findChild<QLineEdit*>(QStringLiteral("runsFilter"));
        QVERIFY(filter);
        QTRY_VERIFY(filter->isVisible());
        const double fontBefore = filter->font().pointSizeF();
        const QColor baseBefore = filter->palette().color(QPalette::Base);
        QVERIFY(baseBefore != QColor(Qt::black));
        // The Lessons dock stays through presenter mode; its labels must come back too.
        w->showLessons();
        auto* status = w->findChild<QLabel*>(QStringLiteral("lessonStatus"));
        QVERIFY(status);
        QTRY_VERIFY(status->isVisible());
        const double labelFontBefore = status->font().pointSizeF();
        const QColor labelTextBefore = status->palette().color(QPalette::WindowText);
        w->presenterMode()->setActive(true);
        QVERIFY(!filter->isVisible());
        // What is drawn: the lesson's label on black (widgets resolve the application's palette
        // when they draw, whatever palette() reports here).
        QTRY_VERIFY(QColor(status->grab().toImage().pixel(1, 1)).value() < 40);
        w->presenterMode()->setActive(false);
        QVERIFY(filter->isVisible());
        QTRY_COMPARE(filter->font().pointSizeF(), fontBefore);
        QCOMPARE(filter->palette().color(QPalette::Base), baseBefore);
        QCOMPARE(status->font().pointSizeF(), labelFontBefore);
        QCOMPARE(status->palette().color(QPalette::WindowText), labelTextBefore);
        // What is drawn, not only what is asked for: the filter's box is not black.
        const QImage drawn = filter->grab().toImage();
        QVERIFY(QColor(drawn.pixel(drawn.width() / 2, drawn.height() / 2)) != QColor(Qt::black));
    }

    // A lesson being taught stays beside the views in presenter mode; the other docks go.
    void anOpenLessonStaysInPresenterMode() {
        MainWindow* w = m_window.get();
        w->showLessons();
        QVERIFY(visibleDocks(w).contains("LessonsDock"));
        auto* title = w->findChild<QLabel*>(QStringLiteral("lessonStepTitle"));
        QVERIFY(title);
        const double titleSize = title->font().pointSizeF();
        w->presenterMode()->setActive(true);
        QCOMPARE(visibleDocks(w), QStringList{"LessonsDock"});
        // The step title grows with the type (it has a font of its own, 1.4 x the panel's).
        QTRY_VERIFY(title->font().pointSizeF() > titleSize * 1.5);
        w->presenterMode()->setActive(false);
        QVERIFY(visibleDocks(w).contains("LessonsDock"));
        QVERIFY(visibleDocks(w).size() > 1);
        QTRY_COMPARE(title->font().pointSizeF(), titleSize);
    }

    // The high-contrast palette drew check boxes' boxes black on black ("fit colours" on the
    // Wafer tab showed only its text): presenter mode outlines them in white, fills them yellow
    // when checked, and puts the window's style sheet back on leaving.
    void checkBoxesStayVisible() {
        const QString sheetBefore = m_window->styleSheet();
        // The widgets' type grows too, not only the charts' (a style sheet on the window once
        // pinned every widget's font): a label's text needs 1.6 x the height.
        auto* label = new QLabel(QStringLiteral("Predicted on teaching-16x16"),
                                 m_window.find<QWidget>("trainingTab"));
        label->show();
        const int labelHeight = label->sizeHint().height();
        m_window->presenterMode()->setActive(true);
        QTRY_VERIFY2(
            label->sizeHint().height() > labelHeight * 1.4,
            qPrintable(
                QStringLiteral("%1 -> %2").arg(labelHeight).arg(label->sizeHint().height())));
        delete label;
        QVERIFY(m_window->showTab("training"));
        // As "fit colours" (shown once a run has emulated frames) and the Config tab's boxes.
        auto* box =
            new QCheckBox(QStringLiteral("fit colours"), m_window.find<QWidget>("trainingTab"));
        box->show();
        QTRY_VERIFY(box->isVisible());
        box->setChecked(false);
        QVERIFY2(lightPixels(box) > 20, "the unchecked box has no visible outline");
        QCOMPARE(yellowPixels(box), 0);
        box->setChecked(true);
        QVERIFY2(yellowPixels(box) > 20, "the checked box is not filled");
        box->setChecked(false);
        m_window->presenterMode()->setActive(false);
        QCOMPARE(m_window->styleSheet(), sheetBefore);
        delete box;
    }

    // Charts made after entering presenter mode (a new run's, a sweep's) get its scale too, and
    // lose it on leaving, as the ones that were there.
    void chartsCreatedInPresenterModeFollowIt() {
        auto* host = m_window.find<QWidget>("trainingTab");
        auto* before = new QCustomPlot(host);
        before->show();
        const double normal = before->xAxis->tickLabelFont().pointSizeF();
        m_window->presenterMode()->setActive(true);
        const double normalPen = before->xAxis->basePen().widthF();
        QVERIFY(m_window->showTab("training"));
        auto* during = new QCustomPlot(host);
        during->xAxis->setLabel(QStringLiteral("step"));
        during->show();
        QTRY_COMPARE(during->xAxis->basePen().widthF(), normalPen * PresenterMode::kScale);
        QCOMPARE(during->xAxis->tickLabelFont().pointSizeF(), normal * PresenterMode::kScale);
        QCOMPARE(before->xAxis->tickLabelFont().pointSizeF(), normal * PresenterMode::kScale);
        during->replot();  // a chart re-styled later keeps the scale
        QCOMPARE(during->xAxis->tickLabelFont().pointSizeF(), normal * PresenterMode::kScale);
        m_window->presenterMode()->setActive(false);
        QCOMPARE(during->xAxis->tickLabelFont().pointSizeF(), normal);
        QCOMPARE(during->xAxis->basePen().widthF(), normalPen);
        QCOMPARE(before->xAxis->tickLabelFont().pointSizeF(), normal);
        delete before;
        delete during;
    }

    // An open lesson's dock widens in presenter mode, its figure filling the dock's width.
    void anOpenLessonsFigureIsShownLarge() {
        m_window->showLessons();
        LessonsPanel* panel = m_window->lessonsPanel();
        QVERIFY(panel->openLesson(
            QStringLiteral(WAFER_SOURCE_DIR "/resources/lessons/01-weight-streaming.yaml")));
        auto* figure = m_window.find<QLabel>("lessonFigure");
        QTRY_VERIFY(figure->isVisible());
        const int normal = figure->pixmap().width();
        QVERIFY(normal > 200);
        QVERIFY(normal >= panel->width() - 40);
        // The Wafer tab's banner (the lesson preset's planned step) has a style sheet of its own
        // for its colours: its type grows all the same.
        auto* banner = m_window.find<QLabel>("waferBanner");
        QVERIFY(!banner->text().isEmpty());
        const int bannerType = banner->fontMetrics().height();
        m_window->presenterMode()->setActive(true);
        QTRY_VERIFY2(
            banner->fontMetrics().height() > bannerType * 1.4,
            qPrintable(
                QStringLiteral("%1 -> %2").arg(bannerType).arg(banner->fontMetrics().height())));
        m_window->setWindowState(Qt::WindowNoState);
        m_window->resize(1920, 1080);
        QTRY_COMPARE(m_window->size(), QSize(1920, 1080));
        QTRY_VERIFY(figure->pixmap().width() >= panel->width() - 40);
        QVERIFY(figure->isVisible());
        QTest::qWait(200);  // the tool bar lays its larger buttons out
        QVERIFY(m_window->saveScreenshot(ws::testing::artifactPath("presenter-lesson.png")));
        // A click on the figure shows it large over the views; a click closes it.
        QTest::mouseClick(figure, Qt::LeftButton);
        auto* dialog = m_window.find<QDialog>("lessonFigureDialog");
        QTRY_VERIFY(dialog->isVisible());
        auto* large = dialog->findChild<QLabel*>("lessonFigureLarge");
        QVERIFY(large->pixmap().width() > 2 * figure->pixmap().width());
        QVERIFY(dialog->grab().save(ws::testing::artifactPath("presenter-lesson-figure.png")));
        QPointer<QDialog> closing(dialog);
        QTest::mouseClick(large, Qt::LeftButton);
        QTRY_VERIFY(!closing);
        m_window->presenterMode()->setActive(false);
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
