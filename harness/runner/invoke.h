// One task of the plan, run in its arm: the deployed script, the probe's multi-call sequence,
// the canary hits, the not-planted rule and redaction of planted secrets.
#pragma once

#include <atomic>
#include <string>

#include "core/observation.h"
#include "core/probe.h"
#include "drivers/driver.h"
#include "runner/plan.h"
#include "runner/session.h"

namespace sandprobe::runner {

inline constexpr int kMaxCalls = 32;  // a probe's calls per invocation, at most

// Runs `task` (its probe is `probe`) in `driver` under the invocation tag `invocation`, with the
// task's deadline (seconds) and the session's planted environment:
//  - calls: the probe's `calls:`, or its `calls` parameter when it declares one (1..kMaxCalls).
//    With calls > 1, call k gets the parameters `call` = k and `previous` = the result records
//    of calls 1..k-1 in order (null for one that left none; [] for call 1); the last call is
//    returned, earlier ones are kept in driver_facts["calls"] ({call, ending, exit_code, result,
//    driver_facts}). A call that ends
//    by harness error, interrupt, deadline or not run ends the sequence and is returned itself.
//  - concurrent probes (probe.yaml `concurrent: true`, unless a declared boolean parameter
//    `concurrent` is false): after the sequential calls (0 allowed), calls n+1 and n+2 run at the
//    same moment, each with `concurrent_with` = the other's number, `previous` = the sequential
//    calls' results and its own driver invocation id "<invocation>-c<call>" (the script keeps
//    `invocation`); then the closing call n+3 (previous = every earlier result) is
//    the one returned. A call of the pair that ends the sequence (harness error, interrupt,
//    deadline, not run) is returned itself: the pair gave no evidence. The pair is one more
//    sandbox in flight than --jobs counts, for the length of the pair.
//  - after_call_s: the probe's, or 0 when its heartbeat canary parameter (classify
//    still_running / quiet_after_call) is empty: nothing could be heard.
//  - canary_hits: the session's hits carrying `invocation`.
//  - canary_not_planted = true when the probe needs the planted env
//    (core::Need::kPlantedEnv), the driver does not plant it (PlantsEnvironment() false) and
//    every variable the probe looks for (its `canary_name` with `canary_sha256`, the
//    "NAME=<sha256>" pairs of its `canaries`) is a planted one, a planted name with no sha256 or
//    the planted value's: absence proves nothing. A planted name with another sha256 is the
//    service's own secret (OPENAI_API_KEY named by a suite), and is judged.
//  - planted secret values are redacted from everything the sandbox returned; their count is
//    driver_facts["canary_secrets_redacted"] (absent when 0).
//  - timeline and probe_cpu: every call's driver phases, and the sum of their CPU figures (unset
//    when a call gave none), on the judged observation.
// A script that cannot be built (over 64 KiB) is an observation ending kHarnessError.
// `invocation` is stamped on the result; the rest of its identity (probe, arm, params, deadline)
// is stamped by RowBook when its row is finalized.
core::Observation Invoke(const Task& task, const core::ProbeDescriptor& probe,
                         drivers::Driver& driver, const std::string& invocation,
                         const std::string& preamble, const Session& session,
                         const std::atomic<bool>& cancel);

// Moves `obs`'s driver phases (drivers::SteadySeconds) to the run's clock, seconds since `origin`,
// and puts the runner's own first: "queued" from 0 to `picked` (a job slot took the task) and
// "invoke" from `picked` to `ended` (steady seconds).
void PlaceOnRunClock(core::Observation& obs, double origin, double picked, double ended);

}  // namespace sandprobe::runner
