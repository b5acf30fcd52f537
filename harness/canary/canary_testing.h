// Test-only helpers for the canary tests: a CanarySet per test, plain loopback sockets with
// timeouts, and a DNS query builder. Every helper talks to 127.0.0.1 only (docs/design.md traffic
// rule).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "canary/canary.h"
#include "canary/net_util.h"

namespace sandprobe::canary::testing {

inline uint16_t PortOf(const std::string& address) {
  return static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
}

inline sockaddr_in Loopback(uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return sa;
}

inline void SetTimeouts(int fd, int seconds) {
  timeval tv{.tv_sec = seconds, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

// A CanarySet on 127.0.0.1 with the nonce "n0nce", started for each test.
class CanarySetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = CanarySet::Start("127.0.0.1", "n0nce");
    ASSERT_TRUE(started.has_value()) << started.error();
    set_ = std::move(*started);
  }
  // The one hit logged for `invocation`: its kind and detail, a loopback peer and a real time.
  void ExpectOneHit(std::string_view invocation, std::string_view kind, std::string_view detail) {
    const auto hits = set_->HitsFor(invocation);
    ASSERT_EQ(hits.size(), 1u);
    EXPECT_EQ(hits[0].kind, kind);
    EXPECT_EQ(hits[0].detail, detail);
    EXPECT_TRUE(hits[0].peer.starts_with("127.0.0.1:")) << hits[0].peer;
    EXPECT_GT(hits[0].unix_ms, 1'600'000'000'000);
  }
  std::unique_ptr<CanarySet> set_;
};

// The same, and port_, the port of the canary under test (Address: &CanarySet::tcp_address, ...).
template <std::string (CanarySet::*Address)() const>
class OneCanaryTest : public CanarySetTest {
 protected:
  void SetUp() override {
    CanarySetTest::SetUp();
    if (HasFatalFailure()) return;
    port_ = PortOf((*set_.*Address)());
  }
  uint16_t port_ = 0;
};

// A blocking TCP connection to 127.0.0.1:port with 3 s send/receive timeouts; invalid on error.
inline UniqueFd ConnectTcp(uint16_t port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  SetTimeouts(fd.get(), 3);
  const sockaddr_in sa = Loopback(port);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) != 0) fd.reset();
  return fd;
}

inline bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Everything until EOF, an error or the receive timeout.
inline std::string ReceiveAll(int fd) {
  std::string out;
  char chunk[1024];
  while (true) {
    const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n <= 0) return out;
    out.append(chunk, static_cast<size_t>(n));
  }
}

// One TCP exchange: connect, send `line`, read until the canary closes.
inline std::string TcpExchange(uint16_t port, std::string_view line) {
  UniqueFd fd = ConnectTcp(port);
  if (!fd.valid() || !SendAll(fd.get(), line)) return "<connect/send failed>";
  return ReceiveAll(fd.get());
}

// Sends one datagram to 127.0.0.1:port and waits up to timeout_ms for one answer.
inline std::optional<std::vector<uint8_t>> UdpExchange(uint16_t port,
                                                       const std::vector<uint8_t>& packet,
                                                       int timeout_ms = 2000) {
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  const sockaddr_in sa = Loopback(port);
  if (::sendto(fd.get(), packet.data(), packet.size(), 0, reinterpret_cast<const sockaddr*>(&sa),
               sizeof(sa)) < 0) {
    return std::nullopt;
  }
  pollfd pfd{fd.get(), POLLIN, 0};
  if (::poll(&pfd, 1, timeout_ms) != 1) return std::nullopt;
  std::vector<uint8_t> answer(4096);
  const ssize_t n = ::recv(fd.get(), answer.data(), answer.size(), 0);
  if (n < 0) return std::nullopt;
  answer.resize(static_cast<size_t>(n));
  return answer;
}

// A standard query (RD set) for `name` ("a.b.c"), type A, class IN.
inline std::vector<uint8_t> BuildQuery(uint16_t id, std::string_view name, uint16_t qtype = 1) {
  std::vector<uint8_t> q = {static_cast<uint8_t>(id >> 8),
                            static_cast<uint8_t>(id),
                            0x01,
                            0x00,
                            0x00,
                            0x01,
                            0,
                            0,
                            0,
                            0,
                            0,
                            0};
  while (!name.empty()) {
    const size_t dot = name.find('.');
    const std::string_view label = name.substr(0, dot);
    q.push_back(static_cast<uint8_t>(label.size()));
    q.insert(q.end(), label.begin(), label.end());
    name = dot == std::string_view::npos ? std::string_view() : name.substr(dot + 1);
  }
  q.insert(q.end(),
           {0x00, static_cast<uint8_t>(qtype >> 8), static_cast<uint8_t>(qtype), 0x00, 0x01});
  return q;
}

}  // namespace sandprobe::canary::testing
