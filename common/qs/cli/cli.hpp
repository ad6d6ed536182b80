// qs/cli/cli.hpp: the command lines of qs's programs. qs-pageserver, qs-evolve,
// qs-inspect, the OO7 programs, the peers and the benchmarks declare their
// options on a qs::cli::app and read them with app::parse(), so that every
// program answers a bad command line the same way: "PROGRAM: OPTION:
// expected ..., got 'VALUE'" on standard error (with a line pointing at
// --help) and exit status 2. --help prints the options on standard output
// and exits with 0.
//
// CLI11 does the parsing, behind this header: only cli.cpp includes it. A
// translation unit that includes <CLI/CLI.hpp> spends about 10 s compiling
// CLI11's inline code at -O2 -g, and some twenty programs read a command
// line; through this interface they compile it once, in qs_cli. The calls
// read as CLI11's do (add_option(...)->type_name(...)->check(...)), and
// mean what they mean there.
//
// Numbers. CLI11 2.1 converts with strtoull/strtoll in base 0: for an
// unsigned option it takes "-1" (as 2^64 - 1), "010" as octal 8, "0x10" and
// leading blanks. Every numeric option of qs therefore carries one of the
// checks below, which run on the text before it is converted: plain decimal
// digits (whole) or digits with a decimal fraction (seconds), within the
// option's range, which the refusal states. whole() rewrites the text it
// accepts without leading zeros, so that the conversion reads the number
// that was checked. Words (one|many, cold|warm) are checked by one_of,
// whose refusal lists them.
//
// Conventions every app has: an option given twice takes its last value (as
// scripts that add to a command line expect), and the help's first column
// fits qs's longest option names.
//
// Invariants: an app owns its subcommands and options; the pointers
// add_option and add_subcommand return stay valid while it lives, and the
// variables an option writes must outlive parse().
//
// Thread-safety: none needed; a program reads its command line once, in main.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace qs::cli {

// A test of an option's text: returns "" to accept it (it may rewrite the
// text first), else the refusal, "expected ..., got '...'".
class validator {
 public:
  explicit validator(std::function<std::string(std::string&)> test) : test_(std::move(test)) {}
  std::string operator()(std::string& text) const { return test_(text); }

 private:
  std::function<std::string(std::string&)> test_;
};

// A whole number from `least` to `most`, in decimal digits only (no sign, no
// blanks, no suffix).
validator whole(std::uint64_t least, std::uint64_t most);

// Seconds up to `most`, with a decimal fraction allowed, to the millisecond
// (a nonzero value is at least 0.001); 0 only when `zero_means` says what it
// means ("none", say), and then the refusal says it too.
validator seconds(double most, const std::string& zero_means = "");

// One of `words`, exactly.
validator one_of(std::vector<std::string> words);

// The milliseconds of a value that seconds() accepted.
std::int64_t milliseconds(double seconds);

// Thrown by an app's final check: a command line that each option accepts
// but that does not hold together. Said as "OPTION: MESSAGE", or MESSAGE.
class usage_error : public std::runtime_error {
 public:
  usage_error(const std::string& option, const std::string& message) : std::runtime_error(option + ": " + message) {}
  explicit usage_error(const std::string& message) : std::runtime_error(message) {}
};

// One option or positional argument of a command.
class option {
 public:
  option* type_name(const std::string& name);  // what --help shows for its value ("" for none)
  option* required();
  option* check(const validator& v);
  option* group(const std::string& heading);  // the heading --help lists it under
  bool given() const;                         // after parse(): it was on the command line

  explicit option(CLI::Option* o) : o_(o) {}

 private:
  CLI::Option* o_;
};

// A program, or one of its subcommands.
class command {
 public:
  // An option ("--name", "-n,--name") or a positional argument ("NAME"),
  // read into `into`.
  option* add_option(const std::string& name, std::string& into, const std::string& description = "");
  option* add_option(const std::string& name, std::vector<std::string>& into, const std::string& description = "");
  option* add_option(const std::string& name, int& into, const std::string& description = "");
  option* add_option(const std::string& name, long& into, const std::string& description = "");
  option* add_option(const std::string& name, unsigned& into, const std::string& description = "");
  option* add_option(const std::string& name, unsigned long& into, const std::string& description = "");
  option* add_option(const std::string& name, unsigned long long& into, const std::string& description = "");
  option* add_option(const std::string& name, double& into, const std::string& description = "");
  // A flag: sets `into`, or calls `on`, when given.
  option* add_flag(const std::string& name, bool& into, const std::string& description = "");
  option* add_flag(const std::string& name, std::function<void()> on, const std::string& description = "");

  command* add_subcommand(const std::string& name, const std::string& description);
  command* group(const std::string& heading);  // "" leaves it out of --help

  // After parse(): this subcommand was given.
  explicit operator bool() const;

  explicit command(CLI::App* app) : app_(app) {}
  command(const command&) = delete;
  command& operator=(const command&) = delete;
  virtual ~command();

 protected:
  CLI::App* app_;

 private:
  option* keep(CLI::Option* o);
  std::vector<std::unique_ptr<option>> options_;
  std::vector<std::unique_ptr<command>> subcommands_;
};

// A program's command line.
class app : public command {
 public:
  app(const std::string& description, const std::string& name);
  ~app() override;

  void fallthrough();                  // the program's options also after a subcommand
  void require_subcommand(int count);  // exactly `count` subcommands
  void footer(const std::string& text);
  // Run after every option is read; throws usage_error to refuse the
  // command line.
  void final_check(std::function<void()> check);

  // Parses the command line. Returns nothing when the program goes on; else
  // the status to exit with: 0 after --help (the help is printed), 2 after a
  // usage error (said on standard error).
  std::optional<int> parse(int argc, char** argv);

 private:
  std::unique_ptr<CLI::App> owned_;
};

}  // namespace qs::cli
