// Small POSIX socket helpers shared by the canary listeners: an owning file descriptor, an
// eventfd used to wake poll() loops on Stop(), IPv4 parsing and binding (IPv6 too) with
// errno text.
// Internal to harness/canary; not part of the public canary interface.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <expected>
#include <string>

namespace sandprobe::canary {

// Owns one file descriptor; closes it on destruction. Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// A non-blocking eventfd: Signal() makes fd() readable so a poll() loop can notice Stop().
class WakeFd {
 public:
  static std::expected<WakeFd, std::string> Create();
  void Signal() const;
  int fd() const { return fd_.get(); }

 private:
  UniqueFd fd_;
};

// "Invalid argument" style text for an errno value (thread-safe).
std::string ErrnoText(int err);

// Parses a dotted-quad IPv4 address. Error: a message naming the rejected text.
std::expected<in_addr, std::string> ParseIpv4(const std::string& text);

// "a.b.c.d:port" for an IPv4 socket address.
std::string FormatAddress(const sockaddr_in& address);

// A non-blocking, close-on-exec socket of `type` (SOCK_STREAM or SOCK_DGRAM) bound to
// address:port (port 0: the kernel picks one). Stream sockets get SO_REUSEADDR and listen().
// Error: "bind 127.0.0.1:53: Permission denied" (the failing call, the address, errno text).
std::expected<UniqueFd, std::string> BindSocket(int type, in_addr address, uint16_t port);

// The same for an IPv6 address in text ("::1"), IPV6_V6ONLY; errors name "[::1]:port". Only
// used to learn why httplib could not bind (HttpCanary).
std::expected<UniqueFd, std::string> BindSocket6(int type, const std::string& address,
                                                 uint16_t port);

// A non-blocking, close-on-exec unix stream socket listening on `name`: with `abstract`, the
// abstract name "\0name" (Linux: no file, scoped to the network namespace); else the path
// `name` (at most 107 bytes, created mode 0666 so a sandbox of any uid that sees it can connect;
// an existing file there is an error, never removed). Error: "bind unix @name: ..." style text.
std::expected<UniqueFd, std::string> BindUnixSocket(const std::string& name, bool abstract);

// connect() to that socket from this process, closed at once: true when a listener accepted.
// What a listener sees is a connection that sends nothing (no canary hit).
bool UnixSocketAccepts(const std::string& name, bool abstract);

// "unix pid P uid U" of the peer of a connected unix socket (SO_PEERCRED), or "unix".
std::string UnixPeerText(int fd);

// The local port a bound socket got (0 if getsockname fails).
uint16_t LocalPort(int fd);

// Wall clock in milliseconds since the Unix epoch.
int64_t NowUnixMs();

}  // namespace sandprobe::canary
