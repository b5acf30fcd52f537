// TAP 14 and HTML reporters on every fixture, beyond the baselines: every TAP line is one the TAP
// 14 grammar allows where it stands (a line-by-line check written from the specification's
// grammar; the real consumer, node-tap's tap-parser, checks the baselines in the report.tap ctest),
// YAML blocks parse (yaml-cpp) back to the bounded text, ok/not ok follow the verdicts; the HTML
// parses as XML with only our own elements, one cell per row x arm with the matrix's verdicts.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <pugixml.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "report/fixtures_testing.h"
#include "report/reporters.h"
#include "report/text_clean.h"
#include "report/view.h"

namespace sandprobe::report {
namespace {

using fixtures::HostileMatrix;
using fixtures::NormalMatrix;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

struct Point {
  bool ok;
  size_t id;
  std::string description;  // unescaped
  std::string directive;    // "SKIP ...", "TODO ..." or ""
};

// A test point line (without indentation) per TAP 14: status, id, " - ", description with '\'
// and '#' escaped, then optionally " # SKIP|TODO reason". Returns false for anything else.
bool ParsePoint(const std::string& line, Point& p) {
  static const std::regex head(R"(^(not )?ok ([0-9]+) - (.*)$)");
  std::smatch mt;
  if (!std::regex_match(line, mt, head)) return false;
  p.ok = !mt[1].matched;
  p.id = std::stoul(mt[2]);
  const std::string rest = mt[3];
  p.description.clear();
  p.directive.clear();
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '\\' && i + 1 < rest.size() && (rest[i + 1] == '\\' || rest[i + 1] == '#')) {
      p.description += rest[++i];
    } else if (rest[i] == '#') {
      // The first unescaped '#' must open a directive: " # SKIP" or " # TODO".
      if (i == 0 || rest[i - 1] != ' ') return false;
      p.directive = rest.substr(i + 2);
      if (!rest.substr(i).starts_with("# SKIP") && !rest.substr(i).starts_with("# TODO")) {
        return false;
      }
      p.description.pop_back();  // the space before '#'
      return true;
    } else {
      p.description += rest[i];
    }
  }
  return true;
}

struct TapDoc {
  std::vector<Point> top;
  std::vector<std::vector<Point>> subtests;
  std::vector<YAML::Node> diags;  // every YAML block, in order
  bool bail_out = false;
};

// Checks the whole stream against the TAP 14 grammar as this reporter uses it; ADD_FAILURE names
// the offending line.
TapDoc CheckTap(const std::string& tap) {
  TapDoc doc;
  const auto lines = Lines(tap);
  EXPECT_FALSE(lines.empty());
  if (lines.empty()) return doc;
  EXPECT_EQ(lines[0], "TAP version 14");
  static const std::regex plan(R"(^1\.\.([0-9]+)( # .+)?$)");
  size_t top_plan = 0, sub_plan = 0;
  bool in_subtest = false, top_plan_seen = false;
  std::string subtest_name;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    const size_t indent = line.find_first_not_of(' ');
    const std::string body = indent == std::string::npos ? "" : line.substr(indent);
    std::smatch mt;
    Point p;
    if (body.starts_with("#")) {
      if (indent == 0 && body.starts_with("# Subtest: ")) {
        EXPECT_FALSE(in_subtest) << "line " << i + 1;
        in_subtest = true;
        subtest_name = body.substr(11);
        doc.subtests.emplace_back();
        sub_plan = 0;
      }
      continue;
    }
    if (body.starts_with("Bail out!") && indent == 0) {
      doc.bail_out = true;
      EXPECT_EQ(i + 1, lines.size()) << "Bail out! is the last line";
      continue;
    }
    if (std::regex_match(body, mt, plan)) {
      if (indent == 0) {
        EXPECT_FALSE(top_plan_seen) << "second plan at line " << i + 1;
        top_plan_seen = true;
        top_plan = std::stoul(mt[1]);
      } else {
        EXPECT_EQ(indent, 4u) << "line " << i + 1;
        EXPECT_TRUE(in_subtest) << "line " << i + 1;
        sub_plan = std::stoul(mt[1]);
      }
      continue;
    }
    if (ParsePoint(body, p) && (indent == 0 || indent == 4)) {
      if (indent == 4) {
        EXPECT_TRUE(in_subtest) << "line " << i + 1;
        if (!doc.subtests.empty()) doc.subtests.back().push_back(p);
      } else {
        if (in_subtest) {
          // The correlated point ends the subtest: same name, and its plan was kept.
          EXPECT_EQ(std::regex_replace(subtest_name, std::regex(R"(\\([\\#]))"), "$1"),
                    p.description)
              << "line " << i + 1;
          EXPECT_EQ(sub_plan, doc.subtests.back().size()) << "subtest plan at line " << i + 1;
          in_subtest = false;
        }
        doc.top.push_back(p);
      }
      // A YAML block, indented two more than its point, may follow.
      if (i + 1 < lines.size() && lines[i + 1] == std::string(indent + 2, ' ') + "---") {
        const std::string pad(indent + 2, ' ');
        std::string yaml;
        size_t j = i + 2;
        for (; j < lines.size() && lines[j] != pad + "..."; ++j) {
          EXPECT_TRUE(lines[j].starts_with(pad)) << "YAML line " << j + 1 << ": " << lines[j];
          yaml += lines[j].substr(std::min(pad.size(), lines[j].size())) + "\n";
        }
        EXPECT_LT(j, lines.size()) << "unterminated YAML block after line " << i + 1;
        try {
          doc.diags.push_back(YAML::Load(yaml));
        } catch (const YAML::Exception& e) {
          ADD_FAILURE() << "YAML block after line " << i + 1 << ": " << e.what() << "\n" << yaml;
        }
        i = j;
      }
      continue;
    }
    ADD_FAILURE() << "not a TAP 14 line at " << i + 1 << ": " << line;
  }
  EXPECT_FALSE(in_subtest) << "unterminated subtest";
  EXPECT_TRUE(top_plan_seen);
  EXPECT_EQ(top_plan, doc.top.size());
  for (size_t i = 0; i < doc.top.size(); ++i) EXPECT_EQ(doc.top[i].id, i + 1);
  return doc;
}

