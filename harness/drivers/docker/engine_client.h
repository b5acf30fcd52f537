// The Docker Engine API protocol layer: paths under the daemon's unix socket (or tcp://host:port)
// and JSON bodies, sent through the harness's one HTTP client (drivers/transport). Every call has
// a client-side timeout; errors are values.
#pragma once

#include <atomic>
#include <expected>
#include <functional>
#include <string>
#include <string_view>

#include "drivers/transport/http_client.h"

namespace sandprobe::drivers {

struct EngineResponse {
  long status = 0;   // HTTP status
  std::string body;  // bounded to 4 MiB (cut there) unless streamed
};

class EngineClient {
 public:
  // endpoint: "unix:///var/run/docker.sock" or "tcp://127.0.0.1:2375" (as DOCKER_HOST spells it).
  explicit EngineClient(std::string endpoint);
  const std::string& endpoint() const { return endpoint_; }

  // method: GET/POST/DELETE; path like "/v1.41/containers/create"; body: JSON or "".
  // timeout_s bounds the whole call. on_data, when given, receives a 2xx body instead. cancel,
  // when given and set, ends the call within 50 ms (an error).
  // Errors: "Docker Engine API <method> <path> at <endpoint>: <transport message>".
  std::expected<EngineResponse, std::string> Call(
      std::string_view method, const std::string& path, const std::string& body, double timeout_s,
      const std::function<void(std::string_view)>& on_data = {},
      const std::atomic<bool>* cancel = nullptr) const;

 private:
  std::string endpoint_;
};

// DOCKER_HOST, else unix:///var/run/docker.sock.
std::string DefaultDockerEndpoint();
// Percent-encodes a query value (label filters hold JSON).
using transport::QueryEscape;

}  // namespace sandprobe::drivers
