// Test only: a fake sandbox driver for runner tests. Nothing is deployed and no process starts:
// each Execute looks up what the test scripted for the invocation's probe and plays it (a result
// record, a sleep to the deadline or to cancel, a planted secret printed back, the canary cloud
// credential fetched from the run's HTTP canary and printed back, a harness error).
// Every call, its decoded parameters and every Cleanup are recorded in a FakeBook the test shares
// with all the fakes a DriverFactory made.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <expected>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "drivers/driver.h"
#include "runner/run.h"

namespace sandprobe::runner::fakes {

// What a fake does when it executes one call of a probe.
struct FakeAct {
  enum Kind {
    kResult,           // runs for run_s seconds, then exits 0 with a result record
    kToDeadline,       // runs until the invocation's deadline (kDeadline) or cancel (kInterrupted)
    kPrintSecret,      // prints the planted env value (Invocation::extra_env) everywhere it can
    kFetchCredential,  // GETs GCP's token path from the HTTP canary named by the parameter
                       // "target" (tagged with the run's nonce) and prints the answer back
    kHarnessError,     // the driver failed
  };
  Kind kind = kResult;
  // The result record for kResult / kPrintSecret. "call" and "previous" are copied in from the
  // call's decoded parameters when present (multi-call probes).
  nlohmann::json result = {{"outcome", "ok"}, {"evidence", "positive"}};
  double run_s = 0;  // kResult: how long the call "runs", seconds
};

// One Execute as the fake saw it.
struct FakeCall {
  std::string arm;
  std::string probe;
  std::string invocation;
  double deadline_s = 0;
  core::Deploy deploy = core::Deploy::kSandbox;
  nlohmann::json params;  // decoded from the deployed script (see core::BuildScript)
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::pair<std::string, std::string>> session_keys = {};  // Invocation's
  size_t planted_fds = 0;      // how many planted descriptors the Invocation carried
  std::string ip_family = "";  // Invocation::ip_family
};

// Shared record of every fake's calls. Thread-safe.
class FakeBook {
 public:
  void Start(FakeCall call) {
    std::lock_guard lock(mu_);
    calls_.push_back(std::move(call));
    max_in_flight_ = std::max(max_in_flight_, ++in_flight_);
    changed_.notify_all();
  }
  void End() {
    std::lock_guard lock(mu_);
    --in_flight_;
  }
  void Cleaned(const std::string& arm) {
    std::lock_guard lock(mu_);
    cleaned_.push_back(arm);
  }
  // Blocks until `n` probe calls (not the preflight) have started.
  void WaitForCalls(size_t n) {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return ProbeCallsLocked().size() >= n; });
  }
  // Calls of probes, in start order (the preflight left out).
  std::vector<FakeCall> ProbeCalls() const {
    std::lock_guard lock(mu_);
    return ProbeCallsLocked();
  }
  // Every call, the preflights included, in start order.
  std::vector<FakeCall> AllCalls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }
  int max_in_flight() const {
    std::lock_guard lock(mu_);
    return max_in_flight_;
  }
  std::vector<std::string> cleaned() const {
    std::lock_guard lock(mu_);
    return cleaned_;
  }
  // What kFetchCredential calls got back from the canary, unredacted.
  void Fetched(std::string answer) {
    std::lock_guard lock(mu_);
    fetched_.push_back(std::move(answer));
  }
  std::vector<std::string> fetched() const {
    std::lock_guard lock(mu_);
    return fetched_;
  }

 private:
  std::vector<FakeCall> ProbeCallsLocked() const {
    std::vector<FakeCall> out;
    for (const FakeCall& c : calls_) {
      if (c.probe != "harness.preflight") out.push_back(c);
    }
    return out;
  }

  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::vector<FakeCall> calls_;
  int in_flight_ = 0, max_in_flight_ = 0;
  std::vector<std::string> cleaned_, fetched_;
};

// GET `path` with the extra header lines `headers` ("Name: value\r\n"...) from an IPv4
// "a.b.c.d:PORT" over a plain socket (2 s timeouts): the whole answer, or "" on any failure.
inline std::string RawHttpGet(const std::string& hostport, const std::string& path,
                              const std::string& headers) {
  const size_t colon = hostport.rfind(':');
  if (colon == std::string::npos) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::stoi(hostport.substr(colon + 1))));
  if (inet_pton(AF_INET, hostport.substr(0, colon).c_str(), &addr.sin_addr) != 1) return "";
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval tv{.tv_sec = 2, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string answer;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string request =
        "GET " + path + " HTTP/1.1\r\nHost: canary\r\nConnection: close\r\n" + headers + "\r\n";
    if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
        static_cast<ssize_t>(request.size())) {
      char buf[4096];
      for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) answer.append(buf, n);
    }
  }
  close(fd);
  return answer;
}

