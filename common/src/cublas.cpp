#include "rocebench/common/cublas.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include "rocebench/common/errors.hpp"

namespace rocebench::cublas {

namespace {

template <class F>
void load(void* library, F& entry, const char* name) {
  void* symbol = dlsym(library, name);
  if (!symbol) throw InfraError(fmt::format("cuBLAS ({}) has no {}", ROCEBENCH_CUBLAS_LIBRARY, name));
  entry = reinterpret_cast<F>(symbol);
}

}  // namespace

const Api& api() {
  // A throw leaves the static uninitialised: the next call tries again.
  static const Api loaded = [] {
    void* library = dlopen(ROCEBENCH_CUBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!library) throw InfraError(fmt::format("cannot load cuBLAS ({}): {}", ROCEBENCH_CUBLAS_LIBRARY, dlerror()));
    Api entries{};
    load(library, entries.create, "cublasCreate_v2");
    load(library, entries.destroy, "cublasDestroy_v2");
    load(library, entries.set_stream, "cublasSetStream_v2");
    load(library, entries.gemm_ex, "cublasGemmEx");
    load(library, entries.status_string, "cublasGetStatusString");
    return entries;
  }();
  return loaded;
}

}  // namespace rocebench::cublas
