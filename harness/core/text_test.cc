#include "core/text.h"

#include <gtest/gtest.h>

#include <string>

namespace sandprobe::core {
namespace {

const std::string kDots = "\xe2\x80\xa6";  // "…"
const std::string kE = "\xc3\xa9";         // U+00E9, 2 bytes

TEST(Utf8PrefixBytes, NeverSplitsASequence) {
  struct Case {
    std::string text;
    size_t max;
    size_t want;
  } cases[] = {
      {"abc", 5, 3},
      {"abc", 2, 2},
      {"a" + kE + "b", 2, 1},
      {"a" + kE + "b", 3, 3},
      {kE, 1, 0},
      {"a" + kDots, 3, 1},
      {"", 4, 0},
  };
  for (const Case& c : cases) EXPECT_EQ(Utf8PrefixBytes(c.text, c.max), c.want) << c.text;
}

TEST(Bounded, EllipsisAfterTheBudget) {
  EXPECT_EQ(Bounded("abcdef", 6), "abcdef");
  EXPECT_EQ(Bounded("abcdefg", 6), "abcdef" + kDots);
  EXPECT_EQ(Bounded("a" + kE + "b", 2), "a" + kDots);
}

TEST(CutUtf8, EllipsisWithinTheBudget) {
  EXPECT_EQ(CutUtf8("abcdef", 6), "abcdef");
  EXPECT_EQ(CutUtf8("abcdefg", 6), "abc" + kDots);
  EXPECT_EQ(CutUtf8("abc", 6, /*force_ellipsis=*/true), "abc" + kDots);
  EXPECT_EQ(CutUtf8("abcdefg", 2), "");
}

TEST(OneLine, ControlsBecomeSpacesInvalidBytesReplacedAndBounded) {
  struct Case {
    std::string text;
    size_t max;
    bool trim;
    std::string want;
  } cases[] = {
      {"a\nb\r\tc\x1b[31m\x7f", std::string::npos, false, "a b  c [31m "},
      {"a\xff", std::string::npos, false, "a\xef\xbf\xbd"},  // U+FFFD
      {"abc  \n", std::string::npos, true, "abc"},
      {"abc  \n", std::string::npos, false, "abc   "},
      {std::string(300, 'x'), 10, false, std::string(10, 'x') + kDots},
      {"ab" + kE, 3, false, "ab" + kDots},
      {"", 5, true, ""},
  };
  for (const Case& c : cases) EXPECT_EQ(OneLine(c.text, c.max, c.trim), c.want) << c.text;
}

TEST(OneLine, ReadsAPrefixProportionalToTheBudget) {
  // Spaces at the end of the prefix it read are trimmed, and the cut is still marked.
  const std::string text = std::string(240, 'a') + std::string(100, ' ') + "b";
  EXPECT_EQ(OneLine(text, 240, /*trim_end=*/true), std::string(240, 'a') + kDots);
  const std::string huge(10 << 20, 'z');
  EXPECT_EQ(OneLine(huge, 8), "zzzzzzzz" + kDots);
}

}  // namespace
}  // namespace sandprobe::core
