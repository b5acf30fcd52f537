#include "core/matrix.h"

#include <gtest/gtest.h>

namespace sandprobe::core {
namespace {

Matrix WithVerdicts(std::vector<std::pair<VerdictKind, Level>> vs) {
  Matrix m;
  int i = 0;
  for (auto [v, level] : vs) {
    const std::string id = "p" + std::to_string(i++);
    m.rows.push_back({id, id, level});
    m.verdicts.push_back({id, "cand", Verdict{v, "r", "", Evidence::kNone}});
  }
  return m;
}

TEST(MatrixTest, ExitCodeTable) {
  using V = VerdictKind;
  using L = Level;
  EXPECT_EQ(RunExitCode(WithVerdicts({})), 0);
  EXPECT_EQ(RunExitCode(WithVerdicts({{V::kPass, L::kRequired}, {V::kSkip, L::kRequired}})), 0);
  EXPECT_EQ(RunExitCode(WithVerdicts({{V::kFail, L::kRequired}, {V::kError, L::kRequired}})), 1);
  EXPECT_EQ(RunExitCode(WithVerdicts({{V::kPass, L::kRequired}, {V::kInconclusive, L::kRequired}})),
            2);
  EXPECT_EQ(RunExitCode(WithVerdicts({{V::kError, L::kRequired}})), 2);
  EXPECT_EQ(RunExitCode(WithVerdicts({{V::kFail, L::kAdvisory}, {V::kPass, L::kRequired}})), 0);
  EXPECT_EQ(RunExitCode(WithVerdicts({{V::kInconclusive, L::kAdvisory}})), 0);
  Matrix interrupted = WithVerdicts({{V::kPass, L::kRequired}});
  interrupted.interrupted = true;
  EXPECT_EQ(RunExitCode(interrupted), 2);
}

TEST(MatrixTest, FindMatchesParamsKey) {
  Matrix m;
  Cell a, b;
  a.observation.probe = b.observation.probe = "res.memory-balloon";
  a.observation.arm = b.observation.arm = "local";
  a.observation.params_key = "A";
  b.observation.params_key = "B";
  m.cells = {a, b};
  EXPECT_EQ(m.Find("res.memory-balloon", "local", "B")->observation.params_key, "B");
  EXPECT_EQ(m.Find("res.memory-balloon", "local")->observation.params_key, "A");
  EXPECT_EQ(m.Find("res.memory-balloon", "other"), nullptr);
}

}  // namespace
}  // namespace sandprobe::core
