#include "canary/canary.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include "canary/dns_canary.h"
#include "canary/hit_log.h"
#include "canary/http_canary.h"
#include "canary/icmp_canary.h"
#include "canary/net_util.h"
#include "canary/tcp_canary.h"
#include "canary/udp_canary.h"

namespace sandprobe::canary {

CanarySet::CanarySet(std::string nonce, size_t max_hits)
    : nonce_(std::move(nonce)), log_(std::make_unique<HitLog>(max_hits)) {}

CanarySet::~CanarySet() { Stop(); }

std::expected<std::unique_ptr<CanarySet>, std::string> CanarySet::Start(
    const std::string& bind_address, const std::string& nonce, const CanaryOptions& options) {
  if (!IsValidNonce(nonce)) {
    return std::unexpected(
        fmt::format("canary: invalid nonce '{}' (want 1..63 of [A-Za-z0-9_-])", Printable(nonce)));
  }
  auto address = ParseIpv4(bind_address);
  if (!address) return std::unexpected("canary: " + address.error());
  if (address->s_addr == htonl(INADDR_ANY)) {
    return std::unexpected(
        "canary: refusing wildcard 0.0.0.0; bind loopback or a test-created network's address");
  }

  std::unique_ptr<CanarySet> set(new CanarySet(nonce, options.max_hits));
  const auto address_with = [&](uint16_t port) { return fmt::format("{}:{}", bind_address, port); };

  auto http = HttpCanary::Start(bind_address, options.http_port, nonce, *set->log_,
                                HttpCanary::Flavor::kPlain, options.cloud_credential);
  if (!http) return std::unexpected("http canary: " + http.error());
  set->http_ = std::move(*http);
  set->http_address_ = address_with(set->http_->port());

  if (!options.http6_bind.empty()) {
    in6_addr v6{};
    if (::inet_pton(AF_INET6, options.http6_bind.c_str(), &v6) != 1) {
      return std::unexpected(
          fmt::format("canary: not an IPv6 address: '{}'", Printable(options.http6_bind)));
    }
    if (IN6_IS_ADDR_UNSPECIFIED(&v6)) {
      return std::unexpected(
          "canary: refusing wildcard ::; bind ::1 or an address of an interface the test made");
    }
    auto http6 = HttpCanary::Start(options.http6_bind, 0, nonce, *set->log_,
                                   HttpCanary::Flavor::kPlain, options.cloud_credential);
    if (http6) {
      set->http6_ = std::move(*http6);
      set->http6_address_ = fmt::format("[{}]:{}", options.http6_bind, set->http6_->port());
    } else if (options.http6_optional) {
      set->http6_error_ = http6.error();
    } else {
      return std::unexpected("http canary (IPv6): " + http6.error());
    }
  }

  auto tcp = TcpCanary::Start(*address, options.tcp_port, nonce, *set->log_);
  if (!tcp) return std::unexpected("tcp canary: " + tcp.error());
  set->tcp_ = std::move(*tcp);
  set->tcp_address_ = address_with(set->tcp_->port());

  auto dns = DnsCanary::Start(*address, options.dns_port, nonce, *set->log_);
  if (!dns) return std::unexpected("dns canary: " + dns.error());
  set->dns_ = std::move(*dns);
  set->dns_address_ = address_with(set->dns_->port());

  auto udp = UdpCanary::Start(*address, options.udp_port, nonce, *set->log_);
  if (!udp) return std::unexpected("udp canary: " + udp.error());
  set->udp_ = std::move(*udp);
  set->udp_address_ = address_with(set->udp_->port());

  in_addr loopback{};
  loopback.s_addr = htonl(INADDR_LOOPBACK);
  auto loopback_tcp = TcpCanary::Start(loopback, 0, nonce, *set->log_);
  if (!loopback_tcp) return std::unexpected("loopback tcp canary: " + loopback_tcp.error());
  set->loopback_tcp_ = std::move(*loopback_tcp);
  set->loopback_tcp_address_ = fmt::format("127.0.0.1:{}", set->loopback_tcp_->port());

  if (auto icmp = IcmpCanary::Start(*address, nonce, *set->log_)) {
    set->icmp_ = std::move(*icmp);
    set->icmp_address_ = bind_address;
  } else {
    set->icmp_error_ = icmp.error();
  }

  auto docker = HttpCanary::Start(bind_address, options.docker_port, nonce, *set->log_,
                                  HttpCanary::Flavor::kDockerApi);
  if (!docker) return std::unexpected("docker api canary: " + docker.error());
  set->docker_ = std::move(*docker);
  set->docker_address_ = address_with(set->docker_->port());

  if (!options.abstract_unix_name.empty()) {
    auto listener = BindUnixSocket(options.abstract_unix_name, true);
    if (!listener) return std::unexpected("abstract unix canary: " + listener.error());
    auto served = TcpCanary::Adopt(std::move(*listener), "abstract-unix", nonce, *set->log_);
    if (!served) return std::unexpected("abstract unix canary: " + served.error());
    set->abstract_unix_ = std::move(*served);
    set->abstract_unix_name_ = options.abstract_unix_name;
  }
  if (!options.unix_socket_path.empty()) {
    auto listener = BindUnixSocket(options.unix_socket_path, false);
    if (!listener) return std::unexpected("unix socket canary: " + listener.error());
    auto served = TcpCanary::Adopt(std::move(*listener), "unix", nonce, *set->log_);
    if (!served) return std::unexpected("unix socket canary: " + served.error());
    set->unix_ = std::move(*served);
    set->unix_socket_path_ = options.unix_socket_path;
  }
  return set;  // on any error above, ~CanarySet stopped what had started
}

bool CanarySet::UnixListening() const {
  if (abstract_unix_ && !UnixSocketAccepts(abstract_unix_name_, true)) return false;
  if (unix_ && !UnixSocketAccepts(unix_socket_path_, false)) return false;
  return abstract_unix_ || unix_;
}

std::vector<Hit> CanarySet::HitsFor(std::string_view invocation) const {
  return log_->Matching(invocation);
}

std::vector<Hit> CanarySet::AllHits() const { return log_->All(); }

size_t CanarySet::dropped_hits() const { return log_->dropped(); }

void CanarySet::Stop() {
  std::lock_guard lock(stop_mutex_);
  if (stopped_) return;
  stopped_ = true;
  // TCP, UDP and DNS stop at once; HTTP may wait for a slow client's 2 s read timeout.
  if (tcp_) tcp_->Stop();
  if (udp_) udp_->Stop();
  if (loopback_tcp_) loopback_tcp_->Stop();
  if (icmp_) icmp_->Stop();
  if (dns_) dns_->Stop();
  if (http_) http_->Stop();
  if (http6_) http6_->Stop();
  if (docker_) docker_->Stop();
  if (abstract_unix_) abstract_unix_->Stop();
  if (unix_) unix_->Stop();
}

}  // namespace sandprobe::canary
