// Command lines as Monsoon's programs declare them: `monsoon`'s command files each add a
// subcommand, and a benchmark its options, through Command and CommandOption; command_line.cc
// alone builds them with CLI11, parses argv and writes the help (CLI11's header costs every file
// that includes it seconds of compile time).
#ifndef MONSOON_CORE_CLI_COMMAND_LINE_H_
#define MONSOON_CORE_CLI_COMMAND_LINE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace monsoon {

// One option ("--rows") or positional argument ("CONFIG.yaml") of a command. Each call
// returns the option, for the next.
class CommandOption {
 public:
  explicit CommandOption(CLI::Option* option) : option_(option) {}

  CommandOption& Required();
  // Only integers in [lo, hi].
  CommandOption& InRange(int64_t lo, int64_t hi);
  CommandOption& OneOf(const std::vector<std::string>& values);
  // Only a number that is neither NaN nor infinite (and, with `at_least_zero`, not negative).
  CommandOption& Finite(bool at_least_zero = false);
  // The help shows the value the variable holds before parsing as the default.
  CommandOption& ShowDefault();
  // Given together with `other`, the command line is refused.
  CommandOption& Excludes(const CommandOption& other);
  // Given without `other`, the command line is refused.
  CommandOption& Needs(const CommandOption& other);
  // Replaces the help text the option was declared with.
  CommandOption& Help(const std::string& text);
  // Left out of the help: an argument a command collects only to refuse it by name.
  CommandOption& Hidden();
  // Takes every value up to the next option (--set a=1 b=2), and no stray ones.
  CommandOption& TakeAll();

 private:
  CLI::Option* option_;
};

// A command: the program or one of its subcommands (CLI11's, which owns it).
class Command {
 public:
  explicit Command(CLI::App* app) : app_(app) {}

  Command Subcommand(const std::string& name, const std::string& help);
  // Listed in the program's help under `group` rather than with the other commands.
  Command& InGroup(const std::string& group);
  // Exactly one of its subcommands must be given.
  Command& RequireSubcommand();
  // An option parsed into *value (the variable must outlive the parse).
  CommandOption Option(const std::string& name, std::string* value, const std::string& help);
  CommandOption Option(const std::string& name, int* value, const std::string& help);
  CommandOption Option(const std::string& name, uint64_t* value, const std::string& help);
  CommandOption Option(const std::string& name, double* value, const std::string& help);
  CommandOption Option(const std::string& name, std::vector<std::string>* values,
                       const std::string& help);
  // Integers separated by commas (--sizes 1,4,16).
  CommandOption Option(const std::string& name, std::vector<int>* values, const std::string& help);
  CommandOption Flag(const std::string& name, bool* value, const std::string& help);
  // Runs when the command line names this command, once its options are parsed.
  void OnRun(std::function<void()> action);

 private:
  CLI::App* app_;
};

// The program's name, its help's first line and its --version line (none when empty).
struct ProgramText {
  std::string name, about, version;
};

// The program's whole command line: `declare` adds the commands to the program, each action
// leaving its exit status in the int it is given; `ready` runs once argv names one of them (or
// asks for help), before it is parsed; then the command named runs. Returns 2 with one line
// "NAME: WHAT (see NAME [COMMAND] --help)" for a bad command line, the help and 2 for none at
// all, 0 after --help or --version; otherwise the command's exit status.
int RunCommandLine(int argc, char** argv, const ProgramText& text,
                   const std::function<void(Command&, int* exit_code)>& declare,
                   const std::function<void()>& ready);

// A program without subcommands: `declare` adds its options and its action to the program
// itself. Returns 2 with one line "NAME: WHAT (see NAME --help)" for a bad command line, 0 after
// --help; otherwise the exit status the action left.
int RunProgram(int argc, char** argv, const ProgramText& text,
               const std::function<void(Command&, int* exit_code)>& declare);

}  // namespace monsoon

#endif  // MONSOON_CORE_CLI_COMMAND_LINE_H_
