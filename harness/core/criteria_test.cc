// Table test of JudgeCriterion(): a criterion holds only when every row it names PASSes for the
// candidate; any other verdict, or none, breaks it and is named.
#include "core/criteria.h"

#include <gtest/gtest.h>

namespace sandprobe::core {
namespace {

using V = VerdictKind;

VerdictCell Cell(std::string probe, std::string candidate, V kind) {
  return VerdictCell{std::move(probe), std::move(candidate), Verdict{kind, "why", "", {}}};
}

std::string Describe(const CriterionResult& r) {
  std::string out = r.holds ? "holds" : "broken";
  for (const CriterionBreak& b : r.broken) {
    out += " " + b.probe + "=" + (b.verdict ? std::string(ToString(*b.verdict)) : "missing");
  }
  return out;
}

TEST(CriteriaTest, Table) {
  const Criterion egress{"No network egress", {"net.dns", "net.udp"}};
  const struct {
    const char* name;
    std::vector<VerdictCell> verdicts;
    const char* want;
  } cases[] = {
      {"every row PASS", {Cell("net.dns", "c", V::kPass), Cell("net.udp", "c", V::kPass)}, "holds"},
      {"one FAIL",
       {Cell("net.dns", "c", V::kPass), Cell("net.udp", "c", V::kFail)},
       "broken net.udp=FAIL"},
      {"INCONCLUSIVE is not a pass",
       {Cell("net.dns", "c", V::kInconclusive), Cell("net.udp", "c", V::kPass)},
       "broken net.dns=INCONCLUSIVE"},
      {"ERROR is not a pass",
       {Cell("net.dns", "c", V::kPass), Cell("net.udp", "c", V::kError)},
       "broken net.udp=ERROR"},
      {"SKIP measured nothing",
       {Cell("net.dns", "c", V::kSkip), Cell("net.udp", "c", V::kPass)},
       "broken net.dns=SKIP"},
      {"a row missing from the run is never a pass",
       {Cell("net.dns", "c", V::kPass)},
       "broken net.udp=missing"},
      {"no verdicts at all (interrupted before any row)",
       {},
       "broken net.dns=missing net.udp=missing"},
      {"another candidate's PASS does not count",
       {Cell("net.dns", "c", V::kPass), Cell("net.udp", "other", V::kPass)},
       "broken net.udp=missing"},
      {"every break named, in the criterion's order",
       {Cell("net.udp", "c", V::kFail), Cell("net.dns", "c", V::kError)},
       "broken net.dns=ERROR net.udp=FAIL"},
      {"rows outside the criterion do not matter",
       {Cell("net.dns", "c", V::kPass), Cell("net.udp", "c", V::kPass),
        Cell("res.cpu-loop", "c", V::kFail)},
       "holds"},
  };
  for (const auto& c : cases) {
    const CriterionResult r = JudgeCriterion(egress, "c", c.verdicts);
    EXPECT_EQ(Describe(r), c.want) << c.name;
    EXPECT_EQ(r.candidate, "c");
    EXPECT_EQ(r.holds, r.broken.empty()) << c.name;
  }
}

TEST(CriteriaTest, ACriterionWithoutRowsNeverHolds) {
  const CriterionResult r = JudgeCriterion(Criterion{"empty", {}}, "c", {});
  EXPECT_FALSE(r.holds);
  EXPECT_TRUE(r.broken.empty());
}

TEST(CriteriaTest, EveryCriterionForEveryCandidateInArmOrder) {
  Matrix m;
  for (const auto& [name, role] :
       {std::pair{"local", ArmRole::kControl}, std::pair{"tight", ArmRole::kCandidate},
        std::pair{"loose", ArmRole::kCandidate}}) {
    ArmInfo& arm = m.arms.emplace_back();
    arm.name = name;
    arm.role = role;
  }
  m.criteria = {{"egress", {"net.dns"}}, {"bounded", {"res.cpu-loop"}}};
  m.verdicts = {Cell("net.dns", "tight", V::kPass), Cell("net.dns", "loose", V::kFail),
                Cell("res.cpu-loop", "tight", V::kPass)};
  const auto all = JudgeCriteria(m);
  ASSERT_EQ(all.size(), 2u);
  ASSERT_EQ(all[0].size(), 2u);
  EXPECT_EQ(all[0][0].candidate, "tight");
  EXPECT_EQ(Describe(all[0][0]), "holds");
  EXPECT_EQ(all[0][1].candidate, "loose");
  EXPECT_EQ(Describe(all[0][1]), "broken net.dns=FAIL");
  EXPECT_EQ(Describe(all[1][0]), "holds");
  EXPECT_EQ(Describe(all[1][1]), "broken res.cpu-loop=missing");  // interrupted: never a pass
  EXPECT_TRUE(JudgeCriteria(Matrix{}).empty());
}

}  // namespace
}  // namespace sandprobe::core
