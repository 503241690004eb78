# Finds the CUDA toolkit (with NCCL and cuDNN) under /usr/local/cuda when asked to or when AUTO finds it.
# Sets ROCEBENCH_HAVE_CUDA, ROCEBENCH_HAVE_NCCL, ROCEBENCH_HAVE_CUDNN and ROCEBENCH_CUDA_SUMMARY,
# and the imported targets rocebench::cuda (cudart), rocebench::nccl, rocebench::cudnn.
set(ROCEBENCH_HAVE_CUDA OFF)
set(ROCEBENCH_HAVE_NCCL OFF)
set(ROCEBENCH_HAVE_CUDNN OFF)

if(ROCEBENCH_WITH_CUDA STREQUAL "OFF")
  set(ROCEBENCH_CUDA_SUMMARY "not built (ROCEBENCH_WITH_CUDA=OFF)")
  return()
endif()

if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
  set(CUDAToolkit_ROOT /usr/local/cuda)
endif()
find_package(CUDAToolkit QUIET)

if(NOT CUDAToolkit_FOUND)
  if(ROCEBENCH_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "ROCEBENCH_WITH_CUDA=ON but no CUDA toolkit was found (looked in /usr/local/cuda)")
  endif()
  set(ROCEBENCH_CUDA_SUMMARY "not built (no CUDA toolkit under /usr/local/cuda)")
  return()
endif()

set(ROCEBENCH_HAVE_CUDA ON)
add_library(rocebench::cuda INTERFACE IMPORTED)
target_link_libraries(rocebench::cuda INTERFACE CUDA::cudart)
set(_parts "CUDA ${CUDAToolkit_VERSION}")

find_path(ROCEBENCH_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
find_library(ROCEBENCH_NCCL_LIB nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
if(ROCEBENCH_NCCL_INCLUDE AND ROCEBENCH_NCCL_LIB)
  set(ROCEBENCH_HAVE_NCCL ON)
  add_library(rocebench::nccl INTERFACE IMPORTED)
  target_include_directories(rocebench::nccl INTERFACE ${ROCEBENCH_NCCL_INCLUDE})
  target_link_libraries(rocebench::nccl INTERFACE ${ROCEBENCH_NCCL_LIB} rocebench::cuda)
  string(APPEND _parts ", NCCL")
else()
  string(APPEND _parts ", no NCCL (nccl.h / libnccl not found)")
endif()

find_path(ROCEBENCH_CUDNN_INCLUDE cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
find_library(ROCEBENCH_CUDNN_LIB cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
if(ROCEBENCH_CUDNN_INCLUDE AND ROCEBENCH_CUDNN_LIB)
  set(ROCEBENCH_HAVE_CUDNN ON)
  add_library(rocebench::cudnn INTERFACE IMPORTED)
  target_include_directories(rocebench::cudnn INTERFACE ${ROCEBENCH_CUDNN_INCLUDE})
  target_link_libraries(rocebench::cudnn INTERFACE ${ROCEBENCH_CUDNN_LIB} rocebench::cuda)
  string(APPEND _parts ", cuDNN")
else()
  string(APPEND _parts ", no cuDNN (cudnn.h / libcudnn not found)")
endif()

# Executables find the toolkit's libraries without LD_LIBRARY_PATH.
list(APPEND CMAKE_BUILD_RPATH ${CUDAToolkit_LIBRARY_DIR})
list(APPEND CMAKE_INSTALL_RPATH ${CUDAToolkit_LIBRARY_DIR})
set(ROCEBENCH_CUDA_SUMMARY "built (${_parts}) from ${CUDAToolkit_LIBRARY_DIR}")
