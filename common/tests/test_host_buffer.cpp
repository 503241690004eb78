#include "rocebench/common/host_buffer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>

using rocebench::HostBuffer;

TEST(HostBuffer, StartsZeroedAndKeepsWhatIsWrittenAcrossAMove) {
  const std::size_t bytes = (4u << 20) + 123;  // huge pages and a tail that is not a whole page
  HostBuffer a(bytes);
  ASSERT_NE(a.data(), nullptr);
  EXPECT_EQ(a.size(), bytes);
  EXPECT_TRUE(std::all_of(a.data(), a.data() + bytes, [](char c) { return c == 0; }));
  for (std::size_t i = 0; i < bytes; ++i) a.data()[i] = static_cast<char>(i * 7);

  HostBuffer b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.size(), 0u);
  ASSERT_EQ(b.size(), bytes);
  for (std::size_t i = 0; i < bytes; i += 4093) ASSERT_EQ(b.data()[i], static_cast<char>(i * 7)) << i;

  HostBuffer c(16);
  c = std::move(b);
  EXPECT_EQ(c.size(), bytes);
  EXPECT_EQ(c.data()[bytes - 1], static_cast<char>((bytes - 1) * 7));
  EXPECT_EQ(HostBuffer().data(), nullptr);
  EXPECT_EQ(HostBuffer(0).size(), 0u);
}
