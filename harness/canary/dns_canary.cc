#include "canary/dns_canary.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "canary/hit_log.h"

namespace sandprobe::canary {
namespace {

constexpr size_t kMaxDatagramBytes = 4096;  // larger datagrams are dropped (MSG_TRUNC)

char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) { return AsciiLower(x) == AsciiLower(y); });
}

}  // namespace

std::string InvocationFromQuery(const DnsQuery& query, std::string_view nonce) {
  if (query.labels.size() < 2 || !EqualsIgnoreCase(query.labels[1], nonce)) return "";
  if (!IsValidInvocation(query.labels[0])) return "";
  return query.labels[0];
}

std::expected<std::unique_ptr<DnsCanary>, std::string> DnsCanary::Start(in_addr address,
                                                                        uint16_t port,
                                                                        std::string nonce,
                                                                        HitLog& log) {
  auto socket = BindSocket(SOCK_DGRAM, address, port);
  if (!socket) return std::unexpected(socket.error());
  auto wake = WakeFd::Create();
  if (!wake) return std::unexpected(wake.error());
  std::unique_ptr<DnsCanary> canary(
      new DnsCanary(std::move(nonce), log, std::move(*socket), std::move(*wake)));
  canary->thread_ = std::thread([c = canary.get()] { c->Run(); });
  return canary;
}

DnsCanary::DnsCanary(std::string nonce, HitLog& log, UniqueFd socket, WakeFd wake)
    : nonce_(std::move(nonce)),
      log_(log),
      socket_(std::move(socket)),
      wake_(std::move(wake)),
      port_(LocalPort(socket_.get())) {}

void DnsCanary::Stop() {
  if (!thread_.joinable()) return;
  wake_.Signal();
  thread_.join();
  socket_.reset();
}

void DnsCanary::Run() {
  uint8_t buffer[kMaxDatagramBytes];
  while (true) {
    pollfd fds[2] = {{wake_.fd(), POLLIN, 0}, {socket_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents != 0) return;
    // Drain what is queued, then poll again (so Stop() is noticed between bursts).
    for (int i = 0; i < 64; ++i) {
      sockaddr_in peer{};
      socklen_t peer_length = sizeof(peer);
      const ssize_t n = ::recvfrom(socket_.get(), buffer, sizeof(buffer), MSG_TRUNC,
                                   reinterpret_cast<sockaddr*>(&peer), &peer_length);
      if (n < 0) break;  // EAGAIN: drained; other errors (ICMP feedback): poll again
      if (static_cast<size_t>(n) > sizeof(buffer) || peer.sin_family != AF_INET) continue;
      HandlePacket(std::span<const uint8_t>(buffer, static_cast<size_t>(n)), peer);
    }
  }
}

void DnsCanary::HandlePacket(std::span<const uint8_t> packet, const sockaddr_in& peer) {
  auto query = ParseDnsQuery(packet);
  if (!query) return;  // malformed: no answer, no hit
  // Log before answering: a client holding the answer must find its hit.
  log_.Record(Hit{.kind = "dns",
                  .invocation = InvocationFromQuery(*query, nonce_),
                  .peer = FormatAddress(peer),
                  .detail = Printable(DottedName(*query)),
                  .unix_ms = NowUnixMs()});
  const std::vector<uint8_t> response = BuildNxdomainResponse(*query);
  // Best effort, like any UDP server: a full send buffer drops the answer.
  ::sendto(socket_.get(), response.data(), response.size(), MSG_DONTWAIT,
           reinterpret_cast<const sockaddr*>(&peer), sizeof(peer));
}

}  // namespace sandprobe::canary
