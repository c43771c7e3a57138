// SPDX-License-Identifier: BSD-3-Clause
// The shared command-line flags of finecast's programs.
#include "common/cli.hpp"

#include <CLI/CLI.hpp>

namespace finecast::cli {

std::string executable_path() { return std::filesystem::canonical("/proc/self/exe").string(); }

std::string version() { return FINECAST_VERSION; }

void add_version(CLI::App& app, const std::string& program) {
  app.set_version_flag("--version", program + " " + version(), "print the program's version and exit");
}

CLI::Option* add_config(CLI::App& app, std::string& path, const std::string& help, bool required,
                        const std::string& more_names) {
  CLI::Option* opt = app.add_option("FILE,--config,-c" + (more_names.empty() ? std::string() : "," + more_names), path,
                                    help + " (positional, or --config FILE)");
  if (required) {
    // CLI11's own message would name only "--config"; the file may as well come positionally.
    app.callback([opt] {
      if (opt->count() == 0) throw CLI::RequiredError("a run/config file (FILE or --config FILE)");
    });
  }
  return opt;
}

CLI::Option* add_set(CLI::App& app, std::vector<std::string>& sets, const std::string& help) {
  return app.add_option("--set", sets, help + " Repeatable.")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false)
      ->check(CLI::Validator(
          [](const std::string& v) -> std::string {
            const auto eq = v.find('=');
            if (eq == std::string::npos || eq == 0)
              return "expected KEY=VALUE (e.g. --set device=cpu), got '" + v + "'";
            return {};
          },
          ""));
}

namespace {
/// A number above 0 (`strictly`) or at least 0; CLI11 converts it to the option's type after.
CLI::Validator above_zero(bool strictly, const char* name) {
  return CLI::Validator(
      [strictly](const std::string& v) -> std::string {
        double x = 0;
        if (!CLI::detail::lexical_cast(v, x)) return "expected a number, got '" + v + "'";
        if (strictly ? x > 0 : x >= 0) return {};
        return std::string(strictly ? "must be greater than 0" : "must be 0 or more") + ", got " + v;
      },
      name);
}
}  // namespace

CLI::Validator positive() { return above_zero(true, "POSITIVE"); }
CLI::Validator non_negative() { return above_zero(false, "NONNEGATIVE"); }

CLI::Option* add_log_level(CLI::App& app, std::string& level) {
  return app.add_option("--log-level", level, "lowest level printed: debug | info | warning | error")
      ->check(CLI::IsMember({"debug", "info", "warning", "error"}))
      ->capture_default_str();
}

namespace {
constexpr const char* kTimeForm = "T";
const std::string kTimeHelp = ": a 0-based step index or an ISO 8601 date (e.g. 2005-06-16)";
}  // namespace

CLI::Option* add_time(CLI::App& app, std::vector<std::string>& times, const std::string& help) {
  return app.add_option("--time", times, help + kTimeHelp + "; repeatable")
      ->type_name(kTimeForm)
      ->allow_extra_args(false);
}

CLI::Option* add_time(CLI::App& app, std::string& time, const std::string& help) {
  return app.add_option("--time", time, help + kTimeHelp)->type_name(kTimeForm);
}

}  // namespace finecast::cli
