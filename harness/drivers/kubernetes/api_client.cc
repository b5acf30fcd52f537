#include "drivers/kubernetes/api_client.h"

#include <fmt/format.h>
#include <httplib.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "core/output.h"

namespace sandprobe::drivers::kube {
namespace {

using Json = nlohmann::json;
constexpr size_t kMaxBody = 8 << 20;
constexpr size_t kMaxWatchLine = 4 << 20;  // one WatchEvent; a longer line is a broken stream

struct Endpoint {
  std::string host;
  int port = 443;
  std::string prefix;  // path prefix of the server URL ("" usually)
};

Endpoint ParseServer(const std::string& server) {
  Endpoint e;
  std::string rest =
      server.substr(server.find("://") == std::string::npos ? 0 : server.find("://") + 3);
  const size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    e.prefix = rest.substr(slash);
    rest = rest.substr(0, slash);
  }
  while (e.prefix.ends_with('/')) e.prefix.pop_back();
  if (rest.starts_with('[')) {  // [v6]:port
    const size_t close = rest.find(']');
    e.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size() && rest[close + 1] == ':')
      e.port = std::atoi(rest.c_str() + close + 2);
  } else if (const size_t colon = rest.rfind(':'); colon != std::string::npos) {
    e.host = rest.substr(0, colon);
    e.port = std::atoi(rest.c_str() + colon + 1);
  } else {
    e.host = rest;
  }
  return e;
}

// PEM CA bundle -> a fresh X509_STORE (null when no certificate could be read).
X509_STORE* StoreFromPem(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509_STORE* store = X509_STORE_new();
  int added = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    if (X509_STORE_add_cert(store, cert) == 1) ++added;
    X509_free(cert);
  }
  BIO_free(bio);
  if (added == 0) {
    X509_STORE_free(store);
    return nullptr;
  }
  return store;
}

struct ClientCredentials {
  X509* cert = nullptr;
  EVP_PKEY* key = nullptr;
  ~ClientCredentials() {
    X509_free(cert);
    EVP_PKEY_free(key);
  }
};

void SetTimeouts(httplib::ClientImpl& cli, double connect_s, double io_s) {
  auto split = [](double s, auto setter) {
    s = std::max(s, 0.05);
    const time_t sec = static_cast<time_t>(s);
    setter(sec, static_cast<time_t>((s - static_cast<double>(sec)) * 1e6));
  };
  split(connect_s, [&](time_t a, time_t b) { cli.set_connection_timeout(a, b); });
  split(io_s, [&](time_t a, time_t b) { cli.set_read_timeout(a, b); });
  split(io_s, [&](time_t a, time_t b) { cli.set_write_timeout(a, b); });
}

double ParseRetryAfter(const httplib::Response& res) {
  if (!res.has_header("Retry-After")) return 0;
  try {
    return std::max(0.0, std::stod(res.get_header_value("Retry-After")));
  } catch (...) {
    return 0;  // an HTTP date: treated as "soon"
  }
}

bool Idempotent(std::string_view method) { return method == "GET" || method == "DELETE"; }

}  // namespace

