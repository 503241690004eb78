#include <gtest/gtest.h>

#include "rocebench/common/base64.hpp"

using namespace rocebench;

// RFC 4648's test vectors, both ways.
TEST(Base64, TheRfcVectorsBothWays) {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(base64_encode(plain), encoded);
    EXPECT_EQ(base64_decode(encoded), std::optional<std::string>(plain)) << encoded;
  }
}

TEST(Base64, EveryByteValueComesBack) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  for (std::size_t cut = 0; cut < 4; ++cut) {
    const std::string part = bytes.substr(cut);
    EXPECT_EQ(base64_decode(base64_encode(part)), std::optional<std::string>(part)) << "from byte " << cut;
  }
}

TEST(Base64, WhatIsNotPaddedBase64IsRefused) {
  for (const char* bad : {"Zg=", "Zg", "Z===", "=Zg=", "Zg==Zg==", "Zm9v!A==", "Zm 9v", "Zm9vYg=a"}) {
    EXPECT_EQ(base64_decode(bad), std::nullopt) << bad;
  }
}
