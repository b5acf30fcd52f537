// The DNS canary: a UDP listener and a TCP listener (RFC 1035 section 4.2.2 framing) on the same
// port number that answer every well-formed standard query with NXDOMAIN (a resolver answered:
// DNS is REACHED) and log it, kind "dns" over UDP and "dns-tcp" over TCP. A query for
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
#include "canary/dns_stream_server.h"
#include "canary/dns_wire.h"

namespace sandprobe::canary {

class HitLog;

// The invocation carried by a query name: the first label when there are at least two labels,
// the second equals `nonce` (ASCII case-insensitive) and the first is a valid invocation;
// "" otherwise.
std::string InvocationFromQuery(const DnsQuery& query, std::string_view nonce);

class DnsCanary {
 public:
  // Binds address:port over UDP and over TCP (port 0: one kernel-chosen port free for both,
  // a few tries) and starts the serving threads.
  // Error: "bind 127.0.0.1:53: Permission denied" style text.
  static std::expected<std::unique_ptr<DnsCanary>, std::string> Start(in_addr address,
                                                                      uint16_t port,
                                                                      std::string nonce,
                                                                      HitLog& log);
  ~DnsCanary() { Stop(); }

  uint16_t port() const { return server_->port(); }
  // Wakes the threads, joins them and closes the sockets.
  void Stop() {
    if (stream_) stream_->Stop();
    if (server_) server_->Stop();
  }

 private:
  DnsCanary(std::string nonce, HitLog& log) : nonce_(std::move(nonce)), log_(log) {}
  // Returns the NXDOMAIN answer, or "" for a malformed or truncated packet. kind: the hit's.
  std::string HandlePacket(std::span<const uint8_t> packet, const sockaddr_in& peer,
                           std::string_view kind);

  const std::string nonce_;
  HitLog& log_;
  std::unique_ptr<DatagramServer> server_;  // last: stopped before the fields they use go
  std::unique_ptr<DnsStreamServer> stream_;
};

}  // namespace sandprobe::canary
