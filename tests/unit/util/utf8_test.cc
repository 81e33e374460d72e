// UTF-8 checks for protobuf string fields (RFC 3629).
#include "gcpstream/util/utf8.h"

#include <gtest/gtest.h>

namespace gcpstream::util {
namespace {

TEST(Utf8Test, FindsTheFirstByteThatIsNotWellFormed) {
  EXPECT_FALSE(InvalidUtf8At("plain ascii").has_value());
  EXPECT_FALSE(InvalidUtf8At("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80").has_value());
  EXPECT_EQ(InvalidUtf8At("ab\xff"), 2u);
  EXPECT_EQ(InvalidUtf8At("\xc0\xaf"), 0u) << "overlong";
  EXPECT_EQ(InvalidUtf8At("x\xed\xa0\x80"), 1u) << "a surrogate";
  EXPECT_EQ(InvalidUtf8At("\xf4\x90\x80\x80"), 0u) << "above U+10FFFF";
  EXPECT_EQ(InvalidUtf8At("ok\xc3"), 2u) << "cut short";
}

TEST(Utf8Test, ToValidUtf8EscapesBadBytesAndNeverSplitsACharacter) {
  EXPECT_EQ(ToValidUtf8("a\xff"
                        "b",
                        100),
            "a\\xffb");
  EXPECT_EQ(ToValidUtf8("caf\xc3\xa9", 4), "caf") << "the 2-byte e-acute does not fit";
  EXPECT_EQ(ToValidUtf8("caf\xc3\xa9", 5), "caf\xc3\xa9");
  EXPECT_EQ(ToValidUtf8("ab\xff", 4), "ab") << "an escape that does not fit is left out";
  EXPECT_EQ(ToValidUtf8("", 10), "");
  for (std::size_t max = 0; max < 12; ++max) {
    const std::string out = ToValidUtf8("\xe2\x82\xac\xff\xe2\x82\xac", max);
    EXPECT_LE(out.size(), max);
    EXPECT_FALSE(InvalidUtf8At(out).has_value()) << max;
  }
}

}  // namespace
}  // namespace gcpstream::util
