#include "drivers/http/http_driver.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "core/facts.h"
#include "core/limits.h"
#include "core/output.h"
#include "core/text.h"
#include "drivers/http/body_reader.h"
#include "drivers/transport/http_client.h"

namespace sandprobe::drivers {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

// "http://host:port/path?q" -> {"http://host:port", "/path?q"}; nullopt for another scheme.
std::optional<std::pair<std::string, std::string>> SplitUrl(const std::string& url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return std::nullopt;
  const std::string scheme = url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") return std::nullopt;
  const size_t path_at = url.find('/', scheme_end + 3);
  if (path_at == std::string::npos) return std::pair{url, std::string("/")};
  if (path_at == scheme_end + 3) return std::nullopt;  // no host
  return std::pair{url.substr(0, path_at), url.substr(path_at)};
}

// Bytes of untrusted text (a body, a service's error) a reason quotes, on one line.
constexpr size_t kReasonBytes = 200;
using core::OneLine;

// The value at an RFC 6901 pointer, or nullptr when absent ("" = not configured).
const Json* At(const Json& doc, const std::string& pointer) {
  if (pointer.empty()) return nullptr;
  try {
    const Json::json_pointer p(pointer);
    if (!doc.contains(p)) return nullptr;
    return &doc.at(p);
  } catch (const Json::exception&) {
    return nullptr;
  }
}

void SubstituteScript(Json& node, const std::string& script) {
  if (node.is_string()) {
    std::string s = node.get<std::string>();
    bool changed = false;
    for (size_t at = s.find("{script}"); at != std::string::npos;
         at = s.find("{script}", at + script.size())) {
      s.replace(at, 8, script);
      changed = true;
    }
    if (changed) node = s;
  } else if (node.is_structured()) {
    for (auto& child : node) SubstituteScript(child, script);
  }
}

bool Healthy(const std::string& h) { return h == "ok"; }

}  // namespace

const Json& HttpPresets() {
  static const Json presets = {
      {"code-json",
       {{"body", {{"code", "{script}"}}},
        {"response",
         {{"stdout", "/stdout"},
          {"stderr", "/stderr"},
          {"exit_code", "/exit_code"},
          {"error", "/error"}}},
        {"timeout", {{"pointer", "/error"}, {"contains", "timed out"}}}}},
  };
  return presets;
}

HttpDriver::HttpDriver(HttpConfig config, DriverContext context)
    : config_(std::move(config)), context_(std::move(context)) {}

Json HttpDriver::RequestBody(const std::string& script) const {
  Json body = config_.body;
  SubstituteScript(body, script);
  return body;
}

std::string HttpDriver::Redact(std::string text) const {
  if (token_.empty()) return text;
  for (size_t at = text.find(token_); at != std::string::npos; at = text.find(token_, at))
    text.replace(at, token_.size(), "[token redacted]");
  return text;
}

void HttpDriver::RedactObservation(core::Observation& obs) const {
  if (token_.empty()) return;
  obs.stdout_head = Redact(obs.stdout_head);
  obs.stderr_head = Redact(obs.stderr_head);
  obs.harness_error = Redact(obs.harness_error);
  for (auto& [k, v] : obs.driver_facts.items()) {
    if (v.is_string()) v = Redact(v.get<std::string>());
  }
}

