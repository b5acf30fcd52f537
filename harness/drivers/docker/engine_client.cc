#include "drivers/docker/engine_client.h"

#include <fmt/format.h>

#include <cstdlib>

namespace sandprobe::drivers {
namespace {

constexpr size_t kMaxBody = 4 << 20;

}  // namespace

std::string DefaultDockerEndpoint() {
  const char* host = std::getenv("DOCKER_HOST");
  return host != nullptr && *host != '\0' ? host : "unix:///var/run/docker.sock";
}

EngineClient::EngineClient(std::string endpoint) : endpoint_(std::move(endpoint)) {}

std::expected<EngineResponse, std::string> EngineClient::Call(
    std::string_view method, const std::string& path, const std::string& body, double timeout_s,
    const std::function<void(std::string_view)>& on_data, const std::atomic<bool>* cancel) const {
  transport::HttpRequest req;
  if (endpoint_.starts_with("unix://")) {
    req.unix_socket = endpoint_.substr(7);
    req.url = "http://localhost" + path;  // the daemon ignores the host; "localhost" is accepted
  } else if (endpoint_.starts_with("tcp://")) {
    req.url = "http://" + endpoint_.substr(6) + path;
  } else {
    return std::unexpected(fmt::format("unsupported Docker endpoint '{}'", endpoint_));
  }
  req.method = std::string(method);
  req.headers = {{"Content-Type", "application/json"}};
  req.body = body;
  req.deadline = transport::After(timeout_s);
  req.max_body = kMaxBody;
  req.over_cap_is_error = false;
  req.cancel = cancel;
  if (on_data) {
    req.on_body = [&](std::string_view chunk) {
      on_data(chunk);
      return true;
    };
  }
  auto r = transport::Send(req);
  if (!r) {
    return std::unexpected(fmt::format("Docker Engine API {} {} at {}: {}", method, path, endpoint_,
                                       r.error().message));
  }
  return EngineResponse{r->status, std::move(r->body)};
}

}  // namespace sandprobe::drivers
