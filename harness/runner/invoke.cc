#include "runner/invoke.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <future>
#include <ranges>

#include "core/facts.h"
#include "core/params.h"
#include "core/redact.h"
#include "runner/secrets.h"

namespace sandprobe::runner {
namespace {

// An ending after which a probe's next call has nothing to build on.
bool EndsSequence(core::Ending e) {
  return e == core::Ending::kHarnessError || e == core::Ending::kInterrupted ||
         e == core::Ending::kDeadline || e == core::Ending::kNotRun;
}

// Drivers promise never to throw; one that does (a JSON field of an unexpected type in an
// answer it parsed) must cost one ERROR cell, not the whole run and its cleanup.
core::Observation GuardedExecute(drivers::Driver& driver, const drivers::Invocation& inv,
                                 const std::atomic<bool>& cancel) {
  try {
    return driver.Execute(inv, cancel);
  } catch (const std::exception& e) {
    core::Observation obs;
    obs.ending = core::Ending::kHarnessError;
    obs.harness_error = std::string("driver failed: ") + e.what();
    return obs;
  }
}

// The probe needs the planted env, the driver cannot plant it, and every variable it looks for
// (`canary_name` with `canary_sha256`, the pairs in `canaries`: "NAME=<sha256>,...",
// canary.env_set) is a planted one: a planted name with no sha256 or the planted value's sha256.
// A suite that names the service's own secret gives the probe something that can be there, and
// then absence counts, even under a planted name (OPENAI_API_KEY with the service's own sha256).
bool CanaryNotPlanted(const Task& task, const core::ProbeDescriptor& probe,
                      const drivers::Driver& driver, const Session& session) {
  if (driver.PlantsEnvironment() || !probe.Needs(core::Need::kPlantedEnv) ||
      !task.params.is_object()) {
    return false;
  }
  std::vector<std::pair<std::string, std::string>> wanted;  // {name, lowercase sha256 or ""}
  const auto lower = [](std::string s) {
    std::ranges::transform(s, s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
  };
  if (const std::string n = task.params.value("canary_name", ""); !n.empty()) {
    const auto sha = task.params.find("canary_sha256");
    wanted.emplace_back(n, sha != task.params.end() && sha->is_string()
                               ? lower(sha->get<std::string>())
                               : std::string());
  }
  if (const auto set = task.params.find("canaries"); set != task.params.end() && set->is_string()) {
    for (const auto part : std::views::split(set->get<std::string>(), ',')) {
      const std::string item(part.begin(), part.end());
      if (const size_t eq = item.find('='); eq != std::string::npos && eq > 0)
        wanted.emplace_back(item.substr(0, eq), lower(item.substr(eq + 1)));
    }
  }
  const auto planted = session.Env();
  std::vector<std::string> planted_sha;
  for (const auto& kv : planted) planted_sha.push_back(Sha256Hex(kv.second));
  // A planted name whose sha256 is none of the planted values' (canary_name overridden, the
  // default canary.env_sha256 left: the main canary's) still looks for nothing that can be there.
  return !wanted.empty() && std::ranges::all_of(wanted, [&](const auto& w) {
    return std::ranges::any_of(planted, [&](const auto& kv) { return kv.first == w.first; }) &&
           (w.second.empty() || std::ranges::find(planted_sha, w.second) != planted_sha.end());
  });
}

// Waiting after the call is worth it only when something could be heard: the probe's heartbeat
// canary parameter (classify still_running / quiet_after_call) is set, or the probe names none.
bool HeardAfterCall(const core::ProbeDescriptor& probe, const nlohmann::json& params) {
  std::string param;
  if (probe.classify.still_running) param = probe.classify.still_running->param;
  if (probe.classify.quiet_after_call) param = probe.classify.quiet_after_call->param;
  if (param.empty()) return true;
  const auto it = params.find(param);
  return it != params.end() && it->is_string() && !it->get<std::string>().empty();
}

// The sequence of calls of one invocation: `calls` sequential calls, then (concurrent probes)
// two calls at the same moment and a closing call. Call k gets `call` = k and `previous` = the
// results of the calls before it; the last observation is the one judged.
class CallSequence {
 public:
  CallSequence(const Task& task, const core::ProbeDescriptor& probe, drivers::Driver& driver,
               const std::string& invocation, const std::string& preamble, const Session& session,
               const std::atomic<bool>& cancel)
      : task_(task),
        probe_(probe),
        driver_(driver),
        invocation_(invocation),
        preamble_(preamble),
        session_(session),
        cancel_(cancel) {
    inv_ = drivers::Invocation{task.probe, invocation, "", task.deadline_s, session.Env()};
    inv_.after_call_s = HeardAfterCall(probe, task.params) ? probe.after_call_s : 0;
    inv_.deploy = probe.deploy;
    inv_.ip_family = task.ip_family;
    inv_.session_keys = session.SessionKeys();
    inv_.planted_fds = session.PlantedFds();
  }

  core::Observation Run() {
    const int calls = SequentialCalls();
    const bool concurrent = Concurrent();
    const bool multi = calls > 1 || concurrent;
    core::Observation obs;
    bool broken = false;  // a call ended the sequence (error, interrupt, deadline)
    for (int call = 1; call <= calls && !broken; ++call) {
      if (call > 1) Keep(call - 1, obs);
      obs = Call(multi ? call : 0, previous_, inv_);
      Account(obs);
      broken = EndsSequence(obs.ending);
    }
    if (concurrent && !broken) {
      if (calls > 0) Keep(calls, obs);
      obs = Pair(calls + 1);
    }
    if (!earlier_.empty()) obs.driver_facts[core::fact::kCalls] = std::move(earlier_);
    // The judged observation carries the whole sequence's phases and CPU: what it cost.
    obs.timeline = std::move(phases_);
    obs.probe_cpu.reset();
    if (accounted_ > 0 && cpu_known_) obs.probe_cpu = cpu_;
    return obs;
  }

 private:
  int SequentialCalls() const {
    // The probe's `calls:`, or its resolved `calls` parameter when it declares one (state.persists:
    // a suite sizes it to the pool it must cycle), 0..kMaxCalls (0 only with a concurrent pair).
    int calls = probe_.calls;
    if (const auto c = task_.params.find("calls");
        probe_.params.contains("calls") && c != task_.params.end() && c->is_number_integer()) {
      calls = std::clamp(c->get<int>(), probe_.concurrent ? 0 : 1, kMaxCalls);
    }
    return calls;
  }

  bool Concurrent() const {
    if (!probe_.concurrent) return false;
    const auto c = task_.params.find("concurrent");
    return !probe_.params.contains("concurrent") || c == task_.params.end() || !c->is_boolean() ||
           c->get<bool>();
  }

  // One call; call 0 = a single-call probe (no `call`/`previous` parameters).
  core::Observation Call(int call, const nlohmann::json& previous, drivers::Invocation inv,
                         int concurrent_with = 0) const {
    nlohmann::json params = task_.params;
    if (call > 0) {
      params["call"] = call;
      params["previous"] = previous;
    }
    if (concurrent_with > 0) params["concurrent_with"] = concurrent_with;
    auto script = core::BuildScript(probe_, preamble_, params, session_.nonce(), invocation_);
    if (!script) {
      core::Observation obs;
      obs.ending = core::Ending::kHarnessError;
      obs.harness_error = script.error();
      return obs;
    }
    inv.script = *script;
    return GuardedExecute(driver_, inv, cancel_);
  }

  // Calls `first` and `first + 1` at the same moment (each under its own driver invocation id, so
  // containers, Jobs and hooks named after it do not collide; the script keeps the invocation),
  // then the closing call `first + 2`, which is returned.
  core::Observation Pair(int first) {
    const nlohmann::json previous = previous_;
    auto one = [&](int call, int other) {
      drivers::Invocation inv = inv_;
      inv.invocation = fmt::format("{}-c{}", invocation_, call);
      return Call(call, previous, inv, other);
    };
    core::Observation obs_a, b;
    try {
      std::future<core::Observation> a =
          std::async(std::launch::async, [&] { return one(first, first + 1); });
      b = one(first + 1, first);
      obs_a = a.get();
    } catch (const std::exception& e) {  // no thread to be had: an ERROR cell, not a crash
      core::Observation failed;
      failed.ending = core::Ending::kHarnessError;
      failed.harness_error = std::string("could not run the concurrent pair: ") + e.what();
      cpu_known_ = false;  // the pair's calls ran (b may have) without being counted
      return failed;
    }
    Account(obs_a);
    Account(b);
    Keep(first, obs_a);
    Keep(first + 1, b);
    // A half that never answered (deadline, harness error, interrupt) leaves the pair without
    // evidence: that observation is the one judged, never a closing call that might say "fresh".
    for (const core::Observation* o : {&obs_a, &b}) {
      if (EndsSequence(o->ending)) return *o;
    }
    core::Observation closing = Call(first + 2, previous_, inv_);
    Account(closing);
    return closing;
  }

  // One call's phases and CPU into the sequence's account; one call without a CPU figure makes
  // the sequence's unknown.
  void Account(const core::Observation& obs) {
    ++accounted_;
    phases_.insert(phases_.end(), obs.timeline.begin(), obs.timeline.end());
    if (!obs.probe_cpu) {
      cpu_known_ = false;
      return;
    }
    cpu_.seconds += obs.probe_cpu->seconds;
    if (!cpu_.LowerBound()) cpu_.source = obs.probe_cpu->source;  // a lower bound stays one
  }

  void Keep(int call, const core::Observation& obs) {
    earlier_.push_back({{"call", call},
                        {"ending", core::ToString(obs.ending)},
                        {"exit_code", obs.exit_code},
                        {"result", obs.result.value_or(nullptr)},
                        {"driver_facts", obs.driver_facts}});
    previous_.push_back(obs.result.value_or(nullptr));
  }

  const Task& task_;
  const core::ProbeDescriptor& probe_;
  drivers::Driver& driver_;
  const std::string& invocation_;
  const std::string& preamble_;
  const Session& session_;
  const std::atomic<bool>& cancel_;
  drivers::Invocation inv_;
  nlohmann::json earlier_ = nlohmann::json::array();
  nlohmann::json previous_ = nlohmann::json::array();
  std::vector<core::Phase> phases_;
  core::CpuFigure cpu_;
  bool cpu_known_ = true;
  int accounted_ = 0;
};

}  // namespace

void PlaceOnRunClock(core::Observation& obs, double origin, double picked, double ended) {
  for (core::Phase& p : obs.timeline) {
    p.start_s -= origin;
    p.end_s -= origin;
  }
  obs.timeline.insert(obs.timeline.begin(),
                      {core::Phase{"queued", 0, picked - origin},
                       core::Phase{"invoke", picked - origin, ended - origin}});
}

core::Observation Invoke(const Task& task, const core::ProbeDescriptor& probe,
                         drivers::Driver& driver, const std::string& invocation,
                         const std::string& preamble, const Session& session,
                         const std::atomic<bool>& cancel) {
  core::Observation obs =
      CallSequence(task, probe, driver, invocation, preamble, session, cancel).Run();
  obs.invocation = invocation;
  // A driver may bring hits of its own target (kubernetes: the in-cluster canary's log).
  for (core::CanaryHit& h : session.HitsFor(invocation)) obs.canary_hits.push_back(std::move(h));
  if (const std::string why = driver.NotJudgedReason(probe.measures); !why.empty()) {
    obs.not_judged = why;  // RowBook: SKIP with this reason
  } else if (const std::string unclaimed = core::UnclaimedReason(probe, task.params);
             !unclaimed.empty()) {
    obs.not_judged = unclaimed;  // a claim row without the claim
  }
  if (probe.Needs(core::Need::kLiveCanary)) {
    // After the call: a listener never restarts, so one that accepts now was alive throughout.
    obs.driver_facts[core::fact::kCanaryListening] = session.UnixCanariesListening();
  }
  if (CanaryNotPlanted(task, probe, driver, session)) {
    obs.canary_not_planted = true;  // core::Classify: no containment proof
  }
  if (const size_t n = core::RedactSecrets(obs, session.SecretValues()); n > 0) {
    obs.driver_facts[core::fact::kCanarySecretsRedacted] =
        n;  // the sandbox printed a planted secret
  }
  return obs;
}

}  // namespace sandprobe::runner
