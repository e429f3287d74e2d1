// SPDX-License-Identifier: GPL-3.0-or-later
// The top-level `sparsity:` section: weight sparsity as Cerebras ModelZoo writes it, static or
// dynamic (the masks change during training). Part of config.h's Config; same visitor protocol.
//
// ModelZoo's legacy layout (release 2.0.2, modelzoo/transformers/pytorch/gpt3/configs/sparsity/
// pretraining/params_gpt3_125m_{static75,set75,rigl75}.yaml), read as is:
//   sparsity:
//     sparsity: 0.75
//     init_method: "random"
//     type: "rigl"                    # static | set | rigl (and ours: gmp)
//     drop_fraction: {type: "cosine", init: 0.3, half_period: 3584}
//     schedule: {freq: 100, stop: 3584}   # update every 100 steps, stop at 3584 (not inclusive)
//     param_name_patterns: [".*proj_[qkv]_dense_layer.weight", ".*proj_output_dense_layer.weight",
//                           ".*linear_layer.weight"]
// Releases 2.2+ spell type as `algorithm` and schedule as `update` (same meaning); both are read,
// and so is their glob `param_filter` (fnmatch: a whole-name match), converted to the regexes it
// means with a warning that shows them.
// param_name_patterns are regexes (ECMAScript, whole-name match as Python's re.match + the
// patterns' own `.*`) over a matrix's ModelZoo name or over ours; the mapping of names is in
// engine/optim/sparse_masks.h. What each key means exactly (schedules, tie breaks) is there too.
// Thread-safety: plain data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/config/fields.h"

namespace ws::config {

// How the fraction of live weights dropped (and regrown) at each mask update anneals.
struct DropFractionConfig {
    std::string type = "cosine";  // cosine | constant
    double init = 0.3;
    int64_t halfPeriod = 0;  // cosine: steps until it reaches `minimum` (0: schedule.stop)
    double minimum = 0.0;

    bool operator==(const DropFractionConfig&) const = default;

    template <class V>
    void visit(V& v) {
        v.field(type, {.key = "type",
                       .help = "cosine: init x (1 + cos(pi t / half_period)) / 2 (RigL's "
                               "annealing); constant: init at every update",
                       .choices = {"cosine", "constant"}});
        v.field(init, {.key = "init",
                       .help = "Fraction of each matrix's live weights dropped at the first update",
                       .min = 0,
                       .max = 1});
        v.field(halfPeriod, {.key = "half_period",
                             .help = "Cosine: steps from init down to minimum (0: schedule.stop)",
                             .unit = "steps",
                             .min = 0});
        v.field(minimum, {.key = "minimum",
                          .help = "Cosine: the value the drop fraction anneals to",
                          .min = 0,
                          .max = 1});
    }
};

// When masks change: every `freq` steps from `start`, before `stop`.
struct SparsityScheduleConfig {
    int64_t freq = 100;
    int64_t start = 0;
    int64_t stop = 0;  // 0: until the end of training

    bool operator==(const SparsityScheduleConfig&) const = default;

    template <class V>
    void visit(V& v) {
        v.field(
            freq,
            {.key = "freq", .help = "Update the masks every N steps", .unit = "steps", .min = 1});
        v.field(start, {.key = "start",
                        .help = "First step that may update (gmp: where pruning starts)",
                        .unit = "steps",
                        .min = 0});
        v.field(stop, {.key = "stop",
                       .help = "No update at or after this step (gmp: the final level is reached "
                               "here); 0: until the end",
                       .unit = "steps",
                       .min = 0});
    }
};

struct SparsitySectionConfig {
    double sparsity = 0.0;              // the level of every masked matrix (gmp: the final level)
    std::string type = "static";        // static | set | rigl | gmp
    std::string initMethod = "random";  // random | topk (the largest magnitudes stay)
    double initSparsity = 0.0;          // gmp only: the level at `schedule.start`
    DropFractionConfig dropFraction;
    SparsityScheduleConfig schedule;
    std::vector<std::string> paramNamePatterns;  // empty: every block matrix

    bool operator==(const SparsitySectionConfig&) const = default;
    bool dynamic() const { return type != "static"; }

    template <class V>
    void visit(V& v) {
        v.field(sparsity, {.key = "sparsity",
                           .help = "Fraction of each masked matrix's weights held at zero (gmp: "
                                   "the final fraction)",
                           .min = 0,
                           .max = 0.99});
        v.field(type, {.key = "type",
                       .help = "static: the initial mask stays; set: drop the smallest, regrow at "
                               "random; rigl: drop the smallest, regrow where the dense gradient "
                               "is largest; gmp: prune by magnitude from init_sparsity up to "
                               "sparsity (Zhu & Gupta's cubic schedule)",
                       .choices = {"static", "set", "rigl", "gmp"},
                       .aliases = {"algorithm"}});
        v.field(initMethod, {.key = "init_method",
                             .help = "The initial mask: random positions, or topk (the "
                                     "smallest magnitudes are pruned)",
                             .choices = {"random", "topk"},
                             .valueAliases = {{"magnitude", "topk"}}});
        v.field(initSparsity, {.key = "init_sparsity",
                               .help = "gmp only: the level pruning starts from at schedule.start",
                               .min = 0,
                               .max = 0.99});
        v.section(dropFraction,
                  {.key = "drop_fraction",
                   .help = "set / rigl: share of live weights dropped and regrown per update"});
        v.section(schedule, {.key = "schedule",
                             .help = "When masks change (set, rigl, gmp)",
                             .aliases = {"update"}});
        v.field(paramNamePatterns,
                {.key = "param_name_patterns",
                 .help = "Regexes over parameter names (ModelZoo's, e.g. "
                         "'.*proj_[qkv]_dense_layer.weight', or ours, e.g. 'h\\.[0-3]\\..*c_fc"
                         "\\.weight'); empty: every block matrix"});
    }
};

}  // namespace ws::config
