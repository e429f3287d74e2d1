// SPDX-License-Identifier: GPL-3.0-or-later
// Fitting a top-level window to the screen it opens on (issue 31: the first window asked for
// 1400 x 900 on a 1366 x 768 laptop and its right edge, status bar and Log were off-screen).
// ScreenFit sizes a window no larger than its screen's available geometry (what panels and docks
// of the desktop leave), centred there, keeps a restored geometry only when it still fits, and
// looks again once the window is shown and the window manager has told its frame (title bar,
// borders). GUI thread only.
#pragma once

#include <QMargins>
#include <QObject>
#include <QRect>
#include <QSize>

class QWidget;

namespace ws::ui {

// The geometry (without frame) of a window that would like `preferred` on a screen whose
// available area is `available`, with `frame` around it: as large as it would like, no larger
// than the area less the frame, centred in the area.
QRect fittedGeometry(QSize preferred, const QRect& available, const QMargins& frame = {});
// Whether a window's frame geometry lies within a screen's available area.
bool fitsWithin(const QRect& frameGeometry, const QRect& available);

class ScreenFit : public QObject {
    Q_OBJECT
public:
    // Watches `window` (a top-level widget, not yet shown) from now on.
    ScreenFit(QWidget* window, QSize preferred);

    // Restores `saved` (QWidget::saveGeometry) when it still fits the screen it names, else
    // sizes the window to fit (fittedGeometry). True when the saved geometry was used.
    bool restoreOrFit(const QByteArray& saved);
    // Sizes the window to fit its screen now.
    void fit();

protected:
    // At the first show: with the real frame known, a window that still hangs past the screen
    // (a saved geometry from a larger screen, a tall title bar) is fitted again, unless someone
    // resized it since (tests, a command line).
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void checkShown();
    QWidget* m_window;
    QSize m_preferred;
    QRect m_placed;  // the geometry this object gave the window (null: none)
    bool m_checked = false;
};

}  // namespace ws::ui
