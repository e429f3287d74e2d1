// SPDX-License-Identifier: GPL-3.0-or-later
// LessonsPanel's pointing at things (lessons_panel.h): a step's view brought forward (tab,
// stacked page, dock, collapsed splitter pane, scroll position) and the orange HighlightFrame that
// follows it as it moves, drawn on the part of it that shows. Which widget a view or a highlight
// name stands for, the studio says (LessonHost).
#include <QCoreApplication>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QPainter>
#include <QScrollArea>
#include <QScrollBar>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
#include <QTimer>
#include <algorithm>

#include "ui/lessons/lesson_host.h"
#include "ui/lessons/lessons_panel.h"

namespace ws::ui {
namespace {

// The scroll bar's value that shows [start, start + length) of the content in a view `view` px
// long now showing from `value`: unchanged when it shows already; its start (less a margin) when
// it is longer than the view, so a tall widget's title shows, not its middle as
// QScrollArea::ensureWidgetVisible would have it; else just enough to show its far end.
int valueShowing(int start, int length, int view, int value) {
    constexpr int margin = 8;
    if (start >= value && start + length <= value + view) return value;
    if (length + 2 * margin > view || start < value) return start - margin;
    return start + length + margin - view;
}

// Every scroll area around `w` scrolls to it, inner ones first (they move it into their view).
void scrollIntoView(QWidget* w) {
    for (QWidget* p = w->parentWidget(); p; p = p->parentWidget()) {
        auto* scroll = qobject_cast<QScrollArea*>(p);
        if (!scroll || !scroll->widget() || !scroll->widget()->isAncestorOf(w)) continue;
        const QRect r(w->mapTo(scroll->widget(), QPoint(0, 0)), w->size());
        const QSize view = scroll->viewport()->size();
        QScrollBar* h = scroll->horizontalScrollBar();
        QScrollBar* v = scroll->verticalScrollBar();
        h->setValue(valueShowing(r.left(), r.width(), view.width(), h->value()));
        v->setValue(valueShowing(r.top(), r.height(), view.height(), v->value()));
    }
}

bool inScrollArea(const QWidget* w) {
    for (const QWidget* p = w ? w->parentWidget() : nullptr; p; p = p->parentWidget())
        if (qobject_cast<const QScrollArea*>(p)) return true;
    return false;
}

// Keeps a step's view in view while the step settles (its run pausing, the views filling in and
// growing under it), for a highlight outside the view (a tool bar button): until the learner
// scrolls or ~10 s have passed. Owned by the step's HighlightFrame.
class ViewKeeper : public QObject {
public:
    ViewKeeper(QWidget* view, QObject* owner) : QObject(owner), m_view(view) {
        m_since.start();
        connect(view, &QObject::destroyed, this, [this] { m_view = nullptr; });
        for (QWidget* w = view; w; w = w->parentWidget()) {
            w->installEventFilter(this);
            if (auto* area = qobject_cast<QAbstractScrollArea*>(w))
                for (QWidget* input : {static_cast<QWidget*>(area->viewport()),
                                       static_cast<QWidget*>(area->verticalScrollBar())})
                    input->installEventFilter(this);
        }
    }

protected:
    bool eventFilter(QObject* watched, QEvent* event) override {
        switch (event->type()) {
            case QEvent::Wheel:
            case QEvent::MouseButtonPress:
            case QEvent::KeyPress:
                m_done = true;
                break;
            case QEvent::Move:
            case QEvent::Resize:
            case QEvent::LayoutRequest:
                if (!m_done && !m_scrolling) QTimer::singleShot(0, this, [this] { keep(); });
                break;
            default:
                break;
        }
        return QObject::eventFilter(watched, event);
    }

private:
    void keep() {
        const QWidget* view = m_view;
        if (m_done || m_scrolling || view == nullptr || !view->isVisible()) return;
        if (m_since.elapsed() > 10000) {
            m_done = true;
            return;
        }
        if (visibleRectOf(view, view->window()).size() == view->size()) return;
        m_scrolling = true;
        scrollIntoView(m_view);
        m_scrolling = false;
    }

