// cuBLAS is loaded on its first use, not when rocebench starts (rocebench/common/cublas.hpp): this binary
// links every library rocebench does, so a library that links cuBLAS again fails the first expectation.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "rocebench/common/cublas.hpp"

namespace {

bool cublas_loaded() { return dlopen(ROCEBENCH_CUBLAS_LIBRARY, RTLD_LAZY | RTLD_NOLOAD) != nullptr; }

TEST(Cublas, IsLoadedOnFirstUseWithEveryEntryPoint) {
  ASSERT_FALSE(cublas_loaded()) << ROCEBENCH_CUBLAS_LIBRARY << " was loaded at the start: a library links it";
  const rocebench::cublas::Api& api = rocebench::cublas::api();
  EXPECT_TRUE(cublas_loaded());
  EXPECT_NE(api.create, nullptr);
  EXPECT_NE(api.destroy, nullptr);
  EXPECT_NE(api.set_stream, nullptr);
  EXPECT_NE(api.gemm_ex, nullptr);
  // A call that needs no GPU: the library answers through the loaded entry point.
  EXPECT_EQ(std::string(api.status_string(CUBLAS_STATUS_NOT_INITIALIZED)), "the library was not initialized");
  EXPECT_EQ(&rocebench::cublas::api(), &api) << "loaded once";
}

}  // namespace
