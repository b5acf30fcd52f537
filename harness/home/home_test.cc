// RunSpecFrom as a function of files: the repository's own home (probes/, suites/, manifests/)
// and small files written per test.
#include "home/home.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

namespace sandprobe::home {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = SANDPROBE_SOURCE_ROOT;

class HomeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sandprobe-home-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto home = OpenHome(kRoot);
    ASSERT_TRUE(home.has_value()) << home.error().message;
    home_ = std::move(*home);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }

  // RunSpecFrom, keeping what it warned about in warnings_.
  std::expected<runner::RunOptions, HomeError> Spec(const RunRequest& r) {
    warnings_.clear();
    return RunSpecFrom(home_, r, [this](const std::string& w) { warnings_.push_back(w); });
  }

  fs::path dir_;
  Home home_;
  std::vector<std::string> warnings_;
};

TEST_F(HomeTest, OpensTheTreeOnceWithItsProbesAndPreamble) {
  EXPECT_GT(home_.probes.size(), 40u);
  EXPECT_NE(home_.preamble.find("def "), std::string::npos);
  EXPECT_EQ(home_.DefaultSuite(), kRoot / "suites/default.yaml");
}

TEST_F(HomeTest, AHomeWithoutProbesOrPreambleIsAnErrorWithAHint) {
  auto none = OpenHome(dir_ / "nowhere");
  ASSERT_FALSE(none.has_value());
  EXPECT_FALSE(none.error().message.empty());
  EXPECT_EQ(none.error().hint, "pass --home or set SANDPROBE_HOME to the tree");
  fs::create_directories(dir_ / "bare/probes/lib");
  auto bare = OpenHome(dir_ / "bare");
  ASSERT_FALSE(bare.has_value());
  EXPECT_EQ(bare.error().message, (dir_ / "bare/probes/lib/preamble.py").string() + " is missing");
}

TEST_F(HomeTest, DefaultsAreTheHomesSuiteAndBubblewrapWithItsControlFoundByName) {
  RunRequest r;
  r.canary_dir = "relative/canary";
  auto spec = Spec(r);
  ASSERT_TRUE(spec.has_value()) << spec.error().message;
  ASSERT_EQ(spec->candidates.size(), 1u);
  EXPECT_EQ(spec->candidates[0].name, "bubblewrap");
  ASSERT_EQ(spec->controls.size(), 1u);
  EXPECT_EQ(spec->controls[0].name, "local");
  EXPECT_EQ(spec->suite.source_path, (kRoot / "suites/default.yaml").string());
  EXPECT_TRUE(spec->canary_dir.is_absolute());
  EXPECT_EQ(spec->probes.size(), home_.probes.size());
  EXPECT_EQ(spec->preamble, home_.preamble);
  EXPECT_TRUE(static_cast<bool>(spec->make_driver));
  EXPECT_TRUE(warnings_.empty());
}

TEST_F(HomeTest, CandidatesSharingAControlRunItOnceAndAGivenControlIsNotLookedUp) {
  RunRequest r;
  r.sandboxes = {(kRoot / "manifests/bubblewrap.yaml").string(),
                 (kRoot / "manifests/bubblewrap-bounded.yaml").string()};
  auto shared = Spec(r);
  ASSERT_TRUE(shared.has_value()) << shared.error().message;
  EXPECT_EQ(shared->candidates.size(), 2u);
  EXPECT_EQ(shared->controls.size(), 1u);
  r.controls = {(kRoot / "manifests/local.yaml").string()};
  r.sandboxes = {Write("nocontrol.yaml", "name: lonely\ndriver: local\n")};
  auto given = Spec(r);
  ASSERT_TRUE(given.has_value()) << given.error().message;
  EXPECT_TRUE(warnings_.empty());
  EXPECT_EQ(given->controls.at(0).name, "local");
}

TEST_F(HomeTest, ACandidateWithoutControlIsAWarningNotAnError) {
  RunRequest r;
  r.sandboxes = {Write("nocontrol.yaml", "name: lonely\ndriver: local\n")};
  auto spec = Spec(r);
  ASSERT_TRUE(spec.has_value()) << spec.error().message;
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("names no control"), std::string::npos);
  EXPECT_TRUE(spec->controls.empty());
  // Heard when found, even when a later file stops the run.
  r.sandboxes.push_back((dir_ / "absent.yaml").string());
  EXPECT_FALSE(Spec(r).has_value());
  EXPECT_EQ(warnings_.size(), 1u);
}

TEST_F(HomeTest, ErrorsNameTheFile) {
  struct Case {
    std::string suite, sandbox, want;
  } cases[] = {
      {"", (dir_ / "absent.yaml").string(), "absent.yaml"},
      {Write("suite.yaml", "name: s\nprobes:\n  - id: no.such-probe\n"), "", "no.such-probe"},
      {"", Write("badcontrol.yaml", "name: c\ndriver: local\ncontrol: nowhere-at-all\n"),
       "control 'nowhere-at-all'"},
  };
  for (const Case& c : cases) {
    RunRequest r;
    r.suite = c.suite;
    if (!c.sandbox.empty()) r.sandboxes = {c.sandbox};
    auto spec = Spec(r);
    ASSERT_FALSE(spec.has_value()) << c.want;
    EXPECT_NE(spec.error().message.find(c.want), std::string::npos) << spec.error().message;
  }
}

}  // namespace
}  // namespace sandprobe::home
