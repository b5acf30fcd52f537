#include "drivers/kubernetes/api_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "core/output.h"

namespace sandprobe::drivers::kube {
namespace {

using Json = nlohmann::json;
constexpr size_t kMaxBody = 8 << 20;
constexpr size_t kMaxWatchLine = 4 << 20;  // one WatchEvent; a longer line is a broken stream

// The kubeconfig's server as a base URL: always https (as before: a scheme-less or http://
// server is spoken to over TLS), no trailing '/'.
std::string BaseUrl(const std::string& server) {
  const size_t scheme = server.find("://");
  std::string url = "https://" + (scheme == std::string::npos ? server : server.substr(scheme + 3));
  while (url.ends_with('/')) url.pop_back();
  return url;
}

bool Idempotent(std::string_view method) { return method == "GET" || method == "DELETE"; }

}  // namespace

bool IsQuotaMessage(std::string_view message) {
  return message.find("exceeded quota") != std::string_view::npos;
}

bool IsQuotaConflictMessage(std::string_view message) {
  return message.find("on resourcequotas") != std::string_view::npos &&
         message.find("the object has been modified") != std::string_view::npos;
}

bool ApiError::IsQuota() const {
  return (code == 403 && IsQuotaMessage(message)) ||
         (code == 409 && IsQuotaConflictMessage(message));
}

std::string ApiError::ToString() const {
  std::string s =
      code == 0 ? fmt::format("transport: {}", message)
                : fmt::format("HTTP {}{}: {}", code, reason.empty() ? "" : " " + reason, message);
  if (attempts > 1) s += fmt::format(" (after {} attempts)", attempts);
  if (deadline) s += " (client-side deadline)";
  if (cancelled) s += " (cancelled)";
  return s;
}

ApiError StatusError(const ApiResponse& r) {
  ApiError e;
  e.code = r.status;
  if (r.body.is_object() && r.body.value("kind", "") == "Status") {
    e.reason = r.body.value("reason", "");
    e.message = core::SanitizeUtf8(r.body.value("message", "").substr(0, 2000));
    if (r.body.contains("details") && r.body["details"].is_object()) {
      e.retry_after_s = r.body["details"].value("retryAfterSeconds", 0.0);
    }
  } else {
    e.message = core::SanitizeUtf8(r.text.substr(0, 500));
  }
  return e;
}

bool SleepFor(double seconds, Clock::time_point deadline, const std::atomic<bool>* cancel) {
  const auto until = std::min(After(seconds), deadline);
  while (Clock::now() < until) {
    if (cancel != nullptr && cancel->load()) return false;
    std::this_thread::sleep_for(
        std::min<Clock::duration>(std::chrono::milliseconds(100), until - Clock::now()));
  }
  return Clock::now() < deadline && (cancel == nullptr || !cancel->load());
}

ApiClient::ApiClient(ClusterConnection conn, ApiOptions options)
    : conn_(std::move(conn)), options_(options), base_url_(BaseUrl(conn_.server)) {}

std::expected<ApiResponse, ApiError> ApiClient::Send(std::string_view method,
                                                     const std::string& path,
                                                     const std::string& body,
                                                     Clock::time_point deadline,
                                                     const std::atomic<bool>* cancel) const {
  return SendStreaming(method, path, body, deadline, cancel, {}, options_.call_timeout_s);
}

std::expected<ApiResponse, ApiError> ApiClient::SendStreaming(
    std::string_view method, const std::string& path, const std::string& body,
    Clock::time_point deadline, const std::atomic<bool>* cancel,
    const std::function<bool(std::string_view)>& on_data, double io_timeout_s) const {
  transport::HttpRequest req;
  req.method = std::string(method);
  req.url = base_url_ + path;
  req.headers = {{"Accept", "application/json"}, {"User-Agent", "sandprobe/0.1"}};
  if (!conn_.token.empty()) req.headers.emplace_back("Authorization", "Bearer " + conn_.token);
  // A PATCH body is an RFC 7386 merge patch (the API server refuses application/json there).
  if (!body.empty()) {
    req.headers.emplace_back(
        "Content-Type", method == "PATCH" ? "application/merge-patch+json" : "application/json");
  }
  req.body = body;
  req.deadline = deadline;
  req.connect_timeout_s = options_.connect_timeout_s;
  req.idle_timeout_s = io_timeout_s;
  req.cancel = cancel;
  req.on_body = on_data;
  req.max_body = kMaxBody;
  req.over_cap_is_error = false;  // a longer error body is cut, as before
  req.tls = {conn_.ca_pem, conn_.client_cert_pem, conn_.client_key_pem,
             conn_.insecure_skip_tls_verify};
  // The API server is not under test: one TLS handshake per worker thread, not per call (a run
  // polls Jobs, Pods and logs several times a second; per-call handshakes were about half of the
  // harness's CPU on a kubernetes run). Only for GET and DELETE: libcurl sends a request again
  // on a fresh connection when its kept one died before any answer, which must never happen
  // to a POST that the server may have carried out (a Job created twice is a 409).
  req.reuse_connection = Idempotent(method);
  auto r = transport::Send(req);
  if (!r) {
    using transport::TransportFailure;
    const transport::TransportError& t = r.error();
    ApiError err;
    err.message =
        fmt::format("{} {} at {}: {}", method, path.substr(0, 200), conn_.server, t.message);
    if (t.kind == TransportFailure::kTlsSetup) err.message += fmt::format(" ({})", conn_.source);
    err.deadline = t.kind == TransportFailure::kDeadline || Clock::now() >= deadline;
    err.cancelled = t.kind == TransportFailure::kCancelled;
    err.transient = t.Transient();
    return std::unexpected(err);
  }
  ApiResponse out;
  out.status = r->status;
  if (r->stopped) return out;
  for (const std::string& w : r->HeaderValues("Warning")) {
    if (!out.warning.empty()) out.warning += "; ";
    out.warning += core::SanitizeUtf8(w.substr(0, 1000));
  }
  out.text = std::move(r->body);
  if (!out.text.empty()) out.body = Json::parse(out.text, nullptr, false);
  if (out.body.is_discarded()) out.body = nullptr;
  out.retry_after_s = r->RetryAfterSeconds();
  return out;
}

std::expected<ApiResponse, ApiError> ApiClient::Call(std::string_view method,
                                                     const std::string& path, const Json& body,
                                                     Clock::time_point deadline,
                                                     const std::atomic<bool>* cancel) const {
  const std::string text = body.is_null() ? "" : body.dump();
  double quota_backoff = 0.5;
  for (int attempt = 1;; ++attempt) {
    auto r = Send(method, path, text, deadline, cancel);
    ApiError e;
    double wait = 0;
    if (!r) {
      e = r.error();
      if (e.deadline || e.cancelled || !e.transient || !Idempotent(method) || attempt >= 3) {
        e.attempts = attempt;
        return std::unexpected(e);
      }
      wait = 0.5 * attempt;
    } else if (r->status >= 200 && r->status < 300) {
      return r;
    } else {
      e = StatusError(*r);
      if (r->status == 429) {
        e.retry_after_s = std::max(e.retry_after_s, r->retry_after_s);
        wait = std::clamp(e.retry_after_s > 0 ? e.retry_after_s : 1.0, 0.1,
                          options_.max_retry_after_s);
      } else if (e.IsQuota()) {
        wait = quota_backoff;
        quota_backoff = std::min(quota_backoff * 2, options_.quota_backoff_max_s);
      } else if (r->status >= 500 && Idempotent(method) && attempt < 3) {
        wait = 0.5 * attempt;
      } else {
        e.attempts = attempt;
        return std::unexpected(e);
      }
    }
    e.attempts = attempt;
    if (SecondsLeft(deadline) <= wait) {
      e.deadline = true;
      return std::unexpected(e);
    }
    if (!SleepFor(wait, deadline, cancel)) {
      e.cancelled = cancel != nullptr && cancel->load();
      e.deadline = !e.cancelled;
      return std::unexpected(e);
    }
  }
}

WatchEnd ApiClient::Watch(const std::string& path, Clock::time_point deadline,
                          const std::atomic<bool>& cancel,
                          const std::function<bool(const std::string&, const Json&)>& on_event,
                          ApiError* error, double read_idle_s) const {
  std::string line;
  bool gone = false, stop = false, broken = false;
  auto feed = [&](std::string_view chunk) {
    for (char c : chunk) {
      if (c != '\n') {
        line += c;
        if (line.size() > kMaxWatchLine) return !(broken = true);
        continue;
      }
      const Json ev = Json::parse(line, nullptr, false);
      line.clear();
      if (!ev.is_object() || !ev.contains("type")) continue;  // blank or garbled: skip
      const std::string type = ev.value("type", "");
      const Json& obj = ev.contains("object") ? ev["object"] : Json();
      if (type == "ERROR") {
        if (obj.is_object() &&
            (obj.value("code", 0) == 410 || obj.value("reason", "") == "Expired" ||
             obj.value("reason", "") == "Gone")) {
          gone = true;
          return false;
        }
        broken = true;  // another error event: re-list
        return false;
      }
      if (!on_event(type, obj)) return !(stop = true);
    }
    return true;
  };
  auto r = SendStreaming("GET", path, "", deadline, &cancel, feed, read_idle_s);
  if (stop) return WatchEnd::kStopped;
  if (gone) return WatchEnd::kGone;
  if (cancel.load()) return WatchEnd::kCancelled;
  if (Clock::now() >= deadline) return WatchEnd::kDeadline;
  if (r && r->status == 410) return WatchEnd::kGone;
  if (!r && error != nullptr) *error = r.error();
  if (r && r->status != 200) {
    if (error != nullptr) *error = StatusError(*r);
    return WatchEnd::kFailed;
  }
  return WatchEnd::kEnded;
}

}  // namespace sandprobe::drivers::kube
