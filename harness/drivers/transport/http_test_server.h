// Test code: in-process httplib servers on 127.0.0.1 for the tests of the HTTP client core
// (transport_test) and of the http driver (http_driver_test). Never used by sandprobe.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

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

}  // namespace sandprobe::drivers::http_test
