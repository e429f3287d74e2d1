// SPDX-License-Identifier: GPL-3.0-or-later
// LessonsPanel: see lessons_panel.h.
#include "ui/lessons/lessons_panel.h"

#include <QAction>
#include <QComboBox>
#include <QDialog>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QMessageBox>
#include <QPainter>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QStackedWidget>
#include <QStyle>
#include <QTabWidget>
#include <QTextBrowser>
#include <QTextDocumentFragment>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>
#include <cmath>

#include "engine/config/config_yaml.h"
#include "engine/sweep/runner.h"
#include "ui/common/run_controller.h"
#include "ui/lessons/lesson_figure.h"
#include "ui/lessons/lesson_host.h"
#include "ui/lessons/lesson_try_box.h"

namespace ws::ui {
namespace {

// The key a lesson is listed under: its canonical path, or the path as given when the system
// refuses it (a file name past 255 bytes must not throw out of the panel).
QString lessonKey(const std::filesystem::path& file) {
    std::error_code ec;
    const std::filesystem::path canonical = std::filesystem::weakly_canonical(file, ec);
    return QString::fromStdString((ec ? file.lexically_normal() : canonical).string());
}

QString qs(const std::string& s) {
    return QString::fromStdString(s);
}

}  // namespace

// --- LessonsPanel -----------------------------------------------------------------------------

LessonsPanel::LessonsPanel(LessonHost* host, QWidget* parent)
    : QWidget(parent), m_host(host), m_runSelection(host), m_poll(new QTimer(this)) {
    setObjectName(QStringLiteral("lessonsPanel"));
    setFocusPolicy(Qt::StrongFocus);
    auto* layout = new QVBoxLayout(this);

    auto* pick = new QHBoxLayout;
    m_lessons = new QComboBox(this);
    m_lessons->setObjectName(QStringLiteral("lessonList"));
    // Long lesson titles must not widen the dock (and the window past a laptop's screen).
    m_lessons->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_lessons->setMinimumContentsLength(12);
    m_openFile = new QPushButton(tr("Open lesson file…"), this);
    m_openFile->setObjectName(QStringLiteral("openLessonFile"));
    pick->addWidget(m_lessons, 1);
    pick->addWidget(m_openFile);
    layout->addLayout(pick);

    m_lessonTitle = new QLabel(this);
    m_lessonTitle->setObjectName(QStringLiteral("lessonTitle"));
    m_lessonTitle->setWordWrap(true);
    m_counter = new QLabel(this);
    m_counter->setObjectName(QStringLiteral("lessonStepCounter"));
    m_stepTitle = new QLabel(this);
    m_stepTitle->setObjectName(QStringLiteral("lessonStepTitle"));
    m_stepTitle->setWordWrap(true);
    sizeStepTitle();
    m_text = new QTextBrowser(this);
    m_text->setObjectName(QStringLiteral("lessonText"));
    m_text->setFocusPolicy(Qt::NoFocus);
    m_text->setOpenExternalLinks(true);
    m_formula = new QLabel(this);
    m_formula->setObjectName(QStringLiteral("lessonFormula"));
    m_formula->setWordWrap(true);
    m_formula->setAlignment(Qt::AlignCenter);
    m_formula->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_formula->setStyleSheet(
        QStringLiteral("QLabel { font-family: monospace; font-size: 115%; padding: 6px;"
                       " border: 1px solid palette(mid); border-radius: 4px; }"));
    m_figure = new LessonFigure(this);
    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("lessonStatus"));
    m_status->setWordWrap(true);
    m_status->setMinimumHeight(m_status->fontMetrics().lineSpacing() * 2);

    m_tryBox = new LessonTryBox(this);

    auto* nav = new QHBoxLayout;
    m_back = new QPushButton(tr("◀ Back"), this);
    m_back->setObjectName(QStringLiteral("lessonBack"));
    m_next = new QPushButton(tr("Next ▶"), this);
    m_next->setObjectName(QStringLiteral("lessonNext"));
    for (QPushButton* b : {m_back, m_next}) b->setFocusPolicy(Qt::NoFocus);
    nav->addWidget(m_back);
    nav->addStretch(1);
    nav->addWidget(m_next);

