// One UDP socket served by one poll() thread, shared by the DNS and UDP echo canaries: each
// datagram goes to a handler, and what the handler returns (if not empty) is sent back to the
// sender, best effort, like any UDP server. Internal to harness/canary.
#pragma once

#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>

#include "canary/net_util.h"

namespace sandprobe::canary {

class DatagramServer {
 public:
  // bytes: what was read, at most the receive buffer; full_size: the datagram's real size
  // (MSG_TRUNC), larger than bytes.size() when it did not fit. Returns the reply ("" = none).
  // Runs on the server's thread, one datagram at a time.
  using Handler = std::function<std::string(std::span<const char> bytes, size_t full_size,
                                            const sockaddr_in& peer)>;

  // Binds address:port over UDP (0: kernel-chosen) and starts the thread; buffer_bytes is the
  // receive buffer. Error: "bind 127.0.0.1:53: Permission denied" style text.
  static std::expected<std::unique_ptr<DatagramServer>, std::string> Start(in_addr address,
                                                                           uint16_t port,
                                                                           size_t buffer_bytes,
                                                                           Handler handler);
  // Serves `socket`, already open and bound (a raw ICMP socket, say), the same way. Error: the
  // wake descriptor could not be made.
  static std::expected<std::unique_ptr<DatagramServer>, std::string> Serve(UniqueFd socket,
                                                                           size_t buffer_bytes,
                                                                           Handler handler);
  ~DatagramServer() { Stop(); }

  uint16_t port() const { return port_; }
  // Wakes the thread, joins it and closes the socket. Prompt, even during a flood.
  void Stop();

 private:
  DatagramServer(UniqueFd socket, WakeFd wake, size_t buffer_bytes, Handler handler);
  void Run();

  UniqueFd socket_;
  WakeFd wake_;
  const size_t buffer_bytes_;
  const Handler handler_;
  std::thread thread_;
  uint16_t port_ = 0;
};

}  // namespace sandprobe::canary
