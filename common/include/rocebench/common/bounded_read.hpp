#pragma once
// The one way a file a user names is read: anything but a regular file is refused by its kind
// (/dev/zero "is a character device, not a file", a FIFO, a folder), a file larger than its reader's
// stated limit is refused before it is read, and a line longer than the stated limit a line is
// refused as soon as that many bytes are buffered. Every refusal is an InputError (exit 2) naming
// the file, the line and the limit. Each reader declares its InputLimits once, beside itself.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

namespace rocebench {

struct InputLimits {
  const char* what;                  // how messages name the input: "results file", "timeline"
  std::uint64_t max_bytes;           // the whole file
  std::size_t max_line_bytes = 0;    // one line without its '\n'; 0: not read by lines
};

inline constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
inline constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

// "4 MiB", "1.5 GiB", "300 bytes".
std::string byte_size_text(std::uint64_t bytes);

// An open regular file within its limits; throws InputError for a missing file, another kind of
// file, or one larger than limits.max_bytes.
class InputFile {
 public:
  InputFile(const std::filesystem::path& file, const InputLimits& limits);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  int fd() const { return fd_; }
  std::uint64_t size() const { return size_; }  // as fstat said at open
  const std::string& name() const { return name_; }
  const InputLimits& limits() const { return limits_; }

  // Up to `n` bytes into `to`; 0 at the end. Throws when the file has grown past its limit
  // (st_size says 0 for /proc files, and a file may grow while it is read).
  std::size_t read(char* to, std::size_t n);

 private:
  std::string name_;
  InputLimits limits_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::uint64_t read_ = 0;
};

// The refusal of line `line` (1-based) of `file`, longer than limits.max_line_bytes.
[[noreturn]] void refuse_long_line(const std::string& file, int line, const InputLimits& limits);

// Refuses a path that exists and is not a regular file, by its kind: for files a library opens
// itself (a SQLite history), which a device or a FIFO would make fail as an I/O error, or hang.
void refuse_other_kinds(const std::filesystem::path& file);

// What a file holds, whole; with max_line_bytes, each line within it. For documents (JSON, tool
// output) that are parsed whole anyway.
std::string read_input(const std::filesystem::path& file, const InputLimits& limits);

// The lines of a file, one at a time, never holding more than about one line's limit.
class LineReader {
 public:
  LineReader(const std::filesystem::path& file, const InputLimits& limits);

  // The next line without its '\n' ('\r' is kept: the caller decides); false at the end of the
  // file. The view lasts until the next call.
  bool next(std::string_view& line);
  int number() const { return number_; }          // the line next() gave, 1-based
  bool complete() const { return complete_; }      // it ended with '\n' (the last line may be cut)
  const std::string& name() const { return file_.name(); }

 private:
  InputFile file_;
  std::string buffer_;
  std::size_t start_ = 0;  // where the next line starts in buffer_
  bool eof_ = false;
  int number_ = 0;
  bool complete_ = false;
};

// The lines of text already in memory (a mapped file, a compiled-in one), each within
// limits.max_line_bytes; refusals name `file`. Each line's view points into `text`; '\r' is kept.
class TextLines {
 public:
  TextLines(std::string_view text, std::string file, const InputLimits& limits)
      : text_(text), file_(std::move(file)), limits_(limits) {}
  bool next(std::string_view& line);
  int number() const { return number_; }
  bool complete() const { return complete_; }

 private:
  std::string_view text_;
  std::string file_;
  InputLimits limits_;
  std::size_t pos_ = 0;
  int number_ = 0;
  bool complete_ = false;
};

}  // namespace rocebench
