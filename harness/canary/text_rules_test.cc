// Table tests for the text rules shared by the listeners and for the bounded hit log.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "canary/hit_log.h"
#include "canary/tcp_canary.h"

namespace sandprobe::canary {
namespace {

TEST(PrintableTest, ReplacesControlAndHighBytesAndBounds) {
  EXPECT_EQ(Printable("GET /a b"), "GET /a b");
  EXPECT_EQ(Printable(std::string("a\nb\x1b[31m\xff\0z", 11)), "a?b?[31m??z");
  EXPECT_EQ(Printable(std::string(1000, 'x')).size(), kMaxDetailBytes);
  EXPECT_EQ(Printable("abcdef", 3), "abc");
}

TEST(TokenTest, NonceIsOneDnsLabel) {
  EXPECT_TRUE(IsValidNonce("abc-123_XYZ"));
  EXPECT_TRUE(IsValidNonce(std::string(63, 'a')));
  for (const std::string& bad :
       std::vector<std::string>{"", "a b", "a.b", "a\n", "caf\xc3\xa9", std::string(64, 'a')}) {
    EXPECT_FALSE(IsValidNonce(bad)) << bad;
  }
}

TEST(TokenTest, InvocationIsPrintableWithoutSpaces) {
  EXPECT_TRUE(IsValidInvocation("net.dns-control-1"));
  EXPECT_TRUE(IsValidInvocation(std::string(128, 'i')));
  for (const std::string& bad :
       std::vector<std::string>{"", "a b", "a\tb", "a\r", "\x7f", std::string(129, 'i')}) {
    EXPECT_FALSE(IsValidInvocation(bad)) << bad;
  }
}

TEST(TokenTest, InvocationFromTag) {
  struct Case {
    std::string tag;
    std::string want;
  };
  const Case cases[] = {
      {"n0nce inv-1", "inv-1"}, {"other inv-1", ""},  {"n0nce", ""},     {"n0nce ", ""},
      {"n0nce inv 2", ""},      {" n0nce inv-1", ""}, {"N0NCE inv", ""}, {"", ""},
      {"n0nce  inv-1", ""},     {"n0nceX inv-1", ""},
  };
  for (const Case& c : cases) EXPECT_EQ(InvocationFromTag(c.tag, "n0nce"), c.want) << c.tag;
}

TEST(TokenTest, ParseEchoLine) {
  EXPECT_EQ(ParseEchoLine("SANDPROBE n0nce inv-1", "n0nce"), "inv-1");
  EXPECT_EQ(ParseEchoLine("SANDPROBE other inv-1", "n0nce"), std::nullopt);
  EXPECT_EQ(ParseEchoLine("sandprobe n0nce inv-1", "n0nce"), std::nullopt);
  EXPECT_EQ(ParseEchoLine("SANDPROBE n0nce", "n0nce"), std::nullopt);
  EXPECT_EQ(ParseEchoLine("SANDPROBE-ECHO n0nce inv-1", "n0nce"), std::nullopt);
  EXPECT_EQ(ParseEchoLine("", "n0nce"), std::nullopt);
}

TEST(HitLogTest, KeepsTenThousandAndCountsTheRest) {
  HitLog log(10'000);
  for (int i = 0; i < 10'003; ++i) {
    Hit hit;
    hit.invocation = i % 2 == 0 ? "even" : "odd";
    log.Record(std::move(hit));
  }
  EXPECT_EQ(log.All().size(), 10'000u);
  EXPECT_EQ(log.dropped(), 3u);
  EXPECT_EQ(log.Matching("even").size(), 5'000u);
  EXPECT_EQ(log.Matching("odd").size(), 5'000u);
  EXPECT_TRUE(log.Matching("").empty());
}

}  // namespace
}  // namespace sandprobe::canary
