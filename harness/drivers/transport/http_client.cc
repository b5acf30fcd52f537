#include "drivers/transport/http_client.h"

#include <curl/curl.h>
#include <fmt/format.h>
#include <strings.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>

#include "core/output.h"
#include "core/text.h"

namespace sandprobe::drivers::transport {
namespace {

constexpr long kPollMs = 50;  // how often the loop looks at cancel, the deadline, the idle bound

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct EasyDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct MultiDeleter {
  void operator()(CURLM* m) const { curl_multi_cleanup(m); }
};
struct ListDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

// The multi handle whose connection cache keeps this thread's connections for calls with these
// TLS settings and socket (HttpRequest::reuse_connection). libcurl matches a kept connection to a
// call by scheme, host and port; keying the cache by the TLS identity as well means a call never
// uses a connection that a different client certificate (or CA, or verification) set up,
// whatever libcurl's own matching compares. nullptr while a call of this thread is already in
// one (a call made from a streaming callback): libcurl's handles must not be re-entered.
thread_local bool in_kept_call = false;
std::map<std::string, std::unique_ptr<CURLM, MultiDeleter>>& KeptByIdentity() {
  thread_local std::map<std::string, std::unique_ptr<CURLM, MultiDeleter>> by_identity;
  return by_identity;
}
CURLM* KeptConnections(const HttpRequest& req) {
  if (in_kept_call) return nullptr;
  auto& by_identity = KeptByIdentity();
  const TlsSettings& tls = req.tls;
  std::string key = fmt::format("{}:{}:{}:{}:{}:", req.unix_socket.size(), tls.ca_pem.size(),
                                tls.client_cert_pem.size(), tls.client_key_pem.size(),
                                tls.insecure_skip_verify ? 1 : 0);
  key += req.unix_socket + tls.ca_pem + tls.client_cert_pem + tls.client_key_pem;
  auto& multi = by_identity[key];
  if (!multi) multi.reset(curl_multi_init());
  return multi.get();
}

// Why the loop or a callback ended the transfer early.
enum class Stop { kNone, kReceiver, kTooBig, kCancelled, kDeadline, kIdle };

// State shared with the write and header callbacks for one call.
struct Transfer {
  const HttpRequest* request = nullptr;
  CURL* easy = nullptr;
  HttpResponse* response = nullptr;
  Clock::time_point last_activity;
  bool started = false;    // the first body byte of the final response arrived
  bool streaming = false;  // that response is 2xx and on_body is set
  Stop stop = Stop::kNone;
  uint64_t announced = 0;
};

size_t OnHeader(char*, size_t size, size_t n, void* user) {
  static_cast<Transfer*>(user)->last_activity = Clock::now();
  return size * n;
}

size_t OnWrite(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const HttpRequest& req = *t->request;
  const size_t len = size * n;
  t->last_activity = Clock::now();
  if (!t->started) {
    t->started = true;
    long status = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    t->streaming = req.on_body && status >= 200 && status < 300;
    curl_off_t announced = -1;
    curl_easy_getinfo(t->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &announced);
    if (!t->streaming && req.over_cap_is_error && announced > 0 &&
        static_cast<uint64_t>(announced) > req.max_body) {
      t->announced = static_cast<uint64_t>(announced);
      t->stop = Stop::kTooBig;
      return 0;
    }
  }
  const std::string_view chunk(data, len);
  if (t->streaming) {
    if (req.on_body(chunk)) return len;
    t->stop = Stop::kReceiver;
    return 0;
  }
  std::string& body = t->response->body;
  if (body.size() + len > req.max_body) {
    if (req.over_cap_is_error) {
      t->stop = Stop::kTooBig;
      return 0;
    }
    body.append(chunk.substr(0, req.max_body - std::min(body.size(), req.max_body)));
    return len;  // cut, and the rest of the answer is read and dropped
  }
  body.append(chunk);
  return len;
}

// A curl error or a socket path in a transport failure: one line, at most 240 bytes.
std::string Detail(std::string_view text) { return core::OneLine(text, 240, /*trim_end=*/true); }

// A libcurl result -> a failure kind and the one-line summary a user reads first.
std::pair<TransportFailure, const char*> Classify(CURLcode rc) {
  switch (rc) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
      return {TransportFailure::kInvalid, "not a usable http(s) URL"};
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
      return {TransportFailure::kConnect, "could not connect (refused or unreachable)"};
    case CURLE_OPERATION_TIMEDOUT:
      return {TransportFailure::kTimeout, "timed out connecting"};
    case CURLE_PEER_FAILED_VERIFICATION:
      return {TransportFailure::kTlsTrust,
              "the server's certificate is not trusted (certificate verification failed)"};
    case CURLE_SSL_CACERT_BADFILE:
      return {TransportFailure::kTlsSetup, "the certificate authority is not readable PEM"};
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
      return {TransportFailure::kTlsSetup,
              "the client certificate or key is not readable PEM (or they do not match)"};
    case CURLE_SSL_CONNECT_ERROR:
      return {TransportFailure::kTlsSetup, "the TLS handshake failed"};
    case CURLE_SEND_ERROR:
      return {TransportFailure::kReset, "the connection broke while sending"};
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
      return {TransportFailure::kReset,
              "the connection closed or was reset before a complete answer"};
    default:
      return {TransportFailure::kReset, "request failed"};
  }
}

std::expected<void, TransportError> Configure(CURL* easy, const HttpRequest& req,
                                              curl_slist** headers, double left_s) {
  auto set = [&](CURLoption opt, auto value) { return curl_easy_setopt(easy, opt, value); };
  if (!req.url.starts_with("http://") && !req.url.starts_with("https://")) {
    return std::unexpected(
        TransportError{TransportFailure::kInvalid, "not an http:// or https:// URL", 0});
  }
  set(CURLOPT_URL, req.url.c_str());
  if (!req.unix_socket.empty()) set(CURLOPT_UNIX_SOCKET_PATH, req.unix_socket.c_str());
  set(CURLOPT_PROTOCOLS_STR, "http,https");
  set(CURLOPT_PROXY, "");  // never a proxy from http_proxy / HTTPS_PROXY
  set(CURLOPT_FOLLOWLOCATION, 0L);
  set(CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  set(CURLOPT_NOSIGNAL, 1L);
  if (!req.reuse_connection) set(CURLOPT_FORBID_REUSE, 1L);
  set(CURLOPT_CUSTOMREQUEST, req.method.c_str());
  const bool has_body =
      !req.body.empty() || req.method == "POST" || req.method == "PUT" || req.method == "PATCH";
  if (has_body) {
    set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
    set(CURLOPT_POSTFIELDS, req.body.c_str());
  }
  const double connect_s = std::clamp(std::min(req.connect_timeout_s, left_s), 0.05, 3600.0);
  set(CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(connect_s * 1000));
  bool user_agent = false;
  for (const auto& [name, value] : req.headers) {
    user_agent = user_agent || strcasecmp(name.c_str(), "User-Agent") == 0;
    *headers = curl_slist_append(*headers, fmt::format("{}: {}", name, value).c_str());
  }
  if (!user_agent) *headers = curl_slist_append(*headers, "User-Agent: sandprobe/0.1");
  *headers = curl_slist_append(*headers, "Expect:");  // no 100-continue round trip
  set(CURLOPT_HTTPHEADER, *headers);
  if (req.url.starts_with("https://")) {
    const TlsSettings& tls = req.tls;
    if (tls.insecure_skip_verify) {
      set(CURLOPT_SSL_VERIFYPEER, 0L);
      set(CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (!tls.ca_pem.empty()) {
      curl_blob ca{const_cast<char*>(tls.ca_pem.data()), tls.ca_pem.size(), CURL_BLOB_COPY};
      set(CURLOPT_CAINFO_BLOB, &ca);
      set(CURLOPT_CAINFO, static_cast<char*>(nullptr));  // only that CA, not the system store
      set(CURLOPT_CAPATH, static_cast<char*>(nullptr));
    }
    if (!tls.client_cert_pem.empty() || !tls.client_key_pem.empty()) {
      curl_blob cert{const_cast<char*>(tls.client_cert_pem.data()), tls.client_cert_pem.size(),
                     CURL_BLOB_COPY};
      curl_blob key{const_cast<char*>(tls.client_key_pem.data()), tls.client_key_pem.size(),
                    CURL_BLOB_COPY};
      set(CURLOPT_SSLCERT_BLOB, &cert);
      set(CURLOPT_SSLCERTTYPE, "PEM");
      set(CURLOPT_SSLKEY_BLOB, &key);
      set(CURLOPT_SSLKEYTYPE, "PEM");
    }
  }
  return {};
}

void CollectHeaders(CURL* easy, HttpResponse& response) {
  curl_header* prev = nullptr;
  while (curl_header* h = curl_easy_nextheader(easy, CURLH_HEADER, -1, prev)) {
    response.headers.emplace_back(h->name, h->value);
    prev = h;
  }
}

}  // namespace

bool TransportError::Transient() const {
  return kind == TransportFailure::kConnect || kind == TransportFailure::kTimeout ||
         kind == TransportFailure::kReset;
}

std::vector<std::string> HttpResponse::HeaderValues(std::string_view name) const {
  std::vector<std::string> out;
  for (const auto& [k, v] : headers) {
    if (k.size() == name.size() && strncasecmp(k.data(), name.data(), name.size()) == 0)
      out.push_back(v);
  }
  return out;
}

double HttpResponse::RetryAfterSeconds() const {
  const auto values = HeaderValues("Retry-After");
  if (values.empty()) return 0;
  const std::string& v = values.front();
  char* end = nullptr;
  const double seconds = std::strtod(v.c_str(), &end);
  if (end != v.c_str() && *end == '\0' && std::isfinite(seconds)) return std::max(0.0, seconds);
  const time_t at = curl_getdate(v.c_str(), nullptr);
  if (at < 0) return 0;
  return std::max(0.0, std::difftime(at, std::time(nullptr)));
}

Clock::time_point After(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

double SecondsLeft(Clock::time_point deadline) {
  return std::chrono::duration<double>(deadline - Clock::now()).count();
}

std::string QueryEscape(std::string_view s) {
  GlobalInit();
  char* escaped = curl_easy_escape(nullptr, s.data(), static_cast<int>(s.size()));
  if (escaped == nullptr) return "";
  std::string out(escaped);
  curl_free(escaped);
  return out;
}

void CloseKeptConnections() {
  if (!in_kept_call) KeptByIdentity().clear();
}

std::expected<HttpResponse, TransportError> Send(const HttpRequest& req) {
  GlobalInit();
  auto fail = [](TransportFailure kind, std::string message, uint64_t announced = 0) {
    return std::unexpected(TransportError{kind, std::move(message), announced});
  };
  const double left = SecondsLeft(req.deadline);
  if (left <= 0) return fail(TransportFailure::kDeadline, "no time left");
  std::unique_ptr<CURL, EasyDeleter> easy(curl_easy_init());
  CURLM* multi = req.reuse_connection ? KeptConnections(req) : nullptr;
  std::unique_ptr<CURLM, MultiDeleter> own;  // a call's own multi handle: no connection kept
  if (multi == nullptr) multi = (own = decltype(own)(curl_multi_init())).get();
  if (!easy || multi == nullptr) {
    return fail(TransportFailure::kInvalid, "libcurl could not be set up");
  }
  const bool kept = !own;
  if (kept) in_kept_call = true;
  struct Leave {
    bool kept;
    ~Leave() {
      if (kept) in_kept_call = false;
    }
  } leave{kept};
  curl_slist* raw_headers = nullptr;
  auto configured = Configure(easy.get(), req, &raw_headers, left);
  std::unique_ptr<curl_slist, ListDeleter> headers(raw_headers);
  if (!configured) return std::unexpected(configured.error());

  HttpResponse response;
  Transfer t;
  t.request = &req;
  t.easy = easy.get();
  t.response = &response;
  t.last_activity = Clock::now();
  char errbuf[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(easy.get(), CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(easy.get(), CURLOPT_WRITEFUNCTION, OnWrite);
  curl_easy_setopt(easy.get(), CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(easy.get(), CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(easy.get(), CURLOPT_HEADERDATA, &t);

  curl_multi_add_handle(multi, easy.get());
  CURLcode rc = CURLE_OK;
  for (;;) {
    int running = 0;
    if (curl_multi_perform(multi, &running) != CURLM_OK) {
      rc = CURLE_FAILED_INIT;
      break;
    }
    if (running == 0) {
      int queued = 0;
      while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
        if (msg->msg == CURLMSG_DONE) rc = msg->data.result;
      }
      break;
    }
    const auto now = Clock::now();
    if (req.cancel != nullptr && req.cancel->load()) t.stop = Stop::kCancelled;
    if (t.stop == Stop::kNone && now >= req.deadline) t.stop = Stop::kDeadline;
    if (t.stop == Stop::kNone && req.idle_timeout_s > 0 &&
        std::chrono::duration<double>(now - t.last_activity).count() >= req.idle_timeout_s) {
      t.stop = Stop::kIdle;
    }
    if (t.stop != Stop::kNone) break;
    curl_multi_poll(multi, nullptr, 0, kPollMs, nullptr);
  }
  long status = 0;
  curl_easy_getinfo(easy.get(), CURLINFO_RESPONSE_CODE, &status);
  response.status = static_cast<int>(status);
  if (status > 0) CollectHeaders(easy.get(), response);
  curl_multi_remove_handle(multi, easy.get());

  switch (t.stop) {
    case Stop::kReceiver:
      response.stopped = true;
      return response;
    case Stop::kTooBig:
      return t.announced > 0
                 ? fail(TransportFailure::kTooBig,
                        fmt::format("the server announced a {}-byte answer (Content-Length), "
                                    "over the {}-byte cap",
                                    t.announced, req.max_body),
                        t.announced)
                 : fail(TransportFailure::kTooBig,
                        fmt::format("the server sent more than {} bytes; reading stopped there",
                                    req.max_body));
    case Stop::kCancelled:
      return fail(TransportFailure::kCancelled, "cancelled");
    case Stop::kDeadline:
      return fail(TransportFailure::kDeadline, "no complete answer before the deadline");
    case Stop::kIdle:
      return fail(TransportFailure::kTimeout,
                  fmt::format("nothing received for {:g}s", req.idle_timeout_s));
    case Stop::kNone:
      break;
  }
  if (rc == CURLE_OK) return response;
  if (Clock::now() >= req.deadline) {  // a connect timeout that ran into the deadline
    return fail(TransportFailure::kDeadline, "no complete answer before the deadline");
  }
  const auto [kind, summary] = Classify(rc);
  if (kind == TransportFailure::kConnect && !req.unix_socket.empty()) {  // curl names host:80
    return fail(kind, fmt::format("could not connect to the unix socket {} (absent, refused or "
                                  "not permitted)",
                                  Detail(req.unix_socket)));
  }
  const std::string detail = Detail(errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc));
  return fail(kind, fmt::format("{} (curl: {})", summary, detail));
}

}  // namespace sandprobe::drivers::transport
