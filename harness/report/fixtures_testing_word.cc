// The "word" fixture: two run-code services (driver http) beside the local control, whose cells
// are classified and judged by the real core::Classify and core::Judge, so the approved baselines
// show what a run prints for a PASS on the sandbox's word (docs/design.md, "Verdict rules"):
//   runcode-net      its evaluations reach the TCP canary: the loop's heartbeat is heard while it
//                    runs and not after the answer (PASS, positive); fill-tmp gets ENOSPC (PASS,
//                    positive); the DNS canary is reached (FAIL).
//   runcode-offline  no route to any canary: the loop's "exit 124" and fill-tmp's "exit 137" are
//                    the service's own answer (PASS on the sandbox's word); net.dns is refused
//                    with ENETUNREACH (PASS, positive).
#include <array>

#include "core/classify.h"
#include "core/facts.h"
#include "core/verdict.h"
#include "report/fixtures_testing.h"

namespace sandprobe::report::fixtures {
namespace {

using core::Ending;
using core::Exposure;
using nlohmann::json;

constexpr int64_t kCallEnded = 1740830405000;  // 2025-03-01T12:00:05Z, the services' answers
constexpr std::array<const char*, 2> kServices = {"runcode-net", "runcode-offline"};

core::ProbeDescriptor Loop() {
  core::ProbeDescriptor p;
  p.id = "res.cpu-loop";
  p.label = "infinite loop";
  p.classify.outcomes = {{"error", Exposure::kUnknown}};
  p.classify.killed = p.classify.timed_out = Exposure::kContained;
  p.classify.deadline = Exposure::kExposed;
  p.classify.still_running = core::StillRunningRule{"canary"};
  return p;
}

core::ProbeDescriptor FillTmp() {
  core::ProbeDescriptor p;
  p.id = "fs.fill-tmp";
  p.label = "fill /tmp";
  p.classify.outcomes = {{"target_written", Exposure::kExposed},
                         {"write_failed", Exposure::kContained},
                         {"error", Exposure::kUnknown}};
  p.classify.killed = Exposure::kContained;
  return p;
}

core::ProbeDescriptor Dns() {
  core::ProbeDescriptor p;
  p.id = "net.dns";
  p.label = "dns";
  p.classify.outcomes = {{"reached", Exposure::kExposed},
                         {"blocked", Exposure::kContained},
                         {"error", Exposure::kUnknown}};
  return p;
}

json Start(const std::string& probe) { return {{"kind", "start"}, {"probe", probe}, {"seq", 1}}; }

// An observation that ended with `code` (the service's answer for the http arms).
core::Cell Ended(const std::string& probe, const std::string& arm, const json& params, int code,
                 double duration_s, std::vector<json> records) {
  core::Cell cell = MakeCell(probe, arm, params, {});
  core::Observation& obs = cell.observation;
  obs.ending = Ending::kExited;
  obs.exit_code = code;
  obs.duration_s = duration_s;
  obs.stdout_head = RecordLines(records);
  obs.stdout_bytes = obs.stdout_head.size();
  for (const json& r : records) {
    if (r.value("kind", "") == "result" && !obs.result) obs.result = r;
  }
  obs.records = std::move(records);
  if (arm == "local") {
    obs.driver_facts = {{core::fact::kDriver, "local"}, {core::fact::kEndedBy, "sandbox"}};
  } else {
    obs.driver_facts = {{core::fact::kDriver, "http"},
                        {core::fact::kHttpStatus, 200},
                        {core::fact::kEndedBy, "service"},
                        {core::fact::kServiceExitCode, code},
                        {core::fact::kCallEndedUnixMs, kCallEnded}};
  }
  return cell;
}

void AddRow(core::Matrix& m, const core::ProbeDescriptor& probe, std::vector<core::Cell> cells) {
  m.rows.push_back(
      {probe.id, probe.label, core::Level::kRequired, probe.id.substr(0, probe.id.find('.'))});
  for (core::Cell& c : cells) c.classification = core::Classify(probe, c.observation);
  std::vector<core::ArmView> controls;
  for (const core::Cell& c : cells) {
    if (c.observation.arm == "local") {
      controls.push_back({c.observation.arm, &c.observation, c.classification});
    }
  }
  for (const core::Cell& c : cells) {
    if (c.observation.arm == "local") continue;
    const core::Verdict v =
        core::Judge(probe, controls, {c.observation.arm, &c.observation, c.classification});
    m.verdicts.push_back({probe.id, c.observation.arm, v});
  }
  for (core::Cell& c : cells) m.cells.push_back(std::move(c));
}

void AddLoop(core::Matrix& m) {
  const json params = {{"canary", "127.0.0.1:40124"}, {"heartbeat_s", 1}, {"max_s", 600}};
  const json start = {
      {"kind", "start"}, {"probe", "res.cpu-loop"},     {"seq", 1},  {"heartbeat_s", 1},
      {"max_s", 600},    {"canary", "127.0.0.1:40124"}, {"nice", 19}};
  const auto progress = [](int seq, double s) {
    return json{{"kind", "progress"}, {"probe", "res.cpu-loop"}, {"seq", seq}, {"elapsed_s", s}};
  };
  core::Cell control = MakeCell("res.cpu-loop", "local", params, {});
  control.observation.ending = Ending::kDeadline;
  control.observation.deadline_s = 10;
  control.observation.duration_s = 10.004;
  control.observation.records = {start, progress(2, 9.0)};
  control.observation.stdout_head = RecordLines(control.observation.records);
  control.observation.stdout_bytes = control.observation.stdout_head.size();
  control.observation.driver_facts = {{core::fact::kDriver, "local"},
                                      {core::fact::kEndedBy, "harness deadline"}};
  std::vector<core::Cell> cells = {std::move(control)};
  for (const char* arm : kServices) {
    core::Cell cell = Ended("res.cpu-loop", arm, params, 124, 5.012, {start, progress(2, 4.0)});
    cell.observation.driver_facts[core::fact::kServiceTimeout] = true;
    cell.observation.driver_facts[core::fact::kAfterCallWaitS] = 2;
    if (std::string_view(arm) == "runcode-net") {
      for (int64_t at : {-4500, -3000, -1500, -40}) {
        cell.observation.canary_hits.push_back(
            {"tcp", "127.0.0.1:52011", "SANDPROBE 4f2a9c res.cpu-loop", kCallEnded + at});
      }
    }
    cells.push_back(std::move(cell));
  }
  AddRow(m, Loop(), std::move(cells));
}

void AddFillTmp(core::Matrix& m) {
  const json params = {{"claimed_mib", 32}, {"dir", "/tmp"}, {"target_mib", 64}};
  const auto progress = [](int seq, int mib) {
    return json{{"kind", "progress"}, {"probe", "fs.fill-tmp"}, {"seq", seq}, {"written_mib", mib}};
  };
  std::vector<core::Cell> cells;
  cells.push_back(Ended("fs.fill-tmp", "local", params, 0, 0.41,
                        {Start("fs.fill-tmp"),
                         progress(2, 32),
                         {{"kind", "result"},
                          {"probe", "fs.fill-tmp"},
                          {"seq", 3},
                          {"outcome", "target_written"},
                          {"evidence", "positive"},
                          {"written_mib", 64},
                          {"detail", "64 MiB written to /tmp (removed)"}}}));
  cells.push_back(Ended("fs.fill-tmp", "runcode-net", params, 0, 0.22,
                        {Start("fs.fill-tmp"),
                         progress(2, 28),
                         {{"kind", "result"},
                          {"probe", "fs.fill-tmp"},
                          {"seq", 3},
                          {"outcome", "write_failed"},
                          {"evidence", "positive"},
                          {"errno", "ENOSPC"},
                          {"written_mib", 31},
                          {"detail", "write failed after 31 MiB"}}}));
  cells.push_back(Ended("fs.fill-tmp", "runcode-offline", params, 137, 0.3,
                        {Start("fs.fill-tmp"), progress(2, 28)}));
  AddRow(m, FillTmp(), std::move(cells));
}

void AddDns(core::Matrix& m) {
  const json params = {{"name", "canary.sandprobe.test"}, {"server", "127.0.0.1:40125"}};
  const auto result = [](const char* outcome, const char* err, const char* detail) {
    json r = {{"kind", "result"},   {"probe", "net.dns"},     {"seq", 2},
              {"outcome", outcome}, {"evidence", "positive"}, {"detail", detail}};
    if (err != nullptr) r["errno"] = err;
    return r;
  };
  std::vector<core::Cell> cells;
  for (const char* arm : {"local", "runcode-net"}) {
    cells.push_back(
        Ended("net.dns", arm, params, 0, 0.12,
              {Start("net.dns"), result("reached", nullptr, "answer NXDOMAIN carried the nonce")}));
    cells.back().observation.canary_hits.push_back(
        {"dns", "127.0.0.1:51234", "A? 4f2a9c-net.dns.canary.sandprobe.test", kCallEnded - 100});
  }
  cells.push_back(
      Ended("net.dns", "runcode-offline", params, 0, 0.05,
            {Start("net.dns"), result("blocked", "ENETUNREACH", "sendto 127.0.0.1:40125 failed")}));
  AddRow(m, Dns(), std::move(cells));
}

}  // namespace

core::Matrix WordMatrix() {
  core::Matrix m = MakeMatrix("20250301T120000Z-a7d204", "3b9e42", "http", "2025-03-01T12:00:12Z",
                              {"canaries on 127.0.0.1: http :40123, tcp :40124, dns :40125"});
  m.arms.push_back({"local",
                    core::ArmRole::kControl,
                    "local",
                    "the agent's own process: a plain child process, no isolation",
                    "<embedded>",
                    {},
                    "",
                    {}});
  for (const char* arm : kServices) {
    m.arms.push_back({arm,
                      core::ArmRole::kCandidate,
                      "http",
                      std::string_view(arm) == "runcode-net"
                          ? "a run-code service whose evaluations reach the host's loopback"
                          : "a run-code service whose evaluations have no network",
                      std::string("manifests/") + arm + ".yaml",
                      {},
                      "local",
                      {}});
    m.arms.back().limits.timeout_s = 5;
    m.arms.back().limits.tmp_bytes = 32ull << 20;
  }
  AddLoop(m);
  AddFillTmp(m);
  AddDns(m);
  return m;
}

}  // namespace sandprobe::report::fixtures
