// Canary listeners: HTTP, TCP echo, UDP echo and DNS (UDP and TCP) servers owned by the harness and
// tagged with a per-run nonce. A probe that reaches one gets the nonce back and leaves a Hit in the
// log, so "reached" rests on server-side proof, not on "connect() did not fail" (docs/design.md,
// "Canaries and hermetic targets").
//
// Wire protocols (what probes speak):
//   HTTP  any method, any path; header "X-Sandprobe: <nonce> <invocation>". Answers 200,
//         text/plain, body "sandprobe-canary <nonce>\n" (a real metadata server answers too),
//         except the cloud metadata paths, answered as AWS IMDSv2, GCP and Azure answer them
//         (metadata_shapes.h: 401 without the IMDSv2 token, 403 without Metadata-Flavor, 400
//         without Metadata: true; the credential paths serve the planted cloud credential and
//         are logged as kind "credential"). Optionally a second HTTP listener on an IPv6 address.
//   DOCKER the same header; speaks enough of the Docker Engine API to be recognised as one:
//         GET /_ping -> "OK" with "Api-Version: 1.41", GET [/v1.NN]/version -> the version object
//         (ApiVersion "1.41", Version "sandprobe-canary"), else 404. Hit kind "docker".
//   TCP   one line "SANDPROBE <nonce> <invocation>\n" (at most 512 bytes, 2 s to send it);
//         answers "SANDPROBE-ECHO <nonce> <invocation>\n" and closes. Anything else: closed
//         without an answer.
//   UDP   one datagram "SANDPROBE <nonce> <invocation>" (one trailing "\n" or "\r\n" allowed, at
//         most 512 bytes); answers "SANDPROBE-ECHO <nonce> <invocation>\n" to the sender. Anything
//         else: logged (invocation "") and not answered, so foreign traffic is never reflected.
//   UNIX  the TCP echo protocol on unix stream sockets: an abstract name ("@sandprobe-<nonce>",
//         no file, scoped to the harness's network namespace; hit kind "abstract-unix") and a
//         socket file in the run's canary folder (reachable through a bind or a read-only view
//         of the host; hit kind "unix"). The peer is "unix pid P uid U" (SO_PEERCRED).
//   DNS   a standard query for "<invocation>.<nonce>.<any zone>" (sandprobe.test by default), over
//         UDP or over TCP on the same port (two-byte length prefix, RFC 1035 section 4.2.2,
//         several queries per connection); answers NXDOMAIN (same id, RD copied, question echoed,
//         no records). Malformed packets are dropped silently.
//   ICMP  an echo request to the bind address whose data starts "SANDPROBE <nonce> <invocation>",
//         seen on a raw socket (needs CAP_NET_RAW; without it there is no ICMP canary and
//         icmp_error() says why). The kernel answers the echo; the canary only logs, kind "icmp".
//   LOOPBACK TCP  a second TCP echo canary always on 127.0.0.1 (kind "tcp"), whatever the bind
//         address: a service bound to the host's loopback only, for net.host-loopback.
// Every request that parses is logged; its Hit carries the invocation only when it carried this
// run's nonce and a well-formed invocation (1..128 printable ASCII bytes, no spaces; DNS: the
// first label, nonce label compared case-insensitively), otherwise invocation "".
//
// Traffic rule: bind only a loopback address (127.0.0.0/8, ::1) or an address of a network or
// interface the test itself created (a Docker --internal network's gateway, a dummy interface).
// The wildcards 0.0.0.0 and :: are refused.
//
// Thread-safety: all CanarySet methods may be called from any thread concurrently. Each
// listener runs on its own thread(s); Stop() (or the destructor) stops and joins them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace sandprobe::canary {

// One request a canary received. All strings came from the network: bounded and printable
// (bytes outside 0x20..0x7e replaced by '?'), but still untrusted for every output format.
struct Hit {
  std::string kind;        // "http" | "credential" (HTTP, the answer carried the cloud
                           // credential) | "docker" | "tcp" | "udp" | "dns" (over UDP) | "dns-tcp"
                           // | "icmp" (peer: the sender's address, no port)
  std::string invocation;  // the probe invocation id the request carried ("" if none/foreign nonce)
  std::string peer;        // "ip:port" of the client
  std::string detail;      // ≤200 bytes: "GET /latest/meta-data/", the TCP line or UDP payload,
                           // or the DNS qname
  int64_t unix_ms = 0;     // wall clock of the hit, milliseconds since the Unix epoch
};

