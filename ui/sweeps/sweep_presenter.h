// SPDX-License-Identifier: GPL-3.0-or-later
// SweepPresenter: the studio's sweeps. Run Sweep plans the document's sweep with the engine,
// times a few steps of each trial shape (engine/sweep/eta.h) and asks first ("sweepConfirmBox":
// how many trials, how long), then hands it to the studio's SweepController; the controller's
// events feed the Sweeps tab and the status bar, and reach the Runs dock, the Log and the failure
// banner through the signals the shell connects. It also runs the μTransfer dialog and the coord
// check of the Sweeps tab, resumes a stopped sweep and shows a stored sweep selected in Runs. GUI
// thread only.
#pragma once

#include <QObject>
#include <QString>
#include <cstdint>
#include <functional>
#include <vector>

class QWidget;

namespace ws::store {
class RunStore;
}
namespace ws::sweep {
struct SweepOutcome;
}

namespace ws::ui {

class ConfigDocument;
class ConfigTab;
class StatusPanel;
class SweepController;
class SweepsTab;

class SweepPresenter : public QObject {
    Q_OBJECT
public:
    // What the sweeps need of the studio around them.
    struct Studio {
        QWidget* window = nullptr;  // its dialogs' parent
        ConfigDocument* document = nullptr;
        ConfigTab* configTab = nullptr;
        SweepsTab* tab = nullptr;
        StatusPanel* statusPanel = nullptr;
        QString dbPath;                           // the run store sweeps record into
        std::function<store::RunStore*()> store;  // null while none is open
        std::function<bool()> runActive;          // a run trains in this window
        std::function<bool()> save;               // the document to its file (Save As if untitled)
        std::function<void(const QString&)> showTab;  // "config", "sweeps", ...
    };

    // Wires `sweeps` (the studio's one sweep controller, which others may observe too) to the
    // Sweeps tab and the studio.
    SweepPresenter(SweepController* sweeps, Studio studio, QObject* parent);

    SweepController* controller() const { return m_sweeps; }
    bool isActive() const;
    // Run Sweep is timing the trial shapes before it asks.
    bool isEstimating() const { return m_estimating; }
    // Plans the sweep of the document's config (its sweep: section, or a sweep file whose
    // sweep.base names the config) and runs it once the user confirms. False (the planning
    // errors in the Log and the Sweeps tab) if it cannot start or was cancelled.
    bool start();
    // Continues the stopped sweep stored as run `sweepRunId`.
    bool resume(int64_t sweepRunId);
    // A stored sweep that is stopped, failed or interrupted (Resume Run continues it).
    bool isStoppedSweep(int64_t runId) const;
    // The runs selected in Runs: one sweep (while none runs) is shown in the Sweeps tab.
    void showSelected(const std::vector<int64_t>& ids);
    // Replaces the confirmation dialog (tests): gets its question, returns the answer. An empty
    // function brings the dialog back.
    void setConfirmer(std::function<bool(const QString&)> confirm) {
        m_confirm = std::move(confirm);
    }

signals:
    void logLine(int level, const QString& line);  // a session::LogLine::Level and the text
    // Why a sweep did not start or failed (the failure banner); `aboutDocument`: the message is
    // about the Config tab's config.
    void failed(const QString& headline, const QString& message, bool aboutDocument);
    void startingAnew();  // a sweep started: earlier failures are old news
    void runsChanged();   // a trial's run appeared or ended (the Runs dock refreshes)
    void openConfigRequested(const QString& path);  // the μTransfer target written
    void stateChanged();  // started, finished, estimating: the shell's actions follow

private:
    void wireController();
    void wireTab();
    void onFinished(const sweep::SweepOutcome& out);
    void reportError(const QString& message);
    // A start refused before any sweep existed: the Log and the failure banner.
    void refuseStart(const QString& headline, const QString& message, bool aboutDocument);
    bool refuse(const QString& headline, const QString& message, bool aboutDocument);
    bool askToRun(const QString& question);  // the "sweepConfirmBox" dialog
    void showStatus(const QString& state);
    void log(int level, const QString& line) { emit logLine(level, line); }

    Studio m_studio;
    SweepController* m_sweeps;
    std::function<bool(const QString&)> m_confirm;
    bool m_estimating = false;
};

}  // namespace ws::ui
