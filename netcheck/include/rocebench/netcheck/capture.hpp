#pragma once
// --save-capture: what netcheck reads on a host, saved so that `--root DIR --capture DIR/capture`
// later judges exactly what was seen there.
#include <filesystem>
#include <string>
#include <vector>

#include "rocebench/netcheck/tools.hpp"

namespace rocebench::netcheck {

// The tool outputs of a saved host, beside its sys/, proc/ and etc/.
inline constexpr const char* kCaptureFolder = "capture";

struct SavedCapture {
  std::size_t files = 0;               // files and links of the host tree written
  std::vector<std::string> outputs;    // "FILE\tCOMMAND", as in COMMANDS.tsv
  std::vector<std::string> not_saved;  // "COMMAND: why" for tools that gave nothing
};

// Reads the host under `source_root` as netcheck does (modules: the kernel modules it asks about),
// copies every file, folder and symlink it read into `dir` (which must be absent or empty), runs
// every tool query for the host's netdevs through `tools` and writes their outputs and
// COMMANDS.tsv into dir/capture.
SavedCapture save_capture(const std::filesystem::path& dir, const std::filesystem::path& source_root, const ToolSource& tools,
                          const std::vector<std::string>& modules);

}  // namespace rocebench::netcheck
