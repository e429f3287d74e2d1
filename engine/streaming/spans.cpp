// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/streaming/spans.h"

namespace ws::streaming {

const char* spanKindName(SpanKind kind) {
    switch (kind) {
        case SpanKind::StreamIn:
            return "stream_in";
        case SpanKind::Forward:
            return "forward";
        case SpanKind::Backward:
            return "backward";
        case SpanKind::StreamOut:
            return "stream_out";
        case SpanKind::Reduce:
            return "reduce";
        case SpanKind::Update:
            return "update";
    }
    return "unknown";
}

}  // namespace ws::streaming
