// Redaction of the harness's own planted canary secrets from everything an observation carries.
// A sandbox that leaks a canary may print it; reports get attached to public tickets, so the
// value itself never reaches one (the leak is still proven by the probe's record and hashes).
#pragma once

#include <string>
#include <vector>

#include "core/observation.h"

namespace sandprobe::core {

inline constexpr std::string_view kRedacted = "[REDACTED canary secret]";

// Replaces every occurrence of each secret (non-empty, at least 8 bytes) in the raw output heads,
// the harness error and every string inside records and the result. Returns the number of
// replacements, which the runner records as a driver fact.
size_t RedactSecrets(Observation& obs, const std::vector<std::string>& secrets);

}  // namespace sandprobe::core