bool ApiError::IsQuota() const {
  return code == 403 && message.find("exceeded quota") != std::string::npos;
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

std::string QueryEscape(std::string_view s) {
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

Clock::time_point After(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

double SecondsLeft(Clock::time_point deadline) {
  return std::chrono::duration<double>(deadline - Clock::now()).count();
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
    : conn_(std::move(conn)), options_(options) {
  const Endpoint e = ParseServer(conn_.server);
  host_ = e.host;
  port_ = e.port;
  prefix_ = e.prefix;
}

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
  ApiError err;
  const double left = SecondsLeft(deadline);
  if (left <= 0) {
    err.message = fmt::format("{} {}: no time left", method, path);
    err.deadline = true;
    return std::unexpected(err);
  }
  ClientCredentials creds;
  if (!conn_.client_cert_pem.empty()) {
    BIO* b = BIO_new_mem_buf(conn_.client_cert_pem.data(),
                             static_cast<int>(conn_.client_cert_pem.size()));
    creds.cert = PEM_read_bio_X509(b, nullptr, nullptr, nullptr);
    BIO_free(b);
    b = BIO_new_mem_buf(conn_.client_key_pem.data(), static_cast<int>(conn_.client_key_pem.size()));
    creds.key = PEM_read_bio_PrivateKey(b, nullptr, nullptr, nullptr);
    BIO_free(b);
    if (creds.cert == nullptr || creds.key == nullptr) {
      err.message =
          fmt::format("{}: the client certificate or key is not readable PEM", conn_.source);
      return std::unexpected(err);
    }
  }
  httplib::SSLClient cli(host_, port_, creds.cert, creds.key);
  if (!cli.is_valid()) {
    err.message = "TLS client could not be set up (certificate and key do not match?)";
    return std::unexpected(err);
  }
  if (conn_.insecure_skip_tls_verify) {
    cli.enable_server_certificate_verification(false);
  } else {
    cli.enable_server_certificate_verification(true);
    if (!conn_.ca_pem.empty()) {
      X509_STORE* store = StoreFromPem(conn_.ca_pem);
      if (store == nullptr) {
        err.message =
            fmt::format("{}: the certificate authority is not readable PEM", conn_.source);
        return std::unexpected(err);
      }
      cli.set_ca_cert_store(store);  // owned by the client from here
      // Trust only that CA: a directory lookup that holds nothing keeps httplib from adding the
      // system's default trust store (SSL_CTX_set_default_verify_paths) on connect.
      cli.set_ca_cert_path("", "/nonexistent/sandprobe-no-system-cas");
    }
  }
  SetTimeouts(cli, std::min(options_.connect_timeout_s, left), std::min(io_timeout_s, left));
  httplib::Request req;
  req.method = std::string(method);
  req.path = prefix_ + path;
  req.headers = {{"Accept", "application/json"}, {"User-Agent", "sandprobe/0.1"}};
  if (!conn_.token.empty()) req.headers.emplace("Authorization", "Bearer " + conn_.token);
  if (!body.empty()) {
    req.body = body;
    req.headers.emplace("Content-Type", "application/json");
  }
  ApiResponse out;
  bool stopped_deadline = false, stopped_cancel = false, stopped_handler = false;
  int status = 0;
  req.response_handler = [&](const httplib::Response& r) {
    status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (cancel != nullptr && cancel->load()) return !(stopped_cancel = true);
    if (Clock::now() >= deadline) return !(stopped_deadline = true);
    if (on_data && status >= 200 && status < 300) {
      if (!on_data(std::string_view(data, n))) return !(stopped_handler = true);
      return true;
    }
    if (out.text.size() < kMaxBody) out.text.append(data, std::min(n, kMaxBody - out.text.size()));
    return true;
  };
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  const bool ok = cli.send(req, res, error);
  if (stopped_handler) {
    out.status = res.status;
    return out;
  }
  if (!ok) {
    err.message = fmt::format("{} {}{} at {}: {}", method, prefix_, path.substr(0, 200),
                              conn_.server, httplib::to_string(error));
    if (error == httplib::Error::SSLServerVerification) {
      err.message += fmt::format(" (OpenSSL verify result {})", cli.get_openssl_verify_result());
    }
    err.deadline = stopped_deadline || Clock::now() >= deadline;
    err.cancelled = stopped_cancel;
    err.transient = error == httplib::Error::Connection || error == httplib::Error::Read ||
                    error == httplib::Error::Write || error == httplib::Error::ConnectionTimeout;
    return std::unexpected(err);
  }
  out.status = res.status;
  for (auto [it, end] = res.headers.equal_range("Warning"); it != end; ++it) {
    if (!out.warning.empty()) out.warning += "; ";
    out.warning += core::SanitizeUtf8(it->second.substr(0, 1000));
  }
  if (!out.text.empty()) out.body = Json::parse(out.text, nullptr, false);
  if (out.body.is_discarded()) out.body = nullptr;
  out.retry_after_s = ParseRetryAfter(res);
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
