// SPDX-License-Identifier: GPL-3.0-or-later
// PresenterMode: see presenter_mode.h.
#include "ui/teaching/presenter_mode.h"

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QFontMetrics>
#include <QMainWindow>
#include <QPainter>
#include <QProxyStyle>
#include <QScreen>
#include <QStyleFactory>
#include <QStyleOptionComboBox>
#include <QTimer>
#include <QToolBar>
#include <utility>

#include "ui/common/plot_theme.h"

namespace ws::ui {

namespace {

// The application's style while presenter mode is on: the style that was there, except that
// check boxes' and radio buttons' indicators are drawn visibly on the black palette (Fusion
// derives their frame from the window colour: black on black) and sized to the large type: a
// white frame, filled yellow when checked. A style rather than a style sheet, which would pin
// every widget's font and keep the large type from reaching them.
class PresenterStyle : public QProxyStyle {
public:
    PresenterStyle(QStyle* base, int indicatorPixels)
        : QProxyStyle(base), m_indicator(indicatorPixels) {}

    int pixelMetric(PixelMetric metric, const QStyleOption* option,
                    const QWidget* widget) const override {
        switch (metric) {
            case PM_IndicatorWidth:
            case PM_IndicatorHeight:
            case PM_ExclusiveIndicatorWidth:
            case PM_ExclusiveIndicatorHeight:
                return m_indicator;
            default:
                return QProxyStyle::pixelMetric(metric, option, widget);
        }
    }

    void drawPrimitive(PrimitiveElement element, const QStyleOption* option, QPainter* painter,
                       const QWidget* widget) const override {
        if (element == PE_FrameLineEdit) {
            // Fusion outlines line edits in the window colour darkened: black on black.
            drawOutline(painter, option);
            return;
        }
        if (element != PE_IndicatorCheckBox && element != PE_IndicatorRadioButton) {
            QProxyStyle::drawPrimitive(element, option, painter, widget);
            return;
        }
        const bool enabled = option->state & State_Enabled;
        QColor fill(0, 0, 0);
        if (option->state & State_On) fill = QColor(255, 214, 0);
        if (option->state & State_NoChange) fill = QColor(150, 150, 150);
        const double pen = std::max(2, m_indicator / 7);
        const QRectF box = QRectF(option->rect).adjusted(pen / 2, pen / 2, -pen / 2, -pen / 2);
        painter->save();
        painter->setRenderHint(QPainter::Antialiasing);
        painter->setPen(QPen(enabled ? QColor(255, 255, 255) : QColor(150, 150, 150), pen));
        painter->setBrush(fill);
        if (element == PE_IndicatorRadioButton)
            painter->drawEllipse(box);
        else
            painter->drawRect(box);
        painter->restore();
    }

    void drawComplexControl(ComplexControl control, const QStyleOptionComplex* option,
                            QPainter* painter, const QWidget* widget) const override {
        QProxyStyle::drawComplexControl(control, option, painter, widget);
        // Spin boxes' and editable combo boxes' frames: as line edits'.
        const auto* combo = qstyleoption_cast<const QStyleOptionComboBox*>(option);
        if (control == CC_SpinBox || (control == CC_ComboBox && combo && combo->editable))
            drawOutline(painter, option);
    }

private:
    static void drawOutline(QPainter* painter, const QStyleOption* option) {
        const bool focused = option->state & State_HasFocus;
        painter->save();
        painter->setRenderHint(QPainter::Antialiasing, false);
        painter->setBrush(Qt::NoBrush);
        painter->setPen(QPen(focused                         ? QColor(255, 214, 0)
                             : option->state & State_Enabled ? QColor(200, 200, 200)
                                                             : QColor(110, 110, 110),
                             1));
        painter->drawRect(QRect(option->rect).adjusted(0, 0, -1, -1));
        painter->restore();
    }

