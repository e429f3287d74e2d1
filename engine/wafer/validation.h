// Validation of the cycle model against what the Cerebras-GPT paper (Dey et al. 2023,
// arXiv:2304.03208) reports for its CS-2 runs: weak scaling linear within 9% from 1 to 16
// systems for every model size, FLOP utilization within 8% across sizes relative to 111M on one
// CS-2, and weight streaming hidden behind compute at the published batch sizes. Nothing is
// tuned per case: the spec's one compute_efficiency applies to every row.
// The whole per-system batch runs as one pass with its activations assumed to stay on the wafer
// (the activationsFit column says whether they would, by cycle_model.h's accounting). Splitting
// into micro-batches that fit that accounting makes weight streaming binding from 1.3B up, so the
// published behaviour implies activations held or recomputed beyond what is modelled here.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "engine/core/result.h"
#include "engine/wafer/spec.h"

namespace ws::wafer {

struct CerebrasGptModel {
    std::string name;  // "111M"
    int layers, dModel, heads, ffn, batch;
};
// The seven published shapes (sequence 2048, vocab 50257, tied embeddings).
const std::vector<CerebrasGptModel>& cerebrasGptModels();

struct ValidationRow {
    std::string model;
    int batch = 0;  // per system, as published for one system (weak scaling keeps it)
    double stepS1 = 0;
    double mfu1 = 0;                 // on one system
    double mfuDeviation = 0;         // |mfu1 / mfu1(111M) - 1|
    std::vector<double> efficiency;  // speedup(N) / N for each system count
    double worstEfficiency = 1;
    bool streamingHidden = false;  // on every system count
    bool activationsFit = false;   // on one system, without recompute
};

struct ValidationReport {
    std::string waferName;
    double computeEfficiency = 0;
    std::vector<int> systems;  // 1, 2, 4, 8, 16
    std::vector<ValidationRow> rows;
    double worstScaling = 1;       // smallest speedup(N)/N anywhere
    double worstMfuDeviation = 0;  // largest relative MFU deviation from 111M
    bool scalingOk = false;        // worstScaling >= 0.91 (published: within 9%)
    bool mfuOk = false;            // worstMfuDeviation < 0.08 (published: within 8%)
    bool streamingOk = false;      // hidden everywhere (published)
};

Result<ValidationReport> validateCerebrasGpt(const WaferSpec& spec);

}  // namespace ws::wafer
