#pragma once
// Reads /sys, /proc and configfs under a root prefix (node_exporter's procfs style), so tests run
// on fixture trees that look exactly like a real host. Paths given to it are absolute host paths.
// Every read of /sys and /proc (netcheck, the run metadata, verbs devices, TCP settings) goes here.
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rocebench {

class HostFs {
 public:
  // A root other than "/" is a saved tree: there, a path that exists but cannot be read (a
  // symlink loop, no permission, a FIFO or device file) is bad input and throws InputError naming
  // it. On the live root such paths are normal (debugfs as non-root) and read as missing.
  explicit HostFs(std::filesystem::path root = "/");

  const std::filesystem::path& root() const { return root_; }
  // The file behind a host path: "/sys/class/net" -> <root>/sys/class/net.
  std::filesystem::path at(const std::string& host_path) const;

  bool exists(const std::string& host_path) const;
  // Contents with trailing whitespace removed; nullopt when missing or unreadable (sysfs answers
  // EINVAL for empty GID slots, debugfs EACCES for non-root).
  std::optional<std::string> read(const std::string& host_path) const;
  std::optional<long long> read_int(const std::string& host_path) const;
  // The value of a "Key: value" line (/proc/meminfo, /proc/self/status, /proc/cpuinfo's "model
  // name\t: ..."), first match, leading blanks removed; nullopt when the file or the key is missing.
  std::optional<std::string> read_field(const std::string& host_path, const std::string& key) const;
  // Raw bytes (PCI config space); empty when unreadable.
  std::string read_bytes(const std::string& host_path) const;
  // Raw bytes; nullopt when missing or unreadable. Not logged (it is how a snapshot copies).
  std::optional<std::string> read_all(const std::string& host_path) const;
  // Entry names of a folder, sorted; empty when missing.
  std::vector<std::string> list(const std::string& host_path) const;
  // Where a sysfs symlink leads, as a host path ("/sys/devices/pci0000:00/..."); nullopt if dangling.
  std::optional<std::string> resolve(const std::string& host_path) const;

  // What was asked of the host, for --save-capture to copy exactly that.
  enum class Access { exists, read, list, resolve };
  using Log = std::vector<std::pair<Access, std::string>>;
  void log_to(Log* log) { log_ = log; }

 private:
  // nullopt when the path is missing; throws on a saved tree for what must not be there.
  std::optional<std::filesystem::file_status> status_of(const std::filesystem::path& file) const;
  void note(Access access, const std::string& host_path) const {
    if (log_) log_->emplace_back(access, host_path);
  }

  std::filesystem::path root_;
  bool saved_tree_;
  Log* log_ = nullptr;
};

}  // namespace rocebench
