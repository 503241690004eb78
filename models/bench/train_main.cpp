// `rocebench train` on its own: the models module's subcommand linked without the rest of the
// harness, so a benchmark of the CPU engine builds in a fraction of the time on a busy machine.
// Takes the same arguments, with or without a leading "train": models_train train --model ... .
#include "rocebench/models/module.hpp"

int main(int argc, char** argv) {
  rocebench::Args args(argv + 1, argv + argc);
  if (!args.empty() && args.front() == "train") args.erase(args.begin());
  return rocebench::models::subcommands().at(0).main(args);
}
