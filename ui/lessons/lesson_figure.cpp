// SPDX-License-Identifier: GPL-3.0-or-later
// LessonFigure: see lesson_figure.h.
#include "ui/lessons/lesson_figure.h"

#include <QDialog>
#include <QMouseEvent>
#include <QPainter>
#include <QScreen>
#include <QVBoxLayout>

namespace ws::ui {

LessonFigure::LessonFigure(QWidget* parent) : QLabel(parent) {
    setObjectName(QStringLiteral("lessonFigure"));
    setAlignment(Qt::AlignCenter);
    // Its width follows the dock's (fitTo), never the other way round.
    setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
    setCursor(Qt::PointingHandCursor);
    setToolTip(tr("Click to show the figure large (Esc or a click closes it)"));
    hide();
}

void LessonFigure::setFigure(const QString& path) {
    m_image = path.isEmpty() ? QPixmap() : QPixmap(path);
    clear();
    setVisible(!m_image.isNull());
    if (m_width > 0) fitTo(m_width, m_maxHeight);
}

void LessonFigure::fitTo(int width, int maxHeight) {
    m_width = width;
    m_maxHeight = maxHeight;
    if (m_image.isNull()) return;
    QSize size = m_image.size().scaled(std::min(width, m_image.width() * 2),
                                       maxHeight > 0 ? maxHeight : m_image.height() * 2,
                                       Qt::KeepAspectRatio);
    if (!pixmap().isNull() && pixmap().width() == size.width()) return;
    const QPixmap scaled = m_image.scaled(size, Qt::KeepAspectRatio, Qt::SmoothTransformation);
    // A strip under the figure says what a click does, without covering any of it.
    const QFontMetrics fm(font());
    const QString hint = tr("⤢ click to enlarge");
    QPixmap shown(scaled.width(), scaled.height() + fm.height() + 4);
    shown.fill(Qt::transparent);
    QPainter p(&shown);
    p.drawPixmap(0, 0, scaled);
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(QRect(0, scaled.height() + 2, scaled.width(), fm.height()),
               Qt::AlignRight | Qt::AlignVCenter, hint);
    p.end();
    setPixmap(shown);
    setFixedHeight(shown.height());
}

void LessonFigure::mouseReleaseEvent(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton && hasFigure()) {
        showLarge();
        return;
    }
    QLabel::mouseReleaseEvent(event);
}

QDialog* LessonFigure::showLarge() {
    if (m_image.isNull()) return nullptr;
    // For the room: most of the screen, over the views, until a click or Esc.
    auto* dialog = new QDialog(window(), Qt::FramelessWindowHint);
    dialog->setObjectName(QStringLiteral("lessonFigureDialog"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    auto* layout = new QVBoxLayout(dialog);
    layout->setContentsMargins(8, 8, 8, 8);
    auto* image = new QLabel(dialog);
    image->setObjectName(QStringLiteral("lessonFigureLarge"));
    image->setToolTip(tr("Click or press Esc to close"));
    const QScreen* screen = window()->screen();
    const QSize room = screen ? screen->availableGeometry().size() * 0.85 : QSize(1200, 800);
    image->setPixmap(m_image.scaled(room.boundedTo(m_image.size() * 2), Qt::KeepAspectRatio,
                                    Qt::SmoothTransformation));
    layout->addWidget(image);
    // A click anywhere on it closes it, as Esc does.
    struct Closer : QObject {
        using QObject::QObject;
        bool eventFilter(QObject*, QEvent* e) override {
            if (e->type() == QEvent::MouseButtonRelease) static_cast<QDialog*>(parent())->close();
            return false;
        }
    };
    image->installEventFilter(new Closer(dialog));
    dialog->show();
    return dialog;
}

}  // namespace ws::ui
