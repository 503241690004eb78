#include <gtest/gtest.h>

#include "rocebench/common/hostname.hpp"

using namespace rocebench;

// A hostfile may name the launching host by any of its names: each is the host whose records say
// this_hostname().
TEST(Hostname, EveryNameOfThisHostIsThisHost) {
  EXPECT_TRUE(names_this_host(this_hostname()));
  EXPECT_TRUE(names_this_host("localhost"));
  EXPECT_TRUE(names_this_host("LOCALHOST"));
  EXPECT_TRUE(names_this_host("127.0.0.1"));
  EXPECT_TRUE(names_this_host("127.0.1.1")) << "Debian maps the FQDN to 127.0.1.1";
  EXPECT_TRUE(names_this_host("::1"));
}

TEST(Hostname, OtherHostsAreNotThisHost) {
  EXPECT_FALSE(names_this_host(""));
  EXPECT_FALSE(names_this_host("192.0.2.1")) << "TEST-NET-1 (RFC 5737) is no host's address";
  EXPECT_FALSE(names_this_host("no-such-host.invalid"));
}
