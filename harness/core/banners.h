// Banners: one-line findings about the whole run, shown above the matrix. Pure; table-tested.
#pragma once

#include <string>
#include <vector>

#include "core/matrix.h"

namespace sandprobe::core {

// "NetworkPolicy is accepted but not enforced on this cluster": an arm whose invocations ran
// under a NetworkPolicy the harness created that denies all egress as written (driver facts
// `network_policy`, a non-empty name, and `policy_denies_all_egress`; the policy's age at
// submission in `policy_age_s`), not in a host-network pod (`host_network`), was exposed, with
// positive evidence (a canary hit or an answer, never a timeout or an absence), on a network row
// (Row::category "net") where a control arm of the same run was exposed too. Cells carrying driver
// fact `not_judged` (the interface count under a policy: a policy filters packets, it never removes
// eth0) never count. docs/traps.md, trap 14: only a control pod beside a blocked pod shows it.
// Returns at most one banner line naming the arms, the policy age and the rows; empty when every
// policy arm held (or none ran). Rows explained by late enforcement (PolicyLateBanners) are left
// out of this banner.
std::vector<std::string> PolicyNotEnforcedBanners(const Matrix& m);

// "NetworkPolicy is enforced late for new pods": a policy arm `A` was exposed with positive
// evidence on a network row where its settled twin `A-settled` (pods that waited before probing,
// kubernetes settledRerun; driver fact pod_settle_s) was contained. Several CNIs program a new
// pod's rules seconds after it starts, whatever the policy's age: the leak is real (the row still
// FAILs) but the finding is not "not enforced". At most one line naming arms, ages and rows.
std::vector<std::string> PolicyLateBanners(const Matrix& m);

// Every policy banner of a run: PolicyLateBanners, then PolicyNotEnforcedBanners.
std::vector<std::string> PolicyBanners(const Matrix& m);

}  // namespace sandprobe::core
