// DNS over TCP (RFC 1035 section 4.2.2): every message on the stream is preceded by a two-byte
// big-endian length. A StreamServer serves it (one poll() thread for every connection, so a
// silent or hostile client cannot block others or Stop()). A connection may carry several
// queries (glibc's resolver sends its A and AAAA queries on one stream); each complete message
// goes to the handler and the handler's reply (if not empty) is sent back framed the same way. A
// connection is closed on EOF, after 2 s without a complete message, or when a length above the
// limit arrives. Internal to harness/canary.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "canary/stream_server.h"

namespace sandprobe::canary {

inline constexpr auto kDnsStreamIdleTimeout = std::chrono::seconds(2);
inline constexpr size_t kMaxDnsStreamConnections = 128;  // more are accepted and closed at once

class DnsStreamServer {
 public:
  // message: one whole DNS message without its length prefix. Returns the reply ("" = none).
  // Runs on the server's thread, one message at a time.
  using Handler =
      std::function<std::string(std::span<const uint8_t> message, const sockaddr_in& peer)>;

  // Binds address:port over TCP (0: kernel-chosen) and starts the thread. Messages longer than
  // max_message_bytes close their connection unanswered.
  // Error: "bind 127.0.0.1:53: Address already in use" style text.
  static std::expected<std::unique_ptr<DnsStreamServer>, std::string> Start(
      in_addr address, uint16_t port, size_t max_message_bytes, Handler handler);
  ~DnsStreamServer() { Stop(); }

  uint16_t port() const { return server_->port(); }
  // Wakes the thread, joins it and closes every socket. Prompt (no wait on clients).
  void Stop() {
    if (server_) server_->Stop();
  }

 private:
  DnsStreamServer(size_t max_message_bytes, Handler handler)
      : max_message_bytes_(max_message_bytes), handler_(std::move(handler)) {}
  // Hands every complete message to the handler and sends its reply back, framed.
  void Read(StreamServer::Connection& connection);

  const size_t max_message_bytes_;
  const Handler handler_;
  std::unique_ptr<StreamServer> server_;  // last: stopped before the fields it uses go
};

}  // namespace sandprobe::canary
