// Other tools' outputs (`rocebench import`): perftest, nccl-tests and OSU, text or JSON, each one.
#include "fuzz_input.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/reports/importers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = rbfuzz::text_of(data, size);
  for (const auto importer : {rocebench::reports::parse_perftest, rocebench::reports::parse_nccl_tests,
                              rocebench::reports::parse_osu}) {
    try {
      (void)importer(text, "output.txt", {});
    } catch (const rocebench::InputError&) {
    }
  }
  return 0;
}
