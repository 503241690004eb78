// A results.jsonl as `rocebench report` and `compare` read it: the common reader with the result
// schema, the reports module's fast dataset loader, and compare's evidence of what loaded. Bad input
// is an issue or an InputError.
#include "fuzz_input.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/record.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/reports/compare.hpp"
#include "rocebench/reports/dataset.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const rbfuzz::InputFile file(data, size);
  try {  // a line over the limit, a field that names a series over its own, too many bad lines
    (void)rocebench::read_records(file.path(), &rocebench::result_schema());
  } catch (const rocebench::InputError&) {
  }
  try {
    rocebench::reports::Dataset dataset;
    dataset.load(file.path());
    // What compare makes of the records that loaded, run records included (hosts, their CPUs and ranks).
    const auto evidence = rocebench::reports::collect_evidence(dataset);
    (void)rocebench::reports::compare(evidence, evidence, {});
  } catch (const rocebench::InputError&) {
  }
  return 0;
}
