// Driver fact keys: the names under Observation::driver_facts, in one place. Facts are what a
// driver or the runner measured about one invocation; core::Classify reads some of them (driver
// facts beat a probe's self-report) and every report shows them verbatim, so the names are part
// of report.json's contract. Each key says who writes it, its type and where the fact comes from.
#pragma once

namespace sandprobe::core::fact {

// --- Every driver --------------------------------------------------------------------------------
inline constexpr char kDriver[] = "driver";       // string: the driver kind that ran it
inline constexpr char kEndedBy[] = "ended_by";    // "sandbox" | "service" | "harness deadline"
inline constexpr char kExitCode[] = "exit_code";  // int: the runtime's own exit code
inline constexpr char kSignal[] = "signal";       // int: the signal the runtime reported
// bool: the runtime killed it for memory. Docker Engine API ContainerInspect State.OOMKilled;
// Pod containerStatuses[].state.terminated.reason OOMKilled; a command `after` hook.
inline constexpr char kOomKilled[] = "oom_killed";
// int: processes of the invocation still alive when its main process ended (sandprobe-reaper's
// count; 0 from ContainerInspect for a private PID namespace). Read by FactRule `survivors`.
inline constexpr char kSurvivors[] = "survivors";
inline constexpr char kSurvivorsSource[] = "survivors_source";  // string: where it came from
inline constexpr char kNote[] = "note";                         // string: a caveat for the report

// --- Runner (runner/invoke.cc) -------------------------------------------------------------------
// [{call, ending, exit_code, result, driver_facts}]: the earlier calls of a multi-call probe.
inline constexpr char kCalls[] = "calls";
// bool: the probe looks for the planted env canary, but this driver never plants it (a service
// the harness did not start): a clean result proves nothing (docs/traps.md, trap 22). Held in
// Observation::canary_not_planted; reports show it under this key (Observation::ReportedFacts).
inline constexpr char kCanaryNotPlanted[] = "canary_not_planted";
// bool: for a probe that `needs: [live-canary]`, whether the harness's unix socket canaries
// accepted a connection right after the call (canary::CanarySet::UnixListening). A refusal is
// containment only when the listener was alive (docs/traps.md, "a dead listener").
inline constexpr char kCanaryListening[] = "canary_listening";
// int: planted secrets the sandbox printed, redacted from every field.
inline constexpr char kCanarySecretsRedacted[] = "canary_secrets_redacted";
// string: why this cell is reported but not judged in its arm (drivers::Driver::NotJudgedReason,
// or core::UnclaimedReason: a claim row whose candidate claims nothing):
// the verdict is SKIP with this reason and the banners ignore the cell. Held in
// Observation::not_judged; reports show it under this key (Observation::ReportedFacts).
inline constexpr char kNotJudged[] = "not_judged";

// --- command / local (drivers/command) -----------------------------------------------------------
inline constexpr char kDescendantsKilled[] = "descendants_killed";  // int: killed by the reaper
// Terminal mode (command/local `tty: true`, drivers/command/command_driver.h):
inline constexpr char kTty[] = "tty";  // bool: stdin was the harness's pseudo-terminal
// int: times this run's nonce was in the input left pending on that terminal after the call
// (TIOCSTI pushed it; read as the shell would read its next line). Read by proc.tty-inject.
inline constexpr char kTtyInjected[] = "tty_injected";
inline constexpr char kTtyInjectedSource[] = "tty_injected_source";  // string: how, and the sysctl
inline constexpr char kTtyPendingInputBytes[] = "tty_pending_input_bytes";  // int
inline constexpr char kTtyOutputBytes[] = "tty_output_bytes";  // int: the terminal's output side
// bool: the nonce was in the terminal's output (echo of pushed input, or a plain write to the
// terminal: not evidence of injection on its own).
inline constexpr char kTtyOutputNonce[] = "tty_output_nonce";
// 1, 0 or "absent": /proc/sys/dev/tty/legacy_tiocsti when the call ran (0: TIOCSTI needs
// CAP_SYS_ADMIN; absent: a kernel before 6.2, TIOCSTI allowed on one's controlling terminal).
inline constexpr char kLegacyTiocsti[] = "legacy_tiocsti";
inline constexpr char kTtyError[] = "tty_error";  // string: the terminal could not be set up

// --- docker (drivers/docker) ---------------------------------------------------------------------
inline constexpr char kContainer[] = "container";  // string: short container id
inline constexpr char kRuntime[] = "runtime";      // string: ContainerInspect HostConfig.Runtime

// --- http (drivers/http) -------------------------------------------------------------------------
inline constexpr char kHttpStatus[] = "http_status";        // int: the service's response status
inline constexpr char kResponseBytes[] = "response_bytes";  // int: body size, every byte counted
// bool: the 2xx body passed http.maxBody and was read streaming: counted, the strings at the stdout
// and stderr pointers unescaped into the output collector, other small members kept; the body
// itself was not kept (drivers/http/body_reader.h).
inline constexpr char kResponseStreamed[] = "response_streamed";
// [string]: members of a streamed body that were not kept, "<pointer> (<why>)", the first 8.
inline constexpr char kResponseNotKept[] = "response_not_kept";
// int: reading a streamed body stopped at this many bytes (the driver's ceiling); it was longer.
inline constexpr char kResponseCeiling[] = "response_ceiling";
inline constexpr char kHealthBefore[] = "health_before";     // "ok" or why not
inline constexpr char kHealthAfter[] = "health_after";       // "ok" or why not
inline constexpr char kHealthSettleS[] = "health_settle_s";  // s waited before the after-check
// bool: healthy before, not after: the probe took the service down (shared fate).
inline constexpr char kServiceDied[] = "service_died";
inline constexpr char kServiceTimeout[] = "service_timeout";  // bool: the service said timed out
inline constexpr char kServiceTimeoutSource[] = "service_timeout_source";  // the matching rule
inline constexpr char kServiceError[] = "service_error";         // string: the service's error
inline constexpr char kServiceExitCode[] = "service_exit_code";  // the reported exit code
// s the driver waited after the call for late evidence (probe after_call_s).
inline constexpr char kAfterCallWaitS[] = "after_call_wait_s";
// ms since the epoch (system clock, the canaries' clock) when the sandbox said the call was over:
// the service's answer was read (http) or the sandbox command exited (command, local).
inline constexpr char kCallEndedUnixMs[] = "call_ended_unix_ms";

// --- kubernetes (drivers/kubernetes) -------------------------------------------------------------
inline constexpr char kNamespace[] = "namespace";  // string
inline constexpr char kWarnings[] = "warnings";    // [string]: the arm's Prepare() warnings
inline constexpr char kJob[] = "job";              // string: the Job's name
inline constexpr char kPod[] = "pod";              // string: the Pod's name
inline constexpr char kNode[] = "node";            // string: Pod spec.nodeName
inline constexpr char kNetworkPolicy[] = "network_policy";       // string: the arm's policy
inline constexpr char kPolicyCreatedAt[] = "policy_created_at";  // its creationTimestamp
inline constexpr char kPolicyAgeS[] = "policy_age_s";            // s: its age at Job creation
// bool: the arm's policy denies all egress as written (Egress in policyTypes, no egress rule);
// only then does a leak say anything about enforcement (core/banners.h).
inline constexpr char kPolicyDeniesAllEgress[] = "policy_denies_all_egress";
// bool: the arm's policy's podSelector selects this Pod's stored labels (absent: not evaluated).
inline constexpr char kPolicySelectsPod[] = "policy_selects_pod";
// [string]: other NetworkPolicies of the namespace that select the arm's pods and allow some
// egress (policies add up): a leak under them says nothing about enforcement.
inline constexpr char kOtherPoliciesAllowingEgress[] = "other_policies_allowing_egress";
inline constexpr char kPolicyWaitS[] = "policy_wait_s";  // s waited for minPolicyAge
inline constexpr char kStartWaitS[] = "start_wait_s";    // s: Job created to running
// bool: the Pod ran with spec.hostNetwork (the NetworkPolicy API leaves such pods to the plugin;
// no banner).
inline constexpr char kHostNetwork[] = "host_network";
inline constexpr char kPodSettleS[] = "pod_settle_s";  // s the pod waited before probing (-settled)
// kubernetes.liveChange (drivers/kubernetes/live_change.h): what the driver changed on the running
// pod ("added label a=b"), when the API server answered the PATCH (int, ms since the epoch, the
// harness's clock; sent: when it was sent), the settle the judgment allows after it (s), or why
// the change was not made.
inline constexpr char kLiveChange[] = "live_change";
inline constexpr char kLiveChangeUnixMs[] = "live_change_unix_ms";
inline constexpr char kLiveChangeSentUnixMs[] = "live_change_sent_unix_ms";  // the PATCH sent
// The harness saw the probe container ended by then (same clock): the bound on its tries.
inline constexpr char kLiveChangeEndedUnixMs[] = "live_change_ended_unix_ms";
inline constexpr char kLiveChangeSettleS[] = "live_change_settle_s";
inline constexpr char kLiveChangeError[] = "live_change_error";
inline constexpr char kPodRelists[] = "pod_relists";              // int: watch re-lists
inline constexpr char kWatchGone[] = "watch_gone";                // int: 410 Gone seen
inline constexpr char kLogs[] = "logs";                           // string: how logs were read
inline constexpr char kTerminatedReason[] = "terminated_reason";  // terminated.reason
inline constexpr char kPodReason[] = "pod_reason";                // Pod status.reason
inline constexpr char kPodMessage[] = "pod_message";              // Pod status.message
inline constexpr char kEvicted[] = "evicted";                     // bool: status.reason Evicted
// string: Job status.conditions[type=Failed].reason (DeadlineExceeded: the logs are gone).
inline constexpr char kJobCondition[] = "job_condition";
inline constexpr char kJobDeleted[] = "job_deleted";            // bool: deletion confirmed
inline constexpr char kFailedCreate[] = "failed_create";        // Event FailedCreate on the Job
inline constexpr char kAdmissionPod[] = "admission_pod";        // the dry-run Pod's name
inline constexpr char kAdmissionStatus[] = "admission_status";  // the API server's status
// string: "<pod>" of the run's in-cluster canary whose hits (pods/log) this cell carries.
inline constexpr char kClusterCanary[] = "cluster_canary";
// string: why the in-cluster canary's log could not be read for this cell (its hits are missing).
inline constexpr char kClusterCanaryLog[] = "cluster_canary_log";

}  // namespace sandprobe::core::fact
