// SPDX-License-Identifier: GPL-3.0-or-later
// The studio fits a laptop (issue 17): the main window's minimum size, with each tab current,
// is at most 1024 px wide with its default docks (Runs, Log) and at most 1280 px with the
// Lessons dock open too, and at most 700 px high (a 1366 x 768 screen less a panel and a title
// bar). A widget that forces a wider window names itself in the failure message (the widest
// minimum sizes in the tree), so a regression says where it is. Screenshots of every tab at
// 1280 x 720 go to artifacts/ (fit-<tab>.png).
#include <QDockWidget>
#include <QLayout>
#include <QTabWidget>
#include <QTest>
#include <algorithm>
#include <vector>

#include "support/gui_test.h"
#include "support/studio_window.h"
#include "support/wafer_tab_views.h"
#include "ui/common/run_controller.h"
#include "ui/config/config_document.h"
#include "ui/shell/main_window.h"
#include "ui/wafer/core_heatmap.h"
#include "ui/wafer/wafer_tab.h"

using ws::testing::WaferTabViews;

using namespace ws::ui;

namespace {

const QString kTeaching = QStringLiteral(WAFER_SOURCE_DIR "/presets/teaching-stream.yaml");
constexpr int kMaxWidth = 1024;
constexpr int kMaxWidthWithLessons = 1280;
constexpr int kMaxHeight = 700;

QSize windowMinimum(QWidget* window) {
    // What the window manager is told (WM_NORMAL_HINTS): the layout's minimum, or an explicit one.
    QSize size = window->minimumSizeHint();
    if (window->layout()) size = size.expandedTo(window->layout()->totalMinimumSize());
    return size.expandedTo(window->minimumSize());
}

// The visible widgets whose minimum width (or height) is the largest, for the failure message.
QString widest(QWidget* root, bool byWidth) {
    std::vector<std::pair<int, QString>> all;
    for (QWidget* w : root->findChildren<QWidget*>()) {
        if (!w->isVisibleTo(root)) continue;
        const QSize min = w->minimumSizeHint().expandedTo(w->minimumSize());
        QString name = w->objectName();
        if (name.isEmpty()) name = QString::fromLatin1(w->metaObject()->className());
        all.push_back({byWidth ? min.width() : min.height(),
                       QStringLiteral("%1 (%2) %3x%4")
                           .arg(name, QString::fromLatin1(w->metaObject()->className()))
                           .arg(min.width())
                           .arg(min.height())});
    }
    std::sort(all.begin(), all.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    QStringList out;
    for (size_t i = 0; i < all.size() && i < 12; ++i) out << all[i].second;
    return out.join(QStringLiteral("; "));
}

}  // namespace

class WindowFitTest : public QObject {
    Q_OBJECT
private slots:
    void init() {
        QVERIFY(m_window.open({1280, 720}));
        QVERIFY(m_window->openConfig(kTeaching));
    }
    void cleanup() { m_window.close(); }

    void minimumSizeFitsALaptop() {
        auto* tabs = m_window.find<QTabWidget>("mainTabs");
        auto* lessons = m_window.find<QDockWidget>("LessonsDock");
        for (bool withLessons : {false, true}) {
            if (withLessons) m_window->showLessons();
            const int maxWidth = withLessons ? kMaxWidthWithLessons : kMaxWidth;
            QCOMPARE(lessons->isVisible(), withLessons);
            for (int i = 0; i < tabs->count(); ++i) {
                tabs->setCurrentIndex(i);
                QCoreApplication::processEvents();
                const QSize min = windowMinimum(m_window.get());
                qInfo("%s, %s tab: minimum %d x %d", withLessons ? "Lessons dock" : "default docks",
                      qPrintable(tabs->tabText(i)), min.width(), min.height());
                QVERIFY2(min.width() <= maxWidth,
                         qPrintable(QStringLiteral("%1 tab: %2 px wide at least (> %3): %4")
                                        .arg(tabs->tabText(i))
                                        .arg(min.width())
                                        .arg(maxWidth)
                                        .arg(widest(m_window.get(), true))));
                QVERIFY2(min.height() <= kMaxHeight,
                         qPrintable(QStringLiteral("%1 tab: %2 px high at least (> %3): %4")
                                        .arg(tabs->tabText(i))
                                        .arg(min.height())
                                        .arg(kMaxHeight)
                                        .arg(widest(m_window.get(), false))));
            }
        }
    }

