#pragma once
// Subcommands and a small option parser shared by every module's command line.
#include <filesystem>
#include <functional>
#include <limits>
#include <utility>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace rocebench {

using Args = std::vector<std::string>;

// A `rocebench <name>` subcommand. main() returns the process exit code (errors.hpp).
struct Subcommand {
  std::string name;
  std::string summary;
  std::function<int(const Args&)> main;
};

// Exit 2 with the usage text: what the caller does with a UsageError.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// --name VALUE / --name=VALUE options, boolean flags, and positionals; --help prints usage.
class ArgParser {
 public:
  ArgParser(std::string program, std::string description);

  ArgParser& option(const std::string& name, std::string* target, const std::string& help,
                    const std::string& metavar = "VALUE");
  ArgParser& option(const std::string& name, int* target, const std::string& help,
                    const std::string& metavar = "N");
  ArgParser& option(const std::string& name, double* target, const std::string& help,
                    const std::string& metavar = "X");
  ArgParser& option(const std::string& name, std::vector<std::string>* target, const std::string& help,
                    const std::string& metavar = "VALUE");  // repeatable
  // The numbers a value holds: one, or each item of a list ("1,2,4"). Throws UsageError for a value
  // that is not one.
  using Numbers = std::function<std::vector<double>(const std::string&)>;
  // The range the number option added last must lie in, checked as it is parsed; the usage shows it,
  // and a value outside it is refused in one line naming the flag, the value and the range
  // ("--chunk: 1 is out of range >= 64"). Both ends are allowed, or as a JSON schema says (minimum,
  // exclusiveMinimum, maximum, exclusiveMaximum; one end may be missing): a flag that sets a plan
  // field takes the field's range. A text option says how its value reads as numbers (`numbers`: a
  // size "64K", a list). A schema without bounds, or of a non-number ("type": "string"), adds nothing:
  // neither a range nor the reader. Numbers are always finite.
  ArgParser& range(double min, double max);
  ArgParser& range(const nlohmann::json& schema, Numbers numbers = {});
  ArgParser& flag(const std::string& name, bool* target, const std::string& help);
  // An old spelling, refused with a hint naming the new one ("'--out' is now '--results'").
  ArgParser& renamed(const std::string& old_name, const std::string& new_name);
  ArgParser& positional(const std::string& name, std::string* target, const std::string& help,
                        bool required = true);
  // Every positional after the named ones lands here.
  ArgParser& rest(const std::string& name, std::vector<std::string>* target, const std::string& help);

  // False when --help was asked for and printed (the caller exits 0). Throws UsageError.
  bool parse(const Args& args);
  std::string usage() const;

 private:
  struct Option {
    std::string name, metavar, help;
    bool takes_value;
    std::function<void(const std::string&)> set;
    Numbers numbers = {};  // empty: not a number, range() does not apply
    double min = -std::numeric_limits<double>::infinity(), max = std::numeric_limits<double>::infinity();
    bool min_open = false, max_open = false;  // the end itself is out of range
    bool admits(double x) const;
    std::string interval() const;  // "[1, 4096]", "(0, 86400]", ">= 64"; "" when unbounded
  };
  struct Positional {
    std::string name, help;
    bool required;
    std::function<void(const std::string&)> set;
  };
  [[noreturn]] void fail(const std::string& message) const;
  std::string program_, description_;
  std::vector<Option> options_;
  std::vector<Positional> positionals_;
  std::vector<std::pair<std::string, std::string>> renamed_;
  Positional rest_{};
  bool has_rest_ = false;
};

// The options of `rocebench run` that say where ranks run, for module commands that launch their
// step through run_step_as_plan(): added to their parser, handed on as run's arguments. Each command
// says how many local ranks it starts unless --ranks is given; its help shows that number.
class LauncherFlags {
 public:
  explicit LauncherFlags(int default_ranks) : default_ranks_(default_ranks) {}
  void add_to(ArgParser& parser);
  // The flags that were given, and --ranks: as given, else `ranks` (run reads it for the local
  // launcher only; mpirun and srun take the hostfile's).
  Args to_args(int ranks) const;
  // Only the flags that were given (what a command whose sides are started by hand may still take).
  Args given() const;
  Args to_args() const { return to_args(default_ranks_); }

 private:
  int default_ranks_;
  std::vector<std::pair<std::string, std::string>> values_{
      {"--ranks", ""}, {"--netns", ""}, {"--launcher", ""}, {"--hostfile", ""}, {"--ranks-per-host", ""},
      {"--results", ""}, {"--results-dir", ""}, {"--deadline", ""}};
};

// Where runs put their folders unless --results says otherwise.
inline constexpr const char* kDefaultResultsRoot = "rocebench-results";

// The value a flag was given in launcher arguments ("--results", "DIR" …), else "".
std::string launch_value(const Args& launch, const std::string& flag);

// Where a run's records go when no harness launched it (a probe client started by hand, netcheck
// judging saved trees): <results>/<run_id>/results.jsonl, the layout of a run's folder. Makes the folder.
std::filesystem::path run_results_file(const std::string& results, const std::string& run_id);

// The number all of `text` is, finite: "42", "-3"; for a double also "0.5", "1e3". Throws UsageError
// naming the option and what was typed ("--chunk: 'lots' is not a valid number") for anything else,
// including a whole number too large for T. Defined for int, long long and double.
template <typename T>
T parse_number(const std::string& option, const std::string& text);

// "8", "64K", "1M", "2G", "4T" (binary multiples, as nccl-tests' -b/-e; "KB" and "KiB" mean "K") ->
// bytes. Throws UsageError naming the option for anything else, a sign, or a size that overflows.
std::size_t parse_bytes(const std::string& option, const std::string& text);

// Runs a subcommand's body, turning the project's exceptions into messages and exit codes.
int run_guarded(const std::string& program, const std::function<int()>& body);

}  // namespace rocebench
