// GPU micro-benchmarks on every visible GPU (the last part of a name, gpu:N, says which): copies
// (bytes copied per second, as CUDA's bandwidthTest counts), kernel launch latency of an empty
// kernel, and cuBLAS GEMM TFLOP/s. The empty kernel is PTX
// loaded through the runtime's library API, so no part of the build needs nvcc.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "gpubench.hpp"
#include "rocebench/common/cublas.hpp"

namespace rocebench::microbench {

namespace {

void check(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(rc)));
}
void check(cublasStatus_t rc, const char* what) {
  if (rc != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(fmt::format("{}: cuBLAS status {}", what, static_cast<int>(rc)));
}

// A failure inside a benchmark ends it with an error that becomes the record's reason.
template <typename Body>
void guarded(benchmark::State& state, Body body) {
  try {
    body();
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

struct DeviceBuffer {
  explicit DeviceBuffer(std::size_t bytes) { check(cudaMalloc(&data, bytes), "cudaMalloc"); }
  ~DeviceBuffer() { cudaFree(data); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* data = nullptr;
};

struct HostMemory {
  HostMemory(std::size_t bytes, bool pinned) : pinned_(pinned) {
    if (pinned) check(cudaMallocHost(&data, bytes), "cudaMallocHost");
    else data = ::operator new(bytes);
    std::fill_n(static_cast<char*>(data), bytes, 1);  // touch every page before timing
  }
  ~HostMemory() {
    if (pinned_) cudaFreeHost(data);
    else ::operator delete(data);
  }
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;
  void* data = nullptr;

 private:
  bool pinned_;
};

struct Stream {
  Stream() { check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~Stream() { cudaStreamDestroy(s); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t s = nullptr;
};

// Every benchmark runs on the GPU its name says: buffers, streams and handles belong to the current device.
void use_gpu(int gpu) { check(cudaSetDevice(gpu), "cudaSetDevice"); }

void copy_benchmark(benchmark::State& state, int gpu, const std::string& dir, bool pinned, std::size_t bytes) {
  guarded(state, [&] {
    use_gpu(gpu);
    DeviceBuffer device(bytes), device2(dir == "d2d" ? bytes : 1);
    std::unique_ptr<HostMemory> host;
    if (dir != "d2d") host = std::make_unique<HostMemory>(bytes, pinned);
    Stream stream;
    void* dst = dir == "h2d" ? device.data : dir == "d2h" ? host->data : device2.data;
    const void* src = dir == "h2d" ? host->data : device.data;
    for (auto _ : state) {
      check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream.s), "cudaMemcpyAsync");
      check(cudaStreamSynchronize(stream.s), "cudaStreamSynchronize");
    }
    state.counters["bytes_moved"] = static_cast<double>(bytes);
  });
}

// An empty kernel, PTX for any GPU from Ampere on (the driver compiles it for the one present).
constexpr const char* kEmptyKernelPtx = R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry rocebench_empty()
{
  ret;
}
)";

// wait = sync: launch and wait for completion (the round trip a synchronous step pays);
// wait = none: the launch call alone, the queue drained after the timed loop.
void launch_benchmark(benchmark::State& state, int gpu, bool wait) {
  guarded(state, [&] {
    use_gpu(gpu);
    cudaLibrary_t library = nullptr;
    check(cudaLibraryLoadData(&library, kEmptyKernelPtx, nullptr, nullptr, 0, nullptr, nullptr, 0), "cudaLibraryLoadData");
    std::unique_ptr<CUlib_st, cudaError_t (*)(cudaLibrary_t)> unload(library, cudaLibraryUnload);
    cudaKernel_t kernel = nullptr;
    check(cudaLibraryGetKernel(&kernel, library, "rocebench_empty"), "cudaLibraryGetKernel");
    Stream stream;
    const auto* entry = reinterpret_cast<const void*>(kernel);  // the runtime takes a cudaKernel_t as is
    for (auto _ : state) {
      check(cudaLaunchKernel(entry, dim3(1), dim3(1), nullptr, 0, stream.s), "cudaLaunchKernel");
      if (wait) check(cudaStreamSynchronize(stream.s), "cudaStreamSynchronize");
    }
    check(cudaStreamSynchronize(stream.s), "cudaStreamSynchronize");
  });
}

struct GemmType {
  const char* name;
  cudaDataType_t data;
  cublasComputeType_t compute;
  std::size_t element_bytes;
};
constexpr GemmType kGemmTypes[] = {
    {"fp32", CUDA_R_32F, CUBLAS_COMPUTE_32F, 4},
    {"tf32", CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4},
    {"bf16", CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2},  // bf16 inputs and output, float32 accumulation
};

// C = A·B, square n×n, timed per call with CUDA events (manual time).
void gemm_benchmark(benchmark::State& state, int gpu, const GemmType& type, int n) {
  guarded(state, [&] {
    use_gpu(gpu);
    const std::size_t bytes = static_cast<std::size_t>(n) * static_cast<std::size_t>(n) * type.element_bytes;
    DeviceBuffer a(bytes), b(bytes), c(bytes);
    check(cudaMemset(a.data, 0, bytes), "cudaMemset");
    check(cudaMemset(b.data, 0, bytes), "cudaMemset");
    cublasHandle_t handle = nullptr;
    check(cublas::api().create(&handle), "cublasCreate");
    std::unique_ptr<cublasContext, cublasStatus_t (*)(cublasHandle_t)> destroy(handle, cublas::api().destroy);
    Stream stream;
    check(cublas::api().set_stream(handle, stream.s), "cublasSetStream");
    cudaEvent_t start = nullptr, stop = nullptr;
    check(cudaEventCreate(&start), "cudaEventCreate");
    check(cudaEventCreate(&stop), "cudaEventCreate");
    const float alpha = 1.0f, beta = 0.0f;
    auto gemm = [&] {
      check(cublas::api().gemm_ex(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.data, type.data, n, b.data, type.data,
                                  n, &beta, c.data, type.data, n, type.compute, CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx");
    };
    gemm();  // cuBLAS picks and loads its kernel on the first call
    check(cudaStreamSynchronize(stream.s), "cudaStreamSynchronize");
    for (auto _ : state) {
      check(cudaEventRecord(start, stream.s), "cudaEventRecord");
      gemm();
      check(cudaEventRecord(stop, stream.s), "cudaEventRecord");
      check(cudaEventSynchronize(stop), "cudaEventSynchronize");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
      state.SetIterationTime(static_cast<double>(ms) / 1e3);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    state.counters["flop"] = 2.0 * n * static_cast<double>(n) * n;
  });
}

}  // namespace

std::optional<std::string> gpu_unavailable() {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) return fmt::format("no GPU: cudaGetDeviceCount: {}", cudaGetErrorString(rc));
  if (count == 0) return std::string("no GPU: cudaGetDeviceCount found none");
  return std::nullopt;
}

void register_gpu_benchmarks(const HostBenchOptions& o) {
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  for (int gpu = 0; gpu < count; ++gpu) {
    // Registered under the benchmark's name with the device last: a filter on the name still matches.
    auto add = [&](const std::string& name, auto body, bool manual_time = false) {
      configured(benchmark::RegisterBenchmark(fmt::format("{}/gpu:{}", name, gpu).c_str(), body), o, manual_time);
    };
    for (std::size_t bytes = std::max<std::size_t>(o.min_bytes, 64 << 10); bytes <= o.max_bytes; bytes *= 16) {
      for (const std::string d : {"h2d", "d2h", "d2d"}) {
        for (const bool pinned : {true, false}) {
          if (d == "d2d" && !pinned) continue;
          const std::string memory = d == "d2d" ? "device" : pinned ? "pinned" : "pageable";
          add(fmt::format("gpu_copy/dir:{}/memory:{}/bytes:{}", d, memory, bytes),
              [gpu, d, pinned, bytes](benchmark::State& s) { copy_benchmark(s, gpu, d, pinned, bytes); });
        }
      }
    }
    for (const bool wait : {true, false}) {
      add(fmt::format("gpu_launch/wait:{}", wait ? "sync" : "none"), [gpu, wait](benchmark::State& s) { launch_benchmark(s, gpu, wait); });
    }
    for (const GemmType& type : kGemmTypes) {
      for (const int n : {4096, 8192}) {
        add(fmt::format("gpu_gemm/type:{}/n:{}", type.name, n),
            [gpu, &type, n](benchmark::State& s) { gemm_benchmark(s, gpu, type, n); }, /*manual_time=*/true);
      }
    }
  }
}

}  // namespace rocebench::microbench