    void screenshotsAtLaptopSizes() {
        for (QSize size : {QSize(1280, 720), QSize(1366, 768)}) {
            m_window->resize(size);
            QTRY_COMPARE(m_window->size(), size);
            for (const char* tab : {"config", "training", "wafer", "samples", "sweeps"}) {
                QVERIFY(m_window->showTab(QLatin1String(tab)));
                QTest::qWait(50);
                const QString path = ws::testing::artifactPath(QStringLiteral("fit-%1-%2x%3.png")
                                                                   .arg(tab)
                                                                   .arg(size.width())
                                                                   .arg(size.height()));
                QVERIFY(m_window->saveScreenshot(path));
            }
        }
    }

    // The Wafer tab on the teaching preset, paused at a block's forward phase and at the head's
    // (the README's studio-wafer-step.png): the heatmap over the phase's compute window, the
    // regions of cores each matrix maps to, the caption saying what the percentages are of.
    void teachingWaferScreenshots() {
        m_window->resize(1400, 900);
        QTRY_COMPARE(m_window->size(), QSize(1400, 900));
        QVERIFY(m_window->document()->setField("runconfig.max_steps", "50"));
        m_window.action("runAction")->trigger();
        RunController* controller = m_window->controller();
        QVERIFY(controller->isActive());
        QTRY_COMPARE_WITH_TIMEOUT(controller->state(), ws::session::RunState::Running, 20000);
        m_window.action("pauseAction")->trigger();
        QTRY_COMPARE_WITH_TIMEOUT(controller->state(), ws::session::RunState::Paused, 20000);
        auto* wafer = m_window.find<WaferTab>("waferTab");
        m_window->showTab("wafer");
        auto stepTo = [&](int layer) {
            for (int i = 0; i < 16 && wafer->followedPhase() != std::pair<int, bool>(layer, false);
                 ++i) {
                const auto phase = wafer->followedPhase();
                m_window.action("stepLayerAction")->trigger();
                QTRY_VERIFY_WITH_TIMEOUT(wafer->followedPhase() != phase, 20000);
            }
            QCOMPARE(wafer->followedPhase(), std::make_pair(layer, false));
            wafer->redrawNow();
        };
        stepTo(1);
        QVERIFY(WaferTabViews(*wafer).heatmap->titleText().contains("of the layer's"));
        QVERIFY(WaferTabViews(*wafer).heatmap->frame()->mean > 0.5);
        QVERIFY(m_window->saveScreenshot(ws::testing::artifactPath("teaching-wafer-block.png")));
        stepTo(3);
        QVERIFY(m_window->saveScreenshot(ws::testing::artifactPath("teaching-wafer-head.png")));
        // A paused run adds its lines (the narration under the tabs): the window still fits.
        const QSize running = windowMinimum(m_window.get());
        QVERIFY2(running.width() <= kMaxWidth && running.height() <= kMaxHeight,
                 qPrintable(QStringLiteral("%1 x %2 while a run is paused: %3")
                                .arg(running.width())
                                .arg(running.height())
                                .arg(widest(m_window.get(), false))));
        // The same on a laptop, with and without the Lessons dock.
        for (QSize size : {QSize(1366, 768), QSize(1280, 720)}) {
            m_window->resize(size);
            QTRY_COMPARE(m_window->size(), size);
            wafer->redrawNow();
            QVERIFY(m_window->saveScreenshot(
                ws::testing::artifactPath(QStringLiteral("teaching-wafer-head-%1x%2.png")
                                              .arg(size.width())
                                              .arg(size.height()))));
        }
        m_window->showLessons();
        QTest::qWait(50);
        wafer->redrawNow();
        QVERIFY(m_window->saveScreenshot(
            ws::testing::artifactPath("teaching-wafer-head-1280x720-lessons.png")));
        QVERIFY(m_window.stopRun(60000));
    }

private:
    ws::testing::StudioWindow m_window;
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<WindowFitTest>(argc, argv);
}
#include "window_fit_test.moc"