    layout->addWidget(m_lessonTitle);
    layout->addWidget(m_counter);
    layout->addWidget(m_stepTitle);
    layout->addWidget(m_text, 1);
    layout->addWidget(m_formula);
    layout->addWidget(m_figure);
    layout->addWidget(m_status);
    layout->addWidget(m_tryBox);
    // Auto-step (Run menu) where the teacher stands: steps a paused run phase by phase.
    layout->addWidget(m_host->createAutoStepControls(this));
    layout->addLayout(nav);

    fillLessonList();
    connect(m_lessons, &QComboBox::activated, this, [this](int index) {
        const QString path = m_lessons->itemData(index).toString();
        if (!path.isEmpty()) openLesson(path);
    });
    connect(m_openFile, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Open lesson"), qs(lesson::defaultLessonDir().string()),
            tr("Lessons (*.yaml *.yml);;All files (*)"));
        if (!path.isEmpty()) openLesson(path);
    });
    connect(m_back, &QPushButton::clicked, this, [this] { back(); });
    connect(m_next, &QPushButton::clicked, this, [this] { next(); });
    connect(m_tryBox, &LessonTryBox::checkRequested, this, [this] { check(); });
    connect(m_tryBox, &LessonTryBox::showMeRequested, this, [this] { showMe(); });

    m_poll->setInterval(50);
    connect(m_poll, &QTimer::timeout, this, [this] {
        RunController* controller = m_host->runController();
        if ((m_driver || m_waitingToStart) && m_study == lesson::Action::Kind::None &&
            m_sinceProgress.isValid() && m_sinceProgress.elapsed() >= m_actionTimeout.count()) {
            timeOut();
            return;
        }
        if (m_study != lesson::Action::Kind::None) {
            if (!m_studyStarted && !controller->isActive()) startStudy();
            if (m_studyStarted) m_poll->stop();  // its finished signal ends it
            return;
        }
        if (m_waitingToStart) {
            if (!controller->isActive()) startPendingRun();
            return;
        }
        if (!m_driver) {
            m_poll->stop();
            return;
        }
        // A pause stop counted after the last batch brings no event: drain to look again.
        if (controller->isActive())
            controller->drainNow();
        else
            advance(0);
    });
    connect(m_host->runController(), &RunController::eventBatch, this, &LessonsPanel::onEvents);
    connect(m_host, &LessonHost::coordCheckFinished, this, [this](bool ok, const QString& message) {
        if (m_study != lesson::Action::Kind::CoordCheck || !m_studyStarted) return;
        const auto* result = m_host->lastCoordCheck();
        if (ok && result) {
            m_studies.coordCheck = *result;
            m_studies.coordWidths = m_studyAction.widths;
        }
        studyFinished(ok && result, QTextDocumentFragment::fromHtml(message).toPlainText());
    });
    connect(m_host, &LessonHost::sweepFinished, this, [this](const sweep::SweepOutcome& outcome) {
        if (m_study != lesson::Action::Kind::Sweep || !m_studyStarted) return;
        const bool ok = outcome.status == "finished";
        if (ok) lesson::noteSweep(m_studies, outcome);
        studyFinished(ok, qs("the sweep " + outcome.status +
                             (outcome.detail.empty() ? "" : ": " + outcome.detail)));
    });
    connect(
        m_host, &LessonHost::answersChecked, this,
        [this](bool ok, const QString& message, const lesson::RunObservation::Answers& answers) {
            if (m_study != lesson::Action::Kind::CheckAnswers || !m_studyStarted) return;
            if (ok) m_current.answers = answers;
            studyFinished(ok, tr("the answer check: %1").arg(message));
        });
    showStepText();
    updateButtons();
}

LessonsPanel::~LessonsPanel() {
    delete m_frame;
}

void LessonsPanel::fitFigure() {
    // The dock's whole width, and at most 45 % of its height: the text must stay readable.
    const QMargins margins = layout()->contentsMargins();
    m_figure->fitTo(std::max(120, width() - margins.left() - margins.right()),
                    std::max(120, int(height() * 0.45)));
}

QDialog* LessonsPanel::showFigureLarge() {
    return m_figure->showLarge();
}

void LessonsPanel::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    fitFigure();
}

