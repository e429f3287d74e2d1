// SPDX-License-Identifier: GPL-3.0-or-later
// Reading one of a run's data inputs (run_data.h) into its documents: the one read that both
// Session::prepareData and checkRunData() do. Not a public header (it exposes the data module,
// a private dependency of the session): only the session's own sources include it.
#pragma once

#include "engine/core/result.h"
#include "engine/data/corpus.h"
#include "engine/session/run_data.h"

namespace ws::session {

// data::readCorpusDocuments of the input, with its allow_binary and hint; errors start with the
// input's key ("train_input.data_dir: 'x.pdf' looks like a PDF document, ...").
Result<data::CorpusDocuments> readRunData(const RunDataInput& input);

}  // namespace ws::session
