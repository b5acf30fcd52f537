// The ICMP canary: a raw ICMP socket (CAP_NET_RAW) bound to the canary's address, served by one
// poll() thread. It answers nothing (the kernel answers echo requests itself); it logs every echo
// request to that address whose data starts with "SANDPROBE <nonce> <invocation>" (this run's
// nonce; the data may go on after a "\n" or NUL, as ping pads it) as a Hit of kind "icmp", peer
// the sender's address. Other ICMP is not logged: pings to a loopback address from anyone on the
// machine are not probe traffic. A raw socket sees the echo requests of unprivileged ping sockets
// and of raw sockets alike, so the probe's own claim is never needed.
// Internal to harness/canary; use CanarySet (CanaryOptions::icmp).
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "canary/datagram_server.h"
#include "canary/net_util.h"

namespace sandprobe::canary {

class HitLog;

// One ICMP echo request as read from a raw IPv4 socket (IP header included).
struct IcmpEchoRequest {
  in_addr source{}, destination{};
  uint16_t id = 0, sequence = 0;
  std::string data;  // the ICMP data after the 8-byte header, at most 512 bytes
};

// An IPv4 packet carrying an ICMP echo request (type 8, code 0) -> its fields; nullopt for
// anything else (another type, a fragment, a truncated or malformed header).
std::optional<IcmpEchoRequest> ParseIcmpEchoRequest(std::span<const uint8_t> packet);

// The invocation of echo data "SANDPROBE <nonce> <invocation>" (ending at the first "\n" or NUL,
// or at the end) carrying `nonce`; nullopt otherwise.
std::optional<std::string> IcmpDataInvocation(std::string_view data, std::string_view nonce);

class IcmpCanary {
 public:
  // Opens a raw ICMP socket bound to `address` and starts the thread. Error: "raw ICMP socket:
  // Operation not permitted (needs CAP_NET_RAW)" style text.
  static std::expected<std::unique_ptr<IcmpCanary>, std::string> Start(in_addr address,
                                                                       std::string nonce,
                                                                       HitLog& log);
  // Wakes the thread, joins it and closes the socket. Prompt.
  void Stop() { server_->Stop(); }

 private:
  explicit IcmpCanary(std::unique_ptr<DatagramServer> server) : server_(std::move(server)) {}

  std::unique_ptr<DatagramServer> server_;  // the poll() thread on the raw socket
};

}  // namespace sandprobe::canary
