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
constexpr int kPortTries = 8;               // UDP port free but taken over TCP: pick another

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
  std::unique_ptr<DnsCanary> canary(new DnsCanary(std::move(nonce), log));
  DnsCanary* c = canary.get();
  std::string last_error;
  // Port 0: the kernel picks a UDP port, which another program may hold over TCP; try again.
  for (int attempt = 0; attempt < (port == 0 ? kPortTries : 1); ++attempt) {
    auto server = DatagramServer::Start(
        address, port, kMaxDatagramBytes,
        [c](std::span<const char> bytes, size_t full, const sockaddr_in& peer) {
          if (full > bytes.size()) return std::string();  // larger than the buffer: dropped
          return c->HandlePacket({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()},
                                 peer, "dns");
        });
    if (!server) return std::unexpected(server.error());
    auto stream =
        DnsStreamServer::Start(address, (*server)->port(), kMaxDatagramBytes,
                               [c](std::span<const uint8_t> message, const sockaddr_in& peer) {
                                 return c->HandlePacket(message, peer, "dns-tcp");
                               });
    if (!stream) {
      last_error = stream.error();
      continue;  // the UDP server stops as it goes out of scope
    }
    canary->server_ = std::move(*server);
    canary->stream_ = std::move(*stream);
    return canary;
  }
  return std::unexpected("tcp: " + last_error);
}

std::string DnsCanary::HandlePacket(std::span<const uint8_t> packet, const sockaddr_in& peer,
                                    std::string_view kind) {
  auto query = ParseDnsQuery(packet);
  if (!query) return "";  // malformed: no answer, no hit
  // Log before answering: a client holding the answer must find its hit.
  log_.Record(Hit{.kind = std::string(kind),
                  .invocation = InvocationFromQuery(*query, nonce_),
                  .peer = FormatAddress(peer),
                  .detail = Printable(DottedName(*query)),
                  .unix_ms = NowUnixMs()});
  const std::vector<uint8_t> response = BuildNxdomainResponse(*query);
  return std::string(response.begin(), response.end());
}

}  // namespace sandprobe::canary
