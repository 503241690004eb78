// A compute timeline (`train --engine replay --timeline FILE`): the first models.train record with
// samples.layers, read by lines within the timeline's limits and checked against a model's graph.
// Bad input is an InputError.
#include "fuzz_input.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/models/timeline.hpp"
#include "rocebench/models/zoo.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const rocebench::models::Graph graph = rocebench::models::build_model("resnet20_cifar");  // the seeds' model
  const rbfuzz::InputFile file(data, size);
  try {
    (void)rocebench::models::read_timeline(file.path(), graph);
  } catch (const rocebench::InputError&) {
  }
  return 0;
}