void LessonsPanel::fillLessonList() {
    m_lessons->clear();
    m_lessons->addItem(tr("Choose a lesson…"));
    for (const lesson::LessonEntry& e : lesson::listLessons(lesson::defaultLessonDir())) {
        const QString name = qs(e.file.filename().string());
        if (e.title.empty()) {
            // "does not load" first: the list is narrow, and the file name is in the tooltip.
            m_lessons->addItem(style()->standardIcon(QStyle::SP_MessageBoxWarning),
                               tr("%1  does not load: %2").arg(name.left(2), name),
                               lessonKey(e.file));
            m_lessons->setItemData(m_lessons->count() - 1, qs(e.error), Qt::ToolTipRole);
            continue;
        }
        m_lessons->addItem(QStringLiteral("%1  %2").arg(name.left(2), qs(e.title)),
                           lessonKey(e.file));
    }
}

bool LessonsPanel::openLesson(const QString& path) {
    auto loaded = lesson::loadLesson(path.toStdString());
    if (!loaded.ok()) {
        showError(tr("Lesson file does not load"),
                  tr("%1 does not load:\n\n%2").arg(path, qs(loaded.error().message)));
        return false;
    }
    m_driver.reset();
    m_waitingToStart = false;
    m_runSelection.lessonOpened();
    m_lesson = std::move(loaded).value();
    m_lessonTitle->setText(QStringLiteral("<b>%1</b>").arg(qs(m_lesson->title).toHtmlEscaped()));
    m_lessonTitle->setToolTip(qs(m_lesson->summary));
    const int listed = m_lessons->findData(lessonKey(path.toStdString()));
    m_lessons->setCurrentIndex(std::max(listed, 0));
    enterStep(0);
    m_host->showLessonStart(m_lesson->start.config, qs(m_lesson->title));
    return true;
}

void LessonsPanel::sizeStepTitle() {
    QFont big = font();
    if (big.pointSizeF() > 0)
        big.setPointSizeF(big.pointSizeF() * 1.4);
    else
        big.setPixelSize(int(big.pixelSize() * 1.4 + 0.5));
    big.setBold(true);
    m_stepTitle->setFont(big);
}

void LessonsPanel::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::FontChange) sizeStepTitle();
}

std::optional<config::LoadedConfig> LessonsPanel::documentConfig() const {
    return m_host->runnableConfig();
}

void LessonsPanel::enterStep(size_t index) {
    if (!m_lesson || index >= m_lesson->steps.size()) return;
    // A study of the step left behind is abandoned: a sweep stops (a coord check cannot be
    // cancelled; its result is not taken).
    if (m_study == lesson::Action::Kind::Sweep && m_studyStarted) m_host->stopSweep();
    m_study = lesson::Action::Kind::None;
    m_finishedStudy = lesson::Action::Kind::None;
    m_driver.reset();
    m_waitingToStart = false;
    m_poll->stop();
    m_step = index;
    m_tryPassed = false;
    m_actionError.clear();
    m_statusNote.clear();
    showStepText();
    const lesson::LessonStep& step = m_lesson->steps[index];
    auto config = lesson::configAtStep(*m_lesson, index, true);
    if (!config.ok()) {
        m_actionError = qs(config.error().message);
        showError(tr("Lesson step cannot start"), m_actionError);
        updateButtons();
        return;
    }
    applyConfig(*config);
    if (!m_actionError.isEmpty()) {  // the learner kept their unsaved config
        finishAction(false, m_actionError);
        updateButtons();
        return;
    }
    showView(step);
    setHighlight(qs(step.highlight));
    m_solving = false;
    m_runSelection.stepShown(step, false);
    performAction(step.action);
    emit stepChanged(int(index));
}

bool LessonsPanel::next() {
    if (!canGoNext()) return false;
    if (m_step + 1 >= m_lesson->steps.size()) return openLesson(nextLessonPath());
    enterStep(m_step + 1);
    return true;
}

QString LessonsPanel::nextLessonPath() const {
    // The lesson after the open one in the list (a lesson opened from elsewhere has none).
    const int at = m_lessons->currentIndex();
    if (!m_lesson || at <= 0 || at + 1 >= m_lessons->count()) return {};
    return m_lessons->itemData(at + 1).toString();
}

