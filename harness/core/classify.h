// Classification: observation -> exposure, by the rules the probe declares. Driver facts and
// canary hits beat the probe's own words; a missing result is never containment.
#pragma once

#include "core/exposure.h"
#include "core/observation.h"
#include "core/probe.h"

namespace sandprobe::core {

// Order of precedence:
//  1. harness error / interrupted / not run          -> unknown (no evidence)
//  2. a canary logged this invocation                 -> rules.canary_hit (positive)
//  3. driver fact oom_killed                          -> rules.killed (positive, "OOMKilled")
//  4. a result record whose outcome is declared       -> that exposure; evidence from the record
//  5. no result: deadline                             -> rules.deadline
//                killed (signal, exit 124/137/143)    -> rules.killed
//                anything else                        -> unknown ("no result record")
Classification Classify(const ProbeDescriptor& probe, const Observation& obs);

// True for the exit statuses that mean "the sandbox killed it": GNU timeout 124, SIGKILL 137,
// SIGTERM 143 (busybox timeout). See PROBES.md trap 5.
bool IsKillExitCode(int code);

}  // namespace sandprobe::core
