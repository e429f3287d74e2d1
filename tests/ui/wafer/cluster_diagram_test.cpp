// SPDX-License-Identifier: GPL-3.0-or-later
// The Wafer tab's cluster diagram on a laptop's screen (issue 31: "cluster-traffic labels end in
// '…'"): in the studio's first window on offscreen screens of 1366 x 768 and 1280 x 720
// (support/laptop_screens.h) with the Runs and Lessons docks open, and in presenter mode at
// 1366 x 768, for 1, 2 and 4 systems (two of them on other ranks), mid-step, at the step's end
// and in slow motion, every text the diagram draws is whole: no "…", inside the box it was
// given and the diagram, and over no other text. With several systems SwarmX's label carries the
// links' load and lockstep from the prediction. Screenshots: artifacts/cluster-*.png.
#include <QScreen>
#include <QScrollArea>
#include <QSettings>
#include <QTest>

#include "engine/config/config.h"
#include "engine/wafer/cycle_model.h"
#include "engine/wafer/spec.h"
#include "support/gui_test.h"
#include "support/laptop_screens.h"
#include "support/wafer_tab_feed.h"
#include "support/wafer_tab_views.h"
#include "ui/shell/main_window.h"
#include "ui/shell/screen_fit.h"
#include "ui/teaching/presenter_mode.h"
#include "ui/wafer/cluster_diagram.h"
#include "ui/wafer/wafer_tab.h"

using ws::testing::WaferTabViews;

using namespace ws::ui;

namespace {

std::shared_ptr<const ws::wafer::StepPrediction> predict(int systems) {
    auto spec =
        ws::wafer::loadWaferSpecFile(WAFER_SOURCE_DIR "/presets/wafers/teaching-16x16.yaml");
    if (!spec.ok()) qFatal("%s", spec.error().message.c_str());
    ws::wafer::StepInput input;
    input.shape.vocab = 256;
    input.shape.channels = 64;
    input.shape.layers = 2;
    input.shape.heads = 2;
    input.shape.ffn = 256;
    input.shape.maxPositions = 64;
    input.batchPerSystem = 8;
    input.seqLen = 64;
    input.numSystems = systems;
    auto p = ws::wafer::predictStep(*spec, input);
    if (!p.ok()) qFatal("%s", p.error().message.c_str());
    return std::make_shared<const ws::wafer::StepPrediction>(std::move(p).value());
}

ws::config::Config configFor(int systems) {
    ws::config::Config c;
    c.model.numHiddenLayers = 2;
    c.runconfig.numCsx = systems;
    c.wafer.spec = "teaching-16x16";
    c.wafer.emulate = true;
    return c;
}

QString rectText(const QRectF& r) {
    return QStringLiteral("%1,%2 %3x%4").arg(r.x()).arg(r.y()).arg(r.width()).arg(r.height());
}

// Empty when every text the diagram drew reads whole; else the first that does not.
QString unreadableText(ClusterDiagram* d) {
    d->repaint();
    const auto& texts = d->drawnTexts();
    if (texts.empty()) return QStringLiteral("nothing drawn");
    const QRectF inside = QRectF(d->rect()).adjusted(-1, -1, 1, 1);
    for (size_t i = 0; i < texts.size(); ++i) {
        const auto& t = texts[i];
        const QString what = QStringLiteral("\"%1\"").arg(QString(t.text).replace('\n', " | "));
        if (t.text.contains(QChar(0x2026))) return what + QStringLiteral(" is cut with …");
        if (!t.box.adjusted(-1, -1, 1, 1).contains(t.bounds))
            return QStringLiteral("%1 spills out of its box (%2 in %3)")
                .arg(what, rectText(t.bounds), rectText(t.box));
        if (!inside.contains(t.bounds))
            return QStringLiteral("%1 leaves the diagram (%2 in %3 x %4)")
                .arg(what, rectText(t.bounds))
                .arg(d->width())
                .arg(d->height());
        for (size_t j = i + 1; j < texts.size(); ++j)
            if (t.bounds.adjusted(0, 0.5, 0, -0.5)
                    .intersects(texts[j].bounds.adjusted(0, 0.5, 0, -0.5)))
                return QStringLiteral("%1 overlaps \"%2\"").arg(what, texts[j].text);
    }
    return {};
}

}  // namespace

