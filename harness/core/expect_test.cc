#include "core/expect.h"

#include <gtest/gtest.h>

namespace sandprobe::core {
namespace {

ArmInfo Arm(std::string name, ArmRole role) {
  ArmInfo a;
  a.name = std::move(name);
  a.role = role;
  return a;
}

Matrix MakeRun() {
  Matrix m;
  for (const char* p : {"net.dns", "net.http", "fs.write"}) m.rows.push_back({p, p});
  m.arms.push_back(Arm("a", ArmRole::kCandidate));
  m.arms.push_back(Arm("b", ArmRole::kCandidate));
  auto add = [&](const char* p, const char* arm, VerdictKind k) {
    m.verdicts.push_back({p, arm, Verdict{k, "r", "", Evidence::kPositive}});
  };
  add("net.dns", "a", VerdictKind::kFail);
  add("net.dns", "b", VerdictKind::kFail);
  add("net.http", "a", VerdictKind::kFail);
  add("net.http", "b", VerdictKind::kPass);
  add("fs.write", "a", VerdictKind::kInconclusive);
  add("fs.write", "b", VerdictKind::kPass);
  return m;
}

TEST(ExpectTest, ValidDate) {
  for (const char* ok : {"2026-11-30", "2024-02-29", "2000-01-01"})
    EXPECT_TRUE(ValidDate(ok)) << ok;
  for (const char* bad : {"2026-02-30", "2025-02-29", "2026-13-01", "2026-1-01", "26-01-01",
                          "2026/01/01", "2026-01-01x", "", "tomorrow", "2026-00-10"}) {
    EXPECT_FALSE(ValidDate(bad)) << bad;
  }
}

TEST(ExpectTest, AcceptanceAndExpiryTable) {
  struct Case {
    Expectation e;
    std::string today;
    // (probe, candidate) -> accepted?, expired?
    std::vector<std::tuple<std::string, std::string, bool, bool>> marks;
    int exit_code;
    size_t warnings;
  };
  const std::vector<Case> cases = {
      // Both candidates: every FAIL of the probe accepted; the other FAIL still fails the gate.
      {{"net.dns", "", "known", "2026-12-31", "f:1:1"},
       "2026-11-30",
       {{"net.dns", "a", true, false},
        {"net.dns", "b", true, false},
        {"net.http", "a", false, false}},
       1,
       0},
      // The expiry day itself still holds.
      {{"net.http", "a", "known", "2026-11-30", "f:1:1"},
       "2026-11-30",
       {{"net.http", "a", true, false}, {"net.http", "b", false, false}},
       1,
       0},
      // A day after: expired, a FAIL again.
      {{"net.http", "a", "known", "2026-11-29", "f:1:1"},
       "2026-11-30",
       {{"net.http", "a", true, true}},
       1,
       0},
      // A PASS or INCONCLUSIVE row is never accepted: the expectation matched no FAIL.
      {{"net.http", "b", "known", "2027-01-01", "f:1:1"},
       "2026-11-30",
       {{"net.http", "b", false, false}},
       1,
       1},
      {{"fs.write", "a", "known", "2027-01-01", "f:1:1"},
       "2026-11-30",
       {{"fs.write", "a", false, false}},
       1,
       1},
      {{"net.nothing", "", "known", "2027-01-01", "f:1:1"}, "2026-11-30", {}, 1, 1},
      {{"net.dns", "c", "known", "2027-01-01", "f:1:1"},
       "2026-11-30",
       {{"net.dns", "a", false, false}},
       1,
       1},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    Matrix m = MakeRun();
    const Expectation list[] = {cases[i].e};
    const auto warnings = ApplyExpectations(m, list, cases[i].today);
    EXPECT_EQ(warnings.size(), cases[i].warnings) << "case " << i;
    for (const auto& [probe, cand, accepted, expired] : cases[i].marks) {
      const VerdictCell* v = m.FindVerdict(probe, cand);
      ASSERT_NE(v, nullptr);
      EXPECT_EQ(v->accepted.has_value(), accepted) << "case " << i << " " << probe << " " << cand;
      if (v->accepted) {
        EXPECT_EQ(v->accepted->expired, expired) << "case " << i;
        EXPECT_EQ(v->accepted->reason, "known");
        EXPECT_EQ(v->Accepted(), !expired);
        EXPECT_EQ(v->verdict.kind, VerdictKind::kFail);  // the verdict itself stays FAIL
      }
    }
    EXPECT_EQ(RunExitCode(m), cases[i].exit_code) << "case " << i;
  }
}

TEST(ExpectTest, EveryFailAcceptedOpensTheGate) {
  Matrix m = MakeRun();
  m.verdicts[4].verdict.kind = VerdictKind::kPass;  // fs.write in a
  const Expectation list[] = {{"net.dns", "", "dns leaks here, ticket 12", "2027-01-01", "f:1:1"},
                              {"net.http", "a", "proxy", "2027-01-01", "f:5:1"}};
  EXPECT_TRUE(ApplyExpectations(m, list, "2026-11-30").empty());
  EXPECT_EQ(RunExitCode(m), 0);
  // The same file a year later: both expired, the gate fails again.
  Matrix later = MakeRun();
  later.verdicts[4].verdict.kind = VerdictKind::kPass;
  ApplyExpectations(later, list, "2027-01-02");
  EXPECT_EQ(RunExitCode(later), 1);
  EXPECT_TRUE(later.FindVerdict("net.dns", "a")->accepted->expired);
}

TEST(ExpectTest, WarningNamesWhatItMatched) {
  Matrix m = MakeRun();
  const Expectation list[] = {{"net.http", "b", "r", "2027-01-01", "x.yaml:3:5"}};
  const auto w = ApplyExpectations(m, list, "2026-11-30");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0],
            "x.yaml:3:5: expectation for net.http in b matched no FAIL (b PASS); remove it if the "
            "row is fixed");
}

}  // namespace
}  // namespace sandprobe::core
