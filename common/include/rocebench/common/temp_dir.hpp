#pragma once
// Scratch folders for tests and benchmarks: made under $TMPDIR (or /tmp) and removed, with their
// contents, when the process exits, so a test run leaves nothing behind. ROCEBENCH_KEEP_TEMP=1 keeps
// them for a post-mortem.
#include <stdlib.h>

#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace rocebench {

namespace detail {
class TempDirRegistry {
 public:
  void add(const std::filesystem::path& dir) {
    std::lock_guard lock(mutex_);
    dirs_.push_back(dir);
  }
  ~TempDirRegistry() {
    if (const char* keep = std::getenv("ROCEBENCH_KEEP_TEMP"); keep != nullptr && std::string(keep) == "1") return;
    for (const auto& dir : dirs_) {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  }

 private:
  std::mutex mutex_;
  std::vector<std::filesystem::path> dirs_;
};
}  // namespace detail

// A fresh, empty folder named rb-<tag>-XXXXXX; throws if it cannot be made.
inline std::filesystem::path make_temp_dir(const std::string& tag) {
  static detail::TempDirRegistry registry;
  std::string pattern = (std::filesystem::temp_directory_path() / ("rb-" + tag + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a temporary folder " + pattern);
  registry.add(pattern);
  return pattern;
}

}  // namespace rocebench