// The parameters inside a deployed script: line 2 is `_SANDPROBE = "<base64 JSON>"` holding
// {probe, nonce, invocation, params} (core::BuildScript). Null when absent or malformed.
inline nlohmann::json DecodeParams(const std::string& script) {
  const size_t open = script.find("_SANDPROBE = \"");
  if (open == std::string::npos) return nullptr;
  const size_t begin = open + 14, end = script.find('"', begin);
  if (end == std::string::npos) return nullptr;
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes;
  unsigned bits = 0;
  int count = 0;
  for (char c : std::string_view(script).substr(begin, end - begin)) {
    const size_t v = kAlphabet.find(c);
    if (v == std::string_view::npos) continue;  // '=' padding
    bits = (bits << 6) | static_cast<unsigned>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      bytes += static_cast<char>((bits >> count) & 0xff);
    }
  }
  const auto payload = nlohmann::json::parse(bytes, nullptr, false);
  return payload.is_object() && payload.contains("params") ? payload["params"] : nullptr;
}

// What one fake arm does, per probe id; probes not listed get FakeAct{} (an ok result).
struct FakeArm {
  std::map<std::string, FakeAct> acts = {};
  bool plants_env = true;
  std::optional<drivers::SetupError> prepare_error = std::nullopt;  // Prepare() fails with it
  bool preflight_fails = false;  // the preflight exits 1 with no result
  std::string preflight_hint = "fake hint";
  std::map<std::string, std::string> placeholders = {};         // Placeholders() after Prepare()
  std::map<std::string, std::string> not_judged = {};           // measures -> NotJudgedReason()
  std::vector<std::string> run_notes = {};                      // RunNotes()
  std::vector<std::string> warnings = {};                       // Warnings()
  std::vector<std::string> cleanup_warnings = {};               // CleanupWarnings()
  std::vector<std::pair<std::string, std::string>> given = {};  // GivenSecrets()
  // Each call's CPU figure (Observation::probe_cpu) and its one phase "fake-call"; unset: none,
  // like a driver whose platform does not say.
  std::optional<double> cpu_s = std::nullopt;
  bool independent = false;             // IndependentSandboxes()
  std::string placeholder_source = "";  // PlaceholderSource()
  std::string ip_family = "";           // AddressFamily()
  bool runs_in_family = true;           // RunsInAddressFamily()
};

class FakeDriver : public drivers::Driver {
 public:
  FakeDriver(std::string arm, FakeArm script, std::shared_ptr<FakeBook> book,
             std::string nonce = "")
      : arm_(std::move(arm)),
        script_(std::move(script)),
        book_(std::move(book)),
        nonce_(std::move(nonce)) {}

  std::string_view kind() const override { return "fake"; }
  std::expected<void, drivers::SetupError> Prepare() override {
    if (script_.prepare_error) return std::unexpected(*script_.prepare_error);
    return {};
  }
  bool PlantsEnvironment() const override { return script_.plants_env; }
  bool IndependentSandboxes() const override { return script_.independent; }
  std::string PreflightHint() const override { return script_.preflight_hint; }
  void Cleanup() override { book_->Cleaned(arm_); }
  std::map<std::string, std::string> Placeholders() const override { return script_.placeholders; }
  std::string PlaceholderSource() const override { return script_.placeholder_source; }
  std::string AddressFamily() const override { return script_.ip_family; }
  bool RunsInAddressFamily() const override { return script_.runs_in_family; }
  std::string NotJudgedReason(std::string_view measures) const override {
    const auto it = script_.not_judged.find(std::string(measures));
    return it == script_.not_judged.end() ? "" : it->second;
  }
  std::vector<std::string> RunNotes() override { return script_.run_notes; }
  std::vector<std::string> Warnings() const override { return script_.warnings; }
  std::vector<std::string> CleanupWarnings() const override { return script_.cleanup_warnings; }
  std::vector<std::pair<std::string, std::string>> GivenSecrets() const override {
    return script_.given;
  }

