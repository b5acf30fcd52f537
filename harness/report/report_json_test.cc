// report.json read back (config/report_json.h): the JSON is the source of truth, so every format
// rendered from the re-read matrix equals the one rendered from the run's own matrix.
#include "config/report_json.h"

#include <gtest/gtest.h>

#include "core/params.h"
#include "report/fixtures_testing.h"
#include "report/reporters.h"

namespace sandprobe::report {
namespace {

std::string Text(const core::Matrix& m) { return RenderText(m, TextOptions{}); }

TEST(ReportJsonTest, EveryFormatReRendersByteForByte) {
  for (const char* name : {"normal", "gate"}) {
    SCOPED_TRACE(name);
    const core::Matrix m =
        name == std::string("normal") ? fixtures::NormalMatrix() : fixtures::GateMatrix();
    auto back = config::ParseReportJson(RenderJson(m), "run.json");
    ASSERT_TRUE(back) << back.error();
    EXPECT_EQ(RenderMarkdown(*back), RenderMarkdown(m));
    EXPECT_EQ(RenderJunit(*back), RenderJunit(m));
    EXPECT_EQ(RenderJson(*back), RenderJson(m));
    EXPECT_EQ(Text(*back), Text(m));
    EXPECT_EQ(core::RunExitCode(*back), core::RunExitCode(m));
  }
}

// A run's timeline, CPU figures and cost read back as written; a fixture without them writes none
// of the keys (so older reports and the baselines stay as they are).
TEST(ReportJsonTest, TimelineAndCostSurviveTheRoundTrip) {
  core::Matrix m = fixtures::NormalMatrix();
  EXPECT_EQ(RenderJson(m).find("\"timeline\""), std::string::npos);
  EXPECT_EQ(RenderJson(m).find("\"cost\""), std::string::npos);
  ASSERT_FALSE(m.cells.empty());
  core::Observation& o = m.cells[0].observation;
  o.timeline = {{"queued", 0, 0.25}, {"invoke", 0.25, 1.5}, {"spawn+run", 0.3, 1.4}};
  o.probe_cpu = core::CpuFigure{0.75, "wait4 rusage"};
  m.cost = core::RunCost{
      .wall_s = 2, .cpus = 2, .machine_cpu_s = 3.5, .harness_cpu_s = 0.1, .children_cpu_s = 1};
  const std::string json = RenderJson(m);
  auto back = config::ParseReportJson(json, "run.json");
  ASSERT_TRUE(back) << back.error();
  const core::Observation& b = back->cells[0].observation;
  ASSERT_EQ(b.timeline.size(), 3u);
  EXPECT_EQ(b.timeline[2].name, "spawn+run");
  EXPECT_DOUBLE_EQ(b.timeline[1].start_s, 0.25);
  EXPECT_DOUBLE_EQ(b.timeline[1].end_s, 1.5);
  ASSERT_TRUE(b.probe_cpu.has_value());
  EXPECT_DOUBLE_EQ(b.probe_cpu->seconds, 0.75);
  EXPECT_EQ(b.probe_cpu->source, "wait4 rusage");
  ASSERT_TRUE(back->cost.has_value());
  EXPECT_EQ(back->cost->cpus, 2);
  EXPECT_DOUBLE_EQ(back->cost->machine_cpu_s, 3.5);
  EXPECT_DOUBLE_EQ(back->cost->children_cpu_s, 1);
  EXPECT_EQ(RenderJson(*back), json);
  // A malformed phase names its path.
  nlohmann::json bad = nlohmann::json::parse(json);
  bad["observations"][0]["evidence"]["timeline"][1]["start_s"] = "soon";
  auto refused = config::ParseReportJson(bad.dump(), "run.json");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find("timeline/1"), std::string::npos) << refused.error();
}

// An arm's address family (kubernetes.ipFamily) reads back and is shown beside its name in every
// table; an arm without one writes no key.
TEST(ReportJsonTest, AnArmsAddressFamilySurvivesAndIsShown) {
  core::Matrix m = fixtures::NormalMatrix();
  EXPECT_EQ(RenderJson(m).find("\"ip_family\""), std::string::npos);
  core::ArmInfo* cand = nullptr;
  for (core::ArmInfo& a : m.arms) {
    if (a.role == core::ArmRole::kCandidate) cand = &a;
  }
  ASSERT_NE(cand, nullptr);
  cand->ip_family = "IPv6";
  const std::string title = cand->name + " (IPv6)", cand_name = cand->name;
  auto back = config::ParseReportJson(RenderJson(m), "run.json");
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->FindArm(cand->name)->ip_family, "IPv6");
  EXPECT_EQ(RenderJson(*back), RenderJson(m));
  EXPECT_NE(RenderMarkdown(*back).find("| " + title), std::string::npos);
  EXPECT_NE(Text(*back).find(title), std::string::npos) << Text(*back);
  // A name too long for the terminal's column is cut before the family, which stays.
  for (core::ArmInfo& a : m.arms) {
    if (a.role == core::ArmRole::kCandidate) a.name = "k8s-deny-egress-ipv6-settled-long";
  }
  for (core::Cell& c : m.cells) {
    if (c.observation.arm == cand_name) c.observation.arm = "k8s-deny-egress-ipv6-settled-long";
  }
  for (core::VerdictCell& v : m.verdicts) {
    if (v.candidate == cand_name) v.candidate = "k8s-deny-egress-ipv6-settled-long";
  }
  EXPECT_NE(Text(m).find("… (IPv6)"), std::string::npos) << Text(m);
}

