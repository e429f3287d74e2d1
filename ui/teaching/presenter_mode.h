// SPDX-License-Identifier: GPL-3.0-or-later
// PresenterMode: View → Presenter Mode (F11) for teaching in front of a room. Entering it shows
// the main window full screen, hides its docks, sets a high-contrast palette and a large-type
// scale (the application font and every chart's fonts and lines × kScale, charts created later
// too: new runs' and sweeps' charts); check boxes and radio buttons get a white box and a yellow
// fill when checked, line edits, spin boxes and editable combo boxes a light frame (the style
// draws them black on black in the palette), and the tool bars' icons turn white. Esc or F11
// leaves and restores exactly what was there before: the window's state and geometry (the exact
// rectangle, not restoreGeometry()'s idea of one that fits), which docks were shown and where,
// the icons, the application's style, font and palette. It binds only F11 and
// (while on) Esc: Space and the arrow keys stay free for the Lessons panel. GUI thread only.
#pragma once

#include <QByteArray>
#include <QFont>
#include <QIcon>
#include <QMetaObject>
#include <QObject>
#include <QPalette>
#include <QPointer>
#include <QRect>
#include <QString>
#include <utility>
#include <vector>

class QAction;
class QCustomPlot;
class QDockWidget;
class QMainWindow;

namespace ws::ui {

class PresenterMode : public QObject {
    Q_OBJECT
public:
    static constexpr double kScale = 1.6;  // type and line widths in presenter mode

    // Adds its actions to `window` ("presenterAction": checkable, F11; "leavePresenterAction":
    // Esc, enabled only while on). The caller puts action() in its View menu.
    explicit PresenterMode(QMainWindow* window);

    QAction* action() const { return m_toggle; }
    bool isActive() const { return m_active; }
    void setActive(bool on);

    // White on black with a yellow selection: the palette presenter mode sets.
    static QPalette highContrastPalette();

protected:
    // While active: a chart being polished (created after entering) gets the scale.
    bool eventFilter(QObject* watched, QEvent* event) override;

signals:
    void activeChanged(bool on);

private:
    void enter();
    void leave();
    void scalePlots(double scale);
    void scalePlot(QCustomPlot* plot, double scale);
    void relayoutToolBars();
    // Light icons on the black tool bar while on; the actions' own icons back when off.
    void tintToolBarIcons(bool light);
    void restoreGeometryExactly(int attempt);
    void restyleSheetWidgets();

    QMainWindow* m_window;
    QAction* m_toggle;
    QAction* m_leave;
    bool m_active = false;
    // What entering changed, put back on leaving.
    Qt::WindowStates m_windowState;
    QRect m_geometry;  // the window's geometry (frame excluded) before entering
    QByteArray m_dockState;
    std::vector<std::pair<QPointer<QAction>, QIcon>> m_toolIcons;
    QFont m_font;
    QPalette m_palette;
    std::vector<QPointer<QDockWidget>> m_hiddenDocks;
    QString m_styleName;  // the application's style, put back on leaving
    std::vector<QMetaObject::Connection> m_replotHooks;
    std::vector<QPointer<QCustomPlot>> m_scaled;  // charts given the scale, for leave()
};

}  // namespace ws::ui
