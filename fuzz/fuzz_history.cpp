// A history database (`rocebench history check | export | trends --db FILE`): the input written as
// a SQLite file, opened as an existing history and read whole: its runs, their hosts, its series and
// points, their noise and the check. A file that is not a history, or a damaged one, is an
// InputError or an InfraError; nothing may crash or hang.
#include <chrono>
#include <filesystem>
#include <fstream>

#include "fuzz_input.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/temp_dir.hpp"
#include "rocebench/reports/history.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace rocebench::reports;
  static const std::filesystem::path dir = rocebench::make_temp_dir("fuzz-history");
  const std::filesystem::path file = dir / "history.sqlite";
  for (const char* stale : {"", "-journal", "-wal", "-shm"}) std::filesystem::remove(file.string() + stale);
  std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  try {
    History history(file, History::Mode::existing, std::chrono::milliseconds(0));
    const auto runs = history.runs();
    for (const auto& run : runs) (void)history.hosts_of(run.run);
    const auto series = history.series();
    (void)run_noise(series);
    (void)check_history(series, runs, {});
  } catch (const rocebench::InputError&) {
  } catch (const rocebench::InfraError&) {
  }
  return 0;
}
