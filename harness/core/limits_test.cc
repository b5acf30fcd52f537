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

TEST(LimitsTest, DescribeClaims) {
  Limits l;
  l.noexec = NoexecClaim{.every_writable = true, .paths = {}};
  l.seccomp = SeccompClaim::kDefault;
  EXPECT_EQ(DescribeLimits(l), "noexec every writable path, seccomp default");
  l.noexec = NoexecClaim{.every_writable = false, .paths = {"/tmp", "/dev/shm"}};
  l.seccomp.reset();
  EXPECT_EQ(DescribeLimits(l), "noexec /tmp /dev/shm");
}

TEST(LimitsTest, ParseClaimPathTable) {
  const struct {
    const char* in;
    const char* want;
  } ok[] = {{"/tmp", "/tmp"},           {"/dev/shm/", "/dev/shm"},
            {"//var//tmp", "/var/tmp"}, {"/", "/"},
            {"/a b/c", "/a b/c"},       {"/run/user/1000", "/run/user/1000"},
            {"/.hidden", "/.hidden"},   {"/x...", "/x..."}};
  for (const auto& c : ok) EXPECT_EQ(ParseClaimPath(c.in).value(), c.want) << c.in;
  const struct {
    const char* in;
    const char* says;
  } bad[] = {{"", "not an absolute path"},    {"tmp", "not an absolute path"},
             {"~/x", "not an absolute path"}, {"/tmp/../etc", "'..' part"},
             {"/./tmp", "'.' part"},          {"/tmp\n", "control character"},
             {"/a\x01b", "control character"}};
  for (const auto& c : bad) {
    auto r = ParseClaimPath(c.in);
    ASSERT_FALSE(r.has_value()) << c.in;
    EXPECT_NE(r.error().find(c.says), std::string::npos) << r.error();
  }
  EXPECT_FALSE(ParseClaimPath("/" + std::string(4096, 'a')).has_value());
}

TEST(LimitsTest, ParseSeccompClaimTable) {
  EXPECT_EQ(ParseSeccompClaim("default").value(), SeccompClaim::kDefault);
  EXPECT_EQ(ToString(SeccompClaim::kDefault), "default");
  for (const char* bad : {"", "Default", "defualt", "unconfined", "strict", " default"}) {
    auto r = ParseSeccompClaim(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_NE(r.error().find("expected default"), std::string::npos) << r.error();
  }
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
