#include "core/cli/command_line.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <iostream>

#include "absl/strings/numbers.h"

namespace monsoon {

CommandOption& CommandOption::Required() {
  option_->required();
  return *this;
}

CommandOption& CommandOption::InRange(int64_t lo, int64_t hi) {
  option_->check(CLI::Range(lo, hi));
  return *this;
}

CommandOption& CommandOption::OneOf(const std::vector<std::string>& values) {
  option_->check(CLI::IsMember(values));
  return *this;
}

CommandOption& CommandOption::Finite(bool at_least_zero) {
  option_->check(CLI::Validator(
      [at_least_zero](std::string& text) {
        double v = 0;
        if (absl::SimpleAtod(text, &v) && std::isfinite(v) && (!at_least_zero || v >= 0)) {
          return std::string();
        }
        return std::string(at_least_zero ? "expected a finite number >= 0"
                                         : "expected a finite number");
      },
      at_least_zero ? "FINITE >= 0" : "FINITE"));
  return *this;
}

CommandOption& CommandOption::ShowDefault() {
  option_->capture_default_str();
  return *this;
}

CommandOption& CommandOption::Excludes(const CommandOption& other) {
  option_->excludes(other.option_);
  return *this;
}

CommandOption& CommandOption::Needs(const CommandOption& other) {
  option_->needs(other.option_);
  return *this;
}

CommandOption& CommandOption::Help(const std::string& text) {
  option_->description(text);
  return *this;
}

CommandOption& CommandOption::Hidden() {
  option_->group("");
  return *this;
}

CommandOption& CommandOption::TakeAll() {
  option_->take_all()->allow_extra_args(false);
  return *this;
}

Command Command::Subcommand(const std::string& name, const std::string& help) {
  return Command(app_->add_subcommand(name, help));
}

Command& Command::InGroup(const std::string& group) {
  app_->group(group);
  return *this;
}

Command& Command::RequireSubcommand() {
  app_->require_subcommand(1);
  return *this;
}

CommandOption Command::Option(const std::string& name, std::string* value,
                              const std::string& help) {
  return CommandOption(app_->add_option(name, *value, help));
}

CommandOption Command::Option(const std::string& name, int* value, const std::string& help) {
  return CommandOption(app_->add_option(name, *value, help));
}

CommandOption Command::Option(const std::string& name, uint64_t* value, const std::string& help) {
  return CommandOption(app_->add_option(name, *value, help));
}

CommandOption Command::Option(const std::string& name, double* value, const std::string& help) {
  return CommandOption(app_->add_option(name, *value, help));
}

CommandOption Command::Option(const std::string& name, std::vector<std::string>* values,
                              const std::string& help) {
  return CommandOption(app_->add_option(name, *values, help));
}

CommandOption Command::Option(const std::string& name, std::vector<int>* values,
                              const std::string& help) {
  return CommandOption(app_->add_option(name, *values, help)->delimiter(','));
}

CommandOption Command::Flag(const std::string& name, bool* value, const std::string& help) {
  return CommandOption(app_->add_flag(name, *value, help));
}

void Command::OnRun(std::function<void()> action) { app_->callback(std::move(action)); }

namespace {

// A bad command line is exit status 2 with one line; asking for help or the version is 0.
int ExitForParseError(CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
  const std::vector<CLI::App*> chosen = app.get_subcommands();
  std::cerr << app.get_name() << ": " << e.what() << " (see " << app.get_name()
            << (chosen.empty() ? "" : " " + chosen.front()->get_name()) << " --help)" << std::endl;
  return 2;
}

// Parses argv into `app` (running the actions of the commands it names); then `exit_code`.
int Parse(CLI::App& app, int argc, char** argv, const int& exit_code) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ExitForParseError(app, e);
  }
  return exit_code;
}

}  // namespace

int RunCommandLine(int argc, char** argv, const ProgramText& text,
                   const std::function<void(Command&, int* exit_code)>& declare,
                   const std::function<void()>& ready) {
  CLI::App app{text.about, text.name};
  app.set_version_flag("--version", text.version);
  Command program(&app);
  program.RequireSubcommand();
  int exit_code = 0;
  declare(program, &exit_code);
  if (argc < 2) {
    std::cout << app.help();
    return 2;
  }
  const std::string first = argv[1];
  const auto named = [&](CLI::App* command) { return command->check_name(first); };
  if (first[0] != '-' && app.get_subcommands(named).empty()) {
    std::cerr << text.name << ": unknown command '" << first << "' (see " << text.name << " --help)"
              << std::endl;
    return 2;
  }
  ready();
  return Parse(app, argc, argv, exit_code);
}

int RunProgram(int argc, char** argv, const ProgramText& text,
               const std::function<void(Command&, int* exit_code)>& declare) {
  CLI::App app{text.about, text.name};
  if (!text.version.empty()) app.set_version_flag("--version", text.version);
  Command program(&app);
  int exit_code = 0;
  declare(program, &exit_code);
  return Parse(app, argc, argv, exit_code);
}

}  // namespace monsoon