bool LessonsPanel::back() {
    if (!m_lesson || m_step == 0) return false;
    enterStep(m_step - 1);
    return true;
}

bool LessonsPanel::canGoNext() const {
    if (!m_lesson || isBusy()) return false;
    if (m_step + 1 >= m_lesson->steps.size() && nextLessonPath().isEmpty()) return false;
    const auto& step = m_lesson->steps[m_step];
    return !step.tryIt || m_tryPassed;
}

void LessonsPanel::showStepText() {
    if (!m_lesson) {
        m_counter->clear();
        m_stepTitle->setText(tr("Lessons"));
        m_text->setMarkdown(
            tr("Guided lessons on weight streaming and wafer-scale training. Choose one above, "
               "or open a lesson file you wrote (Help ▸ Wafer Studio Guide, \"Lessons\").\n\nKeys "
               "while this panel "
               "has focus: **Space** or **→** Next, **←** Back."));
        m_formula->hide();
        m_figure->setFigure({});
        m_tryBox->setTry(nullptr);
        m_status->clear();
        return;
    }
    const lesson::LessonStep& step = m_lesson->steps[m_step];
    m_counter->setText(tr("Step %1 of %2").arg(m_step + 1).arg(m_lesson->steps.size()));
    m_stepTitle->setText(qs(step.title));
    m_text->setMarkdown(qs(step.text));
    m_formula->setText(qs(step.formula));
    m_formula->setVisible(!step.formula.empty());
    m_figure->setFigure(step.figure.empty() ? QString() : qs(step.figure.string()));
    fitFigure();
    m_tryBox->setTry(step.tryIt ? &*step.tryIt : nullptr);
}

bool LessonsPanel::applyConfig(const config::LoadedConfig& config) {
    const std::string want = config::saveConfigYaml(config.config, config::YamlStyle::Plain);
    // The same config under another lesson's name (two lessons on one preset) is replaced all
    // the same: the window title names the lesson open now.
    const QString name = QStringLiteral("lesson: %1").arg(qs(m_lesson->title));
    if (auto have = documentConfig();
        have && m_host->configUntitledName() == name &&
        config::saveConfigYaml(have->config, config::YamlStyle::Plain) == want)
        return false;
    // The learner's own config with unsaved edits is never replaced silently ("Save them
    // first?", as opening a file asks); a lesson's own document is the lesson's to replace.
    if (m_host->configModified() &&
        !m_host->configDisplayName().startsWith(QStringLiteral("lesson: ")) &&
        !m_host->maybeSaveConfig()) {
        m_actionError =
            tr("The step's config was not loaded: the open config keeps its unsaved "
               "changes. Save or discard them, then press Back and Next.");
        return false;
    }
    m_host->setUntitledConfig(qs(config::saveConfigYaml(config.config)), name,
                              qs(m_lesson->preset.parent_path().string()));
    configChanged();
    return true;
}

void LessonsPanel::configChanged() {
    RunController* controller = m_host->runController();
    if (controller->isActive()) {
        controller->stop();
        m_seenSerial = -controller->runSerial();  // its remaining events are not observed
    }
    if (m_current.started) m_previous = std::move(m_current);
    m_current = lesson::RunObservation{};
}

void LessonsPanel::performStudy(const lesson::Action& action) {
    RunController* controller = m_host->runController();
    if (controller->isActive()) {  // the cores are the study's
        controller->stop();
        m_seenSerial = -controller->runSerial();
    }
    m_study = action.kind;
    m_studyAction = action;
    m_studyStarted = false;
    m_status->setText(tr("Doing: %1…").arg(qs(lesson::describeAction(action))));
    updateButtons();
    if (controller->isActive())
        m_poll->start();  // startStudy once the run has stopped
    else
        startStudy();
}

