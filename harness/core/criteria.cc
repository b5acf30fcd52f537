#include "core/criteria.h"

namespace sandprobe::core {

CriterionResult JudgeCriterion(const Criterion& criterion, std::string_view candidate,
                               const std::vector<VerdictCell>& verdicts) {
  CriterionResult out{std::string(candidate), false, {}};
  for (const std::string& probe : criterion.probes) {
    const VerdictCell* found = nullptr;
    for (const VerdictCell& v : verdicts) {
      if (v.probe == probe && v.candidate == candidate) found = &v;
    }
    if (found == nullptr) {
      out.broken.push_back({probe, std::nullopt});
    } else if (found->verdict.kind != VerdictKind::kPass) {
      out.broken.push_back({probe, found->verdict.kind});
    }
  }
  out.holds = !criterion.probes.empty() && out.broken.empty();
  return out;
}

std::vector<std::vector<CriterionResult>> JudgeCriteria(const Matrix& m) {
  std::vector<std::vector<CriterionResult>> out;
  for (const Criterion& c : m.criteria) {
    std::vector<CriterionResult>& results = out.emplace_back();
    for (const ArmInfo& arm : m.arms) {
      if (arm.role == ArmRole::kCandidate) {
        results.push_back(JudgeCriterion(c, arm.name, m.verdicts));
      }
    }
  }
  return out;
}

}  // namespace sandprobe::core
