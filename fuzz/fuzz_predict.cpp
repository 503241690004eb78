// What `rocebench predict` reads from a user: a fabric file (`--fabric FILE`) and a published scaling
// table (`--published FILE`, whose fabric block is read as a fabric file). Bad input is an InputError.
#include "fuzz_input.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/models/fabric.hpp"
#include "rocebench/models/published.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    (void)rocebench::models::parse_fabric(rbfuzz::text_of(data, size), "fuzz.json");
  } catch (const rocebench::InputError&) {
  }
  const rbfuzz::InputFile file(data, size);
  try {
    (void)rocebench::models::load_published(file.path().string());
  } catch (const rocebench::InputError&) {
  }
  return 0;
}
