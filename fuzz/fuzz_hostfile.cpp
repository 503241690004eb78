// A hostfile (`rocebench run --hostfile`): Open MPI's "host slots=N" lines.
#include "fuzz_input.hpp"
#include "launch.hpp"
#include "rocebench/common/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    (void)rocebench::parse_hostfile(rbfuzz::text_of(data, size), "hosts");
  } catch (const rocebench::InputError&) {
  }
  return 0;
}