std::expected<HttpDriver::Reply, HttpDriver::CallError> HttpDriver::Call(
    const std::string& method, const std::string& url, const std::string& body, double deadline_s,
    const std::atomic<bool>& cancel, std::function<bool(std::string_view)> on_body) const {
  if (!SplitUrl(url)) {
    return std::unexpected(CallError{Failure::kTransport, "not an http(s) URL: " + url});
  }
  transport::HttpRequest req;
  req.method = method;
  req.url = url;
  req.headers = config_.headers;
  if (!token_.empty()) req.headers.emplace_back("Authorization", "Bearer " + token_);
  if (!body.empty()) req.headers.emplace_back("Content-Type", "application/json");
  req.body = body;
  req.deadline = transport::After(deadline_s);
  req.cancel = &cancel;
  req.max_body = config_.max_body;
  req.on_body = std::move(on_body);
  auto r = transport::Send(req);
  if (r) return Reply{r->status, std::move(r->body)};
  using transport::TransportFailure;
  const transport::TransportError& e = r.error();
  switch (e.kind) {
    case TransportFailure::kTooBig:
      return std::unexpected(CallError{
          Failure::kTooBig,
          e.announced_bytes > 0
              ? fmt::format("the service announced a {}-byte response (Content-Length), over "
                            "the {}-byte cap (http.maxBody)",
                            e.announced_bytes, config_.max_body)
              : fmt::format("the service sent more than {} bytes (http.maxBody); reading "
                            "stopped there",
                            config_.max_body)});
    case TransportFailure::kCancelled:
      return std::unexpected(CallError{Failure::kCancelled, "interrupted"});
    case TransportFailure::kDeadline:
      return std::unexpected(
          CallError{Failure::kDeadline,
                    fmt::format("no complete answer from {} within {:g}s", url, deadline_s)});
    default:
      return std::unexpected(
          CallError{Failure::kTransport, fmt::format("{} {}: {}", method, url, e.message)});
  }
}

std::string HttpDriver::Health(const std::atomic<bool>& cancel) const {
  auto r = Call("GET", config_.health, "", config_.health_timeout_s, cancel);
  if (!r) return Redact(r.error().message);
  if (r->status < 200 || r->status > 299) {
    return fmt::format("GET {}: HTTP {}: {}", config_.health, r->status,
                       Redact(OneLine(r->body, kReasonBytes)));
  }
  return "ok";
}

std::expected<void, SetupError> HttpDriver::Prepare() {
  if (!config_.token_env.empty()) {
    const char* token = std::getenv(config_.token_env.c_str());
    if (token == nullptr || *token == '\0') {
      return std::unexpected(SetupError{
          fmt::format("http.tokenEnv names {}, which is not set or empty", config_.token_env),
          fmt::format("export {}=<the service's bearer token> before sandprobe run",
                      config_.token_env)});
    }
    token_ = token;
  }
  if (!config_.health.empty()) {
    const std::atomic<bool> never{false};
    const std::string h = Health(never);
    if (!Healthy(h)) {
      return std::unexpected(SetupError{
          fmt::format("the service is not healthy: {}", h),
          fmt::format("start the service, or fix http.health: GET {} must answer 2xx within {:g}s",
                      config_.health, config_.health_timeout_s)});
    }
  }
  return {};
}

bool HttpDriver::ServiceTimedOut(const Json& doc, core::Observation& obs) const {
  if (!config_.timeout) return false;
  const Json* v = At(doc, config_.timeout->pointer);
  if (v == nullptr) return false;
  const bool timed_out =
      (config_.timeout->contains && v->is_string() &&
       v->get<std::string>().find(*config_.timeout->contains) != std::string::npos) ||
      (config_.timeout->equals && *v == *config_.timeout->equals);
  if (timed_out) {
    obs.driver_facts[core::fact::kServiceTimeout] = true;
    obs.driver_facts[core::fact::kServiceTimeoutSource] =
        fmt::format("response {} = {}", config_.timeout->pointer, OneLine(v->dump(), 120));
  }
  return timed_out;
}

