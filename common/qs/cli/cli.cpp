// The command lines of qs's programs (qs/cli/cli.hpp).
#include <qs/cli/cli.hpp>

#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <iostream>
#include <system_error>

namespace qs::cli {
namespace {

bool digits(const std::string& s, std::size_t from, std::size_t to) {
  if (from >= to) return false;
  for (std::size_t i = from; i < to; ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

// 4294, or 0.5: a bound as a person writes it.
std::string number(double v) {
  if (v == std::floor(v) && v < 1e15) return std::to_string(static_cast<std::uint64_t>(v));
  char b[32];
  auto [end, ec] = std::to_chars(b, b + sizeof b, v);
  return ec == std::errc{} ? std::string(b, end) : std::to_string(v);
}

}  // namespace

validator whole(std::uint64_t least, std::uint64_t most) {
  const std::string expected = "expected a whole number from " + std::to_string(least) + " to " + std::to_string(most);
  return validator([least, most, expected](std::string& text) -> std::string {
    std::uint64_t v = 0;
    bool ok = digits(text, 0, text.size());
    if (ok) {
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      ok = ec == std::errc{} && end == text.data() + text.size();
    }
    if (!ok || v < least || v > most) return expected + ", got '" + text + "'";
    text = std::to_string(v);
    return {};
  });
}

validator seconds(double most, const std::string& zero_means) {
  const bool zero_ok = !zero_means.empty();
  const std::string expected = "expected seconds from " + std::string(zero_ok ? "0" : "0.001") + " to " + number(most) +
                               " (a fraction allowed, to the millisecond" + (zero_ok ? "; 0 for " + zero_means : "") +
                               ")";
  return validator([most, zero_ok, expected](std::string& text) -> std::string {
    std::size_t dot = text.find('.');
    bool ok = digits(text, 0, dot == std::string::npos ? text.size() : dot) &&
              (dot == std::string::npos || digits(text, dot + 1, text.size()));
    double s = -1;
    if (ok) {
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), s, std::chars_format::fixed);
      ok = ec == std::errc{} && end == text.data() + text.size();
    }
    if (!ok || s > most || (s == 0 ? !zero_ok : s < 0.001)) return expected + ", got '" + text + "'";
    return {};
  });
}

validator one_of(std::vector<std::string> words) {
  std::string expected = "expected ";
  for (std::size_t i = 0; i < words.size(); ++i)
    expected += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  return validator([words = std::move(words), expected](std::string& text) -> std::string {
    for (const std::string& w : words)
      if (text == w) return {};
    return expected + ", got '" + text + "'";
  });
}

std::int64_t milliseconds(double seconds) { return std::llround(seconds * 1000); }

option* option::type_name(const std::string& name) {
  o_->type_name(name);
  return this;
}

option* option::required() {
  o_->required();
  return this;
}

option* option::check(const validator& v) {
  o_->check(CLI::Validator([v](std::string& text) { return v(text); }, ""));
  return this;
}

option* option::group(const std::string& heading) {
  o_->group(heading);
  return this;
}

bool option::given() const { return o_->count() > 0; }

command::~command() = default;

option* command::keep(CLI::Option* o) { return options_.emplace_back(std::make_unique<option>(o)).get(); }

option* command::add_option(const std::string& name, std::string& into, const std::string& description) {
  return keep(app_->add_option(name, into, description));
}
option* command::add_option(const std::string& name, std::vector<std::string>& into, const std::string& description) {
  return keep(app_->add_option(name, into, description));
}
option* command::add_option(const std::string& name, int& into, const std::string& description) {
  return keep(app_->add_option(name, into, description));
}
option* command::add_option(const std::string& name, long& into, const std::string& description) {
  return keep(app_->add_option(name, into, description));
}
option* command::add_option(const std::string& name, unsigned& into, const std::string& description) {
  return keep(app_->add_option(name, into, description));
}
option* command::add_option(const std::string& name, unsigned long& into, const std::string& description) {
  return keep(app_->add_option(name, into, description));
}
option* command::add_option(const std::string& name, unsigned long long& into, const std::string& description) {
  return keep(app_->add_option(name, into, description));
}
option* command::add_option(const std::string& name, double& into, const std::string& description) {
  return keep(app_->add_option(name, into, description));
}

option* command::add_flag(const std::string& name, bool& into, const std::string& description) {
  return keep(app_->add_flag(name, into, description));
}

option* command::add_flag(const std::string& name, std::function<void()> on, const std::string& description) {
  return keep(app_->add_flag_callback(name, std::move(on), description));
}

command* command::add_subcommand(const std::string& name, const std::string& description) {
  return subcommands_.emplace_back(std::make_unique<command>(app_->add_subcommand(name, description))).get();
}

command* command::group(const std::string& heading) {
  app_->group(heading);
  return this;
}

command::operator bool() const { return app_->parsed(); }

app::app(const std::string& description, const std::string& name)
    : command(nullptr), owned_(std::make_unique<CLI::App>(description, name)) {
  app_ = owned_.get();
  app_->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app_->get_formatter()->column_width(32);
  app_->set_help_flag("-h,--help", "print this help and exit");
}

app::~app() = default;

void app::fallthrough() { app_->fallthrough(); }

void app::require_subcommand(int count) { app_->require_subcommand(count); }

void app::footer(const std::string& text) { app_->footer(text); }

void app::final_check(std::function<void()> check) {
  app_->final_callback([check = std::move(check)] {
    try {
      check();
    } catch (const usage_error& e) {
      throw CLI::ValidationError(e.what());
    }
  });
}

std::optional<int> app::parse(int argc, char** argv) {
  try {
    app_->parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::CallForHelp&) {
    std::cout << app_->help();
    return 0;
  } catch (const CLI::ParseError& e) {
    std::cerr << app_->get_name() << ": " << e.what() << "\n" << app_->get_name() << " --help lists the options\n";
    return 2;
  }
}

}  // namespace qs::cli