    int m_indicator;
};

// `icon` as light on black. An icon of one tone (a silhouette) is drawn white; a light icon
// with detail (a pale disk) already shows on black and keeps its colours; a dark one with detail
// (a page with lines on it) has its lightness turned over and stretched, hue and alpha kept, so
// its darkest part becomes white and its lightest dark, its colours paler: it keeps its shape
// instead of becoming a white square. Disabled: the same, dimmed to `disabledLightness`.
QIcon lightOnBlack(const QIcon& icon, QSize size, int disabledLightness) {
    QIcon out;
    for (const QSize s : {size, size * 2}) {
        const QPixmap base = icon.pixmap(s);
        if (base.isNull()) continue;
        const QImage source = base.toImage().convertToFormat(QImage::Format_ARGB32);
        int low = 255, high = 0;
        int64_t sum = 0, count = 0;
        for (int y = 0; y < source.height(); ++y) {
            const auto* line = reinterpret_cast<const QRgb*>(source.constScanLine(y));
            for (int x = 0; x < source.width(); ++x)
                if (qAlpha(line[x]) >= 128) {
                    const int l = QColor::fromRgba(line[x]).lightness();
                    low = std::min(low, l);
                    high = std::max(high, l);
                    sum += l;
                    ++count;
                }
        }
        const bool silhouette = high - low < 64;
        const bool light = !silhouette && count > 0 && sum / count >= 140;
        for (const auto& [mode, top] :
             {std::pair{QIcon::Normal, 255}, {QIcon::Disabled, disabledLightness}}) {
            QImage image = source;
            for (int y = 0; y < image.height(); ++y) {
                auto* line = reinterpret_cast<QRgb*>(image.scanLine(y));
                for (int x = 0; x < image.width(); ++x) {
                    const QColor c = QColor::fromRgba(line[x]);
                    if (c.alpha() == 0) continue;
                    if (silhouette) {
                        line[x] = qRgba(top, top, top, c.alpha());
                        continue;
                    }
                    if (light) {
                        line[x] = QColor::fromHsl(c.hslHue(), c.hslSaturation(),
                                                  c.lightness() * top / 255, c.alpha())
                                      .rgba();
                        continue;
                    }
                    // Turned over, stretched to the full range, mid tones raised (gamma 0.75):
                    // on black, what was the icon's ink must read bright.
                    const double t =
                        std::clamp(double(high - c.lightness()) / double(high - low), 0.0, 1.0);
                    const int turned = int(std::lround(255.0 * std::pow(t, 0.75)));
                    // Half the saturation: a deep blue as light as white in HSL terms still
                    // reads dark on black.
                    line[x] = QColor::fromHsl(c.hslHue(), c.hslSaturation() / 2, turned * top / 255,
                                              c.alpha())
                                  .rgba();
                }
            }
            QPixmap p = QPixmap::fromImage(image);
            p.setDevicePixelRatio(base.devicePixelRatio());
            out.addPixmap(p, mode);
        }
    }
    return out;
}

QStyle* createStyle(const QString& name) {
    QStyle* style = QStyleFactory::create(name);
    return style ? style : QStyleFactory::create(QStringLiteral("Fusion"));
}

}  // namespace

PresenterMode::PresenterMode(QMainWindow* window) : QObject(window), m_window(window) {
    m_toggle = new QAction(tr("&Presenter Mode"), this);
    m_toggle->setObjectName(QStringLiteral("presenterAction"));
    m_toggle->setCheckable(true);
    m_toggle->setShortcut(QKeySequence(Qt::Key_F11));
    m_toggle->setToolTip(
        tr("Full screen, large type, high contrast, no docks but an open lesson: for a projector. "
           "Esc or F11 leaves (F11)"));
    connect(m_toggle, &QAction::toggled, this, &PresenterMode::setActive);
    m_leave = new QAction(tr("Leave Presenter Mode"), this);
    m_leave->setObjectName(QStringLiteral("leavePresenterAction"));
    m_leave->setShortcut(QKeySequence(Qt::Key_Escape));
    m_leave->setEnabled(false);  // Esc keeps its usual meanings outside presenter mode
    connect(m_leave, &QAction::triggered, this, [this] { setActive(false); });
    // On the window itself, so the keys work whether or not a menu shows the actions.
    window->addAction(m_toggle);
    window->addAction(m_leave);
}

void PresenterMode::setActive(bool on) {
    if (on == m_active) return;
    if (on)
        enter();
    else
        leave();
    m_active = on;
    m_leave->setEnabled(on);
    {
        const QSignalBlocker block(m_toggle);
        m_toggle->setChecked(on);
    }
    emit activeChanged(on);
}

QPalette PresenterMode::highContrastPalette() {
    const QColor black(0, 0, 0), white(255, 255, 255), nearBlack(24, 24, 24);
    const QColor yellow(255, 214, 0), grey(150, 150, 150);
    QPalette p;
    for (QPalette::ColorGroup g : {QPalette::Active, QPalette::Inactive}) {
        p.setColor(g, QPalette::Window, black);
        p.setColor(g, QPalette::WindowText, white);
        p.setColor(g, QPalette::Base, black);
        p.setColor(g, QPalette::AlternateBase, nearBlack);
        p.setColor(g, QPalette::Text, white);
        p.setColor(g, QPalette::BrightText, yellow);
        p.setColor(g, QPalette::Button, nearBlack);
        p.setColor(g, QPalette::ButtonText, white);
        p.setColor(g, QPalette::Highlight, yellow);
        p.setColor(g, QPalette::HighlightedText, black);
        p.setColor(g, QPalette::ToolTipBase, black);
        p.setColor(g, QPalette::ToolTipText, white);
        p.setColor(g, QPalette::PlaceholderText, grey);
        p.setColor(g, QPalette::Link, QColor(0, 220, 255));
        p.setColor(g, QPalette::Light, grey);
        p.setColor(g, QPalette::Midlight, QColor(90, 90, 90));
        p.setColor(g, QPalette::Mid, QColor(70, 70, 70));
        p.setColor(g, QPalette::Dark, QColor(40, 40, 40));
        p.setColor(g, QPalette::Shadow, black);
    }
    for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, grey);
    for (auto role : {QPalette::Window, QPalette::Base, QPalette::Button})
        p.setColor(QPalette::Disabled, role, black);
    return p;
}