// Candidates of two address families: the control is a column per family, each showing the
// cell it ran for that family's candidate (its twin, params["ip_family"]).
TEST(ReportJsonTest, AControlIsAColumnPerFamily) {
  core::Matrix m = fixtures::NormalMatrix();
  core::ArmInfo six = *m.FindArm("bubblewrap");
  six.name = "bubblewrap6";
  six.ip_family = "IPv6";
  m.arms.push_back(six);
  std::vector<core::Cell> twins;
  for (const core::Cell& c : m.cells) {
    if (c.observation.probe != "net.dns") continue;
    core::Cell twin = c;
    twin.observation.params["ip_family"] = "IPv6";
    twin.observation.params_key = core::ParamsKey(twin.observation.params);
    if (c.observation.arm == "bubblewrap") twin.observation.arm = "bubblewrap6";
    if (c.observation.arm == "local") twin.classification.label = "six-label";
    twins.push_back(std::move(twin));
  }
  ASSERT_EQ(twins.size(), 2u);
  for (core::Cell& t : twins) m.cells.push_back(std::move(t));
  const std::string text = Text(m), md = RenderMarkdown(m);
  EXPECT_NE(text.find("local (control)"), std::string::npos) << text;
  EXPECT_NE(text.find("local (IPv6) (control)"), std::string::npos) << text;
  EXPECT_NE(text.find("six-label"), std::string::npos) << text;  // the IPv6 twin, shown
  EXPECT_NE(md.find("| local (IPv6) (control) |"), std::string::npos) << md;
  // In the table's dns row: the IPv4 control's label, then the IPv6 twin's, each in its column.
  const size_t row = md.find("\n| dns |");
  ASSERT_NE(row, std::string::npos) << md;
  const std::string line = md.substr(row + 1, md.find('\n', row + 1) - row - 1);
  EXPECT_NE(line.find("six-label"), std::string::npos) << line;
  EXPECT_LT(line.find("REACHED"), line.find("six-label")) << line;
}

TEST(ReportJsonTest, GateMarksSurviveTheRoundTrip) {
  auto back = config::ParseReportJson(RenderJson(fixtures::GateMatrix()), "run.json");
  ASSERT_TRUE(back) << back.error();
  const core::Cell* dns = back->Find("net.dns", "bubblewrap");
  ASSERT_NE(dns, nullptr);
  ASSERT_EQ(dns->trials.size(), 5u);
  EXPECT_EQ(dns->trials[2].exposure, core::Exposure::kExposed);
  const core::VerdictCell* home = back->FindVerdict("fs.write-home", "bubblewrap");
  ASSERT_NE(home, nullptr);
  ASSERT_TRUE(home->accepted.has_value());
  EXPECT_TRUE(home->Accepted());
  EXPECT_TRUE(back->FindVerdict("net.dns", "bubblewrap")->accepted->expired);
}

