#include "canary/dns_stream_server.h"

#include <sys/socket.h>

#include <cerrno>
#include <utility>

namespace sandprobe::canary {

std::expected<std::unique_ptr<DnsStreamServer>, std::string> DnsStreamServer::Start(
    in_addr address, uint16_t port, size_t max_message_bytes, Handler handler) {
  std::unique_ptr<DnsStreamServer> dns(new DnsStreamServer(max_message_bytes, std::move(handler)));
  // An idle connection's deadline passes: closed unanswered (no expiry).
  auto server = StreamServer::Start(
      address, port, kMaxDnsStreamConnections, kDnsStreamIdleTimeout,
      [s = dns.get()](StreamServer::Connection& connection) { s->Read(connection); });
  if (!server) return std::unexpected(server.error());
  dns->server_ = std::move(*server);
  return dns;
}

void DnsStreamServer::Read(StreamServer::Connection& c) {
  char chunk[4096];
  const ssize_t n = ::recv(c.fd.get(), chunk, sizeof(chunk), 0);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    c.done = true;  // EOF or error; a partial message is dropped
    return;
  }
  if (n < 0) return;
  c.buffer.append(chunk, static_cast<size_t>(n));
  const auto* bytes = reinterpret_cast<const uint8_t*>(c.buffer.data());
  size_t used = 0;
  while (c.buffer.size() - used >= 2) {
    const size_t length = (size_t{bytes[used]} << 8) | bytes[used + 1];
    if (length > max_message_bytes_) {
      c.done = true;  // larger than any query: closed unanswered
      return;
    }
    if (c.buffer.size() - used - 2 < length) break;  // the rest has not arrived yet
    const std::string reply = handler_(std::span<const uint8_t>(bytes + used + 2, length), c.peer);
    used += 2 + length;
    c.deadline = StreamServer::Clock::now() + kDnsStreamIdleTimeout;
    if (reply.empty() || reply.size() > 0xffff) continue;
    std::string framed;
    framed.push_back(static_cast<char>(reply.size() >> 8));
    framed.push_back(static_cast<char>(reply.size() & 0xff));
    framed += reply;
    // A short reply on a connection that has sent little fits the socket buffer: no partial
    // writes to track. A client that never reads loses its answers, nobody else's.
    ::send(c.fd.get(), framed.data(), framed.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  c.buffer.erase(0, used);
}

}  // namespace sandprobe::canary
