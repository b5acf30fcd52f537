// The DNS canary: a UDP listener that answers every well-formed standard query with NXDOMAIN
// (a resolver answered: DNS is REACHED) and logs it. A query for
// "<invocation>.<nonce>.sandprobe.test" carries the invocation in its first label; the nonce
// label is compared case-insensitively (resolvers may randomise case). Malformed packets are
// dropped without an answer or a hit. Internal to harness/canary; use CanarySet.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <expected>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "canary/datagram_server.h"
#include "canary/dns_wire.h"

namespace sandprobe::canary {

class HitLog;

// The invocation carried by a query name: the first label when there are at least two labels,
// the second equals `nonce` (ASCII case-insensitive) and the first is a valid invocation;
// "" otherwise.
std::string InvocationFromQuery(const DnsQuery& query, std::string_view nonce);

class DnsCanary {
 public:
  // Binds address:port over UDP (0: kernel-chosen) and starts the serving thread.
  // Error: "bind 127.0.0.1:53: Permission denied" style text.
  static std::expected<std::unique_ptr<DnsCanary>, std::string> Start(in_addr address,
                                                                      uint16_t port,
                                                                      std::string nonce,
                                                                      HitLog& log);
  ~DnsCanary() { Stop(); }

  uint16_t port() const { return server_->port(); }
  // Wakes the thread, joins it and closes the socket.
  void Stop() {
    if (server_) server_->Stop();
  }

 private:
  DnsCanary(std::string nonce, HitLog& log) : nonce_(std::move(nonce)), log_(log) {}
  // Returns the NXDOMAIN answer, or "" for a malformed or truncated packet.
  std::string HandlePacket(std::span<const uint8_t> packet, const sockaddr_in& peer);

  const std::string nonce_;
  HitLog& log_;
  std::unique_ptr<DatagramServer> server_;  // last: stopped before the fields it uses go
};

}  // namespace sandprobe::canary