bool HttpDriver::Interpret(const Json& doc, bool timed_out, uint64_t bytes,
                           const JsonStreamResult* streamed, core::OutputCollector& collector,
                           core::Observation& obs) const {
  const bool out_fed = streamed != nullptr && streamed->streamed[0];
  const bool err_fed = streamed != nullptr && streamed->streamed[1];
  const Json* out = out_fed ? nullptr : At(doc, config_.stdout_ptr);
  const Json* err = err_fed ? nullptr : At(doc, config_.stderr_ptr);
  const Json* code = At(doc, config_.exit_code_ptr);
  const Json* service_error = At(doc, config_.error_ptr);
  if (!out_fed && (out == nullptr || !out->is_string()) && !timed_out) {
    obs.ending = core::Ending::kHarnessError;
    obs.harness_error =
        service_error != nullptr && !service_error->is_null()
            ? fmt::format("the service reported an error: {}",
                          OneLine(service_error->is_string() ? service_error->get<std::string>()
                                                             : service_error->dump(),
                                  kReasonBytes))
        : streamed == nullptr
            ? fmt::format("the response has no string at {} (a {}-byte JSON object)",
                          config_.stdout_ptr, bytes)
            : fmt::format(
                  "the response has no string at {} (a {}-byte JSON object past "
                  "http.maxBody, read streaming: object members only{})",
                  config_.stdout_ptr, bytes,
                  streamed->not_kept.empty()
                      ? ""
                      : "; not kept: " + OneLine(streamed->not_kept.front(), 120));
    return false;
  }
  if (out != nullptr && out->is_string()) collector.FeedStdout(out->get<std::string>());
  if (err != nullptr && err->is_string()) collector.FeedStderr(err->get<std::string>());
  if (service_error != nullptr && !service_error->is_null() && !timed_out) {
    obs.driver_facts[core::fact::kServiceError] = OneLine(
        service_error->is_string() ? service_error->get<std::string>() : service_error->dump(),
        kReasonBytes);
  }
  obs.ending = core::Ending::kExited;
  obs.driver_facts[core::fact::kEndedBy] = "service";
  // A process's exit status is 0..255 and Python's returncode for a signal -1..-64 (-128 at
  // most here); anything else (INT_MIN, 2^32-1) is not a status: said as such, never negated.
  const bool status =
      code != nullptr && code->is_number_integer() &&
      (code->is_number_unsigned() ? code->get<uint64_t>() <= 255
                                  : code->get<int64_t>() >= -128 && code->get<int64_t>() <= 255);
  if (status) {
    const int n = code->get<int>();
    obs.driver_facts[core::fact::kServiceExitCode] = n;
    if (n < 0) {  // a subprocess killed by signal -n (Python's returncode convention)
      obs.ending = core::Ending::kSignaled;
      obs.signal = -n;
    } else {
      obs.exit_code = n;
    }
  } else {
    obs.driver_facts[core::fact::kServiceExitCode] =
        code == nullptr             ? "not in the response"
        : code->is_number_integer() ? fmt::format("not an exit status: {}", code->dump())
                                    : "not an integer";
  }
  if (timed_out) {  // reported like GNU timeout, so the probe's timed_out rule applies
    obs.ending = core::Ending::kExited;
    obs.exit_code = 124;
  }
  return true;
}

