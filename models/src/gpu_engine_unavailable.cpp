// Built without cuDNN: the gpu engine exists by name and says why it cannot run.
#include "rocebench/common/errors.hpp"
#include "rocebench/models/engine.hpp"

namespace rocebench::models {

std::unique_ptr<Engine> make_gpu_engine(const Graph&, const EngineOptions&) {
  throw Unavailable("engine gpu: rocebench was built without CUDA/cuDNN");
}

// No engine makes device gradients in this build.
void copy_to_host(const GradientReady&, float*) { throw Unavailable("engine gpu: rocebench was built without CUDA/cuDNN"); }
void copy_to_device(float*, const float*, std::int64_t) { throw Unavailable("engine gpu: rocebench was built without CUDA/cuDNN"); }
void finish_copies_to_device() {}

}  // namespace rocebench::models