void LessonsPanel::startStudy() {
    auto config = documentConfig();
    if (!config) {
        studyFinished(false, tr("the config has problems (see the Config tab)"));
        return;
    }
    m_studyStarted = true;
    if (m_study == lesson::Action::Kind::CheckAnswers) {
        if (!m_current.started || m_current.modelDir.empty()) {
            studyFinished(false, tr("no run has trained since the config last changed: there is "
                                    "no model to ask"));
            return;
        }
        const QString previous = m_previous && !m_previous->modelDir.empty()
                                     ? qs(m_previous->modelDir.string())
                                     : QString();
        if (!m_host->checkAnswers(qs(m_current.modelDir.string()), previous,
                                  int(m_studyAction.count)))
            studyFinished(false, tr("the Answers tab is already checking (press its Stop)"));
    } else if (m_study == lesson::Action::Kind::CoordCheck) {
        // A refusal of the options is reported through LessonHost::coordCheckFinished.
        if (!m_host->runCoordCheck(lesson::coordCheckBase(config->config),
                                   lesson::coordCheckOptions(m_studyAction)) &&
            m_study == lesson::Action::Kind::CoordCheck)
            studyFinished(false, tr("a coord check is already running"));
    } else if (!m_host->startSweep()) {
        studyFinished(false, tr("the sweep cannot start (see the Log)"));
    }
    if (m_lesson) showView(m_lesson->steps[m_step]);  // Run Sweep shows the Sweeps tab itself
}

void LessonsPanel::studyFinished(bool ok, const QString& error) {
    m_finishedStudy = ok ? m_study : lesson::Action::Kind::None;
    m_study = lesson::Action::Kind::None;
    m_studyStarted = false;
    finishAction(ok, ok ? QString() : error);
}

QString LessonsPanel::studySummary(lesson::Action::Kind kind) const {
    if (kind == lesson::Action::Kind::CheckAnswers && m_current.answers) {
        const lesson::RunObservation::Answers& a = *m_current.answers;
        QString line = tr("Answers: %1 of %2 held-out questions answered exactly, answer loss "
                          "%3 nats/token")
                           .arg(a.exact)
                           .arg(a.cases)
                           .arg(a.answerLoss, 0, 'f', 3);
        if (m_previous && m_previous->answers)
            line += tr(" (the run before: %1 of %2, %3)")
                        .arg(m_previous->answers->exact)
                        .arg(m_previous->answers->cases)
                        .arg(m_previous->answers->answerLoss, 0, 'f', 3);
        return line + QLatin1Char('.');
    }
    if (kind == lesson::Action::Kind::CoordCheck && m_studies.coordCheck) {
        const mup::CoordCheckResult& r = *m_studies.coordCheck;
        return tr("Coord check: activations grow like width^%1 under SP (%2, step %3) and "
                  "like width^%4 under μP (%5, step %6): %7.")
            .arg(r.worstSpSlope, 0, 'f', 2)
            .arg(qs(std::string(r.worstSpLayer)))
            .arg(r.worstSpStep)
            .arg(r.worstMupSlope, 0, 'f', 2)
            .arg(qs(std::string(r.worstMupLayer)))
            .arg(r.worstMupStep)
            .arg(r.pass ? tr("μP passes") : tr("μP fails"));
    }
    if (kind == lesson::Action::Kind::Sweep && m_studies.sweepTransfer) {
        QStringList lines{
            tr("Sweep: %1 trials. Best learning rate per width:").arg(m_studies.sweepTrials)};
        for (const sweep::ParametrizationTransfer& t : *m_studies.sweepTransfer) {
            QStringList widths;
            for (const sweep::WidthOptimum& w : t.widths)
                widths << tr("%1: 2^%2").arg(w.width).arg(w.bestLog2Lr);
            lines << tr("<b>%1</b> %2 (moves %3)")
                         .arg(t.parametrization == "mup" ? QStringLiteral("μP")
                                                         : qs(t.parametrization).toUpper())
                         .arg(widths.join(QStringLiteral(", ")))
                         .arg(std::isnan(t.driftSteps)
                                  ? tr("?")
                                  : tr("%1 in log2").arg(t.driftSteps * t.gridStep));
        }
        return lines.join(QStringLiteral("<br>"));
    }
    return {};
}

QString LessonsPanel::statusText() const {
    return m_status->text();
}

