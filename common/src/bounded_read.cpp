#include "rocebench/common/bounded_read.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "rocebench/common/errors.hpp"

namespace rocebench {

namespace {

// What a file that is not a regular one is, in the words of the refusal.
const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

[[noreturn]] void refuse_kind(const std::string& name, mode_t mode) {
  throw InputError(name, 0, "", fmt::format("is {}, not a file", kind_of(mode)));
}

[[noreturn]] void refuse_size(const std::string& name, const InputLimits& limits, const char* size_text) {
  throw InputError(name, 0, "", fmt::format("{}; a {} is at most {}", size_text, limits.what, byte_size_text(limits.max_bytes)));
}

constexpr std::size_t kChunk = 64 * 1024;

}  // namespace

std::string byte_size_text(std::uint64_t bytes) {
  const auto in = [&](std::uint64_t unit, const char* name) {
    const double v = static_cast<double>(bytes) / static_cast<double>(unit);
    return bytes % unit == 0 ? fmt::format("{} {}", bytes / unit, name) : fmt::format("{:.1f} {}", v, name);
  };
  if (bytes >= kGiB) return in(kGiB, "GiB");
  if (bytes >= kMiB) return in(kMiB, "MiB");
  if (bytes >= 1024) return in(1024, "KiB");
  return fmt::format("{} bytes", bytes);
}

void refuse_other_kinds(const std::filesystem::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) refuse_kind(file.string(), st.st_mode);
}

InputFile::InputFile(const std::filesystem::path& file, const InputLimits& limits) : name_(file.string()), limits_(limits) {
  // The kind is checked before opening (opening some devices acts on them) and again on the open
  // file, which cannot change under us. O_NONBLOCK: a FIFO that appears in between does not block.
  refuse_other_kinds(file);
  struct stat st {};
  fd_ = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) throw InputError(name_, 0, "", fmt::format("cannot open the {}: {}", limits_.what, std::strerror(errno)));
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    refuse_kind(name_, st.st_mode);
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
  if (size_ > limits_.max_bytes) {
    ::close(fd_);
    refuse_size(name_, limits_, ("is " + byte_size_text(size_)).c_str());
  }
}

InputFile::~InputFile() { ::close(fd_); }

std::size_t InputFile::read(char* to, std::size_t n) {
  ssize_t got = 0;
  do got = ::read(fd_, to, n);
  while (got < 0 && errno == EINTR);
  if (got < 0) throw InputError(name_, 0, "", fmt::format("cannot read the {}: {}", limits_.what, std::strerror(errno)));
  read_ += static_cast<std::uint64_t>(got);
  if (read_ > limits_.max_bytes) refuse_size(name_, limits_, "grew while it was read");
  return static_cast<std::size_t>(got);
}

void refuse_long_line(const std::string& file, int line, const InputLimits& limits) {
  throw InputError(file, line, "", fmt::format("a line of a {} is at most {}; this one is longer", limits.what,
                                               byte_size_text(limits.max_line_bytes)));
}

std::string read_input(const std::filesystem::path& file, const InputLimits& limits) {
  InputFile in(file, limits);
  std::string text;
  text.reserve(static_cast<std::size_t>(in.size()));
  std::size_t line_start = 0;  // of the line being read
  int line = 1;
  char chunk[kChunk];
  for (std::size_t got; (got = in.read(chunk, sizeof chunk)) > 0;) {
    const std::size_t from = text.size();
    text.append(chunk, got);
    if (limits.max_line_bytes == 0) continue;
    for (std::size_t at = from; (at = text.find('\n', at)) != std::string::npos; ++at, ++line) {
      if (at - line_start > limits.max_line_bytes) refuse_long_line(in.name(), line, limits);
      line_start = at + 1;
    }
    if (text.size() - line_start > limits.max_line_bytes) refuse_long_line(in.name(), line, limits);
  }
  return text;
}

LineReader::LineReader(const std::filesystem::path& file, const InputLimits& limits) : file_(file, limits) {}

bool LineReader::next(std::string_view& line) {
  const std::size_t max = file_.limits().max_line_bytes;
  std::size_t scanned = start_;  // bytes before it hold no '\n'
  while (true) {
    const std::size_t end = buffer_.find('\n', scanned);
    if (end != std::string::npos) {
      ++number_;
      if (end - start_ > max) refuse_long_line(file_.name(), number_, file_.limits());
      line = std::string_view(buffer_).substr(start_, end - start_);
      start_ = end + 1;
      complete_ = true;
      return true;
    }
    if (buffer_.size() - start_ > max) refuse_long_line(file_.name(), number_ + 1, file_.limits());
    if (eof_) break;
    buffer_.erase(0, start_);  // what was given is no longer needed
    start_ = 0;
    scanned = buffer_.size();
    buffer_.resize(scanned + kChunk);
    const std::size_t got = file_.read(buffer_.data() + scanned, kChunk);
    buffer_.resize(scanned + got);
    eof_ = got == 0;
  }
  if (start_ == buffer_.size()) return false;
  ++number_;
  line = std::string_view(buffer_).substr(start_);
  start_ = buffer_.size();
  complete_ = false;
  return true;
}

bool TextLines::next(std::string_view& line) {
  if (pos_ >= text_.size()) return false;
  ++number_;
  // Looks no further than the limit: a mapped file's pages beyond it are never touched.
  const std::size_t max = limits_.max_line_bytes;
  const std::size_t end = text_.substr(pos_, max + 1).find('\n');
  complete_ = end != std::string_view::npos;
  if (!complete_ && text_.size() - pos_ > max) refuse_long_line(file_, number_, limits_);
  line = text_.substr(pos_, complete_ ? end : std::string_view::npos);
  pos_ += line.size() + (complete_ ? 1 : 0);
  return true;
}

}  // namespace rocebench
