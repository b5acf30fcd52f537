#include "drivers/docker/engine_client.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <cstdlib>
#include <mutex>

namespace sandprobe::drivers {
namespace {

constexpr size_t kMaxBody = 4 << 20;

struct Sink {
  std::string* body;
  const std::function<void(std::string_view)>* on_data;
};

size_t Write(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const std::string_view chunk(data, size * n);
  if (sink->on_data != nullptr && *sink->on_data) {
    (*sink->on_data)(chunk);
  } else if (sink->body->size() < kMaxBody) {
    sink->body->append(chunk.substr(0, kMaxBody - sink->body->size()));
  }
  return size * n;
}

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

std::string DefaultDockerEndpoint() {
  const char* host = std::getenv("DOCKER_HOST");
  return host != nullptr && *host != '\0' ? host : "unix:///var/run/docker.sock";
}

std::string UrlEncode(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

EngineClient::EngineClient(std::string endpoint) : endpoint_(std::move(endpoint)) { GlobalInit(); }

std::expected<EngineResponse, std::string> EngineClient::Call(
    std::string_view method, const std::string& path, const std::string& body, double timeout_s,
    const std::function<void(std::string_view)>& on_data) const {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return std::unexpected("curl_easy_init failed");
  std::string url;
  if (endpoint_.starts_with("unix://")) {
    curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, endpoint_.substr(7).c_str());
    url = "http://localhost" + path;  // the daemon ignores the host; "localhost" is accepted
  } else if (endpoint_.starts_with("tcp://")) {
    url = "http://" + endpoint_.substr(6) + path;
  } else {
    curl_easy_cleanup(curl);
    return std::unexpected(fmt::format("unsupported Docker endpoint '{}'", endpoint_));
  }
  EngineResponse response;
  Sink sink{&response.body, &on_data};
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  const std::string m(method);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, m.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  if (m == "POST") curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Write);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_s * 1000));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  const CURLcode rc = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK) {
    return std::unexpected(fmt::format("Docker Engine API {} {} at {}: {}", m, path, endpoint_,
                                       curl_easy_strerror(rc)));
  }
  return response;
}

}  // namespace sandprobe::drivers
