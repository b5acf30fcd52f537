#include "core/limits.h"

#include <gtest/gtest.h>

namespace sandprobe::core {
namespace {

TEST(LimitsTest, ParseBytesTable) {
  const struct {
    const char* in;
    uint64_t want;
  } ok[] = {{"0", 0},         {"1024", 1024},        {"16Ki", 16384}, {"256Mi", 268435456},
            {"1Gi", 1 << 30}, {"64M", 64000000},     {"1.5Ki", 1536}, {"2GiB", 2ull << 30},
            {"10B", 10},      {"32MiB", 32ull << 20}};
  for (const auto& c : ok) EXPECT_EQ(ParseBytes(c.in).value(), c.want) << c.in;
  for (const char* bad : {"", "Mi", "-1", "12XB", "1e3", "abc", "99999999999999999999Gi"}) {
    auto r = ParseBytes(bad);
    EXPECT_FALSE(r.has_value()) << bad;
  }
  EXPECT_NE(ParseBytes("12XB").error().find("XB"), std::string::npos);
}

TEST(LimitsTest, ParseSecondsTable) {
  EXPECT_DOUBLE_EQ(ParseSeconds("10s").value(), 10);
  EXPECT_DOUBLE_EQ(ParseSeconds("10").value(), 10);
  EXPECT_DOUBLE_EQ(ParseSeconds("500ms").value(), 0.5);
  EXPECT_DOUBLE_EQ(ParseSeconds("2m").value(), 120);
  EXPECT_DOUBLE_EQ(ParseSeconds("1.5").value(), 1.5);
  for (const char* bad : {"", "s", "10x", "-3s"}) EXPECT_FALSE(ParseSeconds(bad)) << bad;
}

TEST(LimitsTest, Describe) {
  Limits l;
  EXPECT_EQ(DescribeLimits(l), "");
  l.timeout_s = 10;
  l.memory_bytes = 256ull << 20;
  l.tmp_bytes = 1536;
  l.pids = 64;
  l.output_bytes = 100;
  EXPECT_EQ(DescribeLimits(l), "timeout 10s, memory 256 MiB, tmp 1536 B, pids 64, output 100 B");
}

TEST(LimitsTest, GetConvertsUnits) {
  Limits l;
  l.memory_bytes = 256ull << 20;
  l.timeout_s = 10;
  EXPECT_DOUBLE_EQ(*l.Get("memory", "MiB"), 256);
  EXPECT_DOUBLE_EQ(*l.Get("memory", "B"), 256.0 * 1048576);
  EXPECT_DOUBLE_EQ(*l.Get("timeout", "s"), 10);
  EXPECT_FALSE(l.Get("tmp", "MiB"));
  EXPECT_FALSE(l.Get("nonsense", ""));
}

}  // namespace
}  // namespace sandprobe::core
