// The one reader of user-named files (bounded_read.hpp) and the readers of common that use it: each
// refusal names the file, the line and the limit, and comes before memory grows.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "rocebench/common/bounded_read.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/located_json.hpp"
#include "rocebench/common/record.hpp"
#include "rocebench/common/results_limits.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/common/temp_dir.hpp"

using namespace rocebench;
namespace fs = std::filesystem;

namespace {

constexpr InputLimits kSmall{"test file", 1000, 100};

std::string input_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

void write_file(const fs::path& file, const std::string& text) { std::ofstream(file, std::ios::binary) << text; }

// A file of `bytes` zeros that takes no disk (a hole): a 1 GiB "line" without a newline.
fs::path sparse_file(const fs::path& file, std::uint64_t bytes) {
  write_file(file, "");
  fs::resize_file(file, bytes);
  return file;
}

long peak_rss_kib() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<std::string> all_lines(const fs::path& file, const InputLimits& limits) {
  std::vector<std::string> out;
  LineReader lines(file, limits);
  for (std::string_view line; lines.next(line);) out.push_back(std::to_string(lines.number()) + (lines.complete() ? ":" : "~") + std::string(line));
  return out;
}

}  // namespace

TEST(BoundedRead, RefusesDevicesFifosAndFoldersByTheirKind) {
  const fs::path dir = make_temp_dir("bounded");
  const fs::path fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Every reader of common: none blocks on the FIFO, none reads /dev/zero without end.
  const std::vector<std::function<void(const fs::path&)>> readers = {
      [](const fs::path& f) { read_input(f, kSmall); },
      [](const fs::path& f) { LineReader(f, kSmall); },
      [](const fs::path& f) { read_records(f); },
      [](const fs::path& f) { load_located(f); },
      [](const fs::path& f) { JsonSchema::from_file(f); }};
  for (const auto& read : readers) {
    EXPECT_EQ(input_error([&] { read("/dev/zero"); }), "/dev/zero: is a character device, not a file");
    EXPECT_EQ(input_error([&] { read(fifo); }), fifo.string() + ": is a FIFO (named pipe), not a file");
    EXPECT_EQ(input_error([&] { read(dir); }), dir.string() + ": is a folder, not a file");
    EXPECT_TRUE(contains(input_error([&] { read(dir / "absent"); }), "absent: cannot open the ")) << input_error([&] { read(dir / "absent"); });
  }
}

TEST(BoundedRead, RefusesAFileOverItsLimitBeforeReadingIt) {
  const fs::path dir = make_temp_dir("bounded");
  write_file(dir / "ok", std::string(999, 'x') + "\n");
  EXPECT_EQ(read_input(dir / "ok", {"test file", 1000}).size(), 1000u);
  write_file(dir / "big", std::string(1001, '\n'));
  EXPECT_EQ(input_error([&] { read_input(dir / "big", kSmall); }), (dir / "big").string() + ": is 1001 bytes; a test file is at most 1000 bytes");
  // The stated limits of the results reader, and of the plan, profile and thresholds files.
  const fs::path huge = sparse_file(dir / "huge.jsonl", kResultsLimits.max_bytes + 1);
  EXPECT_EQ(input_error([&] { read_records(huge); }), huge.string() + ": is 4.0 GiB; a results file is at most 4 GiB");
  sparse_file(dir / "plan.json", 17 * kMiB);
  EXPECT_EQ(input_error([&] { load_located(dir / "plan.json"); }), (dir / "plan.json").string() + ": is 17 MiB; a JSON file is at most 16 MiB");
}

