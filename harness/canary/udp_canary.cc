#include "canary/udp_canary.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "canary/hit_log.h"
#include "canary/tcp_canary.h"

namespace sandprobe::canary {
namespace {

// One more than the limit, so that an oversized datagram is seen as oversized.
constexpr size_t kReceiveBytes = kMaxUdpDatagramBytes + 1;
constexpr int kDrainPerWake = 64;  // then poll again, so Stop() is noticed during a flood

std::string_view WithoutLineEnd(std::string_view payload) {
  if (payload.ends_with('\n')) payload.remove_suffix(1);
  if (payload.ends_with('\r')) payload.remove_suffix(1);
  return payload;
}

}  // namespace

std::optional<std::string> ParseUdpEchoRequest(std::string_view payload, std::string_view nonce) {
  if (payload.size() > kMaxUdpDatagramBytes) return std::nullopt;
  return ParseEchoLine(WithoutLineEnd(payload), nonce);
}

std::expected<std::unique_ptr<UdpCanary>, std::string> UdpCanary::Start(in_addr address,
                                                                        uint16_t port,
                                                                        std::string nonce,
                                                                        HitLog& log) {
  auto socket = BindSocket(SOCK_DGRAM, address, port);
  if (!socket) return std::unexpected(socket.error());
  auto wake = WakeFd::Create();
  if (!wake) return std::unexpected(wake.error());
  std::unique_ptr<UdpCanary> canary(
      new UdpCanary(std::move(nonce), log, std::move(*socket), std::move(*wake)));
  canary->thread_ = std::thread([c = canary.get()] { c->Run(); });
  return canary;
}

UdpCanary::UdpCanary(std::string nonce, HitLog& log, UniqueFd socket, WakeFd wake)
    : nonce_(std::move(nonce)),
      log_(log),
      socket_(std::move(socket)),
      wake_(std::move(wake)),
      port_(LocalPort(socket_.get())) {}

void UdpCanary::Stop() {
  if (!thread_.joinable()) return;
  wake_.Signal();
  thread_.join();
  socket_.reset();
}

void UdpCanary::Run() {
  char buffer[kReceiveBytes];
  while (true) {
    pollfd fds[2] = {{wake_.fd(), POLLIN, 0}, {socket_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents != 0) return;
    for (int i = 0; i < kDrainPerWake; ++i) {
      sockaddr_in peer{};
      socklen_t peer_length = sizeof(peer);
      const ssize_t n = ::recvfrom(socket_.get(), buffer, sizeof(buffer), MSG_TRUNC,
                                   reinterpret_cast<sockaddr*>(&peer), &peer_length);
      if (n < 0) break;  // EAGAIN: drained; other errors (ICMP feedback): poll again
      if (peer.sin_family != AF_INET) continue;
      const size_t full = static_cast<size_t>(n);
      HandleDatagram(std::span<const char>(buffer, std::min(full, sizeof(buffer))), full, peer);
    }
  }
}

void UdpCanary::HandleDatagram(std::span<const char> payload, size_t full_size,
                               const sockaddr_in& peer) {
  const std::string_view text(payload.data(), payload.size());
  std::optional<std::string> invocation;
  if (full_size <= kMaxUdpDatagramBytes) invocation = ParseUdpEchoRequest(text, nonce_);
  // Log before answering: a client holding the answer must find its hit.
  log_.Record(Hit{.kind = "udp",
                  .invocation = invocation.value_or(""),
                  .peer = FormatAddress(peer),
                  .detail = Printable(WithoutLineEnd(text)),
                  .unix_ms = NowUnixMs()});
  if (!invocation) return;  // never answer foreign traffic
  const std::string reply = fmt::format("SANDPROBE-ECHO {} {}\n", nonce_, *invocation);
  // Best effort, like any UDP server: a full send buffer drops the answer.
  ::sendto(socket_.get(), reply.data(), reply.size(), MSG_DONTWAIT,
           reinterpret_cast<const sockaddr*>(&peer), sizeof(peer));
}

}  // namespace sandprobe::canary
