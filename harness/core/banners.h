// Banners: one-line findings about the whole run, shown above the matrix. Pure; table-tested.
#pragma once

#include <string>
#include <vector>

#include "core/matrix.h"

namespace sandprobe::core {

// "NetworkPolicy is accepted but not enforced on this cluster": an arm whose invocations ran
// under a NetworkPolicy the harness created (driver fact `network_policy`, a non-empty name; the
// policy's age at submission in `policy_age_s`) was exposed on a network row (Row::category "net")
// where a control arm of the same run was exposed too. docs/traps.md, trap 14: only a control pod
// beside a blocked pod shows it. Returns at most one banner line naming the arms, the policy age
// and the rows; empty when every policy arm held (or none ran).
std::vector<std::string> PolicyNotEnforcedBanners(const Matrix& m);

}  // namespace sandprobe::core
