#include "core/matrix.h"

namespace sandprobe::core {

std::string ArmTitle(const ArmInfo& arm) {
  return arm.ip_family.empty() ? arm.name : arm.name + " (" + arm.ip_family + ")";
}

std::string_view ToString(ArmRole r) { return r == ArmRole::kControl ? "control" : "candidate"; }

std::string_view ToString(Level l) { return l == Level::kRequired ? "required" : "advisory"; }

const Cell* Matrix::Find(std::string_view probe, std::string_view arm,
                         std::string_view params_key) const {
  for (const Cell& c : cells) {
    if (c.observation.probe == probe && c.observation.arm == arm &&
        (params_key.empty() || c.observation.params_key == params_key)) {
      return &c;
    }
  }
  return nullptr;
}

const VerdictCell* Matrix::FindVerdict(std::string_view probe, std::string_view candidate) const {
  for (const VerdictCell& v : verdicts) {
    if (v.probe == probe && v.candidate == candidate) return &v;
  }
  return nullptr;
}

const ArmInfo* Matrix::FindArm(std::string_view name) const {
  for (const ArmInfo& a : arms) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

int RunExitCode(const Matrix& m) {
  bool fail = false, missing = m.interrupted;
  for (const VerdictCell& v : m.verdicts) {
    Level level = Level::kRequired;
    for (const Row& r : m.rows) {
      if (r.probe == v.probe) level = r.level;
    }
    if (level != Level::kRequired) continue;
    switch (v.verdict.kind) {
      case VerdictKind::kFail:
        if (!v.Accepted()) fail = true;
        break;
      case VerdictKind::kInconclusive:
      case VerdictKind::kError:
        missing = true;
        break;
      default:
        break;
    }
  }
  if (fail) return 1;
  if (missing) return 2;
  return 0;
}

}  // namespace sandprobe::core
