// One TCP listener and its connections served by one poll() thread, shared by the TCP echo canary
// and the DNS canary's TCP side (docs/design.md, "Architecture and source layout":
// harness/canary). A silent or hostile client cannot block others or Stop(): every connection is
// non-blocking and has a deadline, and connections over the cap are accepted and closed at once.
// What a connection carries is its owner's business: a reader is called whenever the connection
// is readable, and an expiry when its deadline passes first. Internal to harness/canary.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "canary/net_util.h"

namespace sandprobe::canary {

class StreamServer {
 public:
  using Clock = std::chrono::steady_clock;

  struct Connection {
    UniqueFd fd;  // non-blocking
    sockaddr_in peer{};
    std::string buffer;          // the reader's: bytes received and not yet used
    Clock::time_point deadline;  // accept + the server's timeout; the reader may move it
    bool done = false;           // set by the reader or the expiry: closed after this round
  };
  // The connection is readable: recv() once, act on what came, set done to close it. Runs on
  // the server's thread, one connection at a time.
  using Reader = std::function<void(Connection& connection)>;
  // The deadline passed before the connection was done; it is closed afterwards. Empty: closed
  // without a word.
  using Expiry = std::function<void(Connection& connection)>;

  // Binds address:port over TCP (0: kernel-chosen) and starts the thread. At most
  // max_connections are served at once; each gets `timeout` from its accept.
  // Error: "bind 127.0.0.1:7: Permission denied" style text.
  static std::expected<std::unique_ptr<StreamServer>, std::string> Start(
      in_addr address, uint16_t port, size_t max_connections, Clock::duration timeout, Reader read,
      Expiry expire = {});
  // The same on a socket already bound and listening (non-blocking, close-on-exec): the unix
  // socket canaries (BindUnixSocket). Connections from another family leave `peer` zeroed.
  static std::expected<std::unique_ptr<StreamServer>, std::string> Adopt(UniqueFd listener,
                                                                         size_t max_connections,
                                                                         Clock::duration timeout,
                                                                         Reader read,
                                                                         Expiry expire = {});
  ~StreamServer() { Stop(); }

  uint16_t port() const { return port_; }
  // Wakes the thread, joins it and closes every socket. Prompt (no wait on clients).
  void Stop();

 private:
  StreamServer(UniqueFd listener, WakeFd wake, size_t max_connections, Clock::duration timeout,
               Reader read, Expiry expire);
  void Run();
  void AcceptAll(std::vector<Connection>& connections);

  UniqueFd listener_;
  WakeFd wake_;
  const size_t max_connections_;
  const Clock::duration timeout_;
  const Reader read_;
  const Expiry expire_;
  std::thread thread_;
  uint16_t port_ = 0;
};

}  // namespace sandprobe::canary