TEST(BoundedRead, GivesLinesWithTheirNumbersAndRefusesOneOverTheLimitAtItsLine) {
  const fs::path dir = make_temp_dir("bounded");
  write_file(dir / "lines", "a\n\n" + std::string(99, 'b') + "\r\nc");  // '\r' is the line's: 100 bytes
  EXPECT_EQ(all_lines(dir / "lines", kSmall), (std::vector<std::string>{"1:a", "2:", "3:" + std::string(99, 'b') + "\r", "4~c"}));
  write_file(dir / "long", "a\nb\n" + std::string(101, 'x') + "\nc\n");
  const std::string message = (dir / "long").string() + ":3: a line of a test file is at most 100 bytes; this one is longer";
  EXPECT_EQ(input_error([&] { all_lines(dir / "long", kSmall); }), message);
  EXPECT_EQ(input_error([&] { read_input(dir / "long", kSmall); }), message);
  const std::string text = "a\nb\n" + std::string(101, 'x');  // the last line, cut, counts too
  EXPECT_EQ(input_error([&] {
              TextLines lines(text, "mapped", kSmall);
              for (std::string_view line; lines.next(line);) {
              }
            }),
            "mapped:3: a line of a test file is at most 100 bytes; this one is longer");
}

TEST(BoundedRead, ALineOfAGigabyteIsRefusedWithoutReadingIt) {
  const fs::path dir = make_temp_dir("bounded");
  const fs::path one_line = sparse_file(dir / "zeros.jsonl", kGiB);
  const long before = peak_rss_kib();
  EXPECT_EQ(input_error([&] { read_records(one_line); }),
            one_line.string() + ":1: a line of a results file is at most 8 MiB; this one is longer");
  EXPECT_LT(peak_rss_kib() - before, 64 * 1024) << "KiB grown while refusing a 1 GiB line";
}

TEST(BoundedRead, ARecordFieldThatNamesASeriesHasALengthLimit) {
  const fs::path dir = make_temp_dir("bounded");
  const std::string fine = R"({"schema":"rocebench.result/1","run":"r","kind":"result","time":"2026-01-01T00:00:00Z",)"
                           R"("step":"collectives.allreduce","host":"h","rank":0,"world":1,"metrics":{"x":1},"samples":{},"status":"ok",)";
  const std::string big(kMaxSeriesFieldBytes + 1, 'v');
  const auto refusal = [&](const std::string& params, const std::string& metric = "x") {
    std::string bad = fine;
    bad.replace(bad.find(R"("x":1)"), 5, "\"" + metric + "\":1");
    write_file(dir / "r.jsonl", fine + R"("params":{}})" "\n" + bad + R"("params":)" + params + "}\n");
    return input_error([&] { read_records(dir / "r.jsonl", &result_schema()); });
  };
  const std::string at = (dir / "r.jsonl").string() + ":2: field ";
  EXPECT_EQ(refusal(R"({"model":")" + big + "\"}"),
            at + "'params.model': the value is 1.0 KiB long; a field that names a series is at most 1 KiB");
  EXPECT_EQ(refusal(R"({"sizes":[")" + std::string(600, 'a') + R"(",")" + std::string(600, 'b') + R"("]})"),
            at + "'params.sizes': the value is 1.2 KiB long; a field that names a series is at most 1 KiB");
  EXPECT_TRUE(contains(refusal(R"({")" + big + "\":1}"), at + "'params.vvvv")) << refusal(R"({")" + big + "\":1}");
  EXPECT_TRUE(contains(refusal("{}", big), at + "'metrics.vvvv")) << refusal("{}", big);
  EXPECT_EQ(refusal("{}", "y"), "(no InputError)");
  std::string host = fine;
  host.replace(host.find(R"("host":"h")"), 10, "\"host\":\"" + big + "\"");
  write_file(dir / "h.jsonl", host + R"("params":{}})" "\n");
  EXPECT_EQ(input_error([&] { read_records(dir / "h.jsonl"); }),
            (dir / "h.jsonl").string() + ":1: field 'host': the value is 1.0 KiB long; a field that names a series is at most 1 KiB");
}

TEST(BoundedRead, AFileOfMostlyBadLinesIsRefusedNotKeptAsIssues) {
  const fs::path dir = make_temp_dir("bounded");
  std::string junk;
  for (std::size_t i = 0; i <= kMaxReadIssues; ++i) junk += "x\n";
  write_file(dir / "junk", junk);
  EXPECT_EQ(input_error([&] { read_records(dir / "junk"); }),
            (dir / "junk").string() + ":1001: more than 1000 lines are not valid records: not a results file");
  junk.resize(junk.size() - 2);
  write_file(dir / "junk", junk);
  EXPECT_EQ(read_records(dir / "junk").issues.size(), kMaxReadIssues);
}
