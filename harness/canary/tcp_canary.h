// The TCP echo canary: one poll() thread serves every connection, so a silent or hostile client
// cannot block others or Stop(). Protocol: the client sends "SANDPROBE <nonce> <invocation>\n";
// the canary answers "SANDPROBE-ECHO <nonce> <invocation>\n" and closes. At most 512 bytes are
// read and the line must arrive within 2 s of accept. Internal to harness/canary.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "canary/net_util.h"

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
  ~TcpCanary() { Stop(); }

  uint16_t port() const { return port_; }
  // Wakes the thread, joins it and closes every socket. Prompt (no wait on clients).
  void Stop();

 private:
  struct Connection;
  TcpCanary(std::string nonce, HitLog& log, UniqueFd listener, WakeFd wake);
  void Run();
  void AcceptAll(std::vector<Connection>& connections);
  void Finish(Connection& connection, std::string_view line, bool answer_allowed);

  const std::string nonce_;
  HitLog& log_;
  UniqueFd listener_;
  WakeFd wake_;
  std::thread thread_;
  uint16_t port_ = 0;
};

}  // namespace sandprobe::canary
