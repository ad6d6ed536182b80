// The command lines of qs's programs (qs/cli/cli.hpp).
#include <qs/cli/cli.hpp>

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

void prepare(CLI::App& app) {
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.get_formatter()->column_width(32);
  app.set_help_flag("-h,--help", "print this help and exit");
}

CLI::Validator whole(std::uint64_t least, std::uint64_t most) {
  const std::string expected = "expected a whole number from " + std::to_string(least) + " to " + std::to_string(most);
  return CLI::Validator(
      [least, most, expected](std::string& text) -> std::string {
        std::uint64_t v = 0;
        bool ok = digits(text, 0, text.size());
        if (ok) {
          auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
          ok = ec == std::errc{} && end == text.data() + text.size();
        }
        if (!ok || v < least || v > most) return expected + ", got '" + text + "'";
        text = std::to_string(v);
        return {};
      },
      "");
}

CLI::Validator seconds(double most, const std::string& zero_means) {
  const bool zero_ok = !zero_means.empty();
  const std::string expected = "expected seconds from " + std::string(zero_ok ? "0" : "0.001") + " to " + number(most) +
                               " (a fraction allowed, to the millisecond" + (zero_ok ? "; 0 for " + zero_means : "") +
                               ")";
  return CLI::Validator(
      [most, zero_ok, expected](std::string& text) -> std::string {
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
      },
      "");
}

CLI::Validator one_of(std::vector<std::string> words) {
  std::string expected = "expected ";
  for (std::size_t i = 0; i < words.size(); ++i)
    expected += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  return CLI::Validator(
      [words = std::move(words), expected](std::string& text) -> std::string {
        for (const std::string& w : words)
          if (text == w) return {};
        return expected + ", got '" + text + "'";
      },
      "");
}

std::int64_t milliseconds(double seconds) { return std::llround(seconds * 1000); }

std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    std::cerr << app.get_name() << ": " << e.what() << "\n" << app.get_name() << " --help lists the options\n";
    return 2;
  }
}

}  // namespace qs::cli