QString LessonsPanel::runLine() const {
    if (!m_current.started) return {};
    const int64_t steps = m_current.steps();
    const QString trained =
        steps == 1 ? tr("Run: 1 step trained") : tr("Run: %1 steps trained").arg(steps);
    QString line;
    switch (m_current.state) {
        case session::RunState::Preparing:
            return tr("Run: preparing.");
        case session::RunState::Running:
            line = tr("%1, training on.").arg(trained);
            break;
        case session::RunState::Paused:
            line = tr("%1, paused.").arg(trained);
            break;
        default:
            line = tr("%1.").arg(trained);
            break;
    }
    // Where the paused wafer stands: the phase it just computed.
    if (m_current.state == session::RunState::Paused && m_current.hasPhase) {
        const int layers = m_current.layerCount;  // L + 2; 0 before the first prediction
        const QString name = m_current.layer == 0 ? tr("the embeddings")
                             : layers > 0 && m_current.layer == layers - 1
                                 ? tr("the head")
                                 : QStringLiteral("h.%1").arg(m_current.layer - 1);
        line += tr(" The wafer shows the %1 pass of layer %2 (%3) of step %4.")
                    .arg(m_current.phase == lesson::Phase::Forward ? tr("forward") : tr("backward"))
                    .arg(m_current.layer)
                    .arg(name)
                    .arg(m_current.phaseStep + 1);
    }
    return line;
}

void LessonsPanel::refreshStatus() {
    // A study's summary stands for the run line (the study trained models of its own).
    const QString line = m_finishedStudy != lesson::Action::Kind::None ? QString() : runLine();
    m_status->setText(line + m_statusNote);
}

void LessonsPanel::performAction(const lesson::Action& action) {
    if (action.kind == lesson::Action::Kind::CoordCheck ||
        action.kind == lesson::Action::Kind::Sweep ||
        action.kind == lesson::Action::Kind::CheckAnswers) {
        performStudy(action);
        return;
    }
    m_driver = std::make_unique<lesson::ActionDriver>(action);
    m_sinceProgress.start();
    RunController* controller = m_host->runController();
    session::Session* session = controller->session();
    const bool pausedLive = session && m_seenSerial == controller->runSerial() &&
                            session->state() == session::RunState::Paused;
    m_start = m_driver->start(pausedLive, pausedLive ? session->pauseStops() : 0);
    if (!m_start.error.empty()) {
        finishAction(false, qs(m_start.error));
        return;
    }
    m_status->setText(tr("Doing: %1…").arg(qs(lesson::describeAction(action))));
    updateButtons();
    if (m_start.newRun) {
        if (controller->isActive()) {
            controller->stop();
            m_seenSerial = -controller->runSerial();
        }
        m_waitingToStart = true;
        m_poll->start();
        if (!controller->isActive()) startPendingRun();
        return;
    }
    m_poll->start();
    if (controller->isActive())
        controller->drainNow();
    else
        advance(0);
}

void LessonsPanel::startPendingRun() {
    m_waitingToStart = false;
    auto config = documentConfig();
    if (!config) {
        finishAction(false, tr("the config has problems (see the Config tab)"));
        return;
    }
    session::SessionOptions options;
    options.stopAfterStep = m_start.stopAfterStep;
    // The run ends with a checkpoint as any other does: Runs can resume it, Samples sample it.
    options.runName = stepRunName().toStdString();
    if (!m_host->startLessonRun(*config, options, m_start.paused)) {
        finishAction(false, tr("the run cannot start (see the Log)"));
        return;
    }
    if (m_current.started) m_previous = std::move(m_current);
    m_current = lesson::RunObservation{};
    m_current.started = true;
    m_seenSerial = m_host->runController()->runSerial();
    if (m_lesson) showView(m_lesson->steps[m_step]);  // starting a run shows the Training tab
    m_poll->start();
}

QString LessonsPanel::stepRunName() const {
    if (!m_lesson) return {};
    // "lesson 5: Unstructured sparsity, step 2": the Runs dock elides names in the middle, so
    // the lesson's number leads and the step ends the name, both left readable.
    QString number;
    for (const char c : m_lesson->sourceFile.filename().string()) {
        if (c < '0' || c > '9') break;
        number += QChar(c);
    }
    number = number.isEmpty() ? QString() : QStringLiteral(" %1").arg(number.toInt());
    return tr("lesson%1: %2, step %3").arg(number, qs(m_lesson->title)).arg(m_step + 1);
}