  core::Observation Execute(const drivers::Invocation& inv,
                            const std::atomic<bool>& cancel) override {
    const nlohmann::json params = DecodeParams(inv.script);
    book_->Start({arm_, inv.probe, inv.invocation, inv.deadline_s, inv.deploy, params,
                  inv.extra_env, inv.session_keys, inv.planted_fds.size(), inv.ip_family});
    const auto start = std::chrono::steady_clock::now();
    const double phase_start = drivers::SteadySeconds();
    core::Observation obs = Play(inv, params, cancel, start);
    obs.duration_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    obs.timeline.push_back(drivers::PhaseSince("fake-call", phase_start));
    if (script_.cpu_s) obs.probe_cpu = core::CpuFigure{*script_.cpu_s, "fake"};
    book_->End();
    return obs;
  }

 private:
  core::Observation Play(const drivers::Invocation& inv, const nlohmann::json& params,
                         const std::atomic<bool>& cancel,
                         std::chrono::steady_clock::time_point start) {
    core::Observation obs;
    if (inv.probe == "harness.preflight") {
      obs.ending = core::Ending::kExited;
      if (script_.preflight_fails) {
        obs.exit_code = 1;
        obs.stderr_head = "python3: not found";
      } else {
        obs.result = nlohmann::json{{"kind", "result"}, {"outcome", "ok"}};
      }
      return obs;
    }
    const auto it = script_.acts.find(inv.probe);
    const FakeAct act = it == script_.acts.end() ? FakeAct{} : it->second;
    auto sleep_until = [&](std::chrono::steady_clock::time_point until) {
      while (!cancel.load() && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      return !cancel.load();
    };
    const auto after = [&](double s) {
      return start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(s));
    };
    switch (act.kind) {
      case FakeAct::kHarnessError:
        obs.ending = core::Ending::kHarnessError;
        obs.harness_error = "fake driver failed";
        return obs;
      case FakeAct::kToDeadline:
        obs.ending = sleep_until(after(inv.deadline_s)) ? core::Ending::kDeadline
                                                        : core::Ending::kInterrupted;
        return obs;
      case FakeAct::kResult:
        if (!sleep_until(after(act.run_s))) {
          obs.ending = core::Ending::kInterrupted;
          return obs;
        }
        break;
      case FakeAct::kPrintSecret:
      case FakeAct::kFetchCredential:
        break;
    }
    nlohmann::json result = act.result;
    result["kind"] = "result";
    if (params.is_object() && params.contains("call")) {
      result["call"] = params["call"];
      result["previous"] = params["previous"];
    }
    if (act.kind == FakeAct::kFetchCredential) {
      const std::string answer = RawHttpGet(
          params.value("target", ""), "/computeMetadata/v1/instance/service-accounts/default/token",
          "Metadata-Flavor: Google\r\nX-Sandprobe: " + nonce_ + " " + inv.invocation + "\r\n");
      book_->Fetched(answer);
      result["detail"] = answer;
      obs.stdout_head = answer;
    }
    if (act.kind == FakeAct::kPrintSecret && !inv.extra_env.empty()) {
      const std::string& secret = inv.extra_env.front().second;
      result["detail"] = "found " + secret;
      obs.stdout_head = "env: " + secret + "\n";
      obs.stderr_head = secret;
    }
    obs.ending = core::Ending::kExited;
    obs.records.push_back(result);
    obs.result = result;
    return obs;
  }

  std::string arm_;
  FakeArm script_;
  std::shared_ptr<FakeBook> book_;
  std::string nonce_;  // the run's (DriverContext::nonce)
};

// A DriverFactory making a FakeDriver per manifest from `arms` (keyed by manifest name; arms
// not listed get FakeArm{}); a name in `refuse` gets the factory's SetupError instead.
inline DriverFactory FakeFactory(std::shared_ptr<FakeBook> book,
                                 std::map<std::string, FakeArm> arms, std::string refuse = "") {
  return [book, arms = std::move(arms), refuse](const core::Manifest& m,
                                                const drivers::DriverContext& context)
             -> std::expected<std::unique_ptr<drivers::Driver>, drivers::SetupError> {
    if (m.name == refuse) {
      return std::unexpected(drivers::SetupError{"no fake for " + m.name, "fake factory hint"});
    }
    const auto it = arms.find(m.name);
    return std::make_unique<FakeDriver>(m.name, it == arms.end() ? FakeArm{} : it->second, book,
                                        context.nonce);
  };
}

}  // namespace sandprobe::runner::fakes
