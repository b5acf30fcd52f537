// `http` driver: deploys each probe invocation through a run-code service (a REPL server, a
// `run_script` tool, a code-interpreter endpoint): POST the script, read stdout / stderr / exit
// code from the JSON response, and check the service's health before and after every call.
//
// Manifest section (camelCase like the docker section's hostConfig):
//   http:
//     url: http://127.0.0.1:8080/execute   # required; http:// or https:// (system CA store)
//     preset: code-json                     # body + response shape; see kPresets below
//     health: http://127.0.0.1:8080/healthz # GET, 2xx = healthy; checked in Prepare and around
//                                           # every call (shared fate)
//     method: POST                          # default POST
//     headers: {X-Tenant: sandprobe}        # literal headers
//     tokenEnv: REPL_TOKEN                  # "Authorization: Bearer $REPL_TOKEN"; the value is
//                                           # never written to a report, fact or error
//     body: {code: "{script}", lang: py}    # JSON body; "{script}" in any string value is the
//                                           # probe program (JSON-escaped by nlohmann)
//     response: {stdout: /stdout, stderr: /stderr, exit_code: /exit_code, error: /error}
//                                           # RFC 6901 JSON pointers into the response
//     timeout: {pointer: /error, contains: "timed out"}   # or {pointer: /exit_code, equals: 124}
//                                           # a service-reported timeout -> exit 124 + fact
//     afterCall: 1.5s                       # wait after the response for probes that ask
//                                           # (probe.yaml after_call_s), default: the probe's
//     healthTimeout: 5s                     # client deadline of a health check
//     maxBody: 16Mi                         # response bytes kept and parsed whole (default);
//                                           # a bigger 2xx body is read streaming (see below)
//
// Evidence it adds (driver facts): http_status, response_bytes, health_before / health_after
// ("ok" or why not), service_died (healthy before, not after: "the probe took the service down"),
// service_timeout (the service said the evaluation timed out), after_call_wait_s; for a body past
// maxBody response_streamed, response_not_kept and response_ceiling.
// A 2xx body past maxBody (a service that hands back all of an output flood) is not an error: it
// is read streaming (drivers/http/body_reader.h, json_stream.h), every byte counted into
// response_bytes, the strings at the stdout and stderr pointers unescaped chunk by chunk into the
// output collector (which keeps a bounded head and the records), every other member kept when
// small (64 KiB each, 1 MiB in all), so exit code, error and timeout rule read as usual. Memory
// stays about maxBody whatever the size; reading stops at the deadline, on Ctrl-C, or at the
// 4 GiB ceiling (response_ceiling; what came until then is the answer). In that mode the pointers
// follow object members only (/stdout, /result/stdout); one through an array reads a kept copy
// when the array is small.
// Shared fate is judged per call: with --jobs > 1 another probe running on the same service at the
// same time may be the one that took it down (the first call to see it die is named).
// Endings: a complete 2xx JSON answer -> kExited (exit code from the response; negative = killed
// by that signal) or kSignaled; the harness deadline -> kDeadline (the service may still be
// running it: a service cannot be told to stop); garbage JSON (past maxBody too: not one whole
// JSON object, or cut short, with the size read), non-2xx (or its body over the cap), reset, a
// service already down -> kHarnessError with a one-line reason.
#pragma once

#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/output.h"
#include "drivers/driver.h"
#include "drivers/http/json_stream.h"

