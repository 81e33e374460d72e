#include "gcpstream/connector/endpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gcpstream::connector {
namespace {

using ::testing::HasSubstr;

TEST(EndpointTest, ParsesHostAndPort) {
  auto e = Endpoint::parse("localhost:8085");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->host(), "localhost");
  EXPECT_EQ(e->port(), 8085);
  EXPECT_EQ(e->target(), "localhost:8085");
}

TEST(EndpointTest, ParsesBracketedIpv6) {
  auto e = Endpoint::parse("[::1]:9010");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->host(), "::1");
  EXPECT_EQ(e->target(), "[::1]:9010");
}

TEST(EndpointTest, RejectsMalformedValuesNamingTheValue) {
  for (const char* bad :
       {"", "localhost", ":8085", "localhost:", "localhost:0", "localhost:65536", "localhost:80a",
        "::1:8085", "[::1]8085", "http://x:1", "a b:1", "host:123456"}) {
    auto e = Endpoint::parse(bad);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(e.status().message(), HasSubstr(std::string("\"") + bad + "\"")) << bad;
  }
  EXPECT_THAT(Endpoint::parse("http://127.0.0.1:9020").status().message(),
              HasSubstr("URL scheme; write only host:port"))
      << "not the IPv6 advice the colons would otherwise draw";
}

}  // namespace
}  // namespace gcpstream::connector
