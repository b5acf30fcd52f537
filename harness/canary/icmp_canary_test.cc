// The ICMP canary: the pure packet reading, and a live round trip on 127.0.0.1 through a raw
// socket (the harness's CI runs as root; without CAP_NET_RAW the canary reports why it is absent).
#include "canary/icmp_canary.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "canary/canary_testing.h"

namespace sandprobe::canary {
namespace {

// An IPv4 + ICMP packet as a raw socket reads it.
std::vector<uint8_t> Packet(uint8_t type, std::string_view data, uint16_t fragment = 0,
                            uint8_t protocol = IPPROTO_ICMP) {
  std::vector<uint8_t> p(20 + 8);
  p[0] = 0x45;
  p[6] = fragment >> 8;
  p[7] = fragment & 0xff;
  p[9] = protocol;
  const uint8_t src[4] = {127, 0, 0, 9}, dst[4] = {127, 0, 0, 1};
  std::copy(src, src + 4, p.begin() + 12);
  std::copy(dst, dst + 4, p.begin() + 16);
  p[20] = type;
  p[24] = 0x12, p[25] = 0x34, p[26] = 0, p[27] = 7;
  p.insert(p.end(), data.begin(), data.end());
  return p;
}

TEST(ParseIcmpEchoRequestTest, ReadsAnEchoRequestAndRefusesEverythingElse) {
  const auto ok = ParseIcmpEchoRequest(Packet(8, "SANDPROBE n0nce inv-1"));
  ASSERT_TRUE(ok);
  char src[INET_ADDRSTRLEN], dst[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &ok->source, src, sizeof src);
  inet_ntop(AF_INET, &ok->destination, dst, sizeof dst);
  EXPECT_EQ(std::string(src), "127.0.0.9");
  EXPECT_EQ(std::string(dst), "127.0.0.1");
  EXPECT_EQ(ok->id, 0x1234);
  EXPECT_EQ(ok->sequence, 7);
  EXPECT_EQ(ok->data, "SANDPROBE n0nce inv-1");
  EXPECT_FALSE(ParseIcmpEchoRequest(Packet(0, "SANDPROBE n0nce inv-1")));  // an echo reply
  EXPECT_FALSE(ParseIcmpEchoRequest(Packet(8, "x", 0x2000)));              // more fragments
  EXPECT_FALSE(ParseIcmpEchoRequest(Packet(8, "x", 0x0001)));              // an offset
  EXPECT_FALSE(ParseIcmpEchoRequest(Packet(8, "x", 0, IPPROTO_UDP)));
  auto shortened = Packet(8, "");
  shortened.resize(27);
  EXPECT_FALSE(ParseIcmpEchoRequest(shortened));
  auto v6 = Packet(8, "x");
  v6[0] = 0x65;
  EXPECT_FALSE(ParseIcmpEchoRequest(v6));
}

TEST(IcmpDataInvocationTest, OnlyThisNonceUpToTheLineEndOrNul) {
  EXPECT_EQ(IcmpDataInvocation("SANDPROBE n0nce inv-1", "n0nce"), "inv-1");
  EXPECT_EQ(IcmpDataInvocation(std::string("SANDPROBE n0nce inv-1\n\0\0pad", 27), "n0nce"),
            "inv-1");
  EXPECT_EQ(IcmpDataInvocation(std::string("SANDPROBE n0nce inv-1\0pad", 25), "n0nce"), "inv-1");
  EXPECT_FALSE(IcmpDataInvocation("SANDPROBE other inv-1", "n0nce"));
  EXPECT_FALSE(IcmpDataInvocation("ping padding", "n0nce"));
  EXPECT_FALSE(IcmpDataInvocation("", "n0nce"));
}

// An echo request to 127.0.0.1 from a raw socket of our own (root) or a ping socket.
bool SendEcho(std::string_view data) {
  int fd = ::socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
  if (fd < 0) fd = ::socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP);
  if (fd < 0) return false;
  std::vector<uint8_t> icmp = {8, 0, 0, 0, 0, 1, 0, 1};
  icmp.insert(icmp.end(), data.begin(), data.end());
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < icmp.size(); i += 2) sum += icmp[i] << 8 | icmp[i + 1];
  if (icmp.size() % 2) sum += icmp.back() << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  icmp[2] = static_cast<uint8_t>(~sum >> 8), icmp[3] = static_cast<uint8_t>(~sum & 0xff);
  const sockaddr_in to = testing::Loopback(0);
  const bool sent = ::sendto(fd, icmp.data(), icmp.size(), 0,
                             reinterpret_cast<const sockaddr*>(&to), sizeof to) > 0;
  ::close(fd);
  return sent;
}

TEST(IcmpCanaryTest, LogsOnlyThisRunsEchoRequestsToItsAddress) {
  auto set = CanarySet::Start("127.0.0.1", "n0nce");
  ASSERT_TRUE(set) << set.error();
  if (geteuid() != 0) {
    EXPECT_EQ((*set)->icmp_address(), "");
    EXPECT_NE((*set)->icmp_error().find("raw ICMP socket"), std::string::npos);
    GTEST_SKIP() << "not root: " << (*set)->icmp_error();
  }
  ASSERT_EQ((*set)->icmp_address(), "127.0.0.1") << (*set)->icmp_error();
  ASSERT_TRUE(SendEcho("SANDPROBE other inv-x"));
  ASSERT_TRUE(SendEcho(std::string("SANDPROBE n0nce inv-icmp\n\0", 26)));
  std::vector<Hit> hits;
  for (int i = 0; i < 100 && hits.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    hits = (*set)->HitsFor("inv-icmp");
  }
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].kind, "icmp");
  EXPECT_EQ(hits[0].peer, "127.0.0.1");
  EXPECT_TRUE(hits[0].detail.starts_with("echo request to 127.0.0.1 id ")) << hits[0].detail;
  EXPECT_NE(hits[0].detail.find("SANDPROBE n0nce inv-icmp"), std::string::npos) << hits[0].detail;
  EXPECT_TRUE((*set)->HitsFor("").empty());  // foreign pings are not logged at all
  for (const Hit& h : (*set)->AllHits()) EXPECT_EQ(h.invocation, "inv-icmp");
}

TEST(IcmpCanaryTest, LoopbackTcpCanaryIsOnLoopbackWhateverTheBind) {
  auto set = CanarySet::Start("127.0.0.2", "n0nce");
  ASSERT_TRUE(set) << set.error();
  EXPECT_TRUE((*set)->tcp_address().starts_with("127.0.0.2:"));
  EXPECT_TRUE((*set)->loopback_tcp_address().starts_with("127.0.0.1:"));
  EXPECT_NE((*set)->loopback_tcp_address(), "127.0.0.1:0");
}

}  // namespace
}  // namespace sandprobe::canary
