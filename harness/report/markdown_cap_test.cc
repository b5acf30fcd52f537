// matrix.md as a tracker comment: summary and matrix first, evidence per row in <details>, at most
// kCommentMaxBytes (GitHub's comment limit is 65,536 characters) with the rest in matrix-full.md.
// A large synthetic run (many rows, long stderr) must be cut, keep its FAIL evidence, and say
// where the rest is; a report that fits is not cut.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "report/fixtures_testing.h"
#include "report/reporters.h"

namespace sandprobe::report {
namespace {

using core::Evidence;
using core::Exposure;
using core::VerdictKind;

// `rows` rows, one candidate and one control; every 7th row FAILs, every 5th is INCONCLUSIVE, the
// rest PASS; every candidate cell carries `stderr_bytes` of stderr.
core::Matrix LargeMatrix(size_t rows, size_t stderr_bytes) {
  core::Matrix m = fixtures::MakeMatrix("20250301T120000Z-big", "5e0c1d", "big",
                                        "2025-03-01T12:10:00Z", {"a large synthetic run"});
  m.arms.push_back({"cand", core::ArmRole::kCandidate, "command", "", "m.yaml", {}, "local", {}});
  m.arms.push_back({"local", core::ArmRole::kControl, "local", "", "", {}, "", {}});
  for (size_t i = 0; i < rows; ++i) {
    const std::string probe = fmt::format("synthetic.row-{:04}", i);
    m.rows.push_back({probe, fmt::format("row {}", i), core::Level::kRequired});
    m.cells.push_back(
        fixtures::MakeCell(probe, "local", nlohmann::json::object(),
                           {Exposure::kExposed, Evidence::kPositive, "REACHED", "canary hit"}));
    const VerdictKind kind = i % 7 == 3   ? VerdictKind::kFail
                             : i % 5 == 1 ? VerdictKind::kInconclusive
                                          : VerdictKind::kPass;
    core::Cell cell = fixtures::MakeCell(
        probe, "cand", nlohmann::json::object(),
        {kind == VerdictKind::kFail ? Exposure::kExposed : Exposure::kContained,
         Evidence::kPositive, kind == VerdictKind::kFail ? "REACHED" : "blocked", "reason"});
    cell.observation.stderr_head = std::string(stderr_bytes, 'e');
    cell.observation.stderr_bytes = stderr_bytes;
    m.cells.push_back(std::move(cell));
    m.verdicts.push_back(fixtures::MakeVerdict(probe, "cand", kind, "because", "local"));
  }
  return m;
}

size_t Count(const std::string& text, std::string_view needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

TEST(MarkdownComment, AReportThatFitsIsNotCut) {
  for (const auto& fixture : fixtures::Fixtures()) {
    const core::Matrix m = fixture.make();
    EXPECT_EQ(RenderMarkdown(m), RenderMarkdownFull(m)) << fixture.name;
    EXPECT_EQ(RenderMarkdown(m).find("matrix-full.md"), std::string::npos);
  }
}

TEST(MarkdownComment, SummaryAndMatrixComeBeforeTheEvidence) {
  const std::string md = RenderMarkdown(fixtures::NormalMatrix());
  const size_t summary = md.find("**Summary:**");
  const size_t table = md.find("| probe |");
  const size_t evidence = md.find("<details>");
  ASSERT_NE(summary, std::string::npos);
  ASSERT_NE(table, std::string::npos);
  ASSERT_NE(evidence, std::string::npos);
  EXPECT_LT(summary, table);
  EXPECT_LT(table, md.find("- suite:"));
  EXPECT_LT(md.find("- suite:"), evidence);
}

TEST(MarkdownComment, LargeReportIsCutWithAPointerAndKeepsFailsFirst) {
  const core::Matrix m = LargeMatrix(400, 1500);
  const std::string full = RenderMarkdownFull(m);
  const std::string comment = RenderMarkdown(m);
  ASSERT_GT(full.size(), 4 * kCommentMaxBytes) << "the synthetic run must not fit";
  EXPECT_LE(comment.size(), kCommentMaxBytes);
  EXPECT_LT(kCommentMaxBytes, 65536u);
  // The pointer line comes right after the summary, before the matrix.
  const size_t pointer = comment.find("`matrix-full.md` beside this file");
  ASSERT_NE(pointer, std::string::npos);
  EXPECT_LT(comment.find("**Summary:**"), pointer);
  EXPECT_LT(pointer, comment.find("| probe |"));
  EXPECT_NE(comment.find(fmt::format("({} bytes)", full.size())), std::string::npos);
  // The whole matrix is there: one table line per row.
  EXPECT_EQ(Count(comment, "\n| row "), m.rows.size());
  // Every <details> opened is closed; the full file has one per row.
  const size_t shown = Count(comment, "<details>");
  EXPECT_EQ(shown, Count(comment, "</details>"));
  EXPECT_EQ(Count(full, "<details>"), m.rows.size());
  EXPECT_GT(shown, 0u);
  EXPECT_LT(shown, m.rows.size());
  EXPECT_NE(comment.find(fmt::format("evidence of {} of {} rows", shown, m.rows.size())),
            std::string::npos);
  // FAIL rows come first: the 58 FAIL blocks (~3.5 KB each) do not all fit, so nearly every
  // block shown is a FAIL (one smaller block may still fill the rest).
  size_t fails_shown = 0;
  for (const core::VerdictCell& v : m.verdicts) {
    if (v.verdict.kind != VerdictKind::kFail) continue;
    fails_shown += comment.find("<details><summary>" + v.probe + " ") != std::string::npos;
  }
  EXPECT_GE(fails_shown + 1, shown);
  EXPECT_GE(fails_shown, 10u);
  // The rows left out are named.
  const size_t list = comment.find("Evidence left out here (in `matrix-full.md`): ");
  ASSERT_NE(list, std::string::npos);
  EXPECT_EQ(Count(comment.substr(list), "`synthetic.row-"), m.rows.size() - shown);
}

TEST(MarkdownComment, EveryFailRowIsKeptWhenTheyFit) {
  const core::Matrix m = LargeMatrix(120, 200);
  const std::string comment = RenderMarkdown(m);
  ASSERT_GT(RenderMarkdownFull(m).size(), kCommentMaxBytes);
  EXPECT_LE(comment.size(), kCommentMaxBytes);
  size_t fails = 0, others = 0;
  for (const core::VerdictCell& v : m.verdicts) {
    const bool shown = comment.find("<details><summary>" + v.probe + " ") != std::string::npos;
    if (v.verdict.kind == VerdictKind::kFail) {
      EXPECT_TRUE(shown) << v.probe;
      ++fails;
    } else {
      others += shown;
    }
  }
  EXPECT_EQ(fails, 17u);
  EXPECT_GT(others, 0u);  // the room left is used
  // Shown in suite order.
  EXPECT_LT(comment.find("<details><summary>synthetic.row-0003 "),
            comment.find("<details><summary>synthetic.row-0010 "));
}

// A PASS row's evidence is what shows the sandbox holds: a cut comment leaves out the rows every
// candidate SKIPped before any PASS row, wherever the SKIP rows sit in the suite.
TEST(MarkdownComment, SkipRowsAreLeftOutBeforePassRows) {
  core::Matrix m = LargeMatrix(40, 1000);
  std::set<std::string> skipped;
  for (core::VerdictCell& v : m.verdicts) {
    if (skipped.size() < 6 && v.verdict.kind == VerdictKind::kPass) {
      v.verdict.kind = VerdictKind::kSkip;
      skipped.insert(v.probe);
    }
  }
  const std::string full = RenderMarkdownFull(m);
  const std::string comment = RenderMarkdownComment(m, full.size() - 3000);
  const size_t list = comment.find("Evidence left out here (in `matrix-full.md`): ");
  ASSERT_NE(list, std::string::npos);
  size_t left_out = 0;
  for (const core::VerdictCell& v : m.verdicts) {
    const bool shown = comment.find("<details><summary>" + v.probe + " ") != std::string::npos;
    if (!shown) {
      ++left_out;
      EXPECT_TRUE(skipped.contains(v.probe)) << v.probe << " left out, a SKIP row kept instead";
    }
  }
  EXPECT_GE(left_out, 2u);
}

TEST(MarkdownComment, AnyCapIsKept) {
  const core::Matrix m = LargeMatrix(400, 1500);
  for (const size_t cap : {2000, 10000, 30000, 64000}) {
    const std::string comment = RenderMarkdownComment(m, cap);
    EXPECT_LE(comment.size(), cap);
    EXPECT_NE(comment.find("matrix-full.md"), std::string::npos) << cap;
    EXPECT_EQ(Count(comment, "<details>"), Count(comment, "</details>")) << cap;
  }
  // The hostile run cut small stays balanced and pointed too.
  const std::string hostile = RenderMarkdownComment(fixtures::HostileMatrix(), 8000);
  EXPECT_LE(hostile.size(), 8000u);
  EXPECT_NE(hostile.find("matrix-full.md"), std::string::npos);
}

}  // namespace
}  // namespace sandprobe::report