TEST(Tap, EveryFixtureFollowsTheGrammarAndTheVerdicts) {
  for (const auto& fixture : fixtures::Fixtures()) {
    SCOPED_TRACE(fixture.name);
    const core::Matrix m = fixture.make();
    const TapDoc doc = CheckTap(RenderTap(m));
    const auto candidates = CandidateArms(m);
    ASSERT_EQ(doc.subtests.size(), candidates.size());
    EXPECT_EQ(doc.bail_out, m.interrupted);
    bool all_ok = true;
    for (size_t a = 0; a < candidates.size(); ++a) {
      ASSERT_EQ(doc.subtests[a].size(), m.rows.size());
      bool arm_ok = true;
      for (size_t r = 0; r < m.rows.size(); ++r) {
        const core::Row& row = m.rows[r];
        const Point& p = doc.subtests[a][r];
        const core::VerdictCell* v = m.FindVerdict(row.probe, candidates[a]->name);
        const bool pass_or_skip = v != nullptr && (v->verdict.kind == core::VerdictKind::kPass ||
                                                   v->verdict.kind == core::VerdictKind::kSkip);
        EXPECT_EQ(p.ok, pass_or_skip) << row.probe;
        EXPECT_EQ(p.id, r + 1);
        // A PASS on the sandbox's word says so where a TAP consumer shows the point.
        EXPECT_EQ(p.description, OneLine(BoundedText(row.probe + ": " + row.label, 512)) +
                                     (OnSandboxWord(v) ? " (PASS on the sandbox's word)" : ""));
        const bool skip = v != nullptr && v->verdict.kind == core::VerdictKind::kSkip;
        EXPECT_EQ(p.directive.starts_with("SKIP"), skip) << row.probe;
        // TODO: "not ok, and not a failure": an advisory row, or a FAIL accepted by --expect.
        const bool accepted = v != nullptr && v->Accepted();
        EXPECT_EQ(p.directive.starts_with("TODO"),
                  !pass_or_skip && (row.level == core::Level::kAdvisory || accepted))
            << row.probe;
        if (!pass_or_skip && !accepted && row.level == core::Level::kRequired) arm_ok = false;
      }
      EXPECT_EQ(doc.top[a].ok, arm_ok);
      all_ok = all_ok && arm_ok;
    }
    // A TAP consumer's verdict on the stream equals the gate's.
    EXPECT_EQ(all_ok && !m.interrupted, core::RunExitCode(m) == 0);
    // Every point has its block: the points of the subtests plus one per arm.
    EXPECT_EQ(doc.diags.size(), candidates.size() * (m.rows.size() + 1));
  }
}

