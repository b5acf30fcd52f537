#include "canary/datagram_server.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <utility>
#include <vector>

namespace sandprobe::canary {
namespace {

constexpr int kDrainPerWake = 64;  // then poll again, so Stop() is noticed between bursts

}  // namespace

std::expected<std::unique_ptr<DatagramServer>, std::string> DatagramServer::Start(
    in_addr address, uint16_t port, size_t buffer_bytes, Handler handler) {
  auto socket = BindSocket(SOCK_DGRAM, address, port);
  if (!socket) return std::unexpected(socket.error());
  return Serve(std::move(*socket), buffer_bytes, std::move(handler));
}

std::expected<std::unique_ptr<DatagramServer>, std::string> DatagramServer::Serve(
    UniqueFd socket, size_t buffer_bytes, Handler handler) {
  auto wake = WakeFd::Create();
  if (!wake) return std::unexpected(wake.error());
  std::unique_ptr<DatagramServer> server(
      new DatagramServer(std::move(socket), std::move(*wake), buffer_bytes, std::move(handler)));
  server->thread_ = std::thread([s = server.get()] { s->Run(); });
  return server;
}

DatagramServer::DatagramServer(UniqueFd socket, WakeFd wake, size_t buffer_bytes, Handler handler)
    : socket_(std::move(socket)),
      wake_(std::move(wake)),
      buffer_bytes_(buffer_bytes),
      handler_(std::move(handler)),
      port_(LocalPort(socket_.get())) {}

void DatagramServer::Stop() {
  if (!thread_.joinable()) return;
  wake_.Signal();
  thread_.join();
  socket_.reset();
}

void DatagramServer::Run() {
  std::vector<char> buffer(buffer_bytes_);
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
      const ssize_t n = ::recvfrom(socket_.get(), buffer.data(), buffer.size(), MSG_TRUNC,
                                   reinterpret_cast<sockaddr*>(&peer), &peer_length);
      if (n < 0) break;  // EAGAIN: drained; other errors (ICMP feedback): poll again
      if (peer.sin_family != AF_INET) continue;
      const size_t full = static_cast<size_t>(n);
      const std::string reply =
          handler_(std::span<const char>(buffer.data(), std::min(full, buffer.size())), full, peer);
      if (reply.empty()) continue;
      ::sendto(socket_.get(), reply.data(), reply.size(), MSG_DONTWAIT,
               reinterpret_cast<const sockaddr*>(&peer), sizeof(peer));
    }
  }
}

}  // namespace sandprobe::canary
