#include "core/trials.h"

#include <gtest/gtest.h>

#include "core/verdict.h"

namespace sandprobe::core {
namespace {

Cell Trial(Exposure e, std::string label, Ending ending = Ending::kExited) {
  static int n = 0;
  Cell c;
  c.observation.probe = "net.dns";
  c.observation.arm = "cand";
  c.observation.invocation = "t" + std::to_string(n++);
  c.observation.params_key = "{}";
  c.observation.ending = ending;
  c.classification = {e, e == Exposure::kUnknown ? Evidence::kNone : Evidence::kPositive, label,
                      "why " + label};
  return c;
}

constexpr Exposure kX = Exposure::kExposed, kC = Exposure::kContained, kU = Exposure::kUnknown;

TEST(TrialsTest, ShownTrialCountsAndFlakyTable) {
  struct Case {
    std::vector<Cell> trials;
    std::string shown_label;  // the trial the matrix shows (and judge() sees)
    bool flaky;
    std::string counts;
  };
  const std::vector<Case> cases = {
      {{Trial(kC, "blocked")}, "blocked", false, ""},
      {{Trial(kC, "blocked"), Trial(kC, "blocked"), Trial(kC, "blocked")},
       "blocked",
       false,
       "blocked 3/3"},
      // One leak in five: the leak is shown, whatever its position.
      {{Trial(kC, "blocked"), Trial(kC, "blocked"), Trial(kX, "REACHED"), Trial(kC, "blocked"),
        Trial(kC, "blocked")},
       "REACHED",
       true,
       "blocked 4/5, REACHED 1/5"},
      {{Trial(kX, "REACHED"), Trial(kC, "blocked")}, "REACHED", true, "REACHED 1/2, blocked 1/2"},
      // A harness failure beats missing evidence beats containment; a leak beats them all.
      {{Trial(kC, "blocked"), Trial(kU, "no result"), Trial(kU, "error", Ending::kHarnessError)},
       "error",
       true,
       "blocked 1/3, no result 1/3, error 1/3"},
      {{Trial(kU, "error", Ending::kHarnessError), Trial(kX, "REACHED")},
       "REACHED",
       true,
       "error 1/2, REACHED 1/2"},
      {{Trial(kC, "blocked"), Trial(kU, "no result")},
       "no result",
       true,
       "blocked 1/2, no result 1/2"},
      // Same label, other exposure: still flaky.
      {{Trial(kC, "exit 1"), Trial(kU, "exit 1")}, "exit 1", true, "exit 1 2/2"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const size_t n = c.trials.size();
    const Cell cell = AggregateTrials(c.trials);
    EXPECT_EQ(cell.classification.label, c.shown_label) << "case " << i;
    EXPECT_EQ(Flaky(cell), c.flaky) << "case " << i;
    EXPECT_EQ(TrialCounts(cell), c.counts) << "case " << i;
    EXPECT_EQ(cell.trials.size(), n == 1 ? 0u : n) << "case " << i;
    for (size_t t = 0; t < cell.trials.size(); ++t) {
      EXPECT_EQ(cell.trials[t].invocation, c.trials[t].observation.invocation) << "case " << i;
    }
  }
  EXPECT_EQ(AggregateTrials({}).observation.ending, Ending::kNotRun);
}

// One leak in N is a FAIL; a control exposed in one trial validates the row.
TEST(TrialsTest, JudgedOnTheAggregate) {
  ProbeDescriptor probe;
  probe.id = "net.dns";
  Cell control =
      AggregateTrials({Trial(kC, "blocked"), Trial(kX, "REACHED"), Trial(kC, "blocked")});
  control.observation.arm = "ctl";
  const ArmView controls[] = {{"ctl", &control.observation, control.classification}};
  const Cell leaky =
      AggregateTrials({Trial(kC, "blocked"), Trial(kC, "blocked"), Trial(kX, "REACHED")});
  EXPECT_EQ(Judge(probe, controls, {"cand", &leaky.observation, leaky.classification}).kind,
            VerdictKind::kFail);
  const Cell tight = AggregateTrials({Trial(kC, "blocked"), Trial(kC, "blocked")});
  const Verdict pass = Judge(probe, controls, {"cand", &tight.observation, tight.classification});
  EXPECT_EQ(pass.kind, VerdictKind::kPass);
  EXPECT_EQ(pass.validated_by, "ctl");
  const Cell blind = AggregateTrials({Trial(kC, "blocked"), Trial(kC, "blocked")});
  const ArmView blind_controls[] = {{"ctl", &blind.observation, blind.classification}};
  EXPECT_EQ(Judge(probe, blind_controls, {"cand", &tight.observation, tight.classification}).kind,
            VerdictKind::kInconclusive);
}

}  // namespace
}  // namespace sandprobe::core
