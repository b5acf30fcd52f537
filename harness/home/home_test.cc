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

  fs::path dir_;
  Home home_;
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
  auto spec = RunSpecFrom(home_, r);
  ASSERT_TRUE(spec.has_value()) << spec.error().message;
  ASSERT_EQ(spec->options.candidates.size(), 1u);
  EXPECT_EQ(spec->options.candidates[0].name, "bubblewrap");
  ASSERT_EQ(spec->options.controls.size(), 1u);
  EXPECT_EQ(spec->options.controls[0].name, "local");
  EXPECT_EQ(spec->options.suite.source_path, (kRoot / "suites/default.yaml").string());
  EXPECT_TRUE(spec->options.canary_dir.is_absolute());
  EXPECT_EQ(spec->options.probes.size(), home_.probes.size());
  EXPECT_EQ(spec->options.preamble, home_.preamble);
  EXPECT_TRUE(static_cast<bool>(spec->options.make_driver));
  EXPECT_TRUE(spec->warnings.empty());
}

TEST_F(HomeTest, CandidatesSharingAControlRunItOnceAndAGivenControlIsNotLookedUp) {
  RunRequest r;
  r.sandboxes = {(kRoot / "manifests/bubblewrap.yaml").string(),
                 (kRoot / "manifests/bubblewrap-bounded.yaml").string()};
  auto shared = RunSpecFrom(home_, r);
  ASSERT_TRUE(shared.has_value()) << shared.error().message;
  EXPECT_EQ(shared->options.candidates.size(), 2u);
  EXPECT_EQ(shared->options.controls.size(), 1u);
  r.controls = {(kRoot / "manifests/local.yaml").string()};
  r.sandboxes = {Write("nocontrol.yaml", "name: lonely\ndriver: local\n")};
  auto given = RunSpecFrom(home_, r);
  ASSERT_TRUE(given.has_value()) << given.error().message;
  EXPECT_TRUE(given->warnings.empty());
  EXPECT_EQ(given->options.controls.at(0).name, "local");
}

TEST_F(HomeTest, ACandidateWithoutControlIsAWarningNotAnError) {
  RunRequest r;
  r.sandboxes = {Write("nocontrol.yaml", "name: lonely\ndriver: local\n")};
  auto spec = RunSpecFrom(home_, r);
  ASSERT_TRUE(spec.has_value()) << spec.error().message;
  ASSERT_EQ(spec->warnings.size(), 1u);
  EXPECT_NE(spec->warnings[0].find("names no control"), std::string::npos);
  EXPECT_TRUE(spec->options.controls.empty());
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
    auto spec = RunSpecFrom(home_, r);
    ASSERT_FALSE(spec.has_value()) << c.want;
    EXPECT_NE(spec.error().message.find(c.want), std::string::npos) << spec.error().message;
  }
}

}  // namespace
}  // namespace sandprobe::home
