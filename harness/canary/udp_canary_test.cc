// UDP echo canary over real loopback sockets: round trip, the request parser, foreign and
// oversized datagrams (logged, never answered), a flood, Stop() and CanarySet's wiring.
#include "canary/udp_canary.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "canary/canary.h"
#include "canary/canary_testing.h"

namespace sandprobe::canary {
namespace {

using testing::Loopback;
using testing::UdpExchange;
using Clock = std::chrono::steady_clock;

std::vector<uint8_t> Bytes(std::string_view text) { return {text.begin(), text.end()}; }

// The answer to one datagram as text, or "<none>" when nothing came back within timeout_ms.
std::string Exchange(uint16_t port, std::string_view datagram, int timeout_ms = 2000) {
  auto answer = UdpExchange(port, Bytes(datagram), timeout_ms);
  return answer ? std::string(answer->begin(), answer->end()) : "<none>";
}

TEST(ParseUdpEchoRequestTest, AcceptsOnlyThisNonceAndOneLineEnd) {
  EXPECT_EQ(ParseUdpEchoRequest("SANDPROBE n0nce inv-1", "n0nce"), "inv-1");
  EXPECT_EQ(ParseUdpEchoRequest("SANDPROBE n0nce inv-1\n", "n0nce"), "inv-1");
  EXPECT_EQ(ParseUdpEchoRequest("SANDPROBE n0nce inv-1\r\n", "n0nce"), "inv-1");
  for (std::string_view bad :
       {"", "SANDPROBE n0nce", "SANDPROBE other inv-1", "sandprobe n0nce inv-1",
        "SANDPROBE n0nce inv-1\n\n", "SANDPROBE n0nce inv 1", "SANDPROBE  n0nce inv-1",
        "GET / HTTP/1.0"}) {
    EXPECT_EQ(ParseUdpEchoRequest(bad, "n0nce"), std::nullopt) << bad;
  }
  const std::string long_invocation(kMaxUdpDatagramBytes - 16, 'x');  // over 128: invalid anyway
  EXPECT_EQ(ParseUdpEchoRequest("SANDPROBE n0nce " + long_invocation, "n0nce"), std::nullopt);
  EXPECT_EQ(ParseUdpEchoRequest(std::string(kMaxUdpDatagramBytes + 1, 'S'), "n0nce"), std::nullopt);
}

using UdpCanaryTest = testing::OneCanaryTest<&CanarySet::udp_address>;

TEST_F(UdpCanaryTest, EchoRoundTripAndHit) {
  EXPECT_TRUE(set_->udp_address().starts_with("127.0.0.1:")) << set_->udp_address();
  EXPECT_NE(set_->udp_address(), set_->dns_address());
  EXPECT_EQ(Exchange(port_, "SANDPROBE n0nce inv-1\n"), "SANDPROBE-ECHO n0nce inv-1\n");
  EXPECT_EQ(Exchange(port_, "SANDPROBE n0nce inv-2"), "SANDPROBE-ECHO n0nce inv-2\n");
  ASSERT_NO_FATAL_FAILURE(ExpectOneHit("inv-1", "udp", "SANDPROBE n0nce inv-1"));
  EXPECT_EQ(set_->HitsFor("inv-2").size(), 1u);
}

TEST_F(UdpCanaryTest, ForeignGarbageAndOversizedAreLoggedButNeverAnswered) {
  const std::string oversized = "SANDPROBE n0nce inv-4 " + std::string(600, 'p');
  for (const std::string& datagram :
       {std::string("SANDPROBE othernonce inv-3\n"), std::string("\x01\x02\xff garbage"),
        std::string(""), oversized}) {
    EXPECT_EQ(Exchange(port_, datagram, 300), "<none>") << datagram.substr(0, 40);
  }
  EXPECT_TRUE(set_->HitsFor("inv-3").empty());
  EXPECT_TRUE(set_->HitsFor("inv-4").empty());
  const auto all = set_->AllHits();
  ASSERT_EQ(all.size(), 4u);
  for (const Hit& hit : all) {
    EXPECT_EQ(hit.kind, "udp");
    EXPECT_EQ(hit.invocation, "");
    EXPECT_LE(hit.detail.size(), 200u);
  }
  EXPECT_EQ(all[0].detail, "SANDPROBE othernonce inv-3");
  EXPECT_EQ(all[1].detail, "??? garbage");  // bytes outside 0x20..0x7e replaced
  EXPECT_EQ(all[2].detail, "");
  EXPECT_TRUE(all[3].detail.starts_with("SANDPROBE n0nce inv-4 ppp")) << all[3].detail;
}

TEST_F(UdpCanaryTest, FloodIsLoggedUnansweredAndServingGoesOn) {
  UniqueFd flood(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  const sockaddr_in sa = Loopback(port_);
  const std::string junk(kMaxUdpDatagramBytes, 'j');
  for (int i = 0; i < 2000; ++i) {  // more than the socket buffer holds: the kernel drops some
    ::sendto(flood.get(), junk.data(), junk.size(), MSG_DONTWAIT,
             reinterpret_cast<const sockaddr*>(&sa), sizeof(sa));
  }
  // Wait until the canary has drained what the kernel kept (the hit count stops growing).
  size_t seen = 0;
  for (auto deadline = Clock::now() + std::chrono::seconds(3); Clock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const size_t now = set_->AllHits().size();
    if (now > 0 && now == seen) break;
    seen = now;
  }
  ASSERT_GT(seen, 0u);
  EXPECT_LE(seen, 2000u);
  for (const Hit& hit : set_->AllHits()) EXPECT_EQ(hit.invocation, "");
  EXPECT_EQ(Exchange(port_, "SANDPROBE n0nce inv-5\n"), "SANDPROBE-ECHO n0nce inv-5\n");
  char byte;
  EXPECT_LT(::recv(flood.get(), &byte, 1, MSG_DONTWAIT), 0);  // junk was never answered
  EXPECT_EQ(set_->HitsFor("inv-5").size(), 1u);
}

TEST_F(UdpCanaryTest, StopIsPromptAndFreesThePort) {
  const auto start = Clock::now();
  set_->Stop();
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(500));
  EXPECT_EQ(Exchange(port_, "SANDPROBE n0nce inv-6\n", 300), "<none>");
  auto rebound = BindSocket(SOCK_DGRAM, Loopback(0).sin_addr, port_);
  EXPECT_TRUE(rebound.has_value()) << rebound.error();
  EXPECT_EQ(set_->udp_address(), fmt::format("127.0.0.1:{}", port_));  // still readable
}

TEST(UdpCanaryStartTest, ErrorNamesTheUdpListener) {
  auto taken = BindSocket(SOCK_DGRAM, Loopback(0).sin_addr, 0);
  ASSERT_TRUE(taken.has_value()) << taken.error();
  const uint16_t port = LocalPort(taken->get());
  auto set = CanarySet::Start("127.0.0.1", "n0nce", {.udp_port = port});
  ASSERT_FALSE(set.has_value());
  EXPECT_TRUE(set.error().starts_with(fmt::format("udp canary: bind 127.0.0.1:{}: ", port)))
      << set.error();
  EXPECT_NE(set.error().find("Address already in use"), std::string::npos) << set.error();
}

}  // namespace
}  // namespace sandprobe::canary
