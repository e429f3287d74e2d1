// SPDX-License-Identifier: GPL-3.0-or-later
// Does a config's training step fit the wafer it names: the check a run makes before training
// (Session refuses the run with this message) and the studio's Config tab makes live on every
// edit, so the two can never say different things. The wafer is wafer.spec with its overrides
// (specForConfig, which also checks runconfig.num_csx against the spec); its SRAM is
// wafer.sram_bytes if set, else the spec's; per system it must hold the weight buffer
// (wafer.weight_buffer_layers x the largest layer, 2 bytes a weight in bf16 mode, else 4) and one
// micro-batch's activations
// (streaming::chooseMicroBatch: "a step that cannot fit even one sequence is refused").
// Thread-safety: pure functions (they read the spec file).
#pragma once

#include "engine/config/config.h"
#include "engine/core/result.h"
#include "engine/model/parameters.h"
#include "engine/streaming/fit.h"

namespace ws::wafer {

// With the model's shape and parameter table already built (the session has them). The config
// must pass config::validate().
Result<streaming::FitResult> fitOnWafer(const config::Config& cfg, const model::GptShape& shape,
                                        const model::ParameterTable& table);

// The same from the config alone (builds the parameter table, which holds no weights). A config
// that fails config::validate() gets those problems back instead: the fit of an inconsistent
// model means nothing.
Result<streaming::FitResult> fitOnWafer(const config::Config& cfg);

}  // namespace ws::wafer
