// TCP echo canary over real loopback sockets: round trip, foreign nonce, silent and hostile
// clients, the connection cap.
#include "canary/tcp_canary.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "canary/canary.h"
#include "canary/canary_testing.h"

namespace sandprobe::canary {
namespace {

using testing::ConnectTcp;
using testing::ReceiveAll;
using testing::SendAll;
using testing::TcpExchange;
using Clock = std::chrono::steady_clock;

using TcpCanaryTest = testing::OneCanaryTest<&CanarySet::tcp_address>;

TEST_F(TcpCanaryTest, EchoRoundTrip) {
  EXPECT_EQ(TcpExchange(port_, "SANDPROBE n0nce inv-1\n"), "SANDPROBE-ECHO n0nce inv-1\n");
  EXPECT_EQ(TcpExchange(port_, "SANDPROBE n0nce inv-2\r\n"), "SANDPROBE-ECHO n0nce inv-2\n");
  ExpectOneHit("inv-1", "tcp", "SANDPROBE n0nce inv-1");
}

TEST_F(TcpCanaryTest, ForeignNonceIsClosedWithoutAnswerAndHasNoInvocation) {
  EXPECT_EQ(TcpExchange(port_, "SANDPROBE othernonce inv-3\n"), "");
  EXPECT_TRUE(set_->HitsFor("inv-3").empty());
  const auto all = set_->AllHits();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].invocation, "");
  EXPECT_EQ(all[0].detail, "SANDPROBE othernonce inv-3");
}

TEST_F(TcpCanaryTest, SilentClientBlocksNeitherOthersNorStop) {
  UniqueFd silent = ConnectTcp(port_);
  ASSERT_TRUE(silent.valid());
  const auto start = Clock::now();
  EXPECT_EQ(TcpExchange(port_, "SANDPROBE n0nce inv-4\n"), "SANDPROBE-ECHO n0nce inv-4\n");
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(500));
  // The canary gives up on the silent client after its 2 s read timeout: EOF, no hit.
  EXPECT_EQ(ReceiveAll(silent.get()), "");
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(2900));
  EXPECT_EQ(set_->AllHits().size(), 1u);

  UniqueFd another_silent = ConnectTcp(port_);
  ASSERT_TRUE(another_silent.valid());
  const auto stop_start = Clock::now();
  set_->Stop();
  EXPECT_LT(Clock::now() - stop_start, std::chrono::milliseconds(1500));
}

TEST_F(TcpCanaryTest, MegabyteOfGarbageIsCutOffAndOthersStillServed) {
  UniqueFd hostile = ConnectTcp(port_);
  ASSERT_TRUE(hostile.valid());
  std::thread flood([fd = hostile.get()] {
    std::string garbage(1 << 20, '\0');
    for (size_t i = 0; i < garbage.size(); ++i) {
      const char c = static_cast<char>((i * 131) % 251);
      garbage[i] = c == '\n' ? 'x' : c;  // never a line end
    }
    SendAll(fd, garbage);  // fails part way once the canary closes: that is the point
  });
  EXPECT_EQ(TcpExchange(port_, "SANDPROBE n0nce inv-5\n"), "SANDPROBE-ECHO n0nce inv-5\n");
  flood.join();
  char byte;
  errno = 0;
  const auto start = Clock::now();
  EXPECT_LE(::recv(hostile.get(), &byte, 1, 0), 0);  // EOF or ECONNRESET, not the timeout
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(2500));

  const auto all = set_->AllHits();
  ASSERT_EQ(all.size(), 2u);
  for (const Hit& hit : all) {
    EXPECT_LE(hit.detail.size(), 200u);
    EXPECT_TRUE(hit.invocation == "inv-5" || hit.invocation.empty()) << hit.invocation;
  }
}

TEST_F(TcpCanaryTest, ConnectionsOverTheCapAreClosedAtOnce) {
  std::vector<UniqueFd> silent;
  for (size_t i = 0; i < kMaxTcpConnections; ++i) {
    silent.push_back(ConnectTcp(port_));
    ASSERT_TRUE(silent.back().valid());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the canary accept them
  const auto start = Clock::now();
  EXPECT_EQ(TcpExchange(port_, "SANDPROBE n0nce inv-6\n"), "");
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(1000));
  silent.clear();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the canary sees the EOFs
  EXPECT_EQ(TcpExchange(port_, "SANDPROBE n0nce inv-7\n"), "SANDPROBE-ECHO n0nce inv-7\n");
}

}  // namespace
}  // namespace sandprobe::canary
