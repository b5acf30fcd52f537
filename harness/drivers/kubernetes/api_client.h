// The Kubernetes API protocol layer on the harness's one HTTP client (drivers/transport): HTTPS
// with the kubeconfig's CA, client certificate and key handed over from memory (never written to
// disk), a bearer token, JSON in and out, and a client-side deadline on every call (the transport
// checks it, and cancel, every 50 ms). Thread-safe: each call makes its own connection.
//
// Errors are values: a meta/v1 Status body becomes ApiError{code, reason, message,
// retry_after_s}; a transport failure has code 0. Retries (Call): 429 waits Retry-After (bounded)
// and retries; 403 "exceeded quota" (a ResourceQuota used as a rate limit) backs off and retries —
// back-pressure, never a verdict; GET/DELETE also retry 5xx and transport errors. Every retry
// stops at the call's deadline or on cancel. The token never appears in an error.
#pragma once

#include <atomic>
#include <chrono>
#include <expected>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "drivers/kubernetes/kubeconfig.h"
#include "drivers/transport/http_client.h"

namespace sandprobe::drivers::kube {

using Clock = transport::Clock;

// Whether an API server message is a ResourceQuota refusal ("exceeded quota"): back-pressure,
// whether it comes as a 403 on a create or in a Job's FailedCreate event.
bool IsQuotaMessage(std::string_view message);
// Whether it is the quota admission's 409 conflict ("Operation cannot be fulfilled on
// resourcequotas ...: the object has been modified"): another create won the race for the quota
// object; a retry succeeds. Transient, on a create or in a FailedCreate event.
bool IsQuotaConflictMessage(std::string_view message);

struct ApiError {
  int code = 0;              // HTTP status; 0 = transport (connect, TLS, timeout, broken stream)
  std::string reason;        // Status.reason ("Forbidden", "AlreadyExists", "Invalid", ...)
  std::string message;       // Status.message or the transport error, bounded
  double retry_after_s = 0;  // Retry-After header or Status.details.retryAfterSeconds
  int attempts = 1;          // how many requests were made
  bool deadline = false;     // gave up because the deadline passed
  bool cancelled = false;    // gave up because cancel was set
  bool transient = false;    // a transport failure worth one more try (not TLS trust, not config)

  // Quota back-pressure, never an answer: a 403 whose message says "exceeded quota", or a 409
  // from the quota admission's own update of the ResourceQuota ("Operation cannot be fulfilled on
  // resourcequotas ...: the object has been modified"): the object was not created, and a
  // request made again is admitted once the quota is free (measured on a real cluster, several
  // Jobs created at once).
  bool IsQuota() const;
  std::string ToString() const;  // "HTTP 403 Forbidden: ..." or "transport: ..."
};

struct ApiResponse {
  int status = 0;
  nlohmann::json body;       // parsed JSON (null when the body is not JSON)
  std::string text;          // raw body, bounded to 8 MiB
  std::string warning;       // Warning header(s), joined with "; "
  double retry_after_s = 0;  // Retry-After header, seconds (0 = none)
};

struct ApiOptions {
  double call_timeout_s = 15;  // cap for one request
  double connect_timeout_s = 5;
  double max_retry_after_s = 10;   // a longer Retry-After is cut to this
  double quota_backoff_max_s = 8;  // exponential back-off 0.5 s .. this, for quota 403
};

// What ended a watch stream.
enum class WatchEnd {
  kStopped,    // the handler asked to stop
  kEnded,      // the stream ended or broke: re-list and re-watch
  kGone,       // ERROR event or HTTP 410: the resourceVersion is too old; re-list
  kDeadline,   // the deadline passed
  kCancelled,  // cancel was set
  kFailed,     // the server refused the watch (see error)
};

class ApiClient {
 public:
  ApiClient(ClusterConnection conn, ApiOptions options = {});
  const ClusterConnection& connection() const { return conn_; }

  // One request, no retries. `query` is already encoded; body "" sends none. Non-2xx statuses
  // are returned as responses (Status() turns them into errors).
  std::expected<ApiResponse, ApiError> Send(std::string_view method, const std::string& path,
                                            const std::string& body, Clock::time_point deadline,
                                            const std::atomic<bool>* cancel = nullptr) const;

  // Send with the retry rules above; a non-2xx final answer is an ApiError.
  std::expected<ApiResponse, ApiError> Call(std::string_view method, const std::string& path,
                                            const nlohmann::json& body, Clock::time_point deadline,
                                            const std::atomic<bool>* cancel = nullptr) const;

  // GET a streaming watch. on_event(type, object) for each newline-delimited WatchEvent; an
  // ERROR event carrying a 410 Status ends with kGone. read_idle_s bounds one silent read, so a
  // quiet stream returns kEnded about that often (callers re-watch), and cancel is seen.
  WatchEnd Watch(const std::string& path, Clock::time_point deadline,
                 const std::atomic<bool>& cancel,
                 const std::function<bool(const std::string&, const nlohmann::json&)>& on_event,
                 ApiError* error = nullptr, double read_idle_s = 2) const;

 private:
  // Send, with a 2xx body handed to on_data chunk by chunk (false stops the request);
  // io_timeout_s bounds a silence (no byte received).
  std::expected<ApiResponse, ApiError> SendStreaming(
      std::string_view method, const std::string& path, const std::string& body,
      Clock::time_point deadline, const std::atomic<bool>* cancel,
      const std::function<bool(std::string_view)>& on_data, double io_timeout_s) const;

  ClusterConnection conn_;
  ApiOptions options_;
  std::string base_url_;  // "https://host:port[/prefix]", no trailing '/'
};

// Turns a response into an ApiError from its meta/v1 Status body (or the bare status).
ApiError StatusError(const ApiResponse& response);
// Percent-encodes a query value ("sandprobe.io/run=x" -> "sandprobe.io%2Frun%3Dx").
using transport::QueryEscape;
// Deadline `seconds` from now; seconds left until a deadline (negative when past).
using transport::After;
using transport::SecondsLeft;
// Sleeps up to `seconds`, waking every 100 ms to check cancel and the deadline. False when
// stopped early.
bool SleepFor(double seconds, Clock::time_point deadline, const std::atomic<bool>* cancel);

}  // namespace sandprobe::drivers::kube
