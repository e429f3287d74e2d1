// SPDX-License-Identifier: GPL-3.0-or-later
// CoordCheckView: the μP coord check (engine/mup/coord_check.h) drawn: one panel per chosen step
// (the first, a middle one and the last), x = width (log2 scale), y = mean |activation| (log
// scale), one colour per layer type, SP dashed with squares and μP solid with circles, and the
// verdict with the worst slopes above. "Run Coord Check" asks the owner to run it on the current
// config; the check itself runs on an engine thread (see runOn). GUI thread only.
#pragma once

#include <QWidget>
#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "engine/mup/coord_check.h"

class QCustomPlot;
class QHBoxLayout;
class QLabel;
class QPushButton;

namespace ws::ui {

class CoordCheckView : public QWidget {
    Q_OBJECT
public:
    explicit CoordCheckView(QWidget* parent = nullptr);
    ~CoordCheckView() override;  // waits for a check in flight (it cannot be cancelled)

    void setResult(const mup::CoordCheckResult& result);
    // Runs the check of `base` on a worker thread; progress and the result come back queued.
    // False (with the reason shown) when the options do not fit the config or one is running.
    bool runOn(const config::Config& base, const mup::CoordCheckOptions& options);
    bool isRunning() const { return m_worker.joinable(); }

    int panelCount() const { return int(m_panels.size()); }
    QCustomPlot* panel(int i) const { return m_panels.at(size_t(i)); }
    QString verdictText() const;
    // The result shown (setResult), null before the first.
    const mup::CoordCheckResult* lastResult() const { return m_last ? &*m_last : nullptr; }
    QPushButton* runButton() const { return m_run; }

signals:
    void runRequested();
    void finished(bool ok, const QString& message);

private:
    void onWorkerDone();

    QLabel* m_verdict;
    QPushButton* m_run;
    QHBoxLayout* m_panelsLayout;
    std::vector<QCustomPlot*> m_panels;
    std::thread m_worker;
    std::shared_ptr<Result<mup::CoordCheckResult>> m_pending;
    std::optional<mup::CoordCheckResult> m_last;
};

}  // namespace ws::ui
