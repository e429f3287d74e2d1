// The model-file functions (engine/modelio/) that session.cpp calls by their short names, from
// when they lived in session/. New code names them modelio::...; once session.cpp does too, this
// header goes. Thread-safety: see weights_io.h and checkpoints.h.
#pragma once

#include "engine/modelio/checkpoints.h"
#include "engine/modelio/weights_io.h"

namespace ws::session {

using modelio::loadCheckpointTensors;
using modelio::loadWeights;
using modelio::saveWeights;

}  // namespace ws::session
