#include "canary/stream_server.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace sandprobe::canary {

std::expected<std::unique_ptr<StreamServer>, std::string> StreamServer::Start(
    in_addr address, uint16_t port, size_t max_connections, Clock::duration timeout, Reader read,
    Expiry expire) {
  auto listener = BindSocket(SOCK_STREAM, address, port);
  if (!listener) return std::unexpected(listener.error());
  return Adopt(std::move(*listener), max_connections, timeout, std::move(read), std::move(expire));
}

std::expected<std::unique_ptr<StreamServer>, std::string> StreamServer::Adopt(
    UniqueFd listener, size_t max_connections, Clock::duration timeout, Reader read,
    Expiry expire) {
  auto wake = WakeFd::Create();
  if (!wake) return std::unexpected(wake.error());
  std::unique_ptr<StreamServer> server(new StreamServer(std::move(listener), std::move(*wake),
                                                        max_connections, timeout, std::move(read),
                                                        std::move(expire)));
  server->thread_ = std::thread([s = server.get()] { s->Run(); });
  return server;
}

StreamServer::StreamServer(UniqueFd listener, WakeFd wake, size_t max_connections,
                           Clock::duration timeout, Reader read, Expiry expire)
    : listener_(std::move(listener)),
      wake_(std::move(wake)),
      max_connections_(max_connections),
      timeout_(timeout),
      read_(std::move(read)),
      expire_(std::move(expire)),
      port_(LocalPort(listener_.get())) {}

void StreamServer::Stop() {
  if (!thread_.joinable()) return;
  wake_.Signal();
  thread_.join();
  listener_.reset();
}

void StreamServer::Run() {
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
      if (fds[i + 2].revents != 0) read_(c);
      if (!c.done && after >= c.deadline) {
        if (expire_) expire_(c);
        c.done = true;
      }
    }
    std::erase_if(connections, [](const Connection& c) { return c.done; });
    if (fds[1].revents != 0) AcceptAll(connections);
  }
}

void StreamServer::AcceptAll(std::vector<Connection>& connections) {
  while (true) {
    sockaddr_storage from{};
    socklen_t length = sizeof(from);
    UniqueFd fd(::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&from), &length,
                          SOCK_NONBLOCK | SOCK_CLOEXEC));
    sockaddr_in peer{};
    if (from.ss_family == AF_INET) std::memcpy(&peer, &from, sizeof(peer));
    // EAGAIN: drained. ECONNABORTED/EMFILE and the like: try again on the next wake-up.
    if (!fd.valid()) return;
    if (connections.size() >= max_connections_) continue;  // over the cap: closed right away
    connections.push_back(Connection{std::move(fd), peer, {}, Clock::now() + timeout_, false});
  }
}

}  // namespace sandprobe::canary
