// The one HTTP client of the harness, on libcurl: every driver that speaks HTTP (the Docker Engine
// API over a unix socket or tcp, the Kubernetes API over HTTPS, run-code services) sends its
// requests through Send() and keeps only its protocol (paths, JSON, retries, status errors) on top.
//
// libcurl (Debian 12: 7.88) because it is the one packaged library that does all of it: AF_UNIX
// (CURLOPT_UNIX_SOCKET_PATH, which cpp-httplib 0.11 cannot), TLS material from memory
// (CURLOPT_CAINFO_BLOB, CURLOPT_SSLCERT_BLOB, CURLOPT_SSLKEY_BLOB, 7.71+), streaming write
// callbacks, and a multi-handle loop that checks the deadline, the cancel flag and an idle bound
// every 50 ms. No proxy from the environment, no redirects, HTTP/1.1, one connection per call
// unless the caller asks to keep it (reuse_connection: the Kubernetes API client's GETs and
// DELETEs).
//
// Errors are values (TransportError); libcurl itself throws nothing. No message ever holds a
// header value, so a bearer token or a key cannot reach an error, a log or a report.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <expected>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sandprobe::drivers::transport {

using Clock = std::chrono::steady_clock;

// TLS for https:// URLs. PEM text in memory, never written to disk.
struct TlsSettings {
  std::string ca_pem;           // trust only these CAs; "" = the system trust store
  std::string client_cert_pem;  // client certificate; "" = none
  std::string client_key_pem;   // its private key
  bool insecure_skip_verify = false;
};

struct HttpRequest {
  std::string method = "GET";
  std::string url;          // http:// or https://, path and already-encoded query included
  std::string unix_socket;  // when set: connect to this AF_UNIX path (url's host is ignored)
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;                           // sent when non-empty (POST/PUT/PATCH: always)
  Clock::time_point deadline;                 // the whole call ends here
  double connect_timeout_s = 5;               // bounded by the deadline
  double idle_timeout_s = 0;                  // > 0: give up when no byte arrives for this long
  const std::atomic<bool>* cancel = nullptr;  // seen within 50 ms
  // Streaming: the body of a 2xx response goes here chunk by chunk instead of into the
  // response (false stops the call; the response comes back with stopped = true). A non-2xx
  // body is always collected, so a protocol layer can read its error.
  std::function<bool(std::string_view chunk)> on_body;
  size_t max_body = 8u << 20;     // bytes kept in HttpResponse::body
  bool over_cap_is_error = true;  // false: the body is cut at max_body and the call goes on
  TlsSettings tls;
  // Keep the connection for the next call of this thread with the same server, unix socket and
  // TLS settings (CA, client certificate and key, verification), instead of a TCP and TLS
  // handshake per call. Per thread because libcurl 7.88 does not support one connection cache
  // used by concurrent threads; per TLS identity, so a call never rides on a connection that
  // another client certificate authenticated. For clients of a server that is not under test
  // (the Kubernetes API server); never for a sandbox under test, whose every call must be fresh.
  // A kept connection that the server closed meanwhile is replaced by libcurl (it retries a
  // request that found its reused connection dead), idle ones are dropped after 118 s.
  bool reuse_connection = false;
};

struct HttpResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // of the final response, in order
  std::string body;      // bounded by max_body; empty when streamed
  bool stopped = false;  // on_body asked to stop

  // Values of every header called `name` (case-insensitive), in order.
  std::vector<std::string> HeaderValues(std::string_view name) const;
  // Retry-After in seconds: delta-seconds, or an HTTP date (via curl_getdate) from now; 0 when
  // absent, past or unreadable.
  double RetryAfterSeconds() const;
};

enum class TransportFailure {
  kInvalid,    // not an http(s) URL, or the client could not be set up
  kConnect,    // refused, unreachable, no such socket, name not resolved
  kTlsTrust,   // the server's certificate is not trusted (or names another host)
  kTlsSetup,   // our CA / certificate / key is not readable, or the handshake failed
  kTimeout,    // connect timeout, or idle_timeout_s passed without a byte
  kDeadline,   // the request's deadline passed
  kCancelled,  // *cancel became true
  kReset,      // the connection broke (closed, reset, sending failed) before a whole answer
  kTooBig,     // the body is over max_body (over_cap_is_error)
};

struct TransportError {
  TransportFailure kind = TransportFailure::kInvalid;
  std::string message;           // one line, no header values: "could not connect (...): ..."
  uint64_t announced_bytes = 0;  // kTooBig: the Content-Length, when that was over the cap
  // Worth another try for an idempotent request: kConnect, kTimeout, kReset.
  bool Transient() const;
};

// One request. Thread-safe (each call has its own handles; its own connection, or with
// reuse_connection one kept by the calling thread).
std::expected<HttpResponse, TransportError> Send(const HttpRequest& request);

// Closes the connections the calling thread keeps (reuse_connection), e.g. before a test stops
// its server: a kept idle connection holds one of its workers until its keep-alive ends.
void CloseKeptConnections();

// Percent-encodes a query value: everything but [A-Za-z0-9-_.~] (RFC 3986 unreserved), so
// "sandprobe.io/run=sp-1" -> "sandprobe.io%2Frun%3Dsp-1" and JSON filters survive.
std::string QueryEscape(std::string_view s);

// Deadline `seconds` from now; seconds left until `deadline` (negative when past).
Clock::time_point After(double seconds);
double SecondsLeft(Clock::time_point deadline);

}  // namespace sandprobe::drivers::transport