bool HttpDriver::ReadAnswer(std::expected<Reply, CallError>& reply, BodyReader& reader,
                            core::OutputCollector& collector, core::Observation& obs) const {
  auto fail = [&](core::Ending ending, std::string why) {
    obs.ending = ending;
    obs.harness_error = std::move(why);
  };
  bool answered = false;  // a complete 2xx JSON answer was read
  if (reader.streamed()) {
    obs.driver_facts[core::fact::kResponseBytes] = reader.bytes();
    obs.driver_facts[core::fact::kResponseStreamed] = true;
    obs.driver_facts[core::fact::kNote] = fmt::format(
        "the response passed http.maxBody ({} bytes): it was read streaming, counted and its "
        "stdout and stderr scanned, not kept",
        config_.max_body);
  }
  if (!reply) {
    switch (reply.error().kind) {
      case Failure::kCancelled:
        fail(core::Ending::kInterrupted, "interrupted");
        break;
      case Failure::kDeadline:
        obs.ending = core::Ending::kDeadline;
        obs.driver_facts[core::fact::kEndedBy] = "harness deadline";
        obs.driver_facts[core::fact::kNote] =
            reader.streamed()
                ? fmt::format(
                      "the client gave up at the harness deadline after reading {} bytes "
                      "of an answer past http.maxBody",
                      reader.bytes())
                : "the client gave up at the harness deadline; the service may still be running it";
        break;
      default:
        fail(core::Ending::kHarnessError, reply.error().message);
    }
    if (reader.streamed() && obs.ending != core::Ending::kDeadline) {
      collector = core::OutputCollector(context_.nonce);  // part of a broken answer: no evidence
    }
  } else if (reader.streamed()) {  // a 2xx body past max_body
    obs.driver_facts[core::fact::kHttpStatus] = reply->status;
    auto whole = reader.ceiling_hit() ? std::expected<void, std::string>() : reader.Finish();
    if (!whole) {
      collector = core::OutputCollector(context_.nonce);  // a broken document is no evidence
      fail(core::Ending::kHarnessError,
           fmt::format("the service's answer is not a JSON object: {} ({} bytes read, "
                       "streaming past http.maxBody = {} bytes)",
                       OneLine(whole.error(), kReasonBytes), reader.bytes(), config_.max_body));
    } else {
      const JsonStreamResult& streamed = reader.result();
      if (reader.ceiling_hit()) {
        obs.driver_facts[core::fact::kResponseCeiling] = config_.stream_ceiling;
        obs.driver_facts[core::fact::kNote] = fmt::format(
            "the response passed http.maxBody ({} bytes) and reading stopped at the {}-byte "
            "ceiling: what came until then is the answer",
            config_.max_body, config_.stream_ceiling);
      }
      if (streamed.not_kept_count > 0) {
        Json not_kept = Json::array();
        for (const std::string& n : streamed.not_kept)
          not_kept.push_back(Redact(OneLine(n, kReasonBytes)));
        if (streamed.not_kept_count > streamed.not_kept.size()) {
          not_kept.push_back(
              fmt::format("and {} more", streamed.not_kept_count - streamed.not_kept.size()));
        }
        obs.driver_facts[core::fact::kResponseNotKept] = std::move(not_kept);
      }
      const bool timed_out = ServiceTimedOut(streamed.kept, obs);
      answered = Interpret(streamed.kept, timed_out, reader.bytes(), &streamed, collector, obs);
    }
  } else {
    const std::string body =
        reply->status >= 200 && reply->status <= 299 ? reader.TakeBody() : std::move(reply->body);
    obs.driver_facts[core::fact::kHttpStatus] = reply->status;
    obs.driver_facts[core::fact::kResponseBytes] = body.size();
    const Json doc = Json::parse(body, nullptr, false);
    const bool timed_out = doc.is_object() && ServiceTimedOut(doc, obs);
    if (reply->status < 200 || reply->status > 299) {
      fail(core::Ending::kHarnessError, fmt::format("the service answered HTTP {}: {}",
                                                    reply->status, OneLine(body, kReasonBytes)));
    } else if (!doc.is_object()) {
      fail(core::Ending::kHarnessError,
           fmt::format("the service answered {} bytes that are not a JSON object: {}", body.size(),
                       OneLine(body, 120)));
    } else {
      answered = Interpret(doc, timed_out, body.size(), nullptr, collector, obs);
    }
  }
  return answered;
}

core::Observation HttpDriver::MapResponse(int status,
                                          std::span<const std::string_view> chunks) const {
  core::Observation obs;
  core::OutputCollector collector(context_.nonce);
  BodyReader reader(config_.max_body, config_.stream_ceiling, config_.stdout_ptr,
                    config_.stderr_ptr, collector);
  std::expected<Reply, CallError> reply = Reply{status, ""};
  const bool is_2xx = status >= 200 && status <= 299;
  for (std::string_view chunk : chunks) {
    if (is_2xx) {  // the transport hands a 2xx body to on_body until it says stop
      if (!reader.Take(chunk)) break;
    } else if (reply->body.size() + chunk.size() > config_.max_body) {
      reply = std::unexpected(CallError{Failure::kTooBig, "over http.maxBody"});
      break;
    } else {
      reply->body.append(chunk);
    }
  }
  ReadAnswer(reply, reader, collector, obs);
  collector.Finish(obs);
  return obs;
}

