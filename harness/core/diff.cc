#include "core/diff.h"

#include <fmt/format.h>

#include <algorithm>

namespace sandprobe::core {
namespace {

std::string ArmText(const ArmInfo& a) { return fmt::format("{} ({})", a.name, ToString(a.role)); }

std::string LabelOf(const Matrix& m, const std::string& probe) {
  for (const Row& r : m.rows) {
    if (r.probe == probe) return r.label;
  }
  return probe;
}

RowChange Compare(const Matrix& old_run, const Matrix& new_run, const VerdictCell* o,
                  const VerdictCell* n) {
  const VerdictCell& any = n != nullptr ? *n : *o;
  RowChange c;
  c.probe = any.probe;
  c.candidate = any.candidate;
  c.label = n != nullptr ? LabelOf(new_run, any.probe) : LabelOf(old_run, any.probe);
  c.old_verdict = ShownVerdict(o);
  c.new_verdict = ShownVerdict(n);
  if (o != nullptr) c.old_evidence = ToString(o->verdict.evidence);
  if (n != nullptr) {
    c.new_evidence = ToString(n->verdict.evidence);
    c.new_reason = n->verdict.reason;
  }
  c.regression =
      c.old_verdict == "PASS" &&
      (c.new_verdict == "FAIL" || c.new_verdict == "INCONCLUSIVE" || c.new_verdict == "ERROR");
  return c;
}

}  // namespace

std::string ShownVerdict(const VerdictCell* v) {
  if (v == nullptr) return "";
  if (v->Accepted()) return "ACCEPTED";
  return std::string(ToString(v->verdict.kind));
}

bool MatrixDiff::Regressed() const { return std::ranges::any_of(changes, &RowChange::regression); }

MatrixDiff DiffMatrices(const Matrix& old_run, const Matrix& new_run) {
  MatrixDiff d;
  for (const ArmInfo& a : new_run.arms) {
    const ArmInfo* o = old_run.FindArm(a.name);
    if (o == nullptr || o->role != a.role) d.arms_added.push_back(ArmText(a));
  }
  for (const ArmInfo& a : old_run.arms) {
    const ArmInfo* n = new_run.FindArm(a.name);
    if (n == nullptr || n->role != a.role) d.arms_removed.push_back(ArmText(a));
  }
  for (const Row& row : new_run.rows) {
    for (const ArmInfo& arm : new_run.arms) {
      const VerdictCell* n = new_run.FindVerdict(row.probe, arm.name);
      if (n == nullptr) continue;
      const VerdictCell* o = old_run.FindVerdict(row.probe, arm.name);
      if (o != nullptr) ++d.rows_compared;
      if (o != nullptr && ShownVerdict(o) == ShownVerdict(n) &&
          o->verdict.evidence == n->verdict.evidence) {
        continue;
      }
      d.changes.push_back(Compare(old_run, new_run, o, n));
    }
  }
  for (const Row& row : old_run.rows) {
    for (const ArmInfo& arm : old_run.arms) {
      const VerdictCell* o = old_run.FindVerdict(row.probe, arm.name);
      if (o == nullptr || new_run.FindVerdict(row.probe, arm.name) != nullptr) continue;
      d.changes.push_back(Compare(old_run, new_run, o, nullptr));
    }
  }
  return d;
}

}  // namespace sandprobe::core
