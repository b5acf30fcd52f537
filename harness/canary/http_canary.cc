#include "canary/http_canary.h"

#include <fmt/format.h>
#include <sys/socket.h>

#include <chrono>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "canary/hit_log.h"
#include "canary/metadata_shapes.h"
#include "canary/net_util.h"

namespace sandprobe::canary {
namespace {

constexpr auto kStartupTimeout = std::chrono::seconds(5);

// httplib reports a failed bind only as -1/false. Repeat the bind on a plain socket to learn
// the errno text for the error message.
std::string DescribeBindFailure(const std::string& host, uint16_t port) {
  if (host.find(':') != std::string::npos) {
    auto fd = BindSocket6(SOCK_STREAM, host, port);
    if (!fd) return fd.error();
    return fmt::format("httplib could not bind [{}]:{}", host, port);
  }
  auto address = ParseIpv4(host);
  if (!address) return address.error();
  auto fd = BindSocket(SOCK_STREAM, *address, port);
  if (!fd) return fd.error();
  return fmt::format("httplib could not bind {}:{}", host, port);
}

// 32 hex characters from the kernel's random source: this canary's IMDSv2 session token.
std::string SessionToken() {
  std::random_device random;
  std::string token;
  for (int i = 0; i < 4; ++i) token += fmt::format("{:08x}", random());
  return token;
}

}  // namespace

HttpCanary::HttpCanary(std::string nonce, HitLog& log, Flavor flavor, std::string credential)
    : nonce_(std::move(nonce)),
      credential_(std::move(credential)),
      token_("AQAEAsandprobe" + SessionToken()),
      log_(log),
      flavor_(flavor) {}

std::expected<std::unique_ptr<HttpCanary>, std::string> HttpCanary::Start(
    const std::string& host, uint16_t port, std::string nonce, HitLog& log, Flavor flavor,
    std::string credential) {
  std::unique_ptr<HttpCanary> canary(
      new HttpCanary(std::move(nonce), log, flavor, std::move(credential)));
  httplib::Server& server = canary->server_;
  server.set_read_timeout(2, 0);
  server.set_write_timeout(2, 0);
  server.set_keep_alive_timeout(1);
  server.set_payload_max_length(64 * 1024);
  // Replaces httplib's default (SO_REUSEPORT only, which lets any same-uid process share the
  // port): SO_REUSEADDR, like the TCP canary, so a restart can rebind past TIME_WAIT.
  server.set_socket_options([](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  // Pre-routing sees every method and path without regex matching on attacker-chosen paths.
  server.set_pre_routing_handler([c = canary.get()](const auto& request, auto& response) {
    c->OnRequest(request, response);
    return httplib::Server::HandlerResponse::Handled;
  });

  if (port == 0) {
    const int bound = server.bind_to_any_port(host);
    if (bound <= 0) return std::unexpected(DescribeBindFailure(host, 0));
    canary->port_ = static_cast<uint16_t>(bound);
  } else {
    if (!server.bind_to_port(host, port)) return std::unexpected(DescribeBindFailure(host, port));
    canary->port_ = port;
  }

  HttpCanary* raw = canary.get();
  canary->thread_ = std::thread([raw] {
    raw->server_.listen_after_bind();
    raw->listen_returned_ = true;
  });
  // httplib's stop() is a no-op until listen has started: wait for it before handing out.
  const auto deadline = std::chrono::steady_clock::now() + kStartupTimeout;
  while (!server.is_running()) {
    if (canary->listen_returned_ || std::chrono::steady_clock::now() > deadline) {
      canary->Stop();
      return std::unexpected(fmt::format("listen {}:{} did not start", host, canary->port_));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return canary;
}

void HttpCanary::Stop() {
  if (!thread_.joinable()) return;
  // Loop: if listen has not set its running flag yet, stop() would be lost.
  while (!listen_returned_) {
    server_.stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  thread_.join();
}

void HttpCanary::OnRequest(const httplib::Request& request, httplib::Response& response) {
  std::optional<MetadataAnswer> answer;
  if (flavor_ == Flavor::kPlain) {
    // The target as sent (path and query), not httplib's decoded path: the shapes read the query.
    const std::string& target = request.target.empty() ? request.path : request.target;
    const std::vector<std::pair<std::string, std::string>> headers(request.headers.begin(),
                                                                   request.headers.end());
    answer = AnswerMetadata(request.method, target, headers, nonce_, token_, credential_);
  }
  Hit hit;
  hit.kind = answer ? answer->kind : "docker";
  hit.invocation = InvocationFromTag(request.get_header_value("X-Sandprobe"), nonce_);
  const bool v6 = request.remote_addr.find(':') != std::string::npos;
  hit.peer = v6 ? fmt::format("[{}]:{}", request.remote_addr, request.remote_port)
                : fmt::format("{}:{}", request.remote_addr, request.remote_port);
  hit.detail = Printable(request.method + " " + request.path);
  hit.unix_ms = NowUnixMs();
  log_.Record(std::move(hit));

  if (!answer) return AnswerAsDockerApi(request, response);
  response.status = answer->status;
  for (auto& [name, value] : answer->headers) response.set_header(name, value);
  response.set_content(std::move(answer->body), answer->content_type);
}

// What a probe needs to recognise a daemon (docs/probes.md, net.docker-api): the Api-Version
// header on every answer, "OK" from /_ping, the version object from /version with or without a
// /v1.NN prefix. Version "sandprobe-canary" so no report mistakes it for a real engine.
void HttpCanary::AnswerAsDockerApi(const httplib::Request& request,
                                   httplib::Response& response) const {
  static constexpr std::string_view kApiVersion = "1.41";
  response.set_header("Api-Version", std::string(kApiVersion));
  response.set_header("Ostype", "linux");
  response.set_header("Server", "sandprobe-canary (Docker Engine API)");
  std::string path = request.path;
  if (path.starts_with("/v1.")) {
    const size_t slash = path.find('/', 1);
    path = slash == std::string::npos ? "/" : path.substr(slash);
  }
  const bool read = request.method == "GET" || request.method == "HEAD";
  if (read && path == "/_ping") {
    response.status = 200;
    response.set_content("OK", "text/plain; charset=utf-8");
  } else if (read && path == "/version") {
    response.status = 200;
    response.set_content(fmt::format(R"({{"ApiVersion":"{}","MinAPIVersion":"1.12",)"
                                     R"("Version":"sandprobe-canary","Os":"linux",)"
                                     R"("Arch":"amd64","SandprobeNonce":"{}"}})",
                                     kApiVersion, nonce_),
                         "application/json");
  } else {
    response.status = 404;
    response.set_content(R"({"message":"page not found"})", "application/json");
  }
}

}  // namespace sandprobe::canary