    QWidget* m_view;  // null once destroyed
    QElapsedTimer m_since;
    bool m_done = false;
    bool m_scrolling = false;
};

// Brings `w` forward: every tab page and stacked page on its way up is made current, a dock
// holding it is shown and raised (tabbed docks), a splitter pane it sits in that was collapsed
// gets room again, and every scroll area scrolls to it.
void reveal(QWidget* w) {
    if (!w) return;
    QWidget* child = w;
    for (QWidget* p = w->parentWidget(); p; child = p, p = p->parentWidget()) {
        if (auto* stack = qobject_cast<QStackedWidget*>(p)) {
            if (auto* tabs = qobject_cast<QTabWidget*>(stack->parentWidget()))
                tabs->setCurrentWidget(child);
            else
                stack->setCurrentWidget(child);
        } else if (auto* splitter = qobject_cast<QSplitter*>(p)) {
            const int index = splitter->indexOf(child);
            QList<int> sizes = splitter->sizes();
            if (index >= 0 && index < sizes.size() && sizes[index] == 0) {
                int total = 0;
                for (int size : sizes) total += size;
                sizes[index] = std::max(total / int(sizes.size()), 1);
                splitter->setSizes(sizes);
            }
        } else if (auto* dock = qobject_cast<QDockWidget*>(p)) {
            dock->show();
            dock->raise();
        }
    }
    QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
    scrollIntoView(w);
}

}  // namespace

// --- HighlightFrame ---------------------------------------------------------------------------

QRect visibleRectOf(const QWidget* w, const QWidget* in) {
    if (!w || !in || !w->isVisible()) return {};
    QRect shown(w->mapTo(in, QPoint(0, 0)), w->size());
    for (const QWidget* p = w->parentWidget(); p; p = p->parentWidget()) {
        shown &= QRect(p->mapTo(in, QPoint(0, 0)), p->size());
        if (p == in) break;
    }
    return shown;
}

HighlightFrame::HighlightFrame(QWidget* target, QWidget* window, QWidget* owner)
    : QWidget(window), m_target(target), m_owner(owner), m_timer(new QTimer(this)) {
    setObjectName(QStringLiteral("lessonHighlight"));
    setAttribute(Qt::WA_TransparentForMouseEvents);
    setAttribute(Qt::WA_NoSystemBackground);
    m_timer->setInterval(200);
    connect(m_timer, &QTimer::timeout, this, [this] {
        ++m_ticks;
        follow();
        update();
    });
    connect(target, &QObject::destroyed, this, [this] {
        m_target = nullptr;
        hide();
    });
    for (QWidget* w = target; w && w != window; w = w->parentWidget()) {
        w->installEventFilter(this);
        // The learner scrolling a view around it: from then on the outline follows only.
        if (auto* area = qobject_cast<QAbstractScrollArea*>(w)) {
            for (QWidget* input : {static_cast<QWidget*>(area->viewport()),
                                   static_cast<QWidget*>(area->verticalScrollBar()),
                                   static_cast<QWidget*>(area->horizontalScrollBar())})
                input->installEventFilter(this);
        }
    }
    if (owner) {
        owner->installEventFilter(this);
        connect(owner, &QObject::destroyed, this, [this] { m_owner = nullptr; });
    }
    m_timer->start();
    follow();
}

bool HighlightFrame::eventFilter(QObject* watched, QEvent* event) {
    switch (event->type()) {
        case QEvent::Wheel:
        case QEvent::MouseButtonPress:
        case QEvent::KeyPress:
            m_keepInView = false;
            break;
        case QEvent::Move:
        case QEvent::Resize:
        case QEvent::Show:
        case QEvent::Hide:
        case QEvent::LayoutRequest:
            follow();
            QTimer::singleShot(0, this, [this] { follow(); });  // after the layout ran
            break;
        default:
            break;
    }
    return QWidget::eventFilter(watched, event);
}

void HighlightFrame::follow() {
    // Only the part of the widget that shows: a widget scrolled half out of its view, or in a
    // pane narrower than itself, must not have its outline drawn over the docks beside it. The
    // lesson's dock closed (or hidden behind another tabbed dock): no outline either.
    const QWidget* owner = m_owner;
    const bool ownerHidden = owner != nullptr && !owner->isVisible();
    const QRect shown = ownerHidden ? QRect() : visibleRectOf(m_target, parentWidget());
    // While the step settles (its run pausing, the views filling in and growing), the widget is
    // kept in view, until the learner scrolls or ~10 s have passed.
    if (m_keepInView && !m_scrolling && m_ticks < 50 && !ownerHidden && m_target &&
        m_target->isVisible() && shown.size() != m_target->size()) {
        m_scrolling = true;
        scrollIntoView(m_target);
        m_scrolling = false;
        if (const QRect now = visibleRectOf(m_target, parentWidget()); now != shown) {
            follow();
            return;
        }
    }
    if (shown.width() < 6 || shown.height() < 6) {
        hide();
        return;
    }
    setGeometry(shown);
    show();
    raise();
}

void HighlightFrame::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    // Flashes for the first two seconds, then stays: a projector shows it either way.
    const bool dim = m_ticks < 10 && m_ticks % 2 == 1;
    QColor colour(255, 140, 0, dim ? 90 : 255);
    // Inside the widget's own rectangle: nothing beside it is covered.
    const double pen = std::min({4.0, width() / 4.0, height() / 4.0});
    p.setPen(QPen(colour, pen));
    p.setBrush(Qt::NoBrush);
    p.drawRoundedRect(QRectF(rect()).adjusted(pen / 2, pen / 2, -pen / 2, -pen / 2), 4, 4);
}

// --- LessonsPanel: views and highlights --------------------------------------------------------

void LessonsPanel::showView(const lesson::LessonStep& step) {
    if (step.view == lesson::View::None) return;
    m_host->showTab(QString::fromLatin1(lesson::viewName(step.view)));
    reveal(m_host->viewWidget(step.view, QString::fromStdString(step.subView)));
}

QWidget* LessonsPanel::highlighted() const {
    return m_frame ? m_frame->target() : nullptr;
}

void LessonsPanel::setHighlight(const QString& name) {
    delete m_frame;
    m_frame = nullptr;
    if (name.isEmpty()) return;
    QWidget* target = m_host->highlightTarget(name);
    if (!target) return;
    reveal(target);
    m_frame = new HighlightFrame(target, target->window(), this);
    // The frame keeps a widget inside a scrolled view in view itself; for one outside (a tool
    // bar button) the step's view is kept there instead.
    if (!inScrollArea(target) && m_lesson)
        if (QWidget* view =
                m_host->viewWidget(m_lesson->steps[m_step].view,
                                   QString::fromStdString(m_lesson->steps[m_step].subView));
            view && inScrollArea(view))
            new ViewKeeper(view, m_frame);
    connect(m_frame, &QObject::destroyed, this, [this] { m_frame = nullptr; });
}

}  // namespace ws::ui
