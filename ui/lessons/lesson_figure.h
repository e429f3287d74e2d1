// SPDX-License-Identifier: GPL-3.0-or-later
// LessonFigure: a lesson step's figure in the Lessons dock ("lessonFigure"). Drawn to the dock's
// width (never wider than twice the image, never taller than the height the panel allows), with
// "⤢ click to enlarge" under it; a click shows it large over the views
// ("lessonFigureDialog", frameless, most of the screen; a click or Esc closes it). The figures
// are drawn to be read at a dock's width (tests/ui/lessons/render_lesson_figures.cpp). GUI
// thread only.
#pragma once

#include <QLabel>
#include <QPixmap>

class QDialog;

namespace ws::ui {

class LessonFigure : public QLabel {
    Q_OBJECT
public:
    explicit LessonFigure(QWidget* parent = nullptr);

    // The image at `path` (empty: none, and the figure hides).
    void setFigure(const QString& path);
    bool hasFigure() const { return !m_image.isNull(); }
    const QPixmap& image() const { return m_image; }
    // Draws the figure to `width` pixels at most, and `maxHeight` at most (the panel's share).
    void fitTo(int width, int maxHeight);
    // The figure large, for the room; null without a figure.
    QDialog* showLarge();

protected:
    void mouseReleaseEvent(QMouseEvent* event) override;

private:
    QPixmap m_image;  // as drawn
    int m_width = 0, m_maxHeight = 0;
};

}  // namespace ws::ui
