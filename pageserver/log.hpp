// log.hpp: qs-pageserver's log, one line per event on standard error.
//
// Lines are written whole (one write each), so that lines from the sessions'
// threads never interleave: "qs-pageserver 2024-01-01T12:00:00.123 [#3] text".
// Connection 0 is the server itself. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace qs::server {

void log_line(std::uint64_t connection, const std::string& text);

// A duration as the log and the server's messages say it: "1.5 s".
std::string seconds(std::chrono::milliseconds t);

}  // namespace qs::server
