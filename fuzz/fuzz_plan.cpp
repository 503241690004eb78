// A plan file (`rocebench run PLAN`): located JSON, the plan schema, the launcher and steps fields.
#include "fuzz_input.hpp"
#include "plan.hpp"
#include "rocebench/common/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    (void)rocebench::parse_plan(rbfuzz::text_of(data, size), "plan.json", {});
  } catch (const rocebench::InputError&) {
  }
  return 0;
}
