#pragma once
// PNG plots, drawn by plot.py (compiled into the library) with matplotlib. The interpreter is the
// first of $ROCEBENCH_PYTHON, /usr/bin/python3 and python3 on PATH that can import matplotlib;
// when none can, the report says so and is rendered without plots.
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "rocebench/reports/aggregate.hpp"

namespace rocebench::reports {

struct ProcessResult {
  int exit_code = -1;
  bool timed_out = false;
};

// Runs argv (no shell) with `extra_env` added to the environment, stdout and stderr to `log`
// (or /dev/null when empty); kills it when `deadline` passes.
ProcessResult run_process(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                          std::chrono::milliseconds deadline, const std::filesystem::path& log = {});

// The interpreter to draw with, or empty with `why_not` filled.
std::string find_python(std::string& why_not);

struct Plots {
  std::vector<std::filesystem::path> files;  // sorted by name
  std::string missing;                       // why there are no plots (empty when drawn)
};

// The data plot.py draws, as JSON.
json plot_input(const Aggregate& a);

// Draws every plot of `agg` into `dir`.
Plots draw_plots(const Aggregate& agg, const std::filesystem::path& dir, std::chrono::milliseconds deadline);

}  // namespace rocebench::reports