// A hostile run is bounded in report.json (values past the bounds come back truncated), so its
// re-render is not byte-for-byte; it must still read back and render without throwing.
TEST(ReportJsonTest, HostileReadsBack) {
  auto back = config::ParseReportJson(RenderJson(fixtures::HostileMatrix()), "run.json");
  ASSERT_TRUE(back) << back.error();
  EXPECT_FALSE(RenderMarkdown(*back).empty());
  EXPECT_FALSE(RenderJunit(*back).empty());
  EXPECT_TRUE(config::ParseReportJson(RenderJson(*back), "again.json").has_value());
}

TEST(ReportJsonTest, ErrorsNameThePath) {
  nlohmann::json good = nlohmann::json::parse(RenderJson(fixtures::NormalMatrix()));
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string error;
  };
  const std::vector<Case> cases = {
      {[](nlohmann::json& j) { j["run_id"] = 5; }, "run.json: /run_id: expected a string"},
      {[](nlohmann::json& j) { j.erase("arms"); }, "run.json: /arms: missing"},
      {[](nlohmann::json& j) { j["schema_version"] = 4; },
       "run.json: /schema_version: this sandprobe reads versions 1 to 3, not 4"},
      {[](nlohmann::json& j) { j["generator"] = "other"; },
       "run.json: /generator: not a sandprobe report"},
      {[](nlohmann::json& j) { j["verdicts"][1]["verdict"] = "GREEN"; },
       "run.json: /verdicts/1/verdict: expected one of PASS, FAIL, INCONCLUSIVE, SKIP, ERROR"},
      {[](nlohmann::json& j) { j["observations"][0]["evidence"]["records_count"] = -1; },
       "run.json: /observations/0/evidence/records_count: expected a count (>= 0)"},
      {[](nlohmann::json& j) { j["arms"][0]["role"] = "judge"; },
       "run.json: /arms/0/role: expected one of control, candidate"},
      {[](nlohmann::json& j) {
         j["observations"][0]["trials"] = {{{"invocation", "x"}}};
       },
       "run.json: /observations/0/trials/0/exposure: missing"},
      {[](nlohmann::json& j) {
         j["verdicts"][0]["accepted"] = {{"reason", "r"}};
       },
       "run.json: /verdicts/0/accepted/expires: missing"},
      {[](nlohmann::json& j) { j["observations"][0]["evidence"]["exit_code"] = 1e300; },
       "run.json: /observations/0/evidence/exit_code: expected a whole number from -2147483648 "
       "to 2147483647"},
      {[](nlohmann::json& j) { j["observations"][0]["evidence"]["signal"] = 4294967297LL; },
       "run.json: /observations/0/evidence/signal: expected a whole number from -2147483648 to "
       "2147483647"},
      {[](nlohmann::json& j) { j["observations"][0]["evidence"]["records_count"] = 1.5; },
       "run.json: /observations/0/evidence/records_count: expected a count (>= 0)"},
      {[](nlohmann::json& j) { j = nlohmann::json::array(); }, "run.json: /: expected an object"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    nlohmann::json j = good;
    cases[i].edit(j);
    auto r = config::ParseReportJson(j.dump(), "run.json");
    ASSERT_FALSE(r) << "case " << i;
    EXPECT_EQ(r.error(), cases[i].error) << "case " << i;
  }
  auto garbage = config::ParseReportJson("{\"run_id\": ", "run.json");
  ASSERT_FALSE(garbage);
  EXPECT_TRUE(garbage.error().starts_with("run.json: not valid report JSON: ")) << garbage.error();
}

}  // namespace
}  // namespace sandprobe::report
