// Parameter resolution and the deployed script. Pure: no I/O.
#pragma once

#include <expected>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/limits.h"
#include "core/probe.h"

namespace sandprobe::core {

// Resolves a probe's parameters for one candidate:
//   descriptor default -> sized from the candidate's claimed limit (from_limit x factor, in the
//   param's unit, rounded up) -> the suite's override -> "{name}" placeholders in string values
//   replaced from `substitutions` (e.g. {canary.http} -> "127.0.0.1:40123").
// Errors: an override naming an unknown parameter, or an unknown placeholder.
std::expected<nlohmann::json, std::string> ResolveParams(
    const ProbeDescriptor& probe, const nlohmann::json& overrides, const Limits& limits,
    const std::map<std::string, std::string>& substitutions);

// Limits taken as claims rather than sizes (ParamSpec::from_limit): "noexec", "seccomp".
bool IsClaimLimit(std::string_view name);
// The value a parameter sized from a claim takes: noexec -> true (every writable path) or the
// list of paths; seccomp -> "default". nullopt when the candidate does not claim it (the parameter
// keeps its default, which means "no claim": false, "" or []).
std::optional<nlohmann::json> ClaimValue(const Limits& limits, std::string_view name);

// Why a probe that judges a claim (ProbeDescriptor::claim) is reported, not judged, with these
// resolved parameters: "" when its claim parameter holds a claim (true, a non-empty string or a
// non-empty list), else "the candidate claims no limits.<from_limit>" (the probe's rows then show
// facts only, docs/design.md "Manifests and limits").
std::string UnclaimedReason(const ProbeDescriptor& probe, const nlohmann::json& params);

// Canonical text of resolved parameters: equal keys <=> identical parameters.
std::string ParamsKey(const nlohmann::json& params);

inline constexpr size_t kMaxScriptBytes = 64 * 1024;

// The deployed program: a header line, the base64 JSON of {probe, nonce, invocation, params},
// the shared preamble and the probe body. Scripts over 64 KiB are rejected (a Kubernetes Job
// argument must stay well under the ~128 KiB single-argument limit).
std::expected<std::string, std::string> BuildScript(const ProbeDescriptor& probe,
                                                    const std::string& preamble,
                                                    const nlohmann::json& params,
                                                    const std::string& nonce,
                                                    const std::string& invocation);

std::string Base64Encode(std::string_view bytes);

}  // namespace sandprobe::core
