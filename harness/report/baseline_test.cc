// Approved baselines: every fixture (fixtures_testing.h) rendered by every reporter must equal
// reports/baselines/<fixture>.<ext> byte for byte.
//
// To approve an intended change, rewrite the baselines and review them by eye:
//   SANDPROBE_UPDATE_BASELINES=1 ./report_test --gtest_filter='Baselines/*'
//   git diff reports/baselines
// With SANDPROBE_UPDATE_BASELINES=1 these tests write the files instead of comparing (and pass).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "report/fixtures_testing.h"
#include "report/formats.h"
#include "report/reporters.h"

namespace sandprobe::report {
namespace fixtures {
// Test names and failure messages show the fixture name instead of the struct's bytes.
void PrintTo(const Fixture& f, std::ostream* os) { *os << f.name; }
}  // namespace fixtures
namespace {

// The baseline's extension: that of the format's file (matrix.txt -> txt, junit.xml -> xml).
std::string_view Ext(const Format* f) { return f->file.substr(f->file.rfind('.') + 1); }

std::vector<const Format*> AllFormats() {
  std::vector<const Format*> out;
  for (const Format& f : Formats()) out.push_back(&f);
  return out;
}

bool UpdateRequested() {
  const char* v = std::getenv("SANDPROBE_UPDATE_BASELINES");
  return v != nullptr && std::string_view(v) == "1";
}

// 1-based number of the first line where a and b differ, with both lines (cut for the message).
std::string FirstDifference(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ha = static_cast<bool>(std::getline(sa, la));
    const bool hb = static_cast<bool>(std::getline(sb, lb));
    if (!ha && !hb) return "outputs differ only in the final newline";
    if (!ha || !hb || la != lb) {
      return fmt::format("line {}:\n  baseline: {}\n  actual:   {}", line,
                         ha ? la.substr(0, 200) : "<end of file>",
                         hb ? lb.substr(0, 200) : "<end of file>");
    }
  }
}

class Baselines : public ::testing::TestWithParam<std::tuple<fixtures::Fixture, const Format*>> {};

TEST_P(Baselines, MatchApproved) {
  const auto& [fixture, format] = GetParam();
  const std::string actual = format->render(fixture.make(), TextOptions{});
  const std::string path =
      fmt::format("{}/{}.{}", SANDPROBE_BASELINE_DIR, fixture.name, Ext(format));
  if (UpdateRequested()) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << actual;
    ASSERT_TRUE(out.good()) << "cannot write " << path;
    std::cout << "[ baseline ] wrote " << path << "\n";
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in.good()) << "missing baseline " << path
                         << " (create it with SANDPROBE_UPDATE_BASELINES=1)";
  const std::string expected{std::istreambuf_iterator<char>(in), {}};
  EXPECT_TRUE(actual == expected)
      << path << " differs at " << FirstDifference(expected, actual)
      << "\nIf the change is intended: SANDPROBE_UPDATE_BASELINES=1 ./report_test, then review "
         "the diff.";
}

INSTANTIATE_TEST_SUITE_P(All, Baselines,
                         ::testing::Combine(::testing::ValuesIn(fixtures::Fixtures()),
                                            ::testing::ValuesIn(AllFormats())),
                         [](const auto& info) {
                           return fmt::format("{}_{}", std::get<0>(info.param).name,
                                              Ext(std::get<1>(info.param)));
                         });

}  // namespace
}  // namespace sandprobe::report
