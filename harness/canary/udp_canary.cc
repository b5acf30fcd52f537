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
  std::unique_ptr<UdpCanary> canary(new UdpCanary(std::move(nonce), log));
  auto server = DatagramServer::Start(
      address, port, kReceiveBytes,
      [c = canary.get()](std::span<const char> bytes, size_t full, const sockaddr_in& peer) {
        return c->HandleDatagram(bytes, full, peer);
      });
  if (!server) return std::unexpected(server.error());
  canary->server_ = std::move(*server);
  return canary;
}

std::string UdpCanary::HandleDatagram(std::span<const char> payload, size_t full_size,
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
  if (!invocation) return "";  // never answer foreign traffic
  return fmt::format("SANDPROBE-ECHO {} {}\n", nonce_, *invocation);
}

}  // namespace sandprobe::canary