void PresenterMode::enter() {
    m_windowState = m_window->windowState();
    m_geometry = m_window->geometry();
    m_dockState = m_window->saveState();
    m_font = QApplication::font();
    m_palette = QApplication::palette();
    m_hiddenDocks.clear();
    for (QDockWidget* dock : m_window->findChildren<QDockWidget*>()) {
        if (dock->parentWidget() != m_window || dock->isHidden()) continue;
        // A lesson being taught stays beside the views: it is what the room follows.
        if (dock->objectName() == QLatin1String("LessonsDock")) continue;
        m_hiddenDocks.emplace_back(dock);
        dock->hide();
    }
    QFont large = m_font;
    if (large.pointSizeF() > 0)
        large.setPointSizeF(large.pointSizeF() * kScale);
    else
        large.setPixelSize(int(large.pixelSize() * kScale + 0.5));
    // The style first: a new style gives the widgets its own palette, so the palette comes
    // after it. Then the font: the charts re-theme on the palette change and then see the large
    // font.
    m_styleName = QApplication::style()->name();
    QApplication::setStyle(new PresenterStyle(createStyle(m_styleName),
                                              std::max(14, QFontMetrics(large).height() * 3 / 4)));
    QApplication::setFont(large);
    QApplication::setPalette(QPalette());  // a change the widgets see, whatever the style did
    QApplication::setPalette(highContrastPalette());
    restyleSheetWidgets();
    scalePlots(kScale);
    qApp->installEventFilter(this);  // charts created from now on
    tintToolBarIcons(true);
    relayoutToolBars();
    m_window->showFullScreen();
}

bool PresenterMode::eventFilter(QObject* watched, QEvent* event) {
    if (m_active && event->type() == QEvent::Polish) {
        auto* plot = qobject_cast<QCustomPlot*>(watched);
        if (plot && std::find(m_scaled.begin(), m_scaled.end(), plot) == m_scaled.end()) {
            // Made now, it took its fonts from the large application font (when it inherits it):
            // only its lines still need the scale, and leaving must bring its fonts down.
            if (plot->xAxis && m_font.pointSizeF() > 0 &&
                plot->xAxis->tickLabelFont().pointSizeF() > m_font.pointSizeF() * 1.01)
                markPlotFontsScaled(plot, kScale);
            scalePlot(plot, kScale);
        }
    }
    return QObject::eventFilter(watched, event);
}

