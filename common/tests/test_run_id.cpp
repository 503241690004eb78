#include <gtest/gtest.h>

#include <regex>

#include "rocebench/common/run_id.hpp"

using namespace rocebench;

TEST(RunId, TokensAreRandomHex) {
  const std::string a = random_token(), b = random_token();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}

// Every command names its runs alike: UTC time, then random digits, after the kind when one is given.
TEST(RunId, OneFormEveryCommandShares) {
  const std::regex plain(R"(\d{8}-\d{6}-[0-9a-f]{6})"), probe(R"(probe-\d{8}-\d{6}-[0-9a-f]{6})");
  const std::string a = new_run_id(), b = new_run_id();
  EXPECT_TRUE(std::regex_match(a, plain)) << a;
  EXPECT_NE(a, b) << "two ids in one second differ";
  EXPECT_TRUE(std::regex_match(new_run_id("probe"), probe)) << new_run_id("probe");
}