core::Observation HttpDriver::Execute(const Invocation& inv, const std::atomic<bool>& cancel) {
  core::Observation obs;
  obs.driver_facts[core::fact::kDriver] = "http";
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  auto fail = [&](core::Ending ending, std::string why) {
    obs.ending = ending;
    obs.harness_error = std::move(why);
    obs.duration_s = elapsed();
  };
  const bool checks = !config_.health.empty();
  if (checks) {
    const double health_start = SteadySeconds();
    const std::string before = Health(cancel);
    obs.timeline.push_back(PhaseSince("health-before", health_start));
    obs.driver_facts[core::fact::kHealthBefore] = before;
    if (!Healthy(before)) {
      std::string culprit;
      {
        std::lock_guard lock(mu_);
        culprit = took_down_;
      }
      fail(cancel.load() ? core::Ending::kInterrupted : core::Ending::kHarnessError,
           culprit.empty() ? fmt::format("the service is down before this probe ({})", before)
                           : fmt::format("the service is down: {} took the service down ({})",
                                         culprit, before));
      RedactObservation(obs);
      return obs;
    }
  }

  core::OutputCollector collector(context_.nonce);
  BodyReader reader(config_.max_body, config_.stream_ceiling, config_.stdout_ptr,
                    config_.stderr_ptr, collector);
  // The timeline: "request" until the first byte of the answer's body, "response" until its end.
  const double call_start = SteadySeconds();
  double first_byte = 0;
  auto reply = Call(config_.method, config_.url, RequestBody(inv.script).dump(), inv.deadline_s,
                    cancel, [&reader, &first_byte](std::string_view chunk) {
                      if (first_byte == 0) first_byte = SteadySeconds();
                      return reader.Take(chunk);
                    });
  if (first_byte > 0) {
    obs.timeline.push_back({"request", call_start, first_byte});
    obs.timeline.push_back(PhaseSince("response", first_byte));
  } else {
    obs.timeline.push_back(PhaseSince("request", call_start));
  }
  const bool answered = ReadAnswer(reply, reader, collector, obs);
  obs.duration_s = elapsed();
  collector.Finish(obs);
  if (answered) obs.driver_facts[core::fact::kCallEndedUnixMs] = UnixMsNow();

  // Linger for probes whose evidence arrives after the call (a detached process's heartbeats).
  const double linger = inv.after_call_s > 0 ? config_.after_call_s.value_or(inv.after_call_s) : 0;
  if (answered && linger > 0) {
    const double linger_start = SteadySeconds();
    const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(linger));
    while (Clock::now() < until && !cancel.load())
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    obs.driver_facts[core::fact::kAfterCallWaitS] = linger;
    obs.timeline.push_back(PhaseSince("after-call", linger_start));
  }

  if (checks && !cancel.load()) {
    // An evaluation killed by a signal is where shared fate shows: a service that kills its
    // in-flight children on the way down can still answer for a moment. Give it time to go
    // before the health check, so a dying service is not read as a sandbox that contained.
    if (obs.ending == core::Ending::kSignaled ||
        (obs.ending == core::Ending::kExited && obs.exit_code == 137)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      obs.driver_facts[core::fact::kHealthSettleS] = 0.5;
    }
    const double health_start = SteadySeconds();
    const std::string after = Health(cancel);
    obs.timeline.push_back(PhaseSince("health-after", health_start));
    obs.driver_facts[core::fact::kHealthAfter] = after;
    if (!Healthy(after) && !cancel.load()) {
      obs.driver_facts[core::fact::kServiceDied] = true;
      const std::string who = fmt::format("probe {} (invocation {})", inv.probe, inv.invocation);
      {
        std::lock_guard lock(mu_);
        if (took_down_.empty()) took_down_ = who;
      }
      if (obs.ending == core::Ending::kHarnessError) {
        obs.harness_error =
            fmt::format("the probe took the service down ({}); {}", after, obs.harness_error);
      }
    }
  }
  RedactObservation(obs);
  return obs;
}

}  // namespace sandprobe::drivers
