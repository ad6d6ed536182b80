// qs/pause_point.hpp: named points where a process can be stopped for a test
// (qs::pause_point, QS_PAUSE_AT).
//
// Defined in common/qs/base/pause_point.hpp, which lists the runtime's and
// qs-pageserver's points: both stop at them, so the definition is shared.
//
// Thread-safety: pause_point may be called from any thread.
#pragma once

#include <qs/base/pause_point.hpp>