void PresenterMode::leave() {
    qApp->removeEventFilter(this);
    scalePlots(1.0);
    QApplication::setStyle(createStyle(m_styleName));  // deletes the presenter style
    QApplication::setFont(m_font);
    QApplication::setPalette(m_palette);
    restyleSheetWidgets();
    for (const auto& dock : m_hiddenDocks)
        if (dock) dock->show();
    m_window->setWindowState(m_windowState);
    m_window->restoreState(m_dockState);
    m_hiddenDocks.clear();
    tintToolBarIcons(false);
    relayoutToolBars();
    if (!(m_windowState & (Qt::WindowFullScreen | Qt::WindowMaximized))) restoreGeometryExactly(0);
}

void PresenterMode::restoreGeometryExactly(int attempt) {
    // The exact rectangle the window had (restoreGeometry() would shrink a window as large as
    // the screen by 2 px and move it to fit its idea of the frame). A window manager leaving
    // full screen may put back its own idea afterwards, asynchronously: look again a few times.
    if (m_active || m_window->windowState() != m_windowState) return;
    if (m_window->geometry() != m_geometry) m_window->setGeometry(m_geometry);
    if (attempt < 5)
        QTimer::singleShot(attempt == 0 ? 0 : 60, this,
                           [this, attempt] { restoreGeometryExactly(attempt + 1); });
}

void PresenterMode::tintToolBarIcons(bool light) {
    if (!light) {
        for (const auto& [action, icon] : m_toolIcons)
            if (action) action->setIcon(icon);
        m_toolIcons.clear();
        return;
    }
    for (QToolBar* bar : m_window->findChildren<QToolBar*>()) {
        for (QAction* action : bar->actions()) {
            if (action->icon().isNull()) continue;
            m_toolIcons.emplace_back(action, action->icon());
            action->setIcon(lightOnBlack(action->icon(), bar->iconSize(), 110));
        }
    }
}

void PresenterMode::restyleSheetWidgets() {
    // A widget with a style sheet of its own (a banner's colours) keeps the font it had when the
    // sheet was applied: applied again, it takes the type now.
    for (QWidget* widget : m_window->findChildren<QWidget*>()) {
        const QString sheet = widget->styleSheet();
        if (sheet.isEmpty()) continue;
        widget->setStyleSheet(QString());
        widget->setStyleSheet(sheet);
    }
}

void PresenterMode::relayoutToolBars() {
    // Tool buttons keep the size of the old type until their style changes: re-set it.
    for (QToolBar* bar : m_window->findChildren<QToolBar*>()) {
        const Qt::ToolButtonStyle style = bar->toolButtonStyle();
        bar->setToolButtonStyle(style == Qt::ToolButtonIconOnly ? Qt::ToolButtonTextOnly
                                                                : Qt::ToolButtonIconOnly);
        bar->setToolButtonStyle(style);
    }
}

void PresenterMode::scalePlots(double scale) {
    for (const auto& hook : m_replotHooks) disconnect(hook);
    m_replotHooks.clear();
    std::vector<QPointer<QCustomPlot>> plots = std::move(m_scaled);
    m_scaled.clear();
    for (QCustomPlot* plot : m_window->findChildren<QCustomPlot*>())
        if (std::find(plots.begin(), plots.end(), plot) == plots.end()) plots.emplace_back(plot);
    for (const auto& plot : plots)
        if (plot) scalePlot(plot, scale);
}

void PresenterMode::scalePlot(QCustomPlot* plot, double scale) {
    if (std::find(m_scaled.begin(), m_scaled.end(), plot) != m_scaled.end()) return;
    applyPlotScale(plot, scale);
    // Curves and labels a chart adds or re-styles later get the scale too.
    if (scale != 1.0) {
        m_replotHooks.push_back(connect(plot, &QCustomPlot::beforeReplot, plot,
                                        [plot, scale] { applyPlotScale(plot, scale); }));
        m_scaled.emplace_back(plot);
    }
    plot->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace ws::ui
