// A small Docker Engine API client over the daemon's unix socket (or tcp://host:port), on
// libcurl (CURLOPT_UNIX_SOCKET_PATH). Debian 12's cpp-httplib (0.11.4) cannot connect to a unix
// socket, so this driver uses libcurl, a well-kept library that can. Every call has a
// client-side timeout; errors are values.
#pragma once

#include <expected>
#include <functional>
#include <string>
#include <string_view>

namespace sandprobe::drivers {

struct EngineResponse {
  long status = 0;   // HTTP status
  std::string body;  // bounded to 4 MiB unless streamed
};

class EngineClient {
 public:
  // endpoint: "unix:///var/run/docker.sock" or "tcp://127.0.0.1:2375" (as DOCKER_HOST spells it).
  explicit EngineClient(std::string endpoint);
  const std::string& endpoint() const { return endpoint_; }

  // method: GET/POST/DELETE; path like "/v1.41/containers/create"; body: JSON or "".
  // timeout_s bounds the whole call. on_data, when given, receives the body instead.
  std::expected<EngineResponse, std::string> Call(
      std::string_view method, const std::string& path, const std::string& body, double timeout_s,
      const std::function<void(std::string_view)>& on_data = {}) const;

 private:
  std::string endpoint_;
};

// DOCKER_HOST, else unix:///var/run/docker.sock.
std::string DefaultDockerEndpoint();
// Percent-encodes a query value (label filters hold JSON).
std::string UrlEncode(std::string_view s);

}  // namespace sandprobe::drivers
