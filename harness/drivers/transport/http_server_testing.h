// Test code: in-process httplib servers and raw listeners on 127.0.0.1 for the tests of the HTTP
// client core (transport_test) and of the http driver (http_driver_test). Never used by sandprobe.
#pragma once

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace sandprobe::drivers::http_test {

// An httplib server (or SSLServer) on 127.0.0.1:<any port>, run on its own thread from Start()
// until destruction.
template <typename Server>
class Running {
 public:
  template <typename... Args>
  explicit Running(Args&&... args) : server_(std::forward<Args>(args)...) {}
  void Start() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~Running() {
    release = true;
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }
  Server& server() { return server_; }
  std::string Url(const std::string& scheme, const std::string& path) const {
    return scheme + "://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::atomic<bool> release{false};

 private:
  Server server_;
  int port_ = 0;
  std::thread thread_;
};

// Two answers over a 4 KiB body cap, on `method` ("GET" or "POST"): /sized, 5000 'x' announced by
// Content-Length; /chunked, 50 chunks of 1000 'y' without a length (found while reading).
inline void ServeOverCapBodies(httplib::Server& server, std::string_view method,
                               const std::string& content_type) {
  httplib::Server::Handler sized = [content_type](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(5000, 'x'), content_type);
  };
  httplib::Server::Handler chunked = [content_type](const httplib::Request&,
                                                    httplib::Response& res) {
    res.set_chunked_content_provider(content_type, [](size_t, httplib::DataSink& sink) {
      const std::string chunk(1000, 'y');
      for (int i = 0; i < 50; ++i) {
        if (!sink.write(chunk.data(), chunk.size())) return false;
      }
      sink.done();
      return true;
    });
  };
  if (method == "POST") {
    server.Post("/sized", std::move(sized));
    server.Post("/chunked", std::move(chunked));
  } else {
    server.Get("/sized", std::move(sized));
    server.Get("/chunked", std::move(chunked));
  }
}

// A listening TCP socket on 127.0.0.1:<any port>; sets *port.
inline int TcpListener(int* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
  socklen_t len = sizeof(sa);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  *port = ntohs(sa.sin_port);
  ::listen(fd, 8);
  return fd;
}

// Reads one whole request (headers, then Content-Length bytes of body) so that what follows
// (a reset) happens after the client has sent everything.
inline void ReadRequest(int fd) {
  std::string got;
  char buf[4096];
  while (true) {
    const size_t end = got.find("\r\n\r\n");
    if (end != std::string::npos) {
      const size_t at = got.find("Content-Length: ");
      const size_t length = at == std::string::npos ? 0 : std::stoul(got.substr(at + 16));
      if (got.size() >= end + 4 + length) return;
    }
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n <= 0) return;
    got.append(buf, static_cast<size_t>(n));
  }
}

// Accepts connections on the listening `fd` (closed at destruction) on its own thread, reads each
// request (ReadRequest), calls `on_request`, then answers `reply`: empty holds the connection open
// without a word until destruction (a hang), "RST" resets it, anything else is written and the
// connection closed.
class RawListener {
 public:
  RawListener(int fd, std::string reply, std::function<void()> on_request = {})
      : fd_(fd), reply_(std::move(reply)), on_request_(std::move(on_request)) {
    thread_ = std::thread([this] {
      while (true) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        ReadRequest(c);
        if (on_request_) on_request_();
        if (reply_.empty()) {
          held_.push_back(c);
          continue;
        }
        if (reply_ == "RST") {
          linger lg{1, 0};  // RST instead of FIN
          ::setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        } else {
          (void)!::write(c, reply_.data(), reply_.size());
        }
        ::close(c);
      }
    });
  }
  ~RawListener() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
    for (int c : held_) ::close(c);
  }

 private:
  int fd_;
  std::string reply_;
  std::function<void()> on_request_;
  std::vector<int> held_;
  std::thread thread_;
};

}  // namespace sandprobe::drivers::http_test
