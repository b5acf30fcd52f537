// Structural checks on every fixture, beyond the byte-for-byte baselines: the JUnit XML parses and
// its counts add up, the JSON parses with its required fields, the hostile Markdown table keeps
// its shape, no control byte survives in text/Markdown/XML, and hostile outputs stay small.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <pugixml.hpp>
#include <sstream>
#include <string>

#include "core/output.h"
#include "report/fixtures_testing.h"
#include "report/reporters.h"

namespace sandprobe::report {
namespace {

using fixtures::HostileMatrix;
using fixtures::NormalMatrix;

size_t Attr(pugi::xml_node n, const char* name) { return n.attribute(name).as_ullong(); }

void ExpectJunitCountsAddUp(const std::string& xml, size_t tests, size_t failures, size_t errors,
                            size_t skipped) {
  pugi::xml_document doc;
  const pugi::xml_parse_result parsed = doc.load_string(xml.c_str());
  ASSERT_TRUE(parsed) << parsed.description();
  const pugi::xml_node suites = doc.child("testsuites");
  EXPECT_EQ(Attr(suites, "tests"), tests);
  EXPECT_EQ(Attr(suites, "failures"), failures);
  EXPECT_EQ(Attr(suites, "errors"), errors);
  EXPECT_EQ(Attr(suites, "skipped"), skipped);
  size_t sum_tests = 0;
  for (pugi::xml_node suite : suites.children("testsuite")) {
    size_t t = 0, f = 0, e = 0, s = 0;
    for (pugi::xml_node tc : suite.children("testcase")) {
      ++t;
      f += tc.child("failure") ? 1 : 0;
      e += tc.child("error") ? 1 : 0;
      s += tc.child("skipped") ? 1 : 0;
      EXPECT_TRUE(tc.child("system-out"));
      EXPECT_TRUE(std::string_view(tc.attribute("classname").value()).starts_with("sandprobe."));
    }
    EXPECT_EQ(Attr(suite, "tests"), t);
    EXPECT_EQ(Attr(suite, "failures"), f);
    EXPECT_EQ(Attr(suite, "errors"), e);
    EXPECT_EQ(Attr(suite, "skipped"), s);
    sum_tests += t;
  }
  EXPECT_EQ(sum_tests, tests);
}

TEST(Junit, NormalParsesAndCountsMatch) {
  ExpectJunitCountsAddUp(RenderJunit(NormalMatrix()), 5, 1, 2, 1);
}

TEST(Junit, HostileParsesAndKeepsMarkupAsText) {
  const std::string xml = RenderJunit(HostileMatrix());
  ExpectJunitCountsAddUp(xml, 3, 1, 1, 0);
  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_string(xml.c_str()));
  EXPECT_FALSE(doc.select_node("//injected")) << "markup from a sandbox became an element";
  const pugi::xml_node tc = doc.child("testsuites").child("testsuite").child("testcase");
  const std::string out = tc.child("system-out").text().get();
  EXPECT_NE(out.find("</system-out><!--"), std::string::npos);  // survived as text
  EXPECT_NE(std::string(tc.child("failure").attribute("message").value()).find("]]>"),
            std::string::npos);
}

TEST(Json, ParsesWithRequiredFields) {
  for (const auto& fixture : fixtures::Fixtures()) {
    const core::Matrix m = fixture.make();
    const auto j = nlohmann::json::parse(RenderJson(m));
    EXPECT_EQ(j.at("schema_version"), core::kReportSchemaVersion);
    for (const char* key : {"run_id", "suite", "started_at", "finished_at", "notes"}) {
      EXPECT_TRUE(j.contains(key)) << key;
    }
    EXPECT_EQ(j.at("interrupted"), m.interrupted);
    EXPECT_EQ(j.at("arms").size(), m.arms.size());
    EXPECT_EQ(j.at("rows").size(), m.rows.size());
    EXPECT_EQ(j.at("observations").size(), m.cells.size());
    EXPECT_EQ(j.at("verdicts").size(), m.verdicts.size());
    for (const auto& o : j.at("observations")) {
      EXPECT_TRUE(o.at("exposure") == "exposed" || o.at("exposure") == "contained" ||
                  o.at("exposure") == "unknown");
      EXPECT_LE(o.at("evidence").at("stdout_excerpt").get<std::string>().size(), 4096u);
      EXPECT_TRUE(o.at("evidence").contains("result"));
    }
    for (const auto& v : j.at("verdicts")) {
      const std::string kind = v.at("verdict");
      EXPECT_NE(std::string("PASS FAIL INCONCLUSIVE SKIP ERROR").find(kind), std::string::npos);
    }
    EXPECT_EQ(j.at("summary").at("exit_code"), core::RunExitCode(m));
  }
}

TEST(Markdown, HostileTableHasExactlyItsOwnPipes) {
  const core::Matrix m = HostileMatrix();
  std::istringstream md(RenderMarkdown(m));
  size_t table_lines = 0;
  bool in_table = false;
  for (std::string line; std::getline(md, line);) {
    in_table = in_table ? !line.empty() : line.starts_with("| probe |");
    if (!in_table) continue;
    ++table_lines;
    EXPECT_EQ(std::ranges::count(line, '|'), static_cast<long>(m.arms.size() + 2)) << line;
  }
  EXPECT_EQ(table_lines, m.rows.size() + 2);  // header, delimiter, one per row
}

// The Markdown outside fenced code blocks (CommonMark: a fence closes on a line of at least as
// many backticks as opened it). Inside code blocks raw markup is inert text.
std::string OutsideCodeBlocks(const std::string& md) {
  std::istringstream in(md);
  std::string out;
  size_t fence = 0;  // backticks of the open fence, 0 outside
  for (std::string line; std::getline(in, line);) {
    const size_t ticks = line.find_first_not_of('`') == std::string::npos
                             ? line.size()
                             : line.find_first_not_of('`');
    if (fence == 0 && ticks >= 3) {
      fence = ticks;
    } else if (fence > 0 && ticks >= fence && ticks == line.size()) {
      fence = 0;
    } else if (fence == 0) {
      out += line + "\n";
    }
  }
  EXPECT_EQ(fence, 0u) << "unclosed code block";
  return out;
}

TEST(Markdown, HostileHtmlStructureIsOurs) {
  const core::Matrix m = HostileMatrix();
  const std::string md = OutsideCodeBlocks(RenderMarkdown(m));
  auto count = [&](std::string_view needle) {
    size_t n = 0;
    for (size_t pos = md.find(needle); pos != std::string::npos; pos = md.find(needle, pos + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(count("<details>"), m.rows.size());
  EXPECT_EQ(count("</details>"), m.rows.size());
  EXPECT_EQ(count("</summary>"), m.rows.size());
  EXPECT_EQ(count("<script>"), 0u);
  EXPECT_EQ(count("<!--"), 0u);
}

// No ESC, no C0 control other than newline (and tab), no DEL; valid UTF-8.
void ExpectDisplaySafe(const std::string& out, const char* what) {
  const auto bad = std::ranges::find_if(out, [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f;
  });
  EXPECT_EQ(bad, out.end()) << what << ": control byte at offset " << (bad - out.begin());
  EXPECT_EQ(core::SanitizeUtf8(out), out) << what << ": invalid UTF-8";
}

TEST(Hostile, NoControlByteSurvivesAndOutputIsBounded) {
  const core::Matrix m = HostileMatrix();
  const std::string text = RenderText(m, {});
  const std::string md = RenderMarkdown(m);
  const std::string xml = RenderJunit(m);
  const std::string json = RenderJson(m);
  const std::string tap = RenderTap(m);
  const std::string html = RenderHtml(m);
  const std::string full_md = RenderMarkdownFull(m);
  ExpectDisplaySafe(text, "text");
  ExpectDisplaySafe(md, "markdown");
  ExpectDisplaySafe(full_md, "markdown (full)");
  ExpectDisplaySafe(xml, "junit");
  ExpectDisplaySafe(tap, "tap");
  ExpectDisplaySafe(html, "html");
  EXPECT_EQ(core::SanitizeUtf8(json), json) << "json: invalid UTF-8";
  EXPECT_TRUE(nlohmann::json::accept(json));
  for (const std::string* out : {&text, &md, &xml, &json, &tap, &html, &full_md}) {
    EXPECT_LT(out->size(), 200'000u);
  }
}

TEST(Hostile, ColourOnlyAddsOurOwnSgrSequences) {
  std::string out = RenderText(HostileMatrix(), {.color = true, .width = 100});
  for (const char* sgr : {"\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[2m", "\x1b[1m", "\x1b[0m"}) {
    for (size_t pos; (pos = out.find(sgr)) != std::string::npos;) out.erase(pos, strlen(sgr));
  }
  ExpectDisplaySafe(out, "coloured text minus our SGR codes");
}

TEST(Hostile, AnyTerminalWidthStaysSafe) {
  for (const size_t width : {0, 1, 20, 100, 1000}) {
    ExpectDisplaySafe(RenderText(HostileMatrix(), {.color = false, .width = width}), "text");
  }
}

// Every format opens with the acceptance checklist; a criterion holds only when every row in it
// PASSes and names the rows that broke it (SKIP and a missing verdict included).
TEST(Checklist, OpensEveryFormatAndNamesTheBrokenRows) {
  const core::Matrix m = fixtures::CriteriaMatrix();
  const std::string md = RenderMarkdown(m);
  const size_t md_list = md.find("## Acceptance criteria");
  ASSERT_NE(md_list, std::string::npos);
  EXPECT_LT(md_list, md.find("- suite:"));
  EXPECT_LT(md_list, md.find("| probe |"));
  EXPECT_NE(md.find("**bubblewrap**: 1 of 4 criteria hold"), std::string::npos);
  EXPECT_NE(md.find("- ✅ No DNS — holds"), std::string::npos);
  EXPECT_NE(md.find("- ❌ No writes to the user's files — **broken by:** write $HOME "
                    "(fs.write-home) **FAIL**\n"),
            std::string::npos)
      << md.substr(0, 2000);
  EXPECT_NE(
      md.find("memory 64m (res.memory-balloon) **INCONCLUSIVE** *(advisory)*, privileged "
              "pod (k8s.admission-privileged) **SKIP**, https by ip (net.https-ip) **ERROR**"),
      std::string::npos);
  EXPECT_NE(md.find("udp (net.udp) **MISSING**"), std::string::npos);

  const std::string json = RenderJson(m);
  EXPECT_LT(json.find("\"criteria\""), json.find("\"arms\""));
  const auto j = nlohmann::json::parse(json);
  ASSERT_EQ(j.at("criteria").size(), 4u);
  EXPECT_EQ(j["criteria"][0]["results"][0]["holds"], true);
  EXPECT_EQ(j["criteria"][0]["results"][0]["candidate"], "bubblewrap");
  EXPECT_EQ(j["criteria"][1]["results"][0]["holds"], false);
  EXPECT_EQ(j["criteria"][1]["results"][0]["broken"].size(), 1u);  // net.dns PASSed
  EXPECT_EQ(j["criteria"][1]["results"][0]["broken"][0]["verdict"], "FAIL");
  EXPECT_EQ(j["criteria"][2]["results"][0]["broken"].size(), 3u);
  EXPECT_EQ(j["criteria"][3]["results"][0]["broken"][0]["verdict"], "MISSING");
  EXPECT_EQ(j["criteria"][3]["probes"], nlohmann::json::array({"net.udp"}));

  const std::string xml = RenderJunit(m);
  ExpectJunitCountsAddUp(xml, 4 + 6, 3 + 1, 2 + 1, 1);  // criteria + rows (udp: no verdict)
  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_string(xml.c_str()));
  const pugi::xml_node first = doc.child("testsuites").child("testsuite");
  EXPECT_STREQ(first.attribute("name").value(), "acceptance criteria: bubblewrap");
  EXPECT_EQ(Attr(first, "failures"), 3u);
  const pugi::xml_node broken =
      first.find_child_by_attribute("testcase", "name", "No DNS").next_sibling("testcase");
  EXPECT_STREQ(broken.child("failure").attribute("message").value(),
               "broken by: write $HOME (fs.write-home) FAIL");

  const std::string text = RenderText(m, {});
  const size_t text_list = text.find("acceptance criteria (");
  ASSERT_NE(text_list, std::string::npos);
  EXPECT_LT(text.find("https by ip"), text_list);   // after the streamed matrix rows...
  EXPECT_LT(text_list, text.find("\nverdicts\n"));  // ...and before everything else
  EXPECT_NE(text.find("bubblewrap: 1 of 4 hold"), std::string::npos);
  EXPECT_NE(text.find("broken by: write $HOME (fs.write-home) FAIL"), std::string::npos);
}

TEST(Checklist, NoCriteriaNoChecklist) {
  const core::Matrix m = NormalMatrix();
  EXPECT_EQ(RenderMarkdown(m).find("Acceptance criteria"), std::string::npos);
  EXPECT_EQ(RenderText(m, {}).find("acceptance criteria"), std::string::npos);
  EXPECT_EQ(RenderJunit(m).find("acceptance criteria"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(RenderJson(m)).at("criteria"), nlohmann::json::array());
}

// An interrupted run can leave a probe without a verdict: never rendered as a pass.
TEST(MissingVerdict, IsAnErrorInJunitAndShownEverywhere) {
  core::Matrix m = NormalMatrix();
  m.verdicts.erase(m.verdicts.begin());  // net.dns
  m.interrupted = true;
  const std::string xml = RenderJunit(m);
  ExpectJunitCountsAddUp(xml, 5, 1, 3, 1);
  EXPECT_NE(xml.find("type=\"MISSING\""), std::string::npos);
  EXPECT_NE(RenderMarkdown(m).find("blocked · **no verdict**"), std::string::npos);
  const std::string text = RenderText(m, {});
  EXPECT_NE(text.find("1 without verdict"), std::string::npos);
  EXPECT_NE(text.find("run interrupted"), std::string::npos);
  const auto j = nlohmann::json::parse(RenderJson(m));
  EXPECT_EQ(j.at("summary").at("candidates").at(0).at("missing"), 1);
}

}  // namespace
}  // namespace sandprobe::report
