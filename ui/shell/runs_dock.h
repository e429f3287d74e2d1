// SPDX-License-Identifier: GPL-3.0-or-later
// RunsDock: the Runs panel. Every run and sweep in the run store as a tree (sweep -> trials),
// with a status icon, final loss and date; a filter box; multi-select to overlay runs in the
// Training tab; a context menu to rename, delete (after confirmation), open the run's config or
// its folder, resume it from its newest checkpoint; each run's checkpoints are listed in its
// tooltip and in a "Checkpoints" submenu that opens their folders. A store that cannot be read
// shows as a warning above the list, never as an empty list. Reads the store synchronously (it is
// small and local); GUI thread only.
#pragma once

#include <QDockWidget>
#include <QIcon>
#include <functional>
#include <vector>

class QFrame;
class QLabel;
class QLineEdit;
class QMenu;
class QPushButton;
class QTreeWidget;
class QTreeWidgetItem;

namespace ws::store {
class RunStore;
struct RunInfo;
}  // namespace ws::store

namespace ws::ui {

// A status dot drawn with QPainter, so it follows the palette and scales with High-DPI.
QIcon statusIcon(const QString& status);

class RunsDock : public QDockWidget {
    Q_OBJECT
public:
    explicit RunsDock(QWidget* parent = nullptr);

    void setStore(store::RunStore* store);  // not owned; nullptr empties the list
    void refresh();                         // re-reads the store, keeping the selection
    // A run store that could not be opened or read: a warning above the (then empty) list,
    // so that it never passes for a store without runs, with a Recover… button when
    // `recoverable` (it emits recoverRequested). A read that succeeds again clears it.
    void showStoreProblem(const QString& text, bool recoverable);
    void clearStoreProblem();
    bool hasStoreProblem() const;
    // Shows these runs (newest first), updating the tree in place: the selection, expanded
    // sweeps and scroll position stay; selectionChanged only if a selected run disappeared.
    void showRuns(const std::vector<store::RunInfo>& runs);
    std::vector<int64_t> selectedRunIds() const;
    // Selects exactly these runs; one selectionChanged when the selection changed.
    void selectRuns(const std::vector<int64_t>& ids);
    QTreeWidget* tree() const { return m_tree; }

    bool renameRun(int64_t id, const QString& name);
    bool deleteRun(int64_t id);  // no confirmation: the context menu asks first
    // A run (not a sweep) with a checkpoint folder to continue from.
    bool canResume(int64_t id) const;
    // What "Resume run…" does for run `id`, or why a run cannot: one that ended before its first
    // checkpoint is pointed at "Open config in editor", which starts it again.
    QString resumeToolTip(int64_t id) const;
    // Whether "Resume run…" is enabled for run `id`: the main window sets the predicate its
    // own Resume Run uses (stopped sweeps too, nothing while training), so the two never
    // disagree. Unset: canResume.
    void setResumeCheck(std::function<bool(int64_t)> check) { m_resumeCheck = std::move(check); }
    // The context menu of run `id` (nullptr if the store has no such run); the caller owns it.
    QMenu* contextMenu(int64_t id, QWidget* parent);

signals:
    void selectionChanged(const std::vector<int64_t>& runIds);
    void openConfigRequested(const QString& yaml, const QString& runName);
    void errorOccurred(const QString& message);
    // A read of the store failed (the message says why); the main window checks the file.
    void readFailed(const QString& message);
    void recoverRequested();
    void resumeRequested(int64_t runId);

private:
    void applyFilter();
    void fillItem(QTreeWidgetItem* item, const store::RunInfo& run, const QString& label);
    void showContextMenu(const QPoint& pos);

    store::RunStore* m_store = nullptr;
    QFrame* m_problem;       // "runsStoreProblem": the warning, hidden while the store reads
    QLabel* m_problemText;   // "runsStoreProblemText"
    QPushButton* m_recover;  // "runsRecover"
    QLineEdit* m_filter;
    QTreeWidget* m_tree;
    bool m_refreshing = false;
    std::function<bool(int64_t)> m_resumeCheck;
};

}  // namespace ws::ui
