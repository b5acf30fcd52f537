// Probe descriptor: what a probe is, which parameters it takes, and how its observations map to
// exposure. Loaded from probes/<category>/<name>/probe.yaml by config/; immutable afterwards.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/exposure.h"

namespace sandprobe::core {

// A parameter with a default, optionally sized from a limit the candidate claims
// (e.g. the balloon's target_mib = 2 x limits.memory, expressed in MiB).
struct ParamSpec {
  nlohmann::json default_value;
  std::string description;
  // "" | "memory" | "tmp" | "pids" | "timeout" | "output" (numbers, sized by factor), or a claim
  // taken as it is: "noexec" (true or a list of paths), "seccomp" ("default"); see ClaimValue().
  std::string from_limit;
  double factor = 1.0;  // multiplier applied to the limit
  std::string unit;     // unit of the parameter when sized from a limit: "MiB", "KiB", "B", "s"
};

// A claim check: the probe's own records show it went past what the candidate claims, e.g. the
// balloon's allocated_mib over the claimed memory limit (param claimed_mib, sized from
// limits.memory). Going past the claim is exposure, whatever ended the probe afterwards.
struct ExceedsRule {
  std::string field;  // numeric field of progress/result records, e.g. "allocated_mib"
  std::string param;  // resolved parameter holding the claim, e.g. "claimed_mib"; 0 = no claim
};

// A count the driver measures that decides the row when the probe's own result cannot, e.g.
// `survivors`: processes of the invocation still alive when its main process ended (filled by
// the process reaper, or derived from the container runtime). Applies when the result outcome is
// declared unknown (the probe defers to the harness) or there is no result.
struct FactRule {
  std::string fact;                          // numeric driver_facts key, e.g. "survivors"
  Exposure above_zero = Exposure::kExposed;  // fact > 0
  Exposure zero = Exposure::kContained;      // fact == 0
};

// An output cap check (res.output-flood): the probe writes `param` x unit bytes of raw output.
// The driver delivered all of it (stdout_bytes >= that) -> exposed; the probe started and less
// than half came back (the sandbox or service cut it) -> contained; in between -> no decision.
struct OutputRule {
  std::string param;            // resolved parameter with the amount written, e.g. "total_mib"
  double unit_bytes = 1 << 20;  // bytes per unit of the parameter (MiB by default)
};

// For drivers that cannot count survivors (a service): the driver waited after the call
// (driver fact after_call_wait_s > 0), the probe had a canary to report to (the string parameter
// `param` is not empty) and the canary logged nothing for the invocation -> `exposure`
// (absence evidence: nothing was heard).
struct QuietAfterCallRule {
  std::string param;  // e.g. "canary"
  Exposure exposure = Exposure::kContained;
};

// "Stopped means stopped" (res.cpu-loop, res.memory-balloon, res.fork-bomb): the probe sends a
// tagged heartbeat to the TCP canary named by the string parameter `param` while it runs. Its
// canary hits are liveness, not reach: kLateBeatsForStillRunning beats logged more than
// kHeartbeatGraceS after the driver's call_ended_unix_ms (the service answered, the sandbox
// command exited) count, and so does a reaper survivor (driver fact survivors > 0) of an
// invocation that ended by itself. Either is exposed with positive evidence, whatever exit code
// the sandbox reported. A containment with neither a survivors count nor a single beat heard
// during the call is absence evidence only (nothing could have heard it go on).
struct StillRunningRule {
  std::string param;  // e.g. "canary"
};

// A refusal at a target a control reached in the same run (probe.yaml `classify.live_target`).
// connect() reports a host's reset and a firewall's REJECT (icmp-port-unreachable, what
// kube-router's NetworkPolicy chains answer) with the same ECONNREFUSED. A refusal from a
// non-loopback target alone counts as reach (the packet got somewhere); but when a control with
// identical parameters got an answer from the same address (result field `target`: one string, or
// a list of exactly one) in the same run, a listener was alive there, and a live listener
// accepts: what refused the candidate stood in between -> contained, positive (docs/traps.md, "a
// REJECT looks like a reset").
struct LiveTargetRule {
  std::string refused;               // the outcome meaning "the connection was refused"
  std::vector<std::string> reached;  // outcomes meaning "a listener answered"
  std::string target;                // result field naming the address (string or one-element list)
};

inline constexpr double kHeartbeatGraceS = 0.5;         // one heartbeat period: a beat in flight
inline constexpr size_t kLateBeatsForStillRunning = 2;  // one late beat may be jitter

// Declared per probe: which result outcomes, endings and facts mean exposed or contained.
struct ClassifyRules {
  std::map<std::string, Exposure> outcomes;  // result record "outcome" -> exposure
  // Ended with no result record by SIGKILL / exit 137 or another fatal signal (an OOM kill looks
  // like this; so does timeout -s KILL: the reason says which facts were available).
  Exposure killed = Exposure::kUnknown;
  // Ended with no result record the way a timeout ends it: exit 124 (GNU timeout), exit 143 or
  // SIGTERM (busybox timeout, a polite stop). A timeout is not a memory or disk limit.
  Exposure timed_out = Exposure::kUnknown;
  Exposure deadline = Exposure::kUnknown;  // still running at the harness deadline
  // Started, then exited non-zero with no result record and no kill/timeout signature: the
  // sandbox ended abnormally under the probe (gVisor dies when --pids-limit also counts its own
  // threads, docs/traps.md, trap 19). Only a probe whose attack that stops may declare it
  // contained.
  Exposure crashed = Exposure::kUnknown;
  Exposure canary_hit = Exposure::kExposed;  // the canary logged this invocation
  // Only hits of these kinds decide the row (probe.yaml `canary_hit_kinds`; empty = every kind):
  // cred.cloud-metadata counts the HTTP canary's "credential" hits (it served the planted cloud
  // credential), not its other requests to the canary, which the network rows count. Other hits
  // stay in the evidence.
  std::vector<std::string> canary_hit_kinds;
  std::optional<ExceedsRule> exceeds;
  std::optional<FactRule> fact;
  std::optional<OutputRule> output;
  std::optional<QuietAfterCallRule> quiet_after_call;
  std::optional<StillRunningRule> still_running;
  std::optional<LiveTargetRule> live_target;
  // probe.yaml `classify.live_change: true`: in an arm whose driver changed the running pod
  // (driver facts live_change_unix_ms, live_change_settle_s; drivers/kubernetes/live_change.h),
  // the canary's hits decide by their time: one logged more than the settle after the change is
  // exposed; none then, with hits before the change and the probe still trying after the settle,
  // is contained (core/classify.h FromLiveChange). Without a change the hits decide as usual.
  bool live_change = false;
};

// How a probe reaches its arm (probe.yaml `deploy:`).
enum class Deploy {
  kSandbox,           // "sandbox" (default): probe.py runs inside the arm's sandbox
  kHarnessAdmission,  // "harness-admission": the driver asks the platform's admission control
                      // itself (kubernetes: a dry-run Pod); probe.py is not run as a probe
};

// What a probe needs from the harness before its result proves anything (probe.yaml `needs:`).
enum class Need {
  // "planted-env": the canary variable planted in the launching process's environment, named by
  // the probe's `canary_name` parameter. A driver that does not start the sandbox's process
  // (PlantsEnvironment() false) cannot plant it: the runner sets driver fact canary_not_planted.
  kPlantedEnv,
  // "live-canary": the harness's unix socket canaries must be listening for a refusal to mean
  // anything (a dead listener refuses too). The runner records driver fact canary_listening
  // after each call; core::Classify turns a containment without it into unknown.
  kLiveCanary,
};

struct ProbeDescriptor {
  std::string id;        // stable dotted id, e.g. "net.dns"
  std::string label;     // matrix row label, e.g. "dns"
  std::string category;  // "net", "cred", "res", "fs", "platform", ...
  std::string description;
  bool requires_control = true;      // false: judged without a control (admission probes)
  std::vector<std::string> drivers;  // drivers it applies to; {"all"} for every driver
  std::map<std::string, ParamSpec> params;
  ClassifyRules classify;
  // Calls per invocation in the same arm (state.persists: 2). The runner injects the parameters
  // `call` (1..calls) and `previous` (the previous call's result record, or null); the
  // observation judged is the last call's, earlier calls are kept in driver_facts["calls"].
  int calls = 1;
  // probe.yaml `concurrent: true`: after the `calls` sequential calls (0 allowed here), the runner
  // runs two calls at the same moment (parameters `call` = calls+1 and calls+2, `concurrent_with`
  // = the other's number, `previous` = the results of the sequential calls) and then a closing
  // call (calls+3, `previous` = every earlier result) that is judged. A declared boolean
  // parameter `concurrent` turns the pair off per suite.
  bool concurrent = false;
  // Seconds a driver waits after the call for late evidence (proc.outlives-call's and the still
  // running probes' heartbeats): http after the answer, command after the sandbox command exited
  // (for what outlives its process tree, e.g. a container of `docker run`); 0 = none. The runner
  // passes 0 when the probe's canary parameter is empty: nothing could be heard.
  double after_call_s = 0;
  std::vector<Need> needs;           // empty: the probe needs nothing planted
  Deploy deploy = Deploy::kSandbox;  // how drivers deploy it (drivers::Invocation::deploy)
  // What the probe measures when that is not traffic or behaviour (probe.yaml `measures:`, e.g.
  // "interfaces" for net.interfaces). An arm whose mechanism cannot change it (a NetworkPolicy
  // filters packets and never removes interfaces) reports the cell without judging it
  // (drivers::Driver::NotJudgedReason). "" = judged everywhere.
  std::string measures;
  // probe.yaml `claim: <param>`: the row judges a claim of the candidate's limits, carried by this
  // parameter (sized from_limit noexec or seccomp). Without the claim the cells are reported, not
  // judged (core::UnclaimedReason). "" = judged whatever the limits say.
  std::string claim;
  // probe.yaml `beyond_policy: true`: the probe's exposed outcome is traffic beyond what the arm's
  // own NetworkPolicy allows as written (a net.policy-* row's outside pair), so a fresh pod's leak
  // there that the settled twin does not repeat is late enforcement (core/banners.h) even under a
  // policy that allows some egress. false = only a deny-all-egress policy makes a leak late.
  bool beyond_policy = false;
  std::string script;       // probe.py body (the preamble is added at deployment)
  std::string source_path;  // where the descriptor was read from, for messages

  // True when the probe applies to the named driver.
  bool AppliesTo(const std::string& driver) const;
  // True when `needs` lists `need`.
  bool Needs(Need need) const;
};

}  // namespace sandprobe::core
