// TextReporter streaming behaviour: header once, rows in completion order, control cell chosen by
// params_key, colours, cell caps and wrapping.
#include <gtest/gtest.h>

#include <sstream>

#include "report/fixtures_testing.h"
#include "report/reporters.h"

namespace sandprobe::report {
namespace {

using fixtures::NormalMatrix;

size_t Count(const std::string& s, std::string_view needle) {
  size_t n = 0;
  for (size_t pos = s.find(needle); pos != std::string::npos; pos = s.find(needle, pos + 1)) ++n;
  return n;
}

TEST(TextReporter, StreamsRowsInCompletionOrder) {
  const core::Matrix full = NormalMatrix();
  core::Matrix m = full;
  m.cells.clear();
  m.verdicts.clear();
  std::ostringstream out;
  TextReporter reporter(out, {});
  reporter.Begin(m);  // arms and rows known, no cells yet
  const std::string header = out.str();
  EXPECT_NE(header.find("local (control)"), std::string::npos);
  EXPECT_EQ(header.find("REACHED"), std::string::npos);

  m.cells = full.cells;
  m.verdicts = full.verdicts;
  reporter.RowDone(m, "net.https-ip");
  reporter.RowDone(m, "net.dns");
  reporter.RowDone(m, "no.such-probe");  // prints nothing
  reporter.End(m);
  const std::string text = out.str();
  const size_t https = text.find("https by ip"), dns = text.find("\ndns ");
  ASSERT_NE(https, std::string::npos);
  ASSERT_NE(dns, std::string::npos);
  EXPECT_LT(https, dns);
  EXPECT_EQ(Count(text, "local (control)"), 1u);
  EXPECT_NE(text.find("exit code 1"), std::string::npos);
}

TEST(TextReporter, ControlShowsTheCellMatchingTheCandidateParams) {
  const std::string text = RenderText(NormalMatrix(), {});
  EXPECT_NE(text.find("ALLOCATED 128 MiB"), std::string::npos);
  EXPECT_EQ(text.find("ALLOCATED 256 MiB"), std::string::npos);
}

TEST(TextReporter, SummaryListsNonPassingVerdictsOnly) {
  const std::string text = RenderText(NormalMatrix(), {});
  EXPECT_NE(text.find("bubblewrap: 1 PASS, 1 FAIL, 1 INCONCLUSIVE, 1 SKIP, 1 ERROR"),
            std::string::npos);
  EXPECT_NE(text.find("fs.write-home  bubblewrap  FAIL  candidate exposed"), std::string::npos);
  EXPECT_NE(text.find("res.memory-balloon  bubblewrap  INCONCLUSIVE (advisory)"),
            std::string::npos);
  EXPECT_EQ(text.find("net.dns  bubblewrap  PASS"), std::string::npos);
  EXPECT_EQ(text.find("k8s.admission-privileged  bubblewrap  SKIP"), std::string::npos);
  EXPECT_NE(text.find("--bind $HOME $HOME"), std::string::npos);  // weakened isolation shown
}

TEST(TextReporter, ColoursVerdictsAndExposedControls) {
  const std::string plain = RenderText(NormalMatrix(), {.color = false});
  EXPECT_EQ(plain.find('\x1b'), std::string::npos);
  const std::string color = RenderText(NormalMatrix(), {.color = true});
  EXPECT_NE(color.find("\x1b[32mPASS\x1b[0m"), std::string::npos);
  EXPECT_NE(color.find("\x1b[31mFAIL\x1b[0m"), std::string::npos);
  EXPECT_NE(color.find("\x1b[33mINCONCLUSIVE\x1b[0m"), std::string::npos);
  EXPECT_NE(color.find("\x1b[33mERROR\x1b[0m"), std::string::npos);
  EXPECT_NE(color.find("\x1b[2mSKIP\x1b[0m"), std::string::npos);
  EXPECT_NE(color.find("\x1b[1mREACHED\x1b[0m"), std::string::npos);
}

TEST(TextReporter, CapsCellsAndWrapsSummaryLines) {
  core::Matrix m = NormalMatrix();
  m.cells[0].classification.label = std::string(60, 'L');
  m.verdicts[1].verdict.reason = std::string(30, 'w') + " " + std::string(300, 'r');
  const std::string text = RenderText(m, {.color = false, .width = 60});
  EXPECT_NE(text.find(std::string(27, 'L') + "\xe2\x80\xa6"), std::string::npos);
  EXPECT_EQ(text.find(std::string(28, 'L')), std::string::npos);
  std::istringstream lines(text.substr(text.find("not passing")));
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("exit code")) break;  // the exit line is fixed text
    EXPECT_LE(line.size(), 60u) << line;
  }
}

}  // namespace
}  // namespace sandprobe::report
