#include "rocebench/common/atomic_write.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "rocebench/common/cli.hpp"
#include "rocebench/common/errors.hpp"

namespace rocebench {

namespace fs = std::filesystem;

namespace {

fs::path folder_of(const fs::path& file) { return file.has_parent_path() ? file.parent_path() : fs::path("."); }

}  // namespace

std::string why_unwritable(const fs::path& file) {
  std::error_code ec;
  if (fs::is_directory(file, ec)) return "it is a folder";
  const fs::path folder = folder_of(file);
  if (!fs::is_directory(folder, ec)) return fmt::format("its folder {} does not exist", folder.string());
  if (::access(folder.c_str(), W_OK) != 0) return fmt::format("its folder {}: {}", folder.string(), std::strerror(errno));
  return "";
}

void require_writable(const fs::path& file, const std::string& flag) {
  if (const std::string why = why_unwritable(file); !why.empty()) {
    throw UsageError(fmt::format("{} {}: cannot write: {}", flag, printable_excerpt(file.string(), 200), why));
  }
}

void write_file_atomically(const fs::path& file, std::string_view text) {
  auto refuse = [&](const std::string& why) { throw InputError(file.string(), 0, "", "cannot write: " + why); };
  if (const std::string why = why_unwritable(file); !why.empty()) refuse(why);
  const fs::path tmp = folder_of(file) / fmt::format(".{}.tmp.{}", file.filename().string(), ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) refuse(std::strerror(errno));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  const int write_errno = done == text.size() ? 0 : errno ? errno : EIO;
  const bool closed = ::close(fd) == 0;
  if (write_errno || !closed || ::rename(tmp.c_str(), file.c_str()) != 0) {
    const int e = write_errno ? write_errno : errno;
    ::unlink(tmp.c_str());
    refuse(std::strerror(e));
  }
}

}  // namespace rocebench
