// SPDX-License-Identifier: GPL-3.0-or-later
// Asynchronous successive halving (ASHA, Li et al. 2020, "A System for Massively Parallel
// Hyperparameter Tuning"), in its stopping form: trials run without pausing; when a trial reaches
// a rung its loss there is recorded, and it continues only if it ranks among the best
// max(1, floor(n / reduction_factor)) of the n trials (of its group) recorded at that rung so far.
// A trial is never stopped while fewer than reduction_factor trials have reached the rung, so the
// first arrivals are not judged against nothing. Decisions depend on arrival order, as in ASHA;
// with one trial at a time they are deterministic.
// Thread-safety: none; the sweep runner calls it under its own lock.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ws::sweep {

struct RungDecision {
    bool stop = false;
    std::string reason;  // why it stopped: rung, rank, loss, cut-off
};

class AshaScheduler {
public:
    AshaScheduler(std::vector<int64_t> rungs, int reductionFactor);

    bool enabled() const { return !m_rungs.empty(); }
    bool isRung(int64_t step) const;
    // Records `loss` of the trial at rung `step` in `group` and decides. NaN counts as worst.
    RungDecision atRung(const std::string& group, int trial, int64_t step, double loss);
    // Records a result from an earlier session of the same sweep without deciding (resume).
    void restore(const std::string& group, int trial, int64_t step, double loss);

private:
    struct Entry {
        int trial;
        double loss;
    };
    std::vector<int64_t> m_rungs;
    int m_eta;
    std::map<std::pair<std::string, int64_t>, std::vector<Entry>> m_recorded;
};

}  // namespace ws::sweep
