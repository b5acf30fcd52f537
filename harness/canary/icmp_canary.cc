#include "canary/icmp_canary.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <linux/icmp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "canary/hit_log.h"
#include "canary/tcp_canary.h"

namespace sandprobe::canary {
namespace {

constexpr size_t kMaxEchoData = 512;

uint16_t Be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

std::string Dotted(in_addr a) {
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a, text, sizeof text);
  return text;
}

}  // namespace

std::optional<IcmpEchoRequest> ParseIcmpEchoRequest(std::span<const uint8_t> packet) {
  if (packet.size() < 20 || (packet[0] >> 4) != 4) return std::nullopt;
  const size_t header = static_cast<size_t>(packet[0] & 0x0f) * 4;
  if (header < 20 || packet.size() < header + 8 || packet[9] != IPPROTO_ICMP) return std::nullopt;
  const uint16_t fragment = Be16(&packet[6]);
  if ((fragment & 0x3fff) != 0) return std::nullopt;  // a fragment (more, or an offset)
  const uint8_t* icmp = packet.data() + header;
  if (icmp[0] != ICMP_ECHO || icmp[1] != 0) return std::nullopt;
  IcmpEchoRequest r;
  std::memcpy(&r.source, &packet[12], 4);
  std::memcpy(&r.destination, &packet[16], 4);
  r.id = Be16(icmp + 4);
  r.sequence = Be16(icmp + 6);
  const size_t data = std::min(packet.size() - header - 8, kMaxEchoData);
  r.data.assign(reinterpret_cast<const char*>(icmp + 8), data);
  return r;
}

std::optional<std::string> IcmpDataInvocation(std::string_view data, std::string_view nonce) {
  const size_t end = data.find_first_of(std::string_view("\n\0", 2));
  return ParseEchoLine(data.substr(0, end), nonce);
}

std::expected<std::unique_ptr<IcmpCanary>, std::string> IcmpCanary::Start(in_addr address,
                                                                          std::string nonce,
                                                                          HitLog& log) {
  UniqueFd fd(::socket(AF_INET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_ICMP));
  if (!fd.valid()) {
    const int err = errno;
    return std::unexpected(fmt::format("raw ICMP socket: {}{}", ErrnoText(err),
                                       err == EPERM ? " (needs CAP_NET_RAW)" : ""));
  }
  // Only echo requests reach us (linux/icmp.h ICMP_FILTER: a set bit drops that type).
  icmp_filter filter{};
  filter.data = ~(1U << ICMP_ECHO);
  ::setsockopt(fd.get(), SOL_RAW, ICMP_FILTER, &filter, sizeof filter);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  local.sin_addr = address;
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0) {
    return std::unexpected(
        fmt::format("bind raw ICMP socket to {}: {}", Dotted(address), ErrnoText(errno)));
  }
  // Echo requests only (ICMP_FILTER above): the kernel answers them; the canary logs those that
  // carry this run's nonce and never replies.
  auto server = DatagramServer::Serve(
      std::move(fd), 2048,
      [nonce = std::move(nonce), &log](std::span<const char> bytes, size_t,
                                       const sockaddr_in&) -> std::string {
        auto echo =
            ParseIcmpEchoRequest({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
        if (!echo) return "";
        auto invocation = IcmpDataInvocation(echo->data, nonce);
        if (!invocation) return "";  // not probe traffic of this run
        log.Record(Hit{.kind = "icmp",
                       .invocation = *invocation,
                       .peer = Dotted(echo->source),
                       .detail = Printable(fmt::format(
                           "echo request to {} id {} seq {}: {}", Dotted(echo->destination),
                           echo->id, echo->sequence, echo->data.substr(0, echo->data.find('\n')))),
                       .unix_ms = NowUnixMs()});
        return "";
      });
  if (!server) return std::unexpected(server.error());
  return std::unique_ptr<IcmpCanary>(new IcmpCanary(std::move(*server)));
}

}  // namespace sandprobe::canary