TEST(Tap, YamlRoundTripsHostileText) {
  const core::Matrix m = HostileMatrix();
  const TapDoc doc = CheckTap(RenderTap(m));
  ASSERT_FALSE(doc.diags.empty());
  const YAML::Node& first = doc.diags[0];
  ASSERT_TRUE(first.IsMap());
  EXPECT_EQ(first["verdict"].as<std::string>(), "FAIL");
  EXPECT_EQ(first["label"].as<std::string>(), BoundedText(m.rows[0].label, 256));
  EXPECT_EQ(first["candidate"].as<std::string>(), BoundedText(m.arms[1].name, 256));
  EXPECT_EQ(first["reason"].as<std::string>(), BoundedText(m.verdicts[0].verdict.reason, 1024));
  ASSERT_TRUE(first["observation"].IsMap());
  EXPECT_NE(first["observation"]["stderr excerpt"].as<std::string>().find("</details>"),
            std::string::npos);
  ASSERT_TRUE(first["controls"].IsSequence());
  EXPECT_EQ(first["controls"][0]["arm"].as<std::string>(), BoundedText(m.arms[0].name, 256));
}

// The page as XML (it is written so): only our own elements, whatever the sandbox printed.
TEST(Html, EveryFixtureParsesAndItsCellsAreTheMatrix) {
  for (const auto& fixture : fixtures::Fixtures()) {
    SCOPED_TRACE(fixture.name);
    const core::Matrix m = fixture.make();
    const std::string html = RenderHtml(m);
    pugi::xml_document doc;
    const pugi::xml_parse_result parsed =
        doc.load_string(html.c_str(), pugi::parse_default | pugi::parse_doctype);
    ASSERT_TRUE(parsed) << parsed.description() << " at " << parsed.offset << ": "
                        << html.substr(parsed.offset > 80 ? parsed.offset - 80 : 0, 160);
    EXPECT_FALSE(doc.select_node("//script"));
    EXPECT_FALSE(doc.select_node("//img"));
    EXPECT_FALSE(doc.select_node("//injected"));
    EXPECT_EQ(doc.select_nodes("//style").size(), 1u);
    EXPECT_EQ(doc.select_nodes("//link").size(), 0u);
    const pugi::xpath_node csp = doc.select_node("//meta[@http-equiv='Content-Security-Policy']");
    ASSERT_TRUE(csp);
    EXPECT_TRUE(std::string(csp.node().attribute("content").value())
                    .starts_with("default-src 'none'; style-src 'sha256-"));
    const auto arms = ColumnArms(m);
    const auto cells = doc.select_nodes("//td[@data-arm]");
    ASSERT_EQ(cells.size(), m.rows.size() * arms.size());
    EXPECT_EQ(doc.select_nodes("//td/details").size(), cells.size());
    size_t i = 0;
    for (const core::Row& row : m.rows) {
      for (const core::ArmInfo* arm : arms) {
        const pugi::xml_node td = cells[i++].node();
        EXPECT_EQ(std::string(td.attribute("data-probe").value()),
                  OneLine(BoundedText(row.probe, 256)));
        EXPECT_EQ(std::string(td.attribute("data-arm").value()),
                  OneLine(BoundedText(arm->name, 256)));
        const std::string verdict = td.attribute("data-verdict").value();
        const std::string shown = td.select_node(".//span[@class='verdict']").node().text().get();
        if (arm->role == core::ArmRole::kControl) {
          EXPECT_TRUE(verdict.empty());
          EXPECT_STREQ(td.attribute("class").value(), "cell control");
          continue;
        }
        const core::VerdictCell* v = m.FindVerdict(row.probe, arm->name);
        const std::string expected = v ? std::string(core::ToString(v->verdict.kind)) : "none";
        EXPECT_EQ(verdict, expected) << row.probe;
        // The shown text is what every format shows: ACCEPTED for an accepted FAIL.
        EXPECT_EQ(shown, v ? ShownVerdictText(v) : "no verdict");
        EXPECT_EQ(shown == "ACCEPTED", v != nullptr && v->Accepted()) << row.probe;
        std::string css = "v-" + expected;
        for (char& c : css) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        // A PASS on the sandbox's word is marked in the cell's class and data-evidence.
        EXPECT_EQ(std::string(td.attribute("class").value()),
                  "cell " + css + (OnSandboxWord(v) ? " word" : ""));
        EXPECT_EQ(std::string(td.attribute("data-evidence").value()),
                  OnSandboxWord(v) ? "sandbox_word" : "");
        EXPECT_EQ(static_cast<bool>(td.select_node(".//small[@class='word']")), OnSandboxWord(v));
      }
    }
    EXPECT_EQ(doc.select_nodes("//div[@class='banner']").size(),
              m.banners.size() + (m.interrupted ? 1 : 0));
  }
}

