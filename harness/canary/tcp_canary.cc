#include "canary/tcp_canary.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "canary/hit_log.h"

namespace sandprobe::canary {

using Clock = std::chrono::steady_clock;

struct TcpCanary::Connection {
  UniqueFd fd;
  std::string peer;
  std::string buffer;  // bytes received so far, at most kMaxTcpLineBytes
  Clock::time_point deadline;
  bool done = false;
};

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
  auto listener = BindSocket(SOCK_STREAM, address, port);
  if (!listener) return std::unexpected(listener.error());
  auto wake = WakeFd::Create();
  if (!wake) return std::unexpected(wake.error());
  std::unique_ptr<TcpCanary> canary(
      new TcpCanary(std::move(nonce), log, std::move(*listener), std::move(*wake)));
  canary->thread_ = std::thread([c = canary.get()] { c->Run(); });
  return canary;
}

TcpCanary::TcpCanary(std::string nonce, HitLog& log, UniqueFd listener, WakeFd wake)
    : nonce_(std::move(nonce)),
      log_(log),
      listener_(std::move(listener)),
      wake_(std::move(wake)),
      port_(LocalPort(listener_.get())) {}

void TcpCanary::Stop() {
  if (!thread_.joinable()) return;
  wake_.Signal();
  thread_.join();
  listener_.reset();
}

void TcpCanary::Run() {
  std::vector<Connection> connections;
  std::vector<pollfd> fds;
  while (true) {
    fds.clear();
    fds.push_back({wake_.fd(), POLLIN, 0});
    fds.push_back({listener_.get(), POLLIN, 0});
    int timeout_ms = -1;
    const Clock::time_point now = Clock::now();
    for (const Connection& c : connections) {
      fds.push_back({c.fd.get(), POLLIN, 0});
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(c.deadline - now).count();
      const int left_ms = static_cast<int>(std::max<int64_t>(left, 0));
      timeout_ms = timeout_ms < 0 ? left_ms : std::min(timeout_ms, left_ms);
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0) {
      if (errno == EINTR) continue;
      return;  // EFAULT/EINVAL/ENOMEM: give up serving rather than spin
    }
    if (fds[0].revents != 0) return;  // Stop(); connections close with the vector

    const Clock::time_point after = Clock::now();
    for (size_t i = 0; i < connections.size(); ++i) {
      Connection& c = connections[i];
      if (fds[i + 2].revents != 0) {
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
      if (!c.done && after >= c.deadline) Finish(c, c.buffer, false);
    }
    std::erase_if(connections, [](const Connection& c) { return c.done; });
    if (fds[1].revents != 0) AcceptAll(connections);
  }
}

void TcpCanary::AcceptAll(std::vector<Connection>& connections) {
  while (true) {
    sockaddr_in peer{};
    socklen_t length = sizeof(peer);
    UniqueFd fd(::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&peer), &length,
                          SOCK_NONBLOCK | SOCK_CLOEXEC));
    // EAGAIN: drained. ECONNABORTED/EMFILE and the like: try again on the next wake-up.
    if (!fd.valid()) return;
    if (connections.size() >= kMaxTcpConnections) continue;  // over the cap: closed right away
    connections.push_back(
        Connection{std::move(fd), FormatAddress(peer), {}, Clock::now() + kTcpReadTimeout});
  }
}

void TcpCanary::Finish(Connection& connection, std::string_view line, bool answer_allowed) {
  connection.done = true;
  if (connection.buffer.empty()) return;  // a client that sent nothing leaves no hit
  if (line.ends_with('\r')) line.remove_suffix(1);
  std::optional<std::string> invocation;
  if (answer_allowed) invocation = ParseEchoLine(line, nonce_);
  // Log before answering: a client holding the answer (or EOF) must find its hit.
  log_.Record(Hit{.kind = "tcp",
                  .invocation = invocation.value_or(""),
                  .peer = connection.peer,
                  .detail = Printable(line),
                  .unix_ms = NowUnixMs()});
  if (invocation) {
    // A fresh connection's send buffer always holds this short reply: no partial writes.
    const std::string reply = fmt::format("SANDPROBE-ECHO {} {}\n", nonce_, *invocation);
    ::send(connection.fd.get(), reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
}

}  // namespace sandprobe::canary
