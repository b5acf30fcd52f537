#include "canary/dns_stream_server.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <utility>

namespace sandprobe::canary {

using Clock = std::chrono::steady_clock;

struct DnsStreamServer::Connection {
  UniqueFd fd;
  sockaddr_in peer{};
  std::vector<uint8_t> buffer;  // bytes received and not yet handled
  Clock::time_point deadline;
  bool done = false;
};

std::expected<std::unique_ptr<DnsStreamServer>, std::string> DnsStreamServer::Start(
    in_addr address, uint16_t port, size_t max_message_bytes, Handler handler) {
  auto listener = BindSocket(SOCK_STREAM, address, port);
  if (!listener) return std::unexpected(listener.error());
  auto wake = WakeFd::Create();
  if (!wake) return std::unexpected(wake.error());
  std::unique_ptr<DnsStreamServer> server(new DnsStreamServer(
      std::move(*listener), std::move(*wake), max_message_bytes, std::move(handler)));
  server->thread_ = std::thread([s = server.get()] { s->Run(); });
  return server;
}

DnsStreamServer::DnsStreamServer(UniqueFd listener, WakeFd wake, size_t max_message_bytes,
                                 Handler handler)
    : listener_(std::move(listener)),
      wake_(std::move(wake)),
      max_message_bytes_(max_message_bytes),
      handler_(std::move(handler)),
      port_(LocalPort(listener_.get())) {}

void DnsStreamServer::Stop() {
  if (!thread_.joinable()) return;
  wake_.Signal();
  thread_.join();
  listener_.reset();
}

void DnsStreamServer::Run() {
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
      if (fds[i + 2].revents != 0) Read(c);
      if (!c.done && after >= c.deadline) c.done = true;  // idle: closed unanswered
    }
    std::erase_if(connections, [](const Connection& c) { return c.done; });
    if (fds[1].revents != 0) AcceptAll(connections);
  }
}

void DnsStreamServer::AcceptAll(std::vector<Connection>& connections) {
  while (true) {
    sockaddr_in peer{};
    socklen_t length = sizeof(peer);
    UniqueFd fd(::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&peer), &length,
                          SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) return;  // EAGAIN: drained; other errors: try again on the next wake-up
    if (connections.size() >= kMaxDnsStreamConnections) continue;  // over the cap: closed
    connections.push_back(
        Connection{std::move(fd), peer, {}, Clock::now() + kDnsStreamIdleTimeout, false});
  }
}

void DnsStreamServer::Read(Connection& c) {
  uint8_t chunk[4096];
  const ssize_t n = ::recv(c.fd.get(), chunk, sizeof(chunk), 0);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    c.done = true;  // EOF or error; a partial message is dropped
    return;
  }
  if (n < 0) return;
  c.buffer.insert(c.buffer.end(), chunk, chunk + n);
  size_t used = 0;
  while (c.buffer.size() - used >= 2) {
    const size_t length = (size_t{c.buffer[used]} << 8) | c.buffer[used + 1];
    if (length > max_message_bytes_) {
      c.done = true;  // larger than any query: closed unanswered
      return;
    }
    if (c.buffer.size() - used - 2 < length) break;  // the rest has not arrived yet
    const std::string reply =
        handler_(std::span<const uint8_t>(c.buffer.data() + used + 2, length), c.peer);
    used += 2 + length;
    c.deadline = Clock::now() + kDnsStreamIdleTimeout;
    if (reply.empty() || reply.size() > 0xffff) continue;
    std::string framed;
    framed.push_back(static_cast<char>(reply.size() >> 8));
    framed.push_back(static_cast<char>(reply.size() & 0xff));
    framed += reply;
    // A short reply on a connection that has sent little fits the socket buffer: no partial
    // writes to track. A client that never reads loses its answers, nobody else's.
    ::send(c.fd.get(), framed.data(), framed.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  c.buffer.erase(c.buffer.begin(), c.buffer.begin() + static_cast<std::ptrdiff_t>(used));
}

}  // namespace sandprobe::canary