// A run's report adds "Where the time went": the cost line and an SVG bar per arm stacking its
// mean driver phases (runner phases left out), the widest bar the full width; names stay text.
// A fixture without cost has none of it (the baselines).
TEST(Html, CostChartOfARun) {
  core::Matrix m = fixtures::NormalMatrix();
  EXPECT_EQ(RenderHtml(m).find("<svg"), std::string::npos);
  ASSERT_GE(m.cells.size(), 2u);
  m.cost = core::RunCost{
      .wall_s = 20, .cpus = 2, .machine_cpu_s = 30, .harness_cpu_s = 0.2, .children_cpu_s = 10};
  core::Observation& a = m.cells[0].observation;
  a.timeline = {{"queued", 0, 1}, {"invoke", 1, 4}, {"create", 1, 2}, {"<b>wait</b>", 2, 4}};
  a.probe_cpu = core::CpuFigure{1.5, "the command's own cgroup"};
  core::Observation& b = m.cells[1].observation;
  ASSERT_NE(a.arm, b.arm);
  b.timeline = {{"queued", 0, 2}, {"invoke", 2, 3.5}, {"create", 2, 3.5}};
  const std::string html = RenderHtml(m);
  EXPECT_NE(html.find("machine CPU 30.0 s on 2 CPUs (floor 15.0 s)"), std::string::npos);
  EXPECT_NE(html.find("probes' own CPU 1.5 s (1 of"), std::string::npos);
  EXPECT_EQ(html.find("<b>wait"), std::string::npos);
  b.probe_cpu = core::CpuFigure{0.5, "at least: wait4 rusage"};  // one lower bound: the sum is one
  EXPECT_NE(RenderHtml(m).find("probes' own CPU at least 2.0 s (2 of"), std::string::npos);
  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_string(html.c_str(), pugi::parse_default | pugi::parse_doctype));
  const pugi::xpath_node_set bars = doc.select_nodes("//svg/g");
  ASSERT_EQ(bars.size(), 2u);
  const pugi::xml_node first = bars[0].node();
  EXPECT_EQ(std::string(first.attribute("data-arm").value()), a.arm);
  const pugi::xpath_node_set rects = first.select_nodes("rect");
  ASSERT_EQ(rects.size(), 2u);  // create and wait; queued and invoke are not drawn
  EXPECT_EQ(std::string(rects[1].node().attribute("data-phase").value()), "<b>wait</b>");
  EXPECT_DOUBLE_EQ(rects[0].node().attribute("width").as_double() +
                       rects[1].node().attribute("width").as_double(),
                   480.0);  // 3 s, the widest
  const pugi::xml_node second = bars[1].node();
  EXPECT_DOUBLE_EQ(second.select_node("rect").node().attribute("width").as_double(), 240.0);
}

// A re-read report with many distinct phase names and durations that are not finite still draws
// a bounded chart: twelve phases and "other", nothing infinite or NaN.
TEST(Html, CostChartIsBoundedOnAHostileReport) {
  core::Matrix m = fixtures::NormalMatrix();
  m.cost = core::RunCost{.wall_s = 1, .cpus = 2, .machine_cpu_s = 1};
  core::Observation& o = m.cells[0].observation;
  for (int i = 0; i < 40; ++i) o.timeline.push_back({fmt::format("p{}", i), 0, 0.5});
  o.timeline.push_back({"boom", -1e308, 1e308});
  o.timeline.push_back({"p1", 0, std::nan("")});
  const std::string html = RenderHtml(m);
  for (const char* bad : {"=\"nan", "=\"inf", "=\"-nan", "nan s", "inf s"}) {
    EXPECT_EQ(html.find(bad), std::string::npos) << bad;
  }
  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_string(html.c_str(), pugi::parse_default | pugi::parse_doctype));
  EXPECT_EQ(doc.select_nodes("//svg/g/rect").size(), 13u);
  EXPECT_NE(doc.select_node("//svg/g/rect[@data-phase='other']").node(), pugi::xml_node());
}

TEST(Html, HostileMarkupStaysText) {
  const core::Matrix m = HostileMatrix();
  const std::string html = RenderHtml(m);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<!--"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_string(html.c_str(), pugi::parse_default | pugi::parse_doctype));
  // The banner's text is the bounded, cleaned banner: markup in it arrived as characters.
  const std::string banner = doc.select_node("//div[@class='banner']").node().text().get();
  EXPECT_EQ(banner, BoundedText(m.banners[0], 1024));
}

}  // namespace
}  // namespace sandprobe::report