// Ports 0 mean "let the kernel choose". max_hits bounds memory: later hits are counted, not kept.
struct CanaryOptions {
  uint16_t http_port = 0;
  uint16_t tcp_port = 0;
  uint16_t dns_port = 0;
  uint16_t udp_port = 0;
  uint16_t docker_port = 0;
  size_t max_hits = 10'000;
  // What the cloud metadata credential paths serve (the harness's planted canary credential).
  std::string cloud_credential = "";
  // An IPv6 address for a second HTTP listener ("" = none), on an ephemeral port. With
  // http6_optional, a failure to bind it (a host without IPv6) leaves http6_address() empty and
  // the reason in http6_error() instead of failing Start().
  std::string http6_bind = "";
  bool http6_optional = false;
  // The unix socket canaries, "" = none: an abstract name (without the leading NUL) and a socket
  // path (at most 107 bytes). A name that cannot be bound fails Start().
  std::string abstract_unix_name = "";
  std::string unix_socket_path = "";
};

class HitLog;
class HttpCanary;
class TcpCanary;
class DnsCanary;
class UdpCanary;
class IcmpCanary;

// The five listeners on one bind address, sharing one hit log. Stops in the destructor.
class CanarySet {
 public:
  // bind_address: an IPv4 address (127.0.0.1, or the gateway of a Docker --internal network the
  // test made, `--canary-bind`). nonce: 1..63 bytes of [A-Za-z0-9_-] (it must fit in one DNS
  // label). Errors: a message naming the failing listener and why (errno text), e.g. "dns canary:
  // bind 127.0.0.1:53: Permission denied", or the rejected argument.
  static std::expected<std::unique_ptr<CanarySet>, std::string> Start(
      const std::string& bind_address, const std::string& nonce, const CanaryOptions& options = {});

  ~CanarySet();
  CanarySet(const CanarySet&) = delete;
  CanarySet& operator=(const CanarySet&) = delete;

  // "<bind address>:PORT" of each listener; unchanged after Stop().
  std::string http_address() const { return http_address_; }
  std::string tcp_address() const { return tcp_address_; }
  std::string dns_address() const { return dns_address_; }
  std::string udp_address() const { return udp_address_; }
  // "127.0.0.1:PORT" of the loopback-only TCP echo canary.
  std::string loopback_tcp_address() const { return loopback_tcp_address_; }
  // The bind address when the ICMP canary runs, else "" (then icmp_error() says why).
  std::string icmp_address() const { return icmp_address_; }
  const std::string& icmp_error() const { return icmp_error_; }
  std::string docker_address() const { return docker_address_; }
  // "[<http6_bind>]:PORT", or "" when there is no IPv6 listener (then http6_error() says why, ""
  // when none was asked for).
  std::string http6_address() const { return http6_address_; }
  const std::string& http6_error() const { return http6_error_; }
  const std::string& nonce() const { return nonce_; }
  // The unix socket canaries' names as given in CanaryOptions ("" = none).
  const std::string& abstract_unix_name() const { return abstract_unix_name_; }
  const std::string& unix_socket_path() const { return unix_socket_path_; }
  // True when every unix socket canary started accepts a connect() from this process now (one
  // that sends nothing: no hit). A listener never restarts once stopped, so true after a probe's
  // call means it was listening during the call: a refusal the probe saw was not a dead
  // listener's (docs/traps.md, "a dead listener").
  bool UnixListening() const;

  std::vector<Hit> HitsFor(std::string_view invocation) const;  // hits carrying that invocation
  std::vector<Hit> AllHits() const;                             // in arrival order
  size_t dropped_hits() const;  // hits not stored because max_hits was reached

  // Idempotent; joins all listener threads. Afterwards no port is listening. Hits stay readable.
  void Stop();

 private:
  CanarySet(std::string nonce, size_t max_hits);

  std::string nonce_;
  std::string http_address_, tcp_address_, dns_address_, udp_address_, docker_address_;
  std::string http6_address_, http6_error_;
  std::string abstract_unix_name_, unix_socket_path_;
  std::string loopback_tcp_address_, icmp_address_, icmp_error_;
  std::unique_ptr<HitLog> log_;  // declared first among owners: outlives the listeners
  std::unique_ptr<HttpCanary> http_, http6_;
  std::unique_ptr<TcpCanary> tcp_;
  std::unique_ptr<DnsCanary> dns_;
  std::unique_ptr<UdpCanary> udp_;
  std::unique_ptr<HttpCanary> docker_;               // the Docker Engine API flavour
  std::unique_ptr<TcpCanary> abstract_unix_, unix_;  // the echo protocol on unix sockets
  std::unique_ptr<TcpCanary> loopback_tcp_;
  std::unique_ptr<IcmpCanary> icmp_;
  std::mutex stop_mutex_;
  bool stopped_ = false;
};

}  // namespace sandprobe::canary
