#include "canary/net_util.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <optional>
#include <system_error>
#include <utility>

namespace sandprobe::canary {

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

int UniqueFd::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

std::expected<WakeFd, std::string> WakeFd::Create() {
  int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) return std::unexpected("eventfd: " + ErrnoText(errno));
  WakeFd wake;
  wake.fd_.reset(fd);
  return wake;
}

void WakeFd::Signal() const {
  uint64_t one = 1;
  // A failed write means the counter is already non-zero: the loop will wake anyway.
  [[maybe_unused]] ssize_t ignored = ::write(fd_.get(), &one, sizeof(one));
}

std::string ErrnoText(int err) { return std::error_code(err, std::system_category()).message(); }

std::expected<in_addr, std::string> ParseIpv4(const std::string& text) {
  in_addr address{};
  if (::inet_pton(AF_INET, text.c_str(), &address) != 1) {
    return std::unexpected(fmt::format("not an IPv4 address: '{}'", text));
  }
  return address;
}

std::string FormatAddress(const sockaddr_in& address) {
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &address.sin_addr, text, sizeof(text));
  return fmt::format("{}:{}", text, ntohs(address.sin_port));
}

std::expected<UniqueFd, std::string> BindSocket(int type, in_addr address, uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr = address;
  sa.sin_port = htons(port);
  const std::string where = FormatAddress(sa);
  UniqueFd fd(::socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return std::unexpected(fmt::format("socket {}: {}", where, ErrnoText(errno)));
  if (type == SOCK_STREAM) {
    int yes = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  }
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) != 0) {
    return std::unexpected(fmt::format("bind {}: {}", where, ErrnoText(errno)));
  }
  if (type == SOCK_STREAM && ::listen(fd.get(), 64) != 0) {
    return std::unexpected(fmt::format("listen {}: {}", where, ErrnoText(errno)));
  }
  return fd;
}

std::expected<UniqueFd, std::string> BindSocket6(int type, const std::string& address,
                                                 uint16_t port) {
  sockaddr_in6 sa{};
  sa.sin6_family = AF_INET6;
  sa.sin6_port = htons(port);
  const std::string where = fmt::format("[{}]:{}", address, port);
  if (::inet_pton(AF_INET6, address.c_str(), &sa.sin6_addr) != 1) {
    return std::unexpected(fmt::format("not an IPv6 address: '{}'", address));
  }
  UniqueFd fd(::socket(AF_INET6, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return std::unexpected(fmt::format("socket {}: {}", where, ErrnoText(errno)));
  int yes = 1;
  ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &yes, sizeof(yes));
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) != 0) {
    return std::unexpected(fmt::format("bind {}: {}", where, ErrnoText(errno)));
  }
  return fd;
}

namespace {

// The sockaddr_un of `name` and its length; nullopt when the name does not fit.
std::optional<std::pair<sockaddr_un, socklen_t>> UnixAddress(const std::string& name,
                                                             bool abstract) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  const size_t room = sizeof(sa.sun_path) - 1;  // abstract: the leading NUL; path: the final one
  if (name.empty() || name.size() > room || name.find('\0') != std::string::npos) {
    return std::nullopt;
  }
  std::memcpy(sa.sun_path + (abstract ? 1 : 0), name.data(), name.size());
  const socklen_t length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size() +
                                                  1);  // the NUL before or after
  return std::pair{sa, length};
}

}  // namespace

std::expected<UniqueFd, std::string> BindUnixSocket(const std::string& name, bool abstract) {
  const std::string where = abstract ? "@" + name : name;
  const auto address = UnixAddress(name, abstract);
  if (!address) {
    return std::unexpected(fmt::format("unix socket name {} is empty or longer than {} bytes",
                                       where, sizeof(sockaddr_un{}.sun_path) - 1));
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid())
    return std::unexpected(fmt::format("socket unix {}: {}", where, ErrnoText(errno)));
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address->first), address->second) != 0) {
    return std::unexpected(fmt::format("bind unix {}: {}", where, ErrnoText(errno)));
  }
  if (!abstract) ::chmod(name.c_str(), 0666);
  if (::listen(fd.get(), 64) != 0) {
    return std::unexpected(fmt::format("listen unix {}: {}", where, ErrnoText(errno)));
  }
  return fd;
}

bool UnixSocketAccepts(const std::string& name, bool abstract) {
  const auto address = UnixAddress(name, abstract);
  if (!address) return false;
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return false;
  // A listening socket with room in its backlog completes a unix connect() at once.
  return ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address->first), address->second) ==
         0;
}

std::string UnixPeerText(int fd) {
  ucred cred{};
  socklen_t length = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0) return "unix";
  return fmt::format("unix pid {} uid {}", cred.pid, cred.uid);
}

uint16_t LocalPort(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof(sa);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return 0;
  return ntohs(sa.sin_port);
}

int64_t NowUnixMs() {
  using std::chrono::duration_cast, std::chrono::milliseconds, std::chrono::system_clock;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace sandprobe::canary
