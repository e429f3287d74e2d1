// SPDX-License-Identifier: GPL-3.0-or-later
// ScreenFit: see screen_fit.h.
#include "ui/shell/screen_fit.h"

#include <QEvent>
#include <QScreen>
#include <QTimer>
#include <QWidget>
#include <algorithm>

namespace ws::ui {

QRect fittedGeometry(QSize preferred, const QRect& available, const QMargins& frame) {
    const QSize room(available.width() - frame.left() - frame.right(),
                     available.height() - frame.top() - frame.bottom());
    const QSize size = preferred.boundedTo(room).expandedTo(QSize(1, 1));
    const QPoint topLeft(
        available.left() + frame.left() + std::max(0, (room.width() - size.width()) / 2),
        available.top() + frame.top() + std::max(0, (room.height() - size.height()) / 2));
    return {topLeft, size};
}

bool fitsWithin(const QRect& frameGeometry, const QRect& available) {
    return available.contains(frameGeometry);
}

namespace {

QMargins frameOf(const QWidget* window) {
    const QRect inner = window->geometry(), outer = window->frameGeometry();
    return {inner.left() - outer.left(), inner.top() - outer.top(), outer.right() - inner.right(),
            outer.bottom() - inner.bottom()};
}

bool fullScreenOrMaximized(const QWidget* window) {
    return window->windowState() & (Qt::WindowFullScreen | Qt::WindowMaximized);
}

}  // namespace

ScreenFit::ScreenFit(QWidget* window, QSize preferred)
    : QObject(window), m_window(window), m_preferred(preferred) {
    window->installEventFilter(this);
}

bool ScreenFit::restoreOrFit(const QByteArray& saved) {
    if (!saved.isEmpty() && m_window->restoreGeometry(saved)) {
        const QScreen* screen = m_window->screen();
        // Before the first show the frame is not known: the restored frame geometry is what
        // the window had, frame included.
        if (fullScreenOrMaximized(m_window) ||
            (screen && fitsWithin(m_window->frameGeometry(), screen->availableGeometry()))) {
            m_placed = m_window->geometry();
            return true;
        }
        m_window->setWindowState(Qt::WindowNoState);
    }
    fit();
    return false;
}

void ScreenFit::fit() {
    const QScreen* screen = m_window->screen();
    if (!screen) {
        m_window->resize(m_preferred);
        m_placed = m_window->geometry();
        return;
    }
    m_placed = fittedGeometry(m_preferred, screen->availableGeometry(), frameOf(m_window));
    m_window->setGeometry(m_placed);
}

bool ScreenFit::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_window && event->type() == QEvent::Show && !m_checked) {
        m_checked = true;
        // After the window manager has framed the window.
        QTimer::singleShot(0, this, [this] { checkShown(); });
    }
    return QObject::eventFilter(watched, event);
}

void ScreenFit::checkShown() {
    const QScreen* screen = m_window->screen();
    if (!screen || m_placed.isNull() || fullScreenOrMaximized(m_window)) return;
    if (m_window->size() != m_placed.size()) return;  // resized by someone else since
    if (fitsWithin(m_window->frameGeometry(), screen->availableGeometry())) return;
    fit();
}

}  // namespace ws::ui
