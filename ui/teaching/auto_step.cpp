// SPDX-License-Identifier: GPL-3.0-or-later
// AutoStep and NarrationLine: see auto_step.h.
#include "ui/teaching/auto_step.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QComboBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QTimer>
#include <QToolButton>
#include <algorithm>

#include "ui/common/run_controller.h"
#include "ui/common/text_fit.h"

namespace ws::ui {
namespace {

QString paceText(int ms) {
    return ms % 1000 == 0 ? QObject::tr("%1 s per phase").arg(ms / 1000)
                          : QObject::tr("%1 s per phase").arg(ms / 1000.0, 0, 'f', 1);
}

QString optimizerName(const std::string& type) {
    const QString t = QString::fromStdString(type);
    if (t.compare(QLatin1String("adamw"), Qt::CaseInsensitive) == 0) return QStringLiteral("AdamW");
    if (t.compare(QLatin1String("sgd"), Qt::CaseInsensitive) == 0) return QStringLiteral("SGD");
    return t;
}

}  // namespace

// --- AutoStep ----------------------------------------------------------------------------------

AutoStep::AutoStep(RunController* controller, QObject* parent)
    : QObject(parent),
      m_controller(controller),
      m_toggle(new QAction(tr("&Auto-step"), this)),
      m_paces(new QActionGroup(this)),
      m_timer(new QTimer(this)) {
    m_toggle->setObjectName(QStringLiteral("autoStepAction"));
    m_toggle->setCheckable(true);
    m_toggle->setShortcut(QKeySequence(Qt::SHIFT | Qt::Key_F10));
    m_toggle->setToolTip(
        tr("While paused: step one layer phase after another at the chosen pace, each narrated "
           "above the tabs, until the step ends (Shift+F10 starts and stops)"));
    connect(m_toggle, &QAction::toggled, this, [this](bool on) { on ? start() : stop(); });
    m_paces->setExclusive(true);
    for (int ms : kPacesMs) {
        QAction* a = m_paces->addAction(paceText(ms));
        a->setObjectName(QStringLiteral("autoStepPace%1").arg(ms));
        a->setCheckable(true);
        a->setData(ms);
        a->setChecked(ms == m_paceMs);
        connect(a, &QAction::triggered, this, [this, ms] { setPaceMs(ms); });
    }
    m_timer->setInterval(m_paceMs);
    connect(m_timer, &QTimer::timeout, this, &AutoStep::tick);
    connect(controller, &RunController::spans, this, &AutoStep::onSpans);
    connect(controller, &RunController::emulatedStep, this,
            [this](const session::EmulatedStep& step) { m_prediction = step.prediction; });
    connect(controller, &RunController::stateChanged, this,
            [this](session::RunState state, const QString&) { onState(state); });
    connect(controller, &RunController::finished, this, [this] {
        stopBecause(tr("the run ended"));
        updateEnabled();
    });
    updateEnabled();
}

QList<QAction*> AutoStep::paceActions() const {
    return m_paces->actions();
}

QWidget* AutoStep::createControls(QWidget* parent) {
    auto* row = new QWidget(parent);
    row->setObjectName(QStringLiteral("autoStepControls"));
    auto* layout = new QHBoxLayout(row);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* button = new QToolButton(row);
    button->setObjectName(QStringLiteral("autoStepButton"));
    button->setDefaultAction(m_toggle);
    button->setToolButtonStyle(Qt::ToolButtonTextOnly);
    auto* pace = new QComboBox(row);
    pace->setObjectName(QStringLiteral("autoStepPace"));
    for (int ms : kPacesMs) pace->addItem(paceText(ms), ms);
    pace->setCurrentIndex(pace->findData(m_paceMs));
    pace->setToolTip(tr("How long each layer phase stays on screen while auto-stepping"));
    connect(pace, &QComboBox::activated, this,
            [this, pace](int index) { setPaceMs(pace->itemData(index).toInt()); });
    connect(this, &AutoStep::paceChanged, pace,
            [pace](int ms) { pace->setCurrentIndex(pace->findData(ms)); });
    layout->addWidget(button);
    layout->addWidget(pace);
    layout->addStretch(1);
    return row;
}

void AutoStep::setPaceMs(int ms) {
    if (ms <= 0 || ms == m_paceMs) return;
    m_paceMs = ms;
    m_timer->setInterval(ms);
    for (QAction* a : m_paces->actions()) a->setChecked(a->data().toInt() == ms);
    emit paceChanged(ms);
}

void AutoStep::start() {
    if (m_running) return;
    session::Session* session = m_controller->session();
    if (!session || m_controller->state() != session::RunState::Paused) {
        const QSignalBlocker block(m_toggle);
        m_toggle->setChecked(false);
        m_stopReason = tr("auto-step needs a paused run: press Pause first");
        return;
    }
    m_running = true;
    m_stopReason.clear();
    m_issued = 0;
    // Decide at the pause the run stands at; a run not yet at its first pause is waited for.
    const int64_t stops = session->pauseStops();
    m_lastStops = stops > 0 ? stops - 1 : 0;
    {
        const QSignalBlocker block(m_toggle);
        m_toggle->setChecked(true);
    }
    m_timer->start();
    emit runningChanged(true);
    tick();  // the first phase at once, then one a beat
}

void AutoStep::stop() {
    if (!m_running) return;
    stopBecause(tr("switched off"));
}

void AutoStep::stopBecause(const QString& why) {
    if (!m_running) return;
    m_running = false;
    m_stopReason = why;
    m_timer->stop();
    {
        const QSignalBlocker block(m_toggle);
        m_toggle->setChecked(false);
    }
    emit runningChanged(false);
}

void AutoStep::tick() {
    if (!m_running) return;
    session::Session* session = m_controller->session();
    if (!session || m_controller->state() != session::RunState::Paused) {
        stopBecause(tr("the run is no longer paused"));
        return;
    }
    // The count first: the phase before that pause stop is then already in the drained events.
    const int64_t stops = session->pauseStops();
    m_controller->drainNow();
    if (!m_running) return;            // the drained events ended the run or un-paused it
    if (stops <= m_lastStops) return;  // the last phase has not paused again: next beat
    if (m_issued > 0 && lastPhaseEndsTheStep()) {
        stopBecause(tr("the step's last layer phase is done"));
        return;
    }
    m_lastStops = stops;
    ++m_issued;
    m_controller->stepLayer();
}

bool AutoStep::lastPhaseEndsTheStep() const {
    if (!m_phase) return false;
    if (m_prediction) {
        const wafer::TimelineSpan* last = wafer::lastPhase(*m_prediction);
        if (last)
            return last->layer == m_phase->layer &&
                   (last->kind == streaming::SpanKind::Backward) == m_phase->backward &&
                   last->micro == m_phase->micro;
    }
    // Not emulated: the backward pass ends at the embeddings (of some micro-batch).
    return m_phase->layer == 0 && m_phase->backward;
}

void AutoStep::onSpans(const std::vector<streaming::Span>& spans) {
    bool changed = false;
    for (const streaming::Span& s : spans) {
        if (s.system > 0) continue;  // every system computes the same phase
        if (s.kind != streaming::SpanKind::Forward && s.kind != streaming::SpanKind::Backward)
            continue;
        m_phase = Phase{s.step, s.layer, s.kind == streaming::SpanKind::Backward, s.micro};
        changed = true;
    }
    if (changed && m_controller->state() == session::RunState::Paused) narrateLastPhase();
}

void AutoStep::onState(session::RunState state) {
    if (state == session::RunState::Paused) {
        narrateLastPhase();
    } else {
        // Running on its own, phases fly past: no line. Ended: nothing to narrate.
        if (m_running) stopBecause(tr("the run is no longer paused"));
        setNarration({});
    }
    updateEnabled();
}

void AutoStep::narrateLastPhase() {
    if (!m_phase) {
        setNarration(
            tr("paused before the first layer: Step Layer (F10) or Auto-step computes "
               "the embeddings' forward pass"));
        return;
    }
    wafer::NarrationContext context;
    if (m_prediction) context = wafer::narrationContext(*m_prediction);
    if (session::Session* session = m_controller->session()) {
        const config::Config& config = session->config();
        context.numBlocks = config.model.numHiddenLayers;
        context.optimizer = optimizerName(config.optimizer.optimizerType).toStdString();
        if (!m_prediction) context.numSystems = config.runconfig.numCsx;
    }
    std::string line;
    if (m_prediction)
        line = wafer::narratePhase(*m_prediction, m_phase->layer, m_phase->backward, m_phase->micro,
                                   context);
    if (line.empty()) {  // not emulated: the phase itself, without what the schedule overlaps
        wafer::TimelineSpan span;
        span.layer = m_phase->layer;
        span.micro = m_phase->micro;
        span.kind =
            m_phase->backward ? streaming::SpanKind::Backward : streaming::SpanKind::Forward;
        line = wafer::narrateSpan(span, context);
    }
    setNarration(tr("Step %1 · %2").arg(m_phase->step + 1).arg(QString::fromStdString(line)));
}

void AutoStep::setNarration(const QString& line) {
    if (line == m_narration) return;
    m_narration = line;
    emit narrationChanged(line);
}

void AutoStep::updateEnabled() {
    m_toggle->setEnabled(m_running || (m_controller->session() &&
                                       m_controller->state() == session::RunState::Paused));
}

// --- NarrationLine -----------------------------------------------------------------------------

NarrationLine::NarrationLine(QWidget* parent) : QLabel(parent) {
    setObjectName(QStringLiteral("narrationLine"));
    setWordWrap(true);
    setTextFormat(Qt::PlainText);
    setFrameShape(QFrame::StyledPanel);
    setMargin(6);
    setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // never widens the window
    followApplicationFont();
    // QApplication::setFont (Presenter Mode) tells the application object, not every widget.
    qApp->installEventFilter(this);
    hide();
}

void NarrationLine::setLine(const QString& line) {
    m_full = line;
    setToolTip(line);
    fitText();
    setVisible(!line.isEmpty());
}

QStringList NarrationLine::wrapped() const {
    const int w = contentsRect().width() - 2 * margin();
    return wrapLines({m_full}, fontMetrics(), w > 100 ? w : 1000);
}

void NarrationLine::fitText() {
    // Up to kMaxLines lines, the last one elided when the text needs more (the tooltip has it
    // whole): a wrapped label given fewer lines' height than its text cut the last line in half.
    QStringList lines = wrapped();
    if (lines.size() > kMaxLines) {
        const QString rest = lines.mid(kMaxLines - 1).join(QLatin1Char(' '));
        const int w = contentsRect().width() - 2 * margin();
        lines = lines.mid(0, kMaxLines - 1);
        lines << fontMetrics().elidedText(rest, Qt::ElideRight, std::max(1, w));
    }
    const QString shown = lines.join(QLatin1Char('\n'));
    if (shown != text()) setText(shown);
    if (int(lines.size()) != m_shownLines) {
        m_shownLines = int(lines.size());
        updateGeometry();
    }
}

QSize NarrationLine::minimumSizeHint() const {
    // The lines it shows (two at least, kMaxLines at most): every line it draws is whole.
    const int frame = 2 * (frameWidth() + margin());
    const int lines = std::clamp(int(wrapped().size()), 2, kMaxLines);
    return {0, lines * fontMetrics().lineSpacing() + frame};
}

QSize NarrationLine::sizeHint() const {
    return minimumSizeHint();
}

void NarrationLine::resizeEvent(QResizeEvent* event) {
    QLabel::resizeEvent(event);
    fitText();
}

void NarrationLine::changeEvent(QEvent* event) {
    QLabel::changeEvent(event);
    if (event->type() == QEvent::FontChange) fitText();
}

bool NarrationLine::eventFilter(QObject* watched, QEvent* event) {
    // An explicitly set font does not follow QApplication::setFont: re-derive it.
    if (watched == qApp && event->type() == QEvent::ApplicationFontChange) followApplicationFont();
    return QLabel::eventFilter(watched, event);
}

void NarrationLine::followApplicationFont() {
    QFont f = QApplication::font();
    if (f.pointSizeF() > 0)
        f.setPointSizeF(f.pointSizeF() * kScale);
    else
        f.setPixelSize(int(f.pixelSize() * kScale + 0.5));
    f.setBold(true);
    setFont(f);
}

}  // namespace ws::ui