class ClusterDiagramTest : public QObject {
    Q_OBJECT
private slots:
    void init() { QSettings().clear(); }

    void labelsReadWholeOnLaptops() {
        QTemporaryDir dir;
        MainWindow window(dir.filePath("runs.sqlite"));  // the first window, as it opens
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        window.showLessons();
        QVERIFY(window.showTab(QStringLiteral("wafer")));
        auto* tab = window.findChild<WaferTab*>(QStringLiteral("waferTab"));
        QVERIFY(tab);
        ClusterDiagram* diagram = WaferTabViews(*tab).diagram;
        auto* fit = window.findChild<ScreenFit*>();
        QVERIFY(fit);
        struct Screen {
            const char* name;
            QRect geometry;
            bool presenter;
        };
        for (const Screen& screen :
             {Screen{"1366x768", ws::testing::kLaptopScreen, false},
              Screen{"1280x720", ws::testing::kSmallScreen, false},
              Screen{"1366x768-presenter", ws::testing::kLaptopScreen, true}}) {
            for (QScreen* s : QGuiApplication::screens())
                if (s->geometry() == screen.geometry) window.setScreen(s);
            fit->fit();
            if (screen.presenter) window.presenterMode()->setActive(true);
            QTRY_VERIFY(window.screen()->geometry().contains(window.geometry()));
            for (int systems : {1, 2, 4}) {
                const auto p = predict(systems);
                tab->beginRun(configFor(systems));
                if (systems > 1)  // system 0 here, the others on a second rank
                    tab->setPlacement({{0, "hostA", 0, 1}, {1, "hostB", 1, systems - 1}});
                tab->setRunState(ws::session::RunState::Running);
                tab->addEmulatedStep({0, 0.0, p});
                const auto spans = ws::testing::spansOf(*p, 0, 547800);
                // Mid-step (a layer's weights streaming in), then the whole step.
                tab->appendSpans({spans.begin(), spans.begin() + long(spans.size() / 3)});
                QCoreApplication::processEvents();
                for (const char* moment : {"mid-step", "step-end", "slow-motion"}) {
                    if (moment == QLatin1String("step-end"))
                        tab->appendSpans({spans.begin() + long(spans.size() / 3), spans.end()});
                    if (moment == QLatin1String("slow-motion")) tab->setReplayTime(0.4 * p->stepS);
                    tab->redrawNow();
                    QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
                    QCoreApplication::processEvents();
                    const QString name = QStringLiteral("cluster-%1-%2sys-%3.png")
                                             .arg(QLatin1String(screen.name))
                                             .arg(systems)
                                             .arg(QLatin1String(moment));
                    QVERIFY(window.grab().save(ws::testing::artifactPath(name)));
                    const QString problem = unreadableText(diagram);
                    QVERIFY2(problem.isEmpty(),
                             qPrintable(QStringLiteral("%1 (diagram %2 x %3): %4")
                                            .arg(name)
                                            .arg(diagram->width())
                                            .arg(diagram->height())
                                            .arg(problem)));
                    // Several systems: SwarmX's label says how busy the busiest links are and
                    // what lockstep over them adds to the step (the prediction's links).
                    QString drawn;
                    for (const auto& t : diagram->drawnTexts()) drawn += t.text + QLatin1Char(' ');
                    drawn.replace(QLatin1Char('\n'), QLatin1Char(' '));
                    QCOMPARE(diagram->linkLoad().shown, systems > 1);
                    QCOMPARE(drawn.contains(QStringLiteral("% busy")), systems > 1);
                    QCOMPARE(drawn.contains(QStringLiteral("lockstep ×")), systems > 1);
                    if (systems > 1) {
                        QVERIFY(diagram->linkLoad().utilization > 0);
                        QVERIFY(diagram->linkLoad().lockstep > 1);
                    }
                }
                tab->leaveReplay();
            }
            if (screen.presenter) window.presenterMode()->setActive(false);
        }
    }
};

int main(int argc, char** argv) {
    if (!ws::testing::useLaptopScreens()) return 2;
    return ws::testing::runIsolatedGuiTest<ClusterDiagramTest>(argc, argv);
}
#include "cluster_diagram_test.moc"