namespace sandprobe::drivers {

class BodyReader;

// A service-reported timeout: the response value at `pointer` contains `contains` (strings) or
// equals `equals` (any JSON value).
struct HttpTimeoutRule {
  std::string pointer;
  std::optional<std::string> contains;
  std::optional<nlohmann::json> equals;
};

struct HttpConfig {
  std::string url;
  std::string method = "POST";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string token_env;  // name of the env var holding a bearer token ("" = none)
  nlohmann::json body = nlohmann::json::object();                // template; "{script}" substituted
  std::string stdout_ptr, stderr_ptr, exit_code_ptr, error_ptr;  // "" = not in the response
  std::optional<HttpTimeoutRule> timeout;
  std::string health;                    // "" = no health checks
  double health_timeout_s = 5;           // seconds
  std::optional<double> after_call_s;    // overrides the probe's after_call_s when set
  size_t max_body = 16u << 20;           // bytes kept and parsed whole; a bigger 2xx body streams
  uint64_t stream_ceiling = 4ull << 30;  // bytes of a streamed body read at most (not a manifest
                                         // field: tests set it)
};

// Presets: name -> {body, response, timeout} in manifest vocabulary (applied by ReadHttpSection,
// http_section.h).
//   code-json: {"code": script} -> {"stdout", "stderr", "exit_code"}, "error" containing
//              "timed out" is a service timeout.
const nlohmann::json& HttpPresets();

class HttpDriver : public Driver {
 public:
  HttpDriver(HttpConfig config, DriverContext context);
  bool PlantsEnvironment() const override { return false; }  // the service was started by others
  std::string_view kind() const override { return "http"; }
  // Reads the token (a setup error names the variable, never a value) and checks health.
  std::expected<void, SetupError> Prepare() override;
  core::Observation Execute(const Invocation& inv, const std::atomic<bool>& cancel) override;
  std::string PreflightHint() const override {
    return "check the service by hand: POST a one-line script to the manifest's url and compare "
           "the answer with its preset or response pointers";
  }

  // The request body for one script (exposed for tests).
  nlohmann::json RequestBody(const std::string& script) const;
  // The response mapping of Execute without the network (tests and the fuzz target,
  // harness/fuzz): an answer with HTTP `status` whose body arrives in `chunks`, handed over as the
  // transport does (a 2xx body to the BodyReader, kept whole up to max_body and read streaming
  // past it; another status kept whole, past max_body the too-big failure) -> the observation's
  // ending, exit code or signal, harness error, output and driver facts. No health checks, no
  // linger, no duration, no token redaction.
  core::Observation MapResponse(int status, std::span<const std::string_view> chunks) const;

 private:
  struct Reply {
    int status = 0;
    std::string body;
  };
  enum class Failure { kTransport, kDeadline, kCancelled, kTooBig };
  struct CallError {
    Failure kind;
    std::string message;  // one line, token-free
  };
  // One request through drivers/transport with a whole-call deadline (seconds), cancellable,
  // body capped at max_body; with on_body, a 2xx body goes there chunk by chunk instead.
  std::expected<Reply, CallError> Call(const std::string& method, const std::string& url,
                                       const std::string& body, double deadline_s,
                                       const std::atomic<bool>& cancel,
                                       std::function<bool(std::string_view)> on_body = {}) const;
  // Execute's reading of one call's result (`reply`, the body `reader` fed) into `obs` and the
  // collector. true: a complete 2xx JSON answer was read.
  bool ReadAnswer(std::expected<Reply, CallError>& reply, BodyReader& reader,
                  core::OutputCollector& collector, core::Observation& obs) const;
  // The timeout rule against the response (facts when it matches).
  bool ServiceTimedOut(const nlohmann::json& doc, core::Observation& obs) const;
  // A 2xx JSON object (the whole answer, or the members kept of a streamed one: `streamed`):
  // stdout and stderr (unless streamed already), exit code, service error. false: no stdout
  // string, obs is a harness error.
  bool Interpret(const nlohmann::json& doc, bool timed_out, uint64_t bytes,
                 const JsonStreamResult* streamed, core::OutputCollector& collector,
                 core::Observation& obs) const;
  // "ok" or why the service is not healthy (one line).
  std::string Health(const std::atomic<bool>& cancel) const;
  // Replaces the bearer token wherever it appears (a service may echo headers).
  std::string Redact(std::string text) const;
  void RedactObservation(core::Observation& obs) const;

  HttpConfig config_;
  DriverContext context_;
  std::string token_;  // read in Prepare()
  mutable std::mutex mu_;
  std::string took_down_;  // "probe X (invocation Y)" that left the service dead; "" = none
};

}  // namespace sandprobe::drivers
