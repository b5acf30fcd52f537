#include "canary/tcp_canary.h"

#include <fmt/format.h>
#include <sys/socket.h>

#include <cerrno>
#include <utility>

#include "canary/hit_log.h"

namespace sandprobe::canary {

std::optional<std::string> ParseEchoLine(std::string_view line, std::string_view nonce) {
  constexpr std::string_view kPrefix = "SANDPROBE ";
  if (!line.starts_with(kPrefix)) return std::nullopt;
  std::string invocation = InvocationFromTag(line.substr(kPrefix.size()), nonce);
  if (invocation.empty()) return std::nullopt;
  return invocation;
}

std::expected<std::unique_ptr<TcpCanary>, std::string> TcpCanary::Start(in_addr address,
                                                                        uint16_t port,
                                                                        std::string nonce,
                                                                        HitLog& log) {
  return Serve(std::unique_ptr<TcpCanary>(new TcpCanary("tcp", std::move(nonce), log)),
               [&](StreamServer::Reader read, StreamServer::Expiry expire) {
                 return StreamServer::Start(address, port, kMaxTcpConnections, kTcpReadTimeout,
                                            std::move(read), std::move(expire));
               });
}

std::expected<std::unique_ptr<TcpCanary>, std::string> TcpCanary::Adopt(UniqueFd listener,
                                                                        std::string kind,
                                                                        std::string nonce,
                                                                        HitLog& log) {
  return Serve(std::unique_ptr<TcpCanary>(new TcpCanary(std::move(kind), std::move(nonce), log)),
               [&](StreamServer::Reader read, StreamServer::Expiry expire) {
                 return StreamServer::Adopt(std::move(listener), kMaxTcpConnections,
                                            kTcpReadTimeout, std::move(read), std::move(expire));
               });
}

std::expected<std::unique_ptr<TcpCanary>, std::string> TcpCanary::Serve(
    std::unique_ptr<TcpCanary> canary,
    const std::function<std::expected<std::unique_ptr<StreamServer>, std::string>(
        StreamServer::Reader, StreamServer::Expiry)>& start) {
  TcpCanary* c = canary.get();
  auto server =
      start([c](Connection& connection) { c->Read(connection); },
            // The line must arrive within the timeout: what came so far is logged,
            // not answered.
            [c](Connection& connection) { c->Finish(connection, connection.buffer, false); });
  if (!server) return std::unexpected(server.error());
  canary->server_ = std::move(*server);
  return canary;
}

void TcpCanary::Read(Connection& c) {
  char chunk[kMaxTcpLineBytes];
  const ssize_t n = ::recv(c.fd.get(), chunk, kMaxTcpLineBytes - c.buffer.size(), 0);
  if (n > 0) {
    c.buffer.append(chunk, static_cast<size_t>(n));
    const size_t newline = c.buffer.find('\n');
    if (newline != std::string::npos) {
      Finish(c, std::string_view(c.buffer).substr(0, newline), true);
    } else if (c.buffer.size() >= kMaxTcpLineBytes) {
      Finish(c, c.buffer, false);  // no line within the limit
    }
  } else if (n == 0) {
    Finish(c, c.buffer, true);  // EOF: an unterminated line still counts
  } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
    Finish(c, c.buffer, false);
  }
}

void TcpCanary::Finish(Connection& connection, std::string_view line, bool answer_allowed) {
  connection.done = true;
  if (connection.buffer.empty()) return;  // a client that sent nothing leaves no hit
  if (line.ends_with('\r')) line.remove_suffix(1);
  std::optional<std::string> invocation;
  if (answer_allowed) invocation = ParseEchoLine(line, nonce_);
  // Log before answering: a client holding the answer (or EOF) must find its hit.
  log_.Record(Hit{
      .kind = kind_,
      .invocation = invocation.value_or(""),
      .peer = kind_ == "tcp" ? FormatAddress(connection.peer) : UnixPeerText(connection.fd.get()),
      .detail = Printable(line),
      .unix_ms = NowUnixMs()});
  if (invocation) {
    // A fresh connection's send buffer always holds this short reply: no partial writes.
    const std::string reply = fmt::format("SANDPROBE-ECHO {} {}\n", nonce_, *invocation);
    ::send(connection.fd.get(), reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
}

}  // namespace sandprobe::canary
