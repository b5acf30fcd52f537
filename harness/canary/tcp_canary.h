// The TCP echo canary, served by a StreamServer (one poll() thread for every connection, so a
// silent or hostile client cannot block others or Stop()). Protocol: the client sends
// "SANDPROBE <nonce> <invocation>\n"; the canary answers "SANDPROBE-ECHO <nonce> <invocation>\n"
// and closes. At most 512 bytes are read and the line must arrive within 2 s of accept. Internal
// to harness/canary.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "canary/stream_server.h"

namespace sandprobe::canary {

class HitLog;

inline constexpr size_t kMaxTcpLineBytes = 512;
inline constexpr auto kTcpReadTimeout = std::chrono::seconds(2);
inline constexpr size_t kMaxTcpConnections = 128;  // more are accepted and closed at once

// The invocation of a well-formed "SANDPROBE <nonce> <invocation>" line (no newline) carrying
// this run's nonce; nullopt otherwise.
std::optional<std::string> ParseEchoLine(std::string_view line, std::string_view nonce);

class TcpCanary {
 public:
  // Binds address:port (0: kernel-chosen) and starts the serving thread.
  // Error: "bind 127.0.0.1:7: Permission denied" style text.
  static std::expected<std::unique_ptr<TcpCanary>, std::string> Start(in_addr address,
                                                                      uint16_t port,
                                                                      std::string nonce,
                                                                      HitLog& log);
  // The same protocol on a unix socket already listening (BindUnixSocket); hits are logged as
  // `kind` ("unix", "abstract-unix") with the peer's pid and uid (SO_PEERCRED).
  static std::expected<std::unique_ptr<TcpCanary>, std::string> Adopt(UniqueFd listener,
                                                                      std::string kind,
                                                                      std::string nonce,
                                                                      HitLog& log);
  ~TcpCanary() { Stop(); }

  uint16_t port() const { return server_->port(); }
  // Wakes the thread, joins it and closes every socket. Prompt (no wait on clients).
  void Stop() {
    if (server_) server_->Stop();
  }

 private:
  using Connection = StreamServer::Connection;
  TcpCanary(std::string kind, std::string nonce, HitLog& log)
      : kind_(std::move(kind)), nonce_(std::move(nonce)), log_(log) {}
  static std::expected<std::unique_ptr<TcpCanary>, std::string> Serve(
      std::unique_ptr<TcpCanary> canary,
      const std::function<std::expected<std::unique_ptr<StreamServer>, std::string>(
          StreamServer::Reader, StreamServer::Expiry)>& start);
  void Read(Connection& connection);
  void Finish(Connection& connection, std::string_view line, bool answer_allowed);

  const std::string kind_;  // "tcp", or a unix socket's kind
  const std::string nonce_;
  HitLog& log_;
  std::unique_ptr<StreamServer> server_;  // last: stopped before the fields it uses go
};

}  // namespace sandprobe::canary
