// rocebench: one binary, subcommands (DESIGN.md "Conventions").
#include <iostream>

#include <fmt/format.h>

#include "build_info.hpp"
#include "commands.hpp"
#include "rocebench/common/errors.hpp"

namespace {

void print_overview(std::ostream& out, const std::vector<rocebench::Subcommand>& commands) {
  out << "usage: rocebench <command> [options]   (rocebench <command> --help for each)\n\n"
         "Benchmarks and validates RoCE GPU clusters for deep-learning training.\n\ncommands:\n";
  for (const auto& c : commands) out << fmt::format("  {:<10} {}\n", c.name, c.summary);
  out << "\nexit codes: 0 all good, 1 a check or threshold failed, 2 bad usage or input, 3 infrastructure "
         "failure (peer lost, device error, timeout)\n";
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  rocebench::install_step_runner();
  const auto commands = rocebench::all_subcommands();
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_overview(std::cout, commands);
    return args.empty() ? rocebench::kExitBadInput : rocebench::kExitOk;
  }
  if (args[0] == "--version") {
    std::cout << "rocebench " << rocebench::kRocebenchVersion << " (" << rocebench::kRocebenchGitRevision << ")\n";
    return 0;
  }
  for (const auto& c : commands) {
    if (c.name == args[0]) return c.main({args.begin() + 1, args.end()});
  }
  std::cerr << "rocebench: unknown command '" << args[0] << "'\n\n";
  print_overview(std::cerr, commands);
  return rocebench::kExitBadInput;
}
