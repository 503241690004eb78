// The rendezvous wire protocol as the server reads it: length-prefixed JSON frames from any client.
#include "fuzz_input.hpp"
#include "rocebench/common/errors.hpp"
#include "wire.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string buffer = rbfuzz::text_of(data, size);
  nlohmann::json message;
  try {
    while (rocebench::wire::pop_message(buffer, message)) {
    }
  } catch (const rocebench::InfraError&) {  // what the server answers "malformed request" to
  }
  return 0;
}
