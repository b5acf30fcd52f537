// Classification: observation -> exposure, by the rules the probe declares. Driver facts and
// canary hits beat the probe's own words; a missing result is never containment.
#pragma once

#include "core/exposure.h"
#include "core/observation.h"
#include "core/probe.h"

namespace sandprobe::core {

// Order of precedence:
//  1. harness error / interrupted / not run          -> unknown (no evidence)
//  1b. rules.still_running: the invocation ended by itself and a heartbeat was logged after the
//      call ended (driver fact call_ended_unix_ms + kHeartbeatGraceS), or the reaper found
//      survivors                                      -> exposed "STILL RUNNING" (positive)
//  2. a canary logged this invocation                 -> rules.canary_hit (positive); not for
//      still_running probes, whose hits are heartbeats; with rules.canary_hit_kinds only hits of
//      those kinds count ("CREDENTIAL SERVED")
//  3. records went past the claim (rules.exceeds)     -> exposed (positive)
//  4. a result record with a declared exposed outcome -> exposed
//  4b. rules.output: all the output written came back -> exposed; the probe started, ended by
//      itself, did not report a failure and < half came back -> contained (positive: a cut)
//  5. driver fact oom_killed                          -> rules.killed (positive, "OOMKilled")
//  6. rules.fact: the driver measured the fact and the result (if any) is declared unknown
//                                                     -> above_zero / zero (positive; source named)
//  6b. rules.quiet_after_call: same conditions, the fact was not measured, the driver waited
//      after the call (after_call_wait_s) and the canary logged nothing -> its exposure (absence)
//  7. a result record whose outcome is declared       -> that exposure; evidence from the record
//  8. no result: deadline                             -> rules.deadline
//                timeout (exit 124/143, SIGTERM)      -> rules.timed_out
//                killed (SIGKILL, exit 137, signals)  -> rules.killed
//                other non-zero exit after start      -> rules.crashed (absence evidence)
//                anything else                        -> unknown ("no result record")
//     A containment from these endings is kSandboxWord ("on the sandbox's word") when nothing
//     the harness measured shows the probe stopped: no survivors count, no heartbeat heard while
//     it ran, and the ending was reported by the sandbox itself (driver fact ended_by "service")
//     or the probe is a still_running one.
// Then shared fate: driver fact service_died (http: healthy before, not after) turns anything but
// exposed into unknown, "the probe took the service down".
Classification Classify(const ProbeDescriptor& probe, const Observation& obs);

// How a process that left no result record ended, from its status alone (docs/traps.md, trap 5:
// GNU timeout 124, busybox timeout 143, SIGKILL 137; 137 alone does not tell OOM from a kill).
enum class KillKind { kNone, kTimeout, kKill };
KillKind KillKindOf(const Observation& obs);

}  // namespace sandprobe::core
