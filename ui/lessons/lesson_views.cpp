// LessonsPanel's pointing at things (lessons_panel.h): a step's view brought forward (tab,
// stacked page, scroll position), the widget a highlight name stands for, and the orange
// HighlightFrame that follows it as it moves.
#include <QAction>
#include <QHash>
#include <QPainter>
#include <QScrollArea>
#include <QStackedWidget>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>

#include "ui/config/config_form.h"
#include "ui/config/config_tab.h"
#include "ui/config/yaml_editor.h"
#include "ui/lessons/lessons_panel.h"
#include "ui/shell/main_window.h"

namespace ws::ui {
namespace {

// Brings `w` forward: every tab page and stacked page on its way up is made current, and every
// scroll area scrolls to it.
void reveal(QWidget* w) {
    if (!w) return;
    QWidget* child = w;
    for (QWidget* p = w->parentWidget(); p; child = p, p = p->parentWidget()) {
        if (auto* stack = qobject_cast<QStackedWidget*>(p)) {
            if (auto* tabs = qobject_cast<QTabWidget*>(stack->parentWidget()))
                tabs->setCurrentWidget(child);
            else
                stack->setCurrentWidget(child);
        } else if (auto* scroll = qobject_cast<QScrollArea*>(p)) {
            scroll->ensureWidgetVisible(w);
        }
    }
}

QWidget* findNamed(QWidget* root, const QString& name) {
    if (name.endsWith(QLatin1Char('*'))) {
        const QString prefix = name.chopped(1);
        for (QWidget* w : root->findChildren<QWidget*>())
            if (w->objectName().startsWith(prefix)) return w;
        return nullptr;
    }
    return root->findChild<QWidget*>(name);
}

// The widget a sub-view name stands for, per tab (lesson::subViewNames).
QString subViewObjectName(lesson::View view, const QString& sub) {
    static const QHash<QString, QString> wafer = {{"heatmap", "utilizationMap"},
                                                  {"timeline", "timelineView"},
                                                  {"cluster", "clusterDiagram"},
                                                  {"layer_norms", "layerNormChart"}};
    static const QHash<QString, QString> training = {{"loss", "Loss"},
                                                     {"learning_rate", "Learning rate"},
                                                     {"grad_norm", "Gradient norm"},
                                                     {"throughput", "Throughput"}};
    static const QHash<QString, QString> sweeps = {{"table", "SweepTable"},
                                                   {"heatmap", "heatmap_*"},
                                                   {"parallel", "parallel_coords"},
                                                   {"transfer", "transfer_*"},
                                                   {"coord_check", "CoordVerdict"}};
    switch (view) {
        case lesson::View::Wafer:
            return wafer.value(sub);
        case lesson::View::Training:
            return training.value(sub);
        case lesson::View::Sweeps:
            return sweeps.value(sub);
        default:
            return {};
    }
}

}  // namespace

// --- HighlightFrame ---------------------------------------------------------------------------

HighlightFrame::HighlightFrame(QWidget* target, QWidget* window)
    : QWidget(window), m_target(target), m_timer(new QTimer(this)) {
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
    for (QWidget* w = target; w && w != window; w = w->parentWidget()) w->installEventFilter(this);
    m_timer->start();
    follow();
}

bool HighlightFrame::eventFilter(QObject* watched, QEvent* event) {
    switch (event->type()) {
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
    QWidget* target = m_target;
    if (target == nullptr || !target->isVisible()) {
        hide();
        return;
    }
    const QPoint at = target->mapTo(parentWidget(), QPoint(0, 0));
    setGeometry(QRect(at, target->size()).adjusted(-5, -5, 5, 5));
    show();
    raise();
}

void HighlightFrame::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    // Flashes for the first two seconds, then stays: a projector shows it either way.
    const bool dim = m_ticks < 10 && m_ticks % 2 == 1;
    QColor colour(255, 140, 0, dim ? 90 : 255);
    p.setPen(QPen(colour, 5));
    p.setBrush(Qt::NoBrush);
    p.drawRoundedRect(QRectF(rect()).adjusted(2.5, 2.5, -2.5, -2.5), 6, 6);
}

// --- LessonsPanel: views and highlights --------------------------------------------------------

void LessonsPanel::showView(const lesson::LessonStep& step) {
    if (step.view == lesson::View::None) return;
    m_window->showTab(QString::fromLatin1(lesson::viewName(step.view)));
    if (step.subView.empty()) return;
    const QString sub = QString::fromStdString(step.subView);
    if (step.view == lesson::View::Config) {
        if (auto* tab = m_window->findChild<ConfigTab*>(QStringLiteral("configTab")))
            reveal(sub == QLatin1String("yaml") ? static_cast<QWidget*>(tab->yamlEditor())
                                                : static_cast<QWidget*>(tab->form()));
        return;
    }
    const QString name = subViewObjectName(step.view, sub);
    if (!name.isEmpty()) reveal(findNamed(m_window, name));
}

QStringList LessonsPanel::highlightObjectNames(const QString& highlight) {
    // "action:X": the run toolbar's button for action X. A trailing * matches a prefix.
    static const QHash<QString, QStringList> names = {
        {"run_button", {"action:runAction"}},
        {"pause_button", {"action:pauseAction"}},
        {"step_layer_button", {"action:stepLayerAction"}},
        {"continue_button", {"action:continueAction"}},
        {"stop_button", {"action:stopAction"}},
        {"wafer_spec", {"wafer.spec"}},
        {"num_systems", {"runconfig.num_csx"}},
        {"weight_buffer_layers", {"wafer.weight_buffer_layers"}},
        {"micro_batch_size",
         {"runconfig.micro_batch_size", "train_input.micro_batch_size", "configFacts"}},
        {"learning_rate",
         {"optimizer.learning_rate", "constantLearningRate", "schedulePieces", "Learning rate"}},
        {"loss_chart", {"Loss"}},
        {"heatmap", {"utilizationMap"}},
        {"timeline", {"timelineView"}},
        {"cluster_diagram", {"clusterDiagram"}},
        {"buffer_slots", {"waferBufferSlots", "bufferSlots", "timelineView"}},
        {"phase_label", {"waferPhase"}},
        {"step_time", {"waferSummary"}},
        {"mfu", {"waferSummary"}},
        {"sparsity", {"model.sparsity", "sparsity", "utilizationMap"}},
        {"coord_check", {"coordCheckView", "CoordVerdict"}},
        {"wafer_fit", {"configFit"}},
    };
    return names.value(highlight);
}

QWidget* LessonsPanel::highlighted() const {
    return m_frame ? m_frame->target() : nullptr;
}

void LessonsPanel::setHighlight(const QString& name) {
    delete m_frame;
    m_frame = nullptr;
    if (name.isEmpty()) return;
    // The first candidate the step's view shows; else the first that exists, brought forward.
    QWidget* target = nullptr;
    QWidget* hidden = nullptr;
    for (const QString& candidate : highlightObjectNames(name)) {
        QWidget* found = nullptr;
        if (candidate.startsWith(QLatin1String("action:"))) {
            auto* action = m_window->findChild<QAction*>(candidate.mid(7));
            auto* toolbar = m_window->findChild<QToolBar*>(QStringLiteral("RunToolBar"));
            if (action && toolbar) found = toolbar->widgetForAction(action);
        } else {
            found = findNamed(m_window, candidate);
        }
        if (found && found->isVisible()) {
            target = found;
            break;
        }
        if (found && !hidden) hidden = found;
    }
    if (!target) target = hidden;
    if (!target) return;
    reveal(target);
    m_frame = new HighlightFrame(target, target->window());
    connect(m_frame, &QObject::destroyed, this, [this] { m_frame = nullptr; });
}

}  // namespace ws::ui
