#include "runner/invoke.h"

#include <algorithm>

#include "core/facts.h"
#include "core/params.h"
#include "core/redact.h"

namespace sandprobe::runner {
namespace {

// An ending after which a probe's next call has nothing to build on.
bool EndsSequence(core::Ending e) {
  return e == core::Ending::kHarnessError || e == core::Ending::kInterrupted ||
         e == core::Ending::kDeadline || e == core::Ending::kNotRun;
}

// The probe needs the planted env, the driver cannot plant it, and the probe looks for it.
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

bool CanaryNotPlanted(const Task& task, const core::ProbeDescriptor& probe,
                      const drivers::Driver& driver, const Session& session) {
  return !driver.PlantsEnvironment() && probe.Needs(core::Need::kPlantedEnv) &&
         task.params.is_object() &&
         task.params.value("canary_name", "") == session.Env().front().first;
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

}  // namespace

core::Observation Invoke(const Task& task, const core::ProbeDescriptor& probe,
                         drivers::Driver& driver, const std::string& invocation,
                         const std::string& preamble, const Session& session,
                         const std::atomic<bool>& cancel) {
  core::Observation obs;
  obs.invocation = invocation;
  // How many calls: the probe's `calls:`, or its resolved `calls` parameter when it declares one
  // (state.persists: a suite sizes it to the pool it must cycle), 1..kMaxCalls.
  int calls = probe.calls;
  if (const auto c = task.params.find("calls");
      probe.params.contains("calls") && c != task.params.end() && c->is_number_integer()) {
    calls = std::clamp(c->get<int>(), 1, kMaxCalls);
  }
  nlohmann::json first_params = task.params;
  if (calls > 1) {
    first_params["call"] = 1;
    first_params["previous"] = nlohmann::json::array();
  }
  auto script = core::BuildScript(probe, preamble, first_params, session.nonce(), invocation);
  if (!script) {
    obs.ending = core::Ending::kHarnessError;
    obs.harness_error = script.error();
    return obs;
  }
  drivers::Invocation inv{task.probe, invocation, *script, task.deadline_s, session.Env()};
  inv.after_call_s = HeardAfterCall(probe, task.params) ? probe.after_call_s : 0;
  inv.deploy = probe.deploy;
  obs = GuardedExecute(driver, inv, cancel);
  // Multi-call probes (state.persists): call k sees the results of calls 1..k-1, in order, as
  // `previous` (null for a call that left none); the last call is judged, earlier ones are kept
  // as evidence.
  nlohmann::json earlier = nlohmann::json::array();
  nlohmann::json previous = nlohmann::json::array();
  for (int call = 2; call <= calls; ++call) {
    if (EndsSequence(obs.ending)) break;
    earlier.push_back({{"call", call - 1},
                       {"ending", core::ToString(obs.ending)},
                       {"exit_code", obs.exit_code},
                       {"result", obs.result.value_or(nullptr)},
                       {"driver_facts", obs.driver_facts}});
    previous.push_back(obs.result.value_or(nullptr));
    nlohmann::json params = task.params;
    params["call"] = call;
    params["previous"] = previous;
    auto next = core::BuildScript(probe, preamble, params, session.nonce(), invocation);
    if (!next) {
      obs.ending = core::Ending::kHarnessError;
      obs.harness_error = next.error();
      break;
    }
    inv.script = *next;
    obs = GuardedExecute(driver, inv, cancel);
  }
  if (!earlier.empty()) obs.driver_facts[core::fact::kCalls] = std::move(earlier);
  obs.invocation = invocation;
  // A driver may bring hits of its own target (kubernetes: the in-cluster canary's log).
  for (core::CanaryHit& h : session.HitsFor(invocation)) obs.canary_hits.push_back(std::move(h));
  if (const std::string why = driver.NotJudgedReason(probe.measures); !why.empty()) {
    obs.driver_facts[core::fact::kNotJudged] = why;  // RowBook: SKIP with this reason
  }
  if (CanaryNotPlanted(task, probe, driver, session)) {
    obs.driver_facts[core::fact::kCanaryNotPlanted] = true;  // core::Classify: no containment proof
  }
  if (const size_t n = core::RedactSecrets(obs, session.SecretValues()); n > 0) {
    obs.driver_facts[core::fact::kCanarySecretsRedacted] =
        n;  // the sandbox printed a planted secret
  }
  return obs;
}

}  // namespace sandprobe::runner
