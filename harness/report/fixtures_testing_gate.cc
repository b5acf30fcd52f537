// The "gate" fixture: the normal run made with --repeat 5 and --expect (core/trials.h,
// core/expect.h): a candidate row that leaked in one trial of five (FAIL, flaky), a control whose
// trials disagreed, agreeing trials (not flaky), an accepted FAIL and an expired acceptance.
#include "core/trials.h"
#include "report/fixtures_testing.h"

namespace sandprobe::report::fixtures {
namespace {

std::vector<core::Trial> Trials(const std::string& cell,
                                std::vector<std::pair<core::Exposure, std::string>> outcomes) {
  std::vector<core::Trial> out;
  for (size_t i = 0; i < outcomes.size(); ++i) {
    const auto& [exposure, label] = outcomes[i];
    out.push_back(
        {cell + "-t" + std::to_string(i + 1), exposure,
         exposure == core::Exposure::kUnknown ? core::Evidence::kNone : core::Evidence::kPositive,
         label});
  }
  return out;
}

core::Cell* CellOf(core::Matrix& m, std::string_view probe, std::string_view arm) {
  for (core::Cell& c : m.cells) {
    if (c.observation.probe == probe && c.observation.arm == arm) return &c;
  }
  return nullptr;
}

core::VerdictCell* VerdictOf(core::Matrix& m, std::string_view probe) {
  for (core::VerdictCell& v : m.verdicts) {
    if (v.probe == probe) return &v;
  }
  return nullptr;
}

}  // namespace

core::Matrix GateMatrix() {
  using core::Exposure;
  core::Matrix m = NormalMatrix();
  m.run_id = "20250301T120000Z-9d3e1b";
  m.notes.push_back(
      "--repeat 5: every invocation ran 5 times; one exposed trial makes a FAIL, a control "
      "exposed in one trial validates its row; cells whose trials disagreed are marked flaky");
  m.notes.push_back(
      "warning: gate.yaml:9:5: expectation for net.udp matched no FAIL (no such row in this run); "
      "remove it if the row is fixed");
  constexpr auto kX = Exposure::kExposed, kC = Exposure::kContained;
  // net.dns: the candidate leaked once in five: the cell shown is the leak, the row FAILs.
  core::Cell* dns = CellOf(m, "net.dns", "bubblewrap");
  dns->classification = {kX, core::Evidence::kPositive, "REACHED",
                         "dns canary logged this invocation from 127.0.0.1:51299 (1 hit(s))"};
  dns->observation.canary_hits.push_back({"dns", "127.0.0.1:51299", "A? leak", 0});
  dns->trials = Trials(
      "dns", {{kC, "blocked"}, {kC, "blocked"}, {kX, "REACHED"}, {kC, "blocked"}, {kC, "blocked"}});
  core::Cell* dns_control = CellOf(m, "net.dns", "local");
  dns_control->trials =
      Trials("dns-local",
             {{kX, "REACHED"}, {kC, "blocked"}, {kX, "REACHED"}, {kX, "REACHED"}, {kX, "REACHED"}});
  *VerdictOf(m, "net.dns") = MakeVerdict(
      "net.dns", "bubblewrap", core::VerdictKind::kFail,
      "candidate exposed: dns canary logged this invocation from 127.0.0.1:51299 (1 hit(s))", "",
      core::Evidence::kPositive);
  // fs.write-home: a known FAIL, accepted until 2099.
  CellOf(m, "fs.write-home", "bubblewrap")->trials =
      Trials("home", {{kX, "WROTE"}, {kX, "WROTE"}, {kX, "WROTE"}, {kX, "WROTE"}, {kX, "WROTE"}});
  VerdictOf(m, "fs.write-home")->accepted =
      core::Acceptance{"the home bind is wanted for the agent's cache | ticket *12*", "2099-12-31",
                       false, "gate.yaml:3:5"};
  // The net.dns leak had an acceptance that ran out: a FAIL again.
  VerdictOf(m, "net.dns")->accepted =
      core::Acceptance{"resolver proxy pending", "2025-02-28", true, "gate.yaml:6:5"};
  return m;
}

}  // namespace sandprobe::report::fixtures
