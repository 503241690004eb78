// A test that needs a part of the set-up (a Debian package, a tool) that is missing here.
#pragma once

#include <cstdlib>
#include <string_view>

#include <gtest/gtest.h>

namespace rbtest {

// CI runs with CI=true after ci/setup.sh installed everything as root.
inline bool under_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string_view(ci) == "true";
}

}  // namespace rbtest

// Skips the test, saying why; under CI a missing part is a broken set-up, so the test fails instead.
#define RB_SKIP_WITHOUT_SETUP(why)                      \
  do {                                                  \
    if (rbtest::under_ci()) FAIL() << "CI=true, yet " << why; \
    GTEST_SKIP() << why;                                \
  } while (0)
