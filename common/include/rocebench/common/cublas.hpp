// cuBLAS, loaded on its first use instead of at every start of rocebench: libcublas pulls in
// libcublasLt, whose relocations are most of the dynamic loader's work, and under the soft-RoCE bed's
// emulated CPUs that work made every rank's start seconds long, although only the GPU engine and the
// GPU micro-benchmarks call cuBLAS. Built where CUDA is (target rb_cublas).
#pragma once

#include <cublas_v2.h>

namespace rocebench::cublas {

// The entry points rocebench calls (cublas_v2.h's cublasCreate is cublasCreate_v2, and so on).
struct Api {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) set_stream;
  // The library's own cublasGemmEx (C++ code also sees an inline overload taking cudaDataType).
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                            cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  decltype(&cublasGetStatusString) status_string;
};

// Loads the library once (thread-safe); an InfraError names the library and the loader's reason when it
// or an entry point is missing.
const Api& api();

}  // namespace rocebench::cublas