QString LessonsPanel::runNameForDocument() const {
    if (!m_lesson) return {};
    const QString name = QStringLiteral("lesson: %1").arg(qs(m_lesson->title));
    return m_host->configUntitledName() == name ? stepRunName() : QString();
}

void LessonsPanel::onEvents(const std::vector<session::Event>& events, int64_t pauseStopsBefore) {
    const int64_t serial = m_host->runController()->runSerial();
    if (-serial == m_seenSerial) return;  // a run that ended for a config change
    if (serial != m_seenSerial) {         // a run the learner started (Run)
        if (m_current.started) m_previous = std::move(m_current);
        m_current = lesson::RunObservation{};
        m_current.started = true;
        m_seenSerial = serial;
        m_statusNote.clear();  // what the step's own run showed
    }
    for (const session::Event& e : events) m_current.observe(e);
    if (m_current.modelDir.empty())
        if (const session::Session* session = m_host->runController()->session())
            if (auto place = session->place()) m_current.modelDir = place->modelDir;
    m_runSelection.noteLiveRun();
    if (!events.empty()) m_sinceProgress.start();
    if (m_driver && !m_waitingToStart) advance(pauseStopsBefore);
    // The learner's own Step Layer, Auto-step or Run: the status line follows the run.
    if (!events.empty() && !isBusy() && m_actionError.isEmpty()) refreshStatus();
}

void LessonsPanel::advance(int64_t pauseStops) {
    if (!m_driver) return;
    session::Session* session = m_host->runController()->session();
    const session::RunState state = session ? session->state() : m_current.state;
    switch (m_driver->next(m_current, state, pauseStops)) {
        case lesson::ActionDriver::Next::Wait:
            if (!session && !m_host->runController()->isActive())
                finishAction(false, stepFailure(tr("no run is live")));
            return;
        case lesson::ActionDriver::Next::StepOnePhase:
            m_host->runController()->stepLayer();
            return;
        case lesson::ActionDriver::Next::Done:
            finishAction(true, {});
            return;
        case lesson::ActionDriver::Next::Failed:
            finishAction(false, stepFailure(qs(m_driver->error())));
            return;
    }
}

QString LessonsPanel::stepFailure(const QString& what) const {
    if (!m_lesson) return what;
    const lesson::LessonStep& step = m_lesson->steps[m_step];
    const lesson::Action& action =
        m_solving && step.tryIt ? step.tryIt->solutionAction : step.action;
    return tr("%1, %2: %3")
        .arg(qs(lesson::describeStep(step, m_step)), qs(lesson::describeAction(action)), what);
}

void LessonsPanel::timeOut() {
    RunController* controller = m_host->runController();
    QString waited;
    if (m_waitingToStart) {
        waited = tr("the run in flight to end before the step's run starts");
    } else if (m_driver) {
        session::Session* session = controller->session();
        waited = qs(m_driver->waitingFor(m_current, session ? session->state() : m_current.state));
    }
    const QString message =
        stepFailure(tr("no progress for %1 while waiting for %2; the run was stopped")
                        .arg(qs(lesson::describeDuration(m_actionTimeout)), waited));
    // A stuck run is not left behind; its remaining events belong to no step.
    if (controller->isActive()) {
        controller->stop();
        m_seenSerial = -controller->runSerial();
    }
    finishAction(false, message);
}

