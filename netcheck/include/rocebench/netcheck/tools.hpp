#pragma once
// The text of host tools (dcb, mlnx_qos, ethtool, lspci) for what sysfs does not show: run live
// with argv vectors and a deadline, or read from a folder of captured outputs (--capture DIR), so
// a host's state can be checked elsewhere.
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rocebench::netcheck {

struct CommandResult {
  bool started = false;    // false: not installed or not executable
  bool timed_out = false;  // killed at the deadline
  int exit_code = -1;
  std::string out, err;
  std::string error;  // why it did not start
};

// Runs argv[0] from PATH (no shell) with stdin from /dev/null and LC_ALL=C; kills it at the deadline.
CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

// One tool invocation: the command line, and the file name its output has in a capture folder.
struct ToolQuery {
  std::vector<std::string> argv;
  std::string capture_name;
};

ToolQuery dcb_pfc_query(const std::string& netdev);
ToolQuery dcb_app_query(const std::string& netdev);
ToolQuery mlnx_qos_query(const std::string& netdev);
ToolQuery ethtool_stats_query(const std::string& netdev);
ToolQuery ethtool_pause_query(const std::string& netdev);
ToolQuery lspci_query();
ToolQuery ibv_devinfo_query();
ToolQuery show_gids_query();
// Every query netcheck may make of a host with these netdevs: what --save-capture runs.
std::vector<ToolQuery> all_queries(const std::vector<std::string>& netdevs);

// A command line as netcheck asks it ("dcb pfc show dev eth0"), from any spelling whose output
// netcheck reads the same way ("sudo /usr/sbin/dcb -s pfc show dev eth0"); nullopt for others.
std::optional<std::string> command_key(const std::vector<std::string>& argv);

// The file that lists which command made each captured output: one "FILE<TAB>COMMAND" per line.
inline constexpr const char* kCommandsFile = "COMMANDS.tsv";

struct ToolText {
  std::optional<std::string> text;
  std::string source;  // "dcb pfc show dev eth0" or "capture/dcb-pfc-eth0.txt"
  std::string missing; // why there is no text
};

class ToolSource {
 public:
  static ToolSource live(std::chrono::milliseconds timeout);
  // With DIR/COMMANDS.tsv, outputs are found by the command that made them; without, by the
  // capture_name of each query. A bad COMMANDS.tsv line throws InputError "file:line: ...".
  static ToolSource captured(std::filesystem::path dir);
  static ToolSource none(std::string why);

  ToolText get(const ToolQuery& query) const;
  // Captured outputs of commands netcheck does not read: "FILE (COMMAND)", in COMMANDS.tsv order.
  const std::vector<std::string>& ignored() const { return ignored_; }
  // Outputs of a command saved in two spellings that were not read, each with the one that was.
  const std::vector<std::string>& passed_over() const { return passed_over_; }

 private:
  enum class Mode { live, captured, none };
  ToolSource(Mode mode, std::chrono::milliseconds timeout, std::filesystem::path dir, std::string why)
      : mode_(mode), timeout_(timeout), dir_(std::move(dir)), why_(std::move(why)) {}
  Mode mode_;
  std::chrono::milliseconds timeout_;
  std::filesystem::path dir_;
  std::string why_;
  // An output COMMANDS.tsv names: its file in dir_, the command as saved, its line.
  struct Saved {
    std::string file, command;
    int line = 0;
    int detail = 0;       // how much this spelling prints (dcb -s, -N)
    int passed_over = 0;  // the line of a poorer spelling of the same command, not read
  };
  bool has_commands_ = false;             // DIR/COMMANDS.tsv exists
  std::map<std::string, Saved> by_key_;   // command_key -> what to read
  std::vector<std::string> ignored_, passed_over_;
};

std::string join_argv(const std::vector<std::string>& argv);

}  // namespace rocebench::netcheck
