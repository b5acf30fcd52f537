// A PASS on the sandbox's word (core::VerdictCell::OnSandboxWord) says so in every format and is
// counted apart in every summary, for the rows core::Classify and core::Judge marked in the "word"
// fixture; a PASS with proof says nothing of the kind. Beyond the byte-for-byte baselines: the
// marks are checked where a reader (or a parser) meets them.
#include <gtest/gtest.h>

#include <pugixml.hpp>
#include <regex>
#include <string>

#include "report/fixtures_testing.h"
#include "report/reporters.h"
#include "report/view.h"

namespace sandprobe::report {
namespace {

using fixtures::WordMatrix;

TEST(SandboxWordReport, TheFixtureHoldsWhatClassifyAndJudgeMade) {
  const core::Matrix m = WordMatrix();
  const auto* loop_net = m.FindVerdict("res.cpu-loop", "runcode-net");
  const auto* loop_off = m.FindVerdict("res.cpu-loop", "runcode-offline");
  const auto* fill_off = m.FindVerdict("fs.fill-tmp", "runcode-offline");
  const auto* dns_off = m.FindVerdict("net.dns", "runcode-offline");
  ASSERT_TRUE(loop_net && loop_off && fill_off && dns_off);
  EXPECT_EQ(loop_net->verdict.kind, core::VerdictKind::kPass);
  EXPECT_FALSE(loop_net->OnSandboxWord()) << loop_net->verdict.reason;
  EXPECT_TRUE(loop_off->OnSandboxWord()) << loop_off->verdict.reason;
  EXPECT_TRUE(fill_off->OnSandboxWord()) << fill_off->verdict.reason;
  EXPECT_FALSE(dns_off->OnSandboxWord()) << dns_off->verdict.reason;
  EXPECT_EQ(m.FindVerdict("net.dns", "runcode-net")->verdict.kind, core::VerdictKind::kFail);
  const VerdictCounts off = CountVerdicts(m, "runcode-offline");
  EXPECT_EQ(off.Of(core::VerdictKind::kPass), 3u);
  EXPECT_EQ(off.on_sandbox_word, 2u);
  EXPECT_EQ(CountVerdicts(m, "runcode-net").on_sandbox_word, 0u);
  EXPECT_EQ(core::RunExitCode(m), 1);  // the FAIL; the word PASSes do not change the gate
}

TEST(SandboxWordReport, TextMarksTheCellCountsAndListsTheRows) {
  const std::string text = RenderText(WordMatrix(), {});
  EXPECT_TRUE(
      std::regex_search(text, std::regex(R"(infinite loop .*exit 124 +PASS  +exit 124 +PASS\*)")))
      << text;
  EXPECT_NE(text.find("runcode-offline: 3 PASS (2 on the sandbox's word), 0 FAIL"),
            std::string::npos);
  EXPECT_NE(text.find("runcode-net: 2 PASS, 1 FAIL"), std::string::npos);
  const size_t list = text.find("\non the sandbox's word (PASS*: ");
  ASSERT_NE(list, std::string::npos) << text;
  EXPECT_NE(
      text.find("  res.cpu-loop  runcode-offline  contained, on the sandbox's word only", list),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("  fs.fill-tmp  runcode-offline  contained", list), std::string::npos);
  EXPECT_EQ(text.find("runcode-net  contained, on the sandbox's word"), std::string::npos);
}

TEST(SandboxWordReport, MarkdownAndHtmlSayItInTheCellAndTheSummary) {
  const std::string md = RenderMarkdown(WordMatrix());
  EXPECT_NE(md.find("runcode-offline: 3 PASS (2 on the sandbox's word), 0 FAIL"),
            std::string::npos);
  EXPECT_NE(md.find("| infinite loop | STILL RUNNING | exit 124 · **PASS** | exit 124 · **PASS** "
                    "*(on the sandbox's word)* |"),
            std::string::npos)
      << md.substr(0, 3000);
  EXPECT_NE(md.find("### PASS on the sandbox's word"), std::string::npos);
  EXPECT_NE(md.find("**runcode-offline** (candidate): **PASS** *(on the sandbox's word)*"),
            std::string::npos);

  const std::string html = RenderHtml(WordMatrix());
  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_string(html.c_str(), pugi::parse_default | pugi::parse_doctype));
  EXPECT_EQ(doc.select_nodes("//td[@data-evidence='sandbox_word']").size(), 2u);
  EXPECT_TRUE(doc.select_node(
      "//td[@data-probe='res.cpu-loop'][@data-arm='runcode-offline'][@class='cell v-pass word']"));
  EXPECT_TRUE(doc.select_node(
      "//td[@data-probe='res.cpu-loop'][@data-arm='runcode-net'][@class='cell v-pass']"));
  EXPECT_EQ(doc.select_nodes("//section[@class='word']//li").size(), 2u);
  const std::string summary = doc.select_node("//p[@class='summary']").node().child_value();
  EXPECT_NE(html.find("3 PASS (2 on the sandbox&#39;s word)"), std::string::npos) << summary;
}

TEST(SandboxWordReport, JsonJunitAndTapCarryTheKindAndTheCount) {
  const core::Matrix m = WordMatrix();
  const auto j = nlohmann::json::parse(RenderJson(m));
  EXPECT_EQ(j.at("schema_version"), 3);
  for (const auto& c : j.at("summary").at("candidates")) {
    EXPECT_EQ(c.at("pass_on_sandbox_word"), c.at("candidate") == "runcode-offline" ? 2 : 0);
  }
  size_t word_verdicts = 0;
  for (const auto& v : j.at("verdicts")) {
    if (v.at("evidence_kind") == "sandbox_word") {
      ++word_verdicts;
      EXPECT_EQ(v.at("verdict"), "PASS");
      EXPECT_EQ(v.at("candidate"), "runcode-offline");
    }
  }
  EXPECT_EQ(word_verdicts, 2u);

  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_string(RenderJunit(m).c_str()));
  const pugi::xml_node off =
      doc.child("testsuites").find_child_by_attribute("testsuite", "name", "runcode-offline");
  EXPECT_STREQ(off.child("properties")
                   .find_child_by_attribute("property", "name", "pass_on_sandbox_word")
                   .attribute("value")
                   .value(),
               "2");
  EXPECT_EQ(doc.select_nodes("//testcase/properties/property[@name='evidence']").size(), 2u);
  const pugi::xml_node loop =
      off.find_child_by_attribute("testcase", "name", "res.cpu-loop (infinite loop)");
  EXPECT_FALSE(loop.child("failure"));
  EXPECT_NE(std::string(loop.child("properties").child("property").attribute("value").value())
                .find("on the sandbox's word"),
            std::string::npos);
  const pugi::xml_node net =
      doc.child("testsuites").find_child_by_attribute("testsuite", "name", "runcode-net");
  EXPECT_FALSE(
      net.child("properties").find_child_by_attribute("property", "name", "pass_on_sandbox_word"));

  const std::string tap = RenderTap(m);
  EXPECT_NE(tap.find("    ok 1 - res.cpu-loop: infinite loop (PASS on the sandbox's word)\n"),
            std::string::npos)
      << tap.substr(0, 2000);
  EXPECT_NE(tap.find("    ok 2 - fs.fill-tmp: fill /tmp (PASS on the sandbox's word)\n"),
            std::string::npos);
  EXPECT_NE(tap.find("    ok 1 - res.cpu-loop: infinite loop\n"), std::string::npos);
  EXPECT_NE(tap.find("  PASS on the sandbox word: 2\n"), std::string::npos);
  EXPECT_NE(tap.find("      evidence kind: sandbox_word\n"), std::string::npos);
}

}  // namespace
}  // namespace sandprobe::report