void LessonsPanel::finishAction(bool ok, const QString& error) {
    m_driver.reset();
    m_waitingToStart = false;
    m_poll->stop();
    m_actionError = error;
    m_statusNote.clear();
    if (ok && m_lesson) m_runSelection.stepShown(m_lesson->steps[m_step], true);
    if (ok) {
        if (m_finishedStudy != lesson::Action::Kind::None)
            m_statusNote = studySummary(m_finishedStudy);
        // What the step promises (`expect`), so a lesson's author sees at once when it does not
        // hold; the learner sees nothing extra when it does.
        const auto config = documentConfig();
        if (m_lesson && !m_solving && config) {
            QStringList failed;
            const lesson::CheckContext context{&config->config,
                                               m_current.started ? &m_current : nullptr,
                                               m_previous ? &*m_previous : nullptr, &m_studies};
            for (const lesson::Condition& c : m_lesson->steps[m_step].expect) {
                const lesson::CheckResult r = lesson::evaluate(c, context);
                if (!r.passed) failed << qs(c.text + " (" + r.detail + ")");
            }
            if (!failed.isEmpty())
                m_statusNote += tr("<br><span style='color:#c62828'>The lesson expected %1.</span>")
                                    .arg(failed.join(QStringLiteral("; ")).toHtmlEscaped());
        }
        // "Show me" answers the question too, with what the screen now shows.
        if (m_solving && m_lesson && m_lesson->steps[m_step].tryIt && config) {
            const std::string& subject = m_lesson->steps[m_step].tryIt->answer;
            const lesson::CheckContext context{&config->config,
                                               m_current.started ? &m_current : nullptr,
                                               m_previous ? &*m_previous : nullptr, &m_studies};
            std::optional<std::string> value;
            if (!subject.empty()) value = lesson::subjectValue(subject, context);
            if (value) m_tryBox->setAnswer(qs(*value));
        }
        refreshStatus();
    } else {
        m_status->setText(tr("<span style='color:#c62828'>Could not do this step: %1</span>")
                              .arg(error.toHtmlEscaped()));
    }
    updateButtons();
    emit actionFinished(ok);
}

bool LessonsPanel::check() {
    if (!m_lesson) return false;
    const auto& step = m_lesson->steps[m_step];
    if (!step.tryIt) return true;
    const auto config = documentConfig();
    const lesson::CheckContext context{config ? &config->config : nullptr,
                                       m_current.started ? &m_current : nullptr,
                                       m_previous ? &*m_previous : nullptr, &m_studies};
    const bool last = m_step + 1 >= m_lesson->steps.size();
    const QString open = !last                         ? tr("Next is open.")
                         : !nextLessonPath().isEmpty() ? tr("“Next lesson” is open.")
                                                       : tr("That was the last lesson.");
    m_tryPassed = m_tryBox->check(config ? &context : nullptr, open);
    updateButtons();
    return m_tryPassed;
}

void LessonsPanel::showMe() {
    if (!m_lesson || isBusy()) return;
    const auto& step = m_lesson->steps[m_step];
    if (!step.tryIt) return;
    // A "Not yet" from before no longer holds once the task is being done: Check tells anew.
    m_tryBox->clearResult();
    if (!step.tryIt->solutionChanges.empty()) {
        auto config = documentConfig();
        if (!config) return;
        if (Status s = lesson::applyChanges(*config, step.tryIt->solutionChanges); !s.ok()) {
            showError(tr("Lesson step cannot continue"), qs(s.error().message));
            return;
        }
        applyConfig(*config);
    }
    m_solving = true;
    performAction(step.tryIt->solutionAction);
}

void LessonsPanel::showError(const QString& title, const QString& message) {
    m_lastError = message;
    auto* box = new QMessageBox(QMessageBox::Critical, title, message, QMessageBox::Ok, this);
    box->setObjectName(QStringLiteral("lessonErrorBox"));
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setTextInteractionFlags(Qt::TextSelectableByMouse);
    box->open();
}

void LessonsPanel::updateButtons() {
    m_back->setEnabled(m_lesson && m_step > 0);
    m_next->setEnabled(canGoNext());
    // The last step's Next opens the next lesson.
    const bool last = m_lesson && m_step + 1 >= m_lesson->steps.size();
    m_next->setText(last ? tr("Next lesson ▶") : tr("Next ▶"));
    QString nextTitle;
    if (last && !nextLessonPath().isEmpty())
        nextTitle = m_lessons->itemText(m_lessons->currentIndex() + 1);
    m_next->setToolTip(nextTitle.isEmpty() ? QString() : tr("Open %1").arg(nextTitle));
    const bool tryOpen = m_lesson && !isBusy();
    m_tryBox->setButtonsEnabled(tryOpen);
}

void LessonsPanel::keyPressEvent(QKeyEvent* event) {
    switch (event->key()) {
        case Qt::Key_Space:
        case Qt::Key_Right:
            next();
            return;
        case Qt::Key_Left:
            back();
            return;
        default:
            QWidget::keyPressEvent(event);
    }
}

}  // namespace ws::ui
