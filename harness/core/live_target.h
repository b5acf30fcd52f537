// The live-target rule: a candidate's refusal re-read against the controls of the same row
// (probe.yaml `classify.live_target`, core::LiveTargetRule). Pure; docs/traps.md, "a REJECT
// looks like a reset".
#pragma once

#include <optional>
#include <span>

#include "core/exposure.h"
#include "core/observation.h"
#include "core/probe.h"
#include "core/verdict.h"

namespace sandprobe::core {

// When `c` is an exposure resting on the candidate's result outcome rule.refused (no canary hit),
// and a control in `controls` with the same params_key has a result outcome in rule.reached (or a
// canary hit of its own) with the same address in result field rule.target (a non-empty string,
// or a list holding exactly one, as net.http-by-name's `addresses`): returns the
// classification contained, positive, label "refused (filtered)", the reason naming the target
// and the control. Otherwise nullopt (the probe has no rule, or nothing proves the listener
// lived: the refusal stays what the probe declares).
std::optional<Classification> RefusedAtLiveTarget(const ProbeDescriptor& probe,
                                                  std::span<const ArmView> controls,
                                                  const Observation& candidate,
                                                  const Classification& c);

}  // namespace sandprobe::core
