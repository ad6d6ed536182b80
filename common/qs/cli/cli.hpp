// qs/cli/cli.hpp: the command lines of qs's programs. qs-pageserver, qs-evolve,
// the OO7 programs and the benchmarks declare their options with CLI11 and
// read them through parse(), so that every program answers a bad command
// line the same way: "PROGRAM: OPTION: expected ..., got 'VALUE'" on
// standard error (with a line pointing at --help) and exit status 2. --help
// prints the options on standard output and exits with 0.
//
// Numbers. CLI11 2.1 converts with strtoull/strtoll in base 0: for an
// unsigned option it takes "-1" (as 2^64 - 1), "010" as octal 8, "0x10" and
// leading blanks. Every numeric option of qs therefore carries one of the
// checks below, which CLI11 runs on the text before converting it: plain
// decimal digits (whole) or digits with a decimal fraction (seconds), within
// the option's range, which the refusal states. whole() rewrites the text it
// accepts without leading zeros, so that CLI11's conversion reads the number
// that was checked. Words (one|many, cold|warm) are checked by one_of, whose
// refusal lists them.
//
// prepare() gives an App qs's conventions: an option given twice takes its
// last value (as scripts that add to a command line expect), and the help's
// first column fits qs's longest option names.
//
// Thread-safety: none needed; a program reads its command line once, in main.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qs::cli {

// Call on a new App, before adding its options.
void prepare(CLI::App& app);

// A whole number from `least` to `most`, in decimal digits only (no sign, no
// blanks, no suffix).
CLI::Validator whole(std::uint64_t least, std::uint64_t most);

// Seconds up to `most`, with a decimal fraction allowed, to the millisecond
// (a nonzero value is at least 0.001); 0 only when `zero_means` says what it
// means ("none", say), and then the refusal says it too.
CLI::Validator seconds(double most, const std::string& zero_means = "");

// One of `words`, exactly.
CLI::Validator one_of(std::vector<std::string> words);

// The milliseconds of a value that seconds() accepted.
std::int64_t milliseconds(double seconds);

// Parses the command line. Returns nothing when the program goes on; else
// the status to exit with: 0 after --help (the help is printed), 2 after a
// usage error (said on standard error).
std::optional<int> parse(CLI::App& app, int argc, char** argv);

}  // namespace qs::cli
