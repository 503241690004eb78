// Built without cuDNN: the gpu engine exists by name and says why it cannot run.
#include "rocebench/models/engine.hpp"

namespace rocebench::models {

std::unique_ptr<Engine> make_gpu_engine(const Graph&, const EngineOptions&) {
  throw EngineUnavailable("engine gpu: rocebench was built without CUDA/cuDNN");
}

}  // namespace rocebench::models
