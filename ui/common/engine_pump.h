// SPDX-License-Identifier: GPL-3.0-or-later
// EnginePump: the one way engine work reaches the GUI thread, shared by RunController (a Session)
// and SweepController (a SweepRunner). The worker's threads only set an atomic flag and post one
// queued wake-up (the flag stays set until the GUI has drained, so a burst of events costs one
// post); the GUI coalesces wake-ups with a 33 ms single-shot timer and then drains the whole
// batch. Once the owner has seen the worker's last event it calls joinWhenDone(): the finished
// worker is joined on a helper thread, never on the GUI thread, and `joined` runs back on the
// GUI thread. The engine's threads never touch widgets, the owner or the pump's other members.
// GUI thread only, except the notify hook it installs on the worker's queue (thread-safe).
#pragma once

#include <QMetaObject>
#include <QObject>
#include <QTimer>
#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

namespace ws::ui {

// `Worker` is session::Session or sweep::SweepRunner: events() (a queue with setNotify and
// drain), start(), wait() and requestStop(); its destructor joins its own thread.
template <class Worker>
class EnginePump {
public:
    // `owner` (the controller that has this pump as a member) parents the drain timer and is the
    // context of every queued call, so Qt drops them once it is gone. `drain` is the owner's
    // drain (the timer calls it); `joined` runs once the finished worker has been joined.
    EnginePump(QObject* owner, std::function<void()> drain, std::function<void()> joined)
        : m_owner(owner), m_drain(std::move(drain)), m_joined(std::move(joined)) {
        m_timer = new QTimer(owner);
        m_timer->setSingleShot(true);
        m_timer->setInterval(33);
        QObject::connect(m_timer, &QTimer::timeout, owner, [this] { m_drain(); });
    }
    // Stops a running worker and joins it (and the helper thread) before the owner goes.
    ~EnginePump() {
        if (m_worker) m_worker->requestStop();
        if (m_joiner.joinable()) m_joiner.join();
        m_worker.reset();  // joins the worker's thread if the helper never started
    }
    EnginePump(const EnginePump&) = delete;
    EnginePump& operator=(const EnginePump&) = delete;

    // Takes a created, not yet started worker and hooks its event queue to the GUI thread.
    void adopt(std::unique_ptr<Worker> worker) {
        m_worker = std::move(worker);
        m_joinStarted = false;
        // One queued wake-up per drain: the flag stays set until the GUI has drained.
        auto pending = std::make_shared<std::atomic<bool>>(false);
        m_wakePending = pending;
        // The worker (hence this hook) never outlives the pump, nor the pump its owner.
        QObject* owner = m_owner;
        EnginePump* self = this;
        m_worker->events().setNotify([pending, owner, self] {
            if (pending->exchange(true)) return;
            QMetaObject::invokeMethod(
                owner, [self] { self->scheduleDrain(); }, Qt::QueuedConnection);
        });
    }
    Worker* worker() const { return m_worker.get(); }

    // Moves every event queued so far into `out` (the whole batch) and re-arms the wake-up.
    template <class Event>
    void takeEvents(std::vector<Event>& out) {
        m_wakePending->store(false);
        m_worker->events().drain(out);
    }

    // The owner has drained the worker's last event: the worker is past it (a store flush at
    // most), so join it on a helper thread, then run `joined` on the GUI thread. Once per worker.
    void joinWhenDone() {
        if (m_joinStarted) return;
        m_joinStarted = true;
        Worker* w = m_worker.get();
        QObject* owner = m_owner;
        EnginePump* self = this;  // the destructor joins this thread before the pump goes
        m_joiner = std::thread([w, owner, self] {
            w->wait();
            QMetaObject::invokeMethod(
                owner, [self] { self->onJoined(); }, Qt::QueuedConnection);
        });
    }

    // After `joined` has read the worker's results: destroys it, ready for the next one.
    void reset() { m_worker.reset(); }

private:
    void scheduleDrain() {
        if (!m_timer->isActive()) m_timer->start();
    }
    void onJoined() {
        if (m_joiner.joinable()) m_joiner.join();
        if (m_worker) m_joined();
    }

    QObject* m_owner;
    std::function<void()> m_drain;
    std::function<void()> m_joined;
    QTimer* m_timer;  // a child of the owner
    std::unique_ptr<Worker> m_worker;
    std::shared_ptr<std::atomic<bool>> m_wakePending;
    std::thread m_joiner;
    bool m_joinStarted = false;
};

}  // namespace ws::ui
