#include "core/diff.h"

#include <gtest/gtest.h>

namespace sandprobe::core {
namespace {

using V = VerdictKind;
using E = Evidence;

struct RowSpec {
  std::string probe, arm;
  V kind;
  E evidence = E::kPositive;
  bool accepted = false;
};

ArmInfo Arm(std::string name, ArmRole role) {
  ArmInfo a;
  a.name = std::move(name);
  a.role = role;
  return a;
}

Matrix MakeRun(std::vector<std::string> arms, std::vector<RowSpec> rows) {
  Matrix m;
  m.arms.push_back(Arm("local", ArmRole::kControl));
  for (const std::string& a : arms) m.arms.push_back(Arm(a, ArmRole::kCandidate));
  for (const RowSpec& r : rows) {
    if (m.rows.empty() || m.rows.back().probe != r.probe)
      m.rows.push_back({r.probe, r.probe + "!"});
    VerdictCell v{r.probe, r.arm, Verdict{r.kind, "because", "", r.evidence}};
    if (r.accepted) v.accepted = Acceptance{"known", "2099-01-01", false, "f:1:1"};
    m.verdicts.push_back(std::move(v));
  }
  return m;
}

TEST(DiffTest, Table) {
  struct Case {
    Matrix old_run, new_run;
    std::vector<std::string> changed;  // "probe arm old->new", in order
    std::vector<std::string> regressed;
    std::vector<std::string> added, removed;
  };
  const std::vector<Case> cases = {
      {MakeRun({"bw"}, {{"net.dns", "bw", V::kPass}}),
       MakeRun({"bw"}, {{"net.dns", "bw", V::kPass}}),
       {},
       {},
       {},
       {}},
      {MakeRun({"bw"}, {{"net.dns", "bw", V::kPass}, {"fs.ro", "bw", V::kPass}}),
       MakeRun({"bw"}, {{"net.dns", "bw", V::kFail}, {"fs.ro", "bw", V::kPass}}),
       {"net.dns bw PASS->FAIL"},
       {"net.dns"},
       {},
       {}},
      // Every way to regress; a FAIL -> PASS and a SKIP -> FAIL are changes, not regressions.
      {MakeRun({"bw"}, {{"a", "bw", V::kPass},
                        {"b", "bw", V::kPass},
                        {"c", "bw", V::kFail},
                        {"d", "bw", V::kSkip}}),
       MakeRun({"bw"}, {{"a", "bw", V::kInconclusive},
                        {"b", "bw", V::kError},
                        {"c", "bw", V::kPass},
                        {"d", "bw", V::kFail}}),
       {"a bw PASS->INCONCLUSIVE", "b bw PASS->ERROR", "c bw FAIL->PASS", "d bw SKIP->FAIL"},
       {"a", "b"},
       {},
       {}},
      // Same verdict, weaker evidence: a change, not a regression.
      {MakeRun({"bw"}, {{"net.dns", "bw", V::kPass, E::kPositive}}),
       MakeRun({"bw"}, {{"net.dns", "bw", V::kPass, E::kAbsence}}),
       {"net.dns bw PASS->PASS"},
       {},
       {},
       {}},
      // An accepted FAIL is shown as ACCEPTED and does not regress; its expiry would.
      {MakeRun({"bw"}, {{"net.dns", "bw", V::kPass}}),
       MakeRun({"bw"}, {{"net.dns", "bw", V::kFail, E::kPositive, true}}),
       {"net.dns bw PASS->ACCEPTED"},
       {},
       {},
       {}},
      // Arms added and removed; their rows are changes, never regressions.
      {MakeRun({"bw"}, {{"net.dns", "bw", V::kPass}}),
       MakeRun({"gv"}, {{"net.dns", "gv", V::kFail}}),
       {"net.dns gv ->FAIL", "net.dns bw PASS->"},
       {},
       {"gv (candidate)"},
       {"bw (candidate)"}},
      // A probe added to the suite.
      {MakeRun({"bw"}, {{"net.dns", "bw", V::kPass}}),
       MakeRun({"bw"}, {{"net.dns", "bw", V::kPass}, {"net.http", "bw", V::kFail}}),
       {"net.http bw ->FAIL"},
       {},
       {},
       {}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const MatrixDiff d = DiffMatrices(cases[i].old_run, cases[i].new_run);
    std::vector<std::string> changed, regressed;
    for (const RowChange& c : d.changes) {
      changed.push_back(c.probe + " " + c.candidate + " " + c.old_verdict + "->" + c.new_verdict);
      if (c.regression) regressed.push_back(c.probe);
    }
    EXPECT_EQ(changed, cases[i].changed) << "case " << i;
    EXPECT_EQ(regressed, cases[i].regressed) << "case " << i;
    EXPECT_EQ(d.Regressed(), !cases[i].regressed.empty()) << "case " << i;
    EXPECT_EQ(d.arms_added, cases[i].added) << "case " << i;
    EXPECT_EQ(d.arms_removed, cases[i].removed) << "case " << i;
  }
}

TEST(DiffTest, CarriesLabelsEvidenceAndReason) {
  const MatrixDiff d = DiffMatrices(MakeRun({"bw"}, {{"net.dns", "bw", V::kPass, E::kPositive}}),
                                    MakeRun({"bw"}, {{"net.dns", "bw", V::kFail, E::kPositive}}));
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(d.changes[0].label, "net.dns!");
  EXPECT_EQ(d.changes[0].old_evidence, "positive");
  EXPECT_EQ(d.changes[0].new_reason, "because");
  EXPECT_EQ(d.rows_compared, 1u);
}

}  // namespace
}  // namespace sandprobe::core
