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
