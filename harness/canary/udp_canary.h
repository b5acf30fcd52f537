// The UDP echo canary: one socket served by one poll() thread. Protocol: a datagram
// "SANDPROBE <nonce> <invocation>" (one trailing "\n" or "\r\n" allowed, at most 512 bytes)
// carrying this run's nonce gets "SANDPROBE-ECHO <nonce> <invocation>\n" back to its sender and a
// Hit of kind "udp". Anything else (another nonce, garbage, empty, over 512 bytes) is logged as a
// hit with invocation "" and not answered, so the canary never reflects foreign traffic.
// Internal to harness/canary; use CanarySet.
#pragma once

#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "canary/datagram_server.h"

namespace sandprobe::canary {

class HitLog;

inline constexpr size_t kMaxUdpDatagramBytes = 512;

// The invocation of a datagram payload that is a well-formed echo request carrying `nonce`
// (at most kMaxUdpDatagramBytes, one trailing "\n" or "\r\n" allowed); nullopt otherwise.
std::optional<std::string> ParseUdpEchoRequest(std::string_view payload, std::string_view nonce);

class UdpCanary {
 public:
  // Binds address:port over UDP (0: kernel-chosen) and starts the serving thread.
  // Error: "bind 127.0.0.1:7: Permission denied" style text.
  static std::expected<std::unique_ptr<UdpCanary>, std::string> Start(in_addr address,
                                                                      uint16_t port,
                                                                      std::string nonce,
                                                                      HitLog& log);
  ~UdpCanary() { Stop(); }

  uint16_t port() const { return server_->port(); }
  // Wakes the thread, joins it and closes the socket. Prompt.
  void Stop() {
    if (server_) server_->Stop();
  }

 private:
  UdpCanary(std::string nonce, HitLog& log) : nonce_(std::move(nonce)), log_(log) {}
  // payload: at most the bytes read; full_size: the datagram's real size (MSG_TRUNC).
  // Returns the echo, or "" for foreign traffic.
  std::string HandleDatagram(std::span<const char> payload, size_t full_size,
                             const sockaddr_in& peer);

  const std::string nonce_;
  HitLog& log_;
  std::unique_ptr<DatagramServer> server_;  // last: stopped before the fields it uses go
};

}  // namespace sandprobe::canary
