#include "rocebench/netcheck/capture.hpp"

#include <set>

#include "rocebench/common/atomic_write.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/host_fs.hpp"
#include "rocebench/netcheck/host_state.hpp"

namespace rocebench::netcheck {

namespace fs = std::filesystem;

namespace {

void write_bytes(const fs::path& file, const std::string& bytes) {
  fs::create_directories(file.parent_path());
  write_file_atomically(file, bytes);
}

// Copies host paths from one tree into another, each symlink on the way recreated as a link (to
// the same place, relative), so the copy resolves as the source did.
class Snapshot {
 public:
  Snapshot(const fs::path& from, fs::path to) : reader_(from), to_(std::move(to)) {
    std::error_code ec;
    from_ = fs::canonical(from, ec);
    if (ec) throw InputError(from.string() + ": " + ec.message());
  }

  void copy(HostFs::Access access, const std::string& host_path) {
    if (!done_.insert({access, host_path}).second) return;
    const auto real = walk(host_path);
    if (!real) return;
    std::error_code ec;
    const fs::path src = from_ / real->relative_path();
    if (fs::is_directory(src, ec)) {
      fs::create_directories(to_ / real->relative_path());
      if (access != HostFs::Access::list) return;
      // Entries that are folders or links; files are copied when they are read.
      for (fs::directory_iterator it(src, ec), end; !ec && it != end; it.increment(ec)) {
        if (it->is_symlink(ec) || it->is_directory(ec)) copy(HostFs::Access::exists, (*real / it->path().filename()).string());
      }
    } else if (access == HostFs::Access::read) {
      if (auto bytes = reader_.read_all(real->string())) {
        write_bytes(to_ / real->relative_path(), *bytes);
        ++files_;
      }
    }
  }

  std::size_t files() const { return files_; }

 private:
  // The host path without symlinks that `host_path` leads to, creating the links on the way in
  // the copy; nullopt when it is missing or leads out of the tree.
  std::optional<fs::path> walk(const std::string& host_path) {
    fs::path cur = "/";
    for (const auto& part : fs::path(host_path).relative_path()) {
      if (part == "." || part.empty()) continue;
      if (part == "..") {
        cur = cur.parent_path();
        continue;
      }
      const fs::path next = cur / part;
      std::error_code ec;
      const auto st = fs::symlink_status(from_ / next.relative_path(), ec);
      if (ec || !fs::exists(st)) return std::nullopt;
      if (!fs::is_symlink(st)) {
        cur = next;
        continue;
      }
      const fs::path target = fs::canonical(from_ / next.relative_path(), ec);
      if (ec) return std::nullopt;
      const fs::path rel = target.lexically_relative(from_);
      if (rel.empty() || *rel.begin() == "..") return std::nullopt;
      const fs::path host_target = rel == "." ? fs::path("/") : "/" / rel;
      const fs::path link = to_ / next.relative_path();
      fs::create_directories(link.parent_path());
      if (!fs::exists(fs::symlink_status(link, ec))) {
        fs::create_symlink(host_target.lexically_relative(cur), link);
        ++files_;
      }
      cur = host_target;
    }
    return cur;
  }

  HostFs reader_;
  fs::path from_, to_;
  std::set<std::pair<HostFs::Access, std::string>> done_;
  std::size_t files_ = 0;
};

}  // namespace

SavedCapture save_capture(const fs::path& dir, const fs::path& source_root, const ToolSource& tools,
                          const std::vector<std::string>& modules) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !(fs::is_directory(dir, ec) && fs::is_empty(dir, ec))) {
    throw InputError("--save-capture " + dir.string() + ": exists and is not an empty folder");
  }
  fs::create_directories(dir / kCaptureFolder, ec);
  if (ec) throw InputError("--save-capture " + dir.string() + ": " + ec.message());

  HostFs fs_read(source_root);
  HostFs::Log log;
  fs_read.log_to(&log);
  tree_hostname(fs_read);
  // Tools are run below, every one of them, so that reading needs none.
  const HostState host = read_host(fs_read, ToolSource::none("saving"), "", modules);

  SavedCapture saved;
  Snapshot snapshot(source_root, dir);
  for (const auto& [access, path] : log) snapshot.copy(access, path);
  saved.files = snapshot.files();

  std::vector<std::string> netdevs;
  for (const auto& d : host.devices) {
    if (d.netdev) netdevs.push_back(d.netdev->name);
  }
  std::string commands;
  for (const auto& q : all_queries(netdevs)) {
    const ToolText t = tools.get(q);
    if (!t.text) {
      saved.not_saved.push_back(join_argv(q.argv) + ": " + t.missing);
      continue;
    }
    write_bytes(dir / kCaptureFolder / q.capture_name, *t.text);
    saved.outputs.push_back(q.capture_name + "\t" + join_argv(q.argv));
    commands += saved.outputs.back() + "\n";
  }
  write_bytes(dir / kCaptureFolder / kCommandsFile, commands);
  return saved;
}

}  // namespace rocebench::netcheck
