// The HTTP canary: an httplib::Server that answers every request with the run's nonce (200), the
// cloud metadata paths as the clouds answer them (metadata_shapes.h), and logs a Hit for each; or,
// as the Docker API canary, enough of the Docker Engine API for a probe to tell a daemon answered
// (GET /_ping, GET [/v1.NN]/version). Internal to harness/canary; use CanarySet.
#pragma once

#include <httplib.h>

#include <atomic>
#include <cstdint>
#include <expected>
#include <memory>
#include <string>
#include <thread>

namespace sandprobe::canary {

class HitLog;

class HttpCanary {
 public:
  // kPlain: 200 "sandprobe-canary <nonce>" for everything but the cloud metadata paths
  // (AnswerMetadata), Hit kind "http", or "credential" where the answer carried the credential.
  // kDockerApi: Hit kind "docker"; /_ping -> 200 "OK" with Api-Version; /version -> the Engine
  // API's version object (ApiVersion, Version "sandprobe-canary", and the nonce); anything else
  // 404 {"message":"page not found"} as dockerd answers. It never forwards to a real daemon.
  enum class Flavor { kPlain, kDockerApi };

  // Binds host:port (an IPv4 or IPv6 address; port 0: kernel-chosen), starts the server thread
  // and waits until it accepts. `credential` is what kPlain's metadata credential paths serve;
  // the IMDSv2 session token is drawn here. Error: "bind 127.0.0.1:80: Permission denied" style
  // text, or a start-up timeout.
  static std::expected<std::unique_ptr<HttpCanary>, std::string> Start(
      const std::string& host, uint16_t port, std::string nonce, HitLog& log,
      Flavor flavor = Flavor::kPlain, std::string credential = "");
  ~HttpCanary() { Stop(); }

  uint16_t port() const { return port_; }
  // Stops accepting and joins the server thread. Bounded by the 2 s read timeout of a slow
  // client in mid-request. Not thread-safe by itself: CanarySet serialises calls.
  void Stop();

 private:
  HttpCanary(std::string nonce, HitLog& log, Flavor flavor, std::string credential);
  void AnswerAsDockerApi(const httplib::Request& request, httplib::Response& response) const;
  void OnRequest(const httplib::Request& request, httplib::Response& response);

  const std::string nonce_, credential_, token_;
  HitLog& log_;
  const Flavor flavor_;
  httplib::Server server_;
  std::thread thread_;
  std::atomic<bool> listen_returned_{false};
  uint16_t port_ = 0;
};

}  // namespace sandprobe::canary
