#include "report/fixtures_testing.h"

#include "core/params.h"

namespace sandprobe::report::fixtures {

using core::Ending;
using core::Evidence;
using core::Exposure;
using core::VerdictKind;
using nlohmann::json;

constexpr std::string_view kNonce = "9b1f0c3e7d2a";

core::Cell MakeCell(std::string probe, std::string arm, json params,
                    core::Classification classification) {
  core::Cell cell;
  core::Observation& obs = cell.observation;
  obs.probe = std::move(probe);
  obs.arm = std::move(arm);
  obs.invocation = "4f2a9c-" + obs.probe + "@" + obs.arm;
  obs.params_key = core::ParamsKey(params);
  obs.params = std::move(params);
  obs.deadline_s = 10;
  cell.classification = std::move(classification);
  return cell;
}

std::string RecordLines(const std::vector<json>& records) {
  std::string out;
  for (const json& r : records) {
    out += "@@sandprobe " + std::string(kNonce) + " " + r.dump() + "\n";
  }
  return out;
}

core::Matrix MakeMatrix(std::string run_id, std::string nonce_hash, std::string suite,
                        std::string finished_at, std::vector<std::string> notes) {
  core::Matrix m;
  m.run_id = std::move(run_id);
  m.nonce_hash = std::move(nonce_hash);
  m.suite = std::move(suite);
  m.started_at = "2025-03-01T12:00:00Z";
  m.finished_at = std::move(finished_at);
  m.notes = std::move(notes);
  return m;
}

core::VerdictCell MakeVerdict(std::string probe, std::string candidate, VerdictKind kind,
                              std::string reason, std::string validated_by, Evidence evidence) {
  return {std::move(probe), std::move(candidate),
          core::Verdict{kind, std::move(reason), std::move(validated_by), evidence}};
}

namespace {

// Ends `cell` as an exit with the given records (the first "result" becomes obs.result).
void Exit(core::Cell& cell, int code, double duration_s, std::vector<json> records) {
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
}

json Start(const std::string& probe) { return {{"kind", "start"}, {"probe", probe}, {"seq", 0}}; }

// A network row's two cells: the control's (local), which reached the `hit.kind` canary, said
// `detail` and left the one hit; then the candidate's (bubblewrap), returned for the caller to end.
core::Cell& AddNetworkCells(core::Matrix& m, const std::string& probe, const json& params,
                            double control_s, std::string detail, core::CanaryHit hit,
                            core::Classification candidate) {
  core::Cell& control = m.cells.emplace_back(
      MakeCell(probe, "local", params,
               {Exposure::kExposed, Evidence::kPositive, "REACHED",
                hit.kind + " canary logged this invocation from " + hit.peer + " (1 hit(s))"}));
  Exit(control, 0, control_s,
       {Start(probe),
        {{"kind", "result"},
         {"outcome", "reached"},
         {"evidence", "positive"},
         {"detail", std::move(detail)}}});
  control.observation.canary_hits.push_back(std::move(hit));
  return m.cells.emplace_back(MakeCell(probe, "bubblewrap", params, std::move(candidate)));
}

void AddDns(core::Matrix& m) {
  const json params = {{"name", "canary.sandprobe.test"}, {"server", "127.0.0.1:40125"}};
  core::Cell& cand =
      AddNetworkCells(m, "net.dns", params, 0.118, "answer 127.0.0.1 carried the nonce",
                      {"dns", "127.0.0.1:51234", "A? 4f2a9c-net.dns.canary.sandprobe.test"},
                      {Exposure::kContained, Evidence::kPositive, "blocked",
                       "outcome blocked (ENETUNREACH): sendto 127.0.0.1:40125 failed"});
  Exit(cand, 0, 0.052,
       {Start("net.dns"),
        {{"kind", "result"},
         {"outcome", "blocked"},
         {"evidence", "positive"},
         {"errno", "ENETUNREACH"},
         {"detail", "sendto 127.0.0.1:40125 failed"}}});
  m.verdicts.push_back(MakeVerdict(
      "net.dns", "bubblewrap", VerdictKind::kPass,
      "contained, positive evidence: outcome blocked (ENETUNREACH): sendto 127.0.0.1:40125 "
      "failed; control local was exposed",
      "local", Evidence::kPositive));
}

void AddWriteHome(core::Matrix& m) {
  const json params = {{"path", "~/.sandprobe-4f2a9c"}};
  const json wrote = {{"kind", "result"},
                      {"outcome", "wrote"},
                      {"evidence", "positive"},
                      {"detail", "created ~/.sandprobe-4f2a9c (removed afterwards)"}};
  for (const char* arm : {"local", "bubblewrap"}) {
    core::Cell cell = MakeCell("fs.write-home", arm, params,
                               {Exposure::kExposed, Evidence::kPositive, "WROTE",
                                "outcome wrote: created ~/.sandprobe-4f2a9c (removed afterwards)"});
    Exit(cell, 0, 0.031, {Start("fs.write-home"), wrote});
    m.cells.push_back(std::move(cell));
  }
  m.verdicts.push_back(MakeVerdict(
      "fs.write-home", "bubblewrap", VerdictKind::kFail,
      "candidate exposed: outcome wrote: created ~/.sandprobe-4f2a9c (removed afterwards)", "",
      Evidence::kPositive));
}

void AddBalloon(core::Matrix& m) {
  // The control ran the descriptor default (256 MiB) first and the candidate-sized 128 MiB second;
  // the matrix must show the 128 MiB cell under the control column.
  for (const int target : {256, 128}) {
    core::Cell cell = MakeCell(
        "res.memory-balloon", "local", {{"step_mib", 16}, {"target_mib", target}},
        {Exposure::kExposed, Evidence::kPositive, "ALLOCATED " + std::to_string(target) + " MiB",
         "outcome allocated: " + std::to_string(target) + " MiB resident"});
    Exit(cell, 0, target / 100.0,
         {Start("res.memory-balloon"),
          {{"kind", "progress"}, {"allocated_mib", target - 16}, {"seq", 1}},
          {{"kind", "result"},
           {"outcome", "allocated"},
           {"evidence", "positive"},
           {"detail", std::to_string(target) + " MiB resident"}}});
    m.cells.push_back(std::move(cell));
  }
  core::Cell cand = MakeCell(
      "res.memory-balloon", "bubblewrap", {{"step_mib", 16}, {"target_mib", 128}},
      {Exposure::kUnknown, Evidence::kNone, "no result", "exit 1 without a result record"});
  Exit(cand, 1, 0.84,
       {Start("res.memory-balloon"), {{"kind", "progress"}, {"allocated_mib", 96}, {"seq", 6}}});
  cand.observation.stderr_head =
      "Traceback (most recent call last):\n  File \"<string>\", line 41, in <module>\n"
      "OSError: [Errno 12] Cannot allocate memory\n";
  cand.observation.stderr_bytes = cand.observation.stderr_head.size();
  m.cells.push_back(std::move(cand));
  m.verdicts.push_back(
      MakeVerdict("res.memory-balloon", "bubblewrap", VerdictKind::kInconclusive,
                  "no evidence from the candidate: exit 1 without a result record"));
}

void AddSkipAndError(core::Matrix& m) {
  m.verdicts.push_back(MakeVerdict("k8s.admission-privileged", "bubblewrap", VerdictKind::kSkip,
                                   "Kubernetes-only probe on driver command"));
  const json params = {{"url", "https://127.0.0.1:40123/"}};
  core::Cell& cand =
      AddNetworkCells(m, "net.https-ip", params, 0.204, "HTTP 200",
                      {"http", "127.0.0.1:51240", "GET / x-sandprobe: 4f2a9c-net.https-ip@local"},
                      {Exposure::kUnknown, Evidence::kNone, "error",
                       "harness error: bwrap: setting up uid map: Permission denied"});
  cand.observation.ending = Ending::kHarnessError;
  cand.observation.duration_s = 0.004;
  cand.observation.harness_error = "bwrap: setting up uid map: Permission denied";
  cand.observation.stderr_head = "bwrap: setting up uid map: Permission denied\n";
  cand.observation.stderr_bytes = cand.observation.stderr_head.size();
  m.verdicts.push_back(
      MakeVerdict("net.https-ip", "bubblewrap", VerdictKind::kError,
                  "harness/driver failed: bwrap: setting up uid map: Permission denied"));
}

}  // namespace

core::Matrix NormalMatrix() {
  core::Matrix m =
      MakeMatrix("20250301T120000Z-4f2a9c", "5e0c1d", "default", "2025-03-01T12:00:07Z",
                 {"canaries on 127.0.0.1: http :40123, tcp :40124, dns :40125"});
  m.arms.push_back({"bubblewrap",
                    core::ArmRole::kCandidate,
                    "command",
                    "bwrap --unshare-all, read-only /, tmpfs /tmp",
                    "manifests/bubblewrap.yaml",
                    {"--bind $HOME $HOME: the probe can write the user's home directory"},
                    "local",
                    {}});
  m.arms.back().limits.timeout_s = 10;
  m.arms.back().limits.memory_bytes = 256ull << 20;
  m.arms.back().limits.tmp_bytes = 32ull << 20;
  m.arms.push_back({"local",
                    core::ArmRole::kControl,
                    "local",
                    "the agent's own process: a plain child process, no isolation",
                    "<embedded>",
                    {},
                    "",
                    {}});
  m.rows = {{"net.dns", "dns", core::Level::kRequired},
            {"fs.write-home", "write $HOME", core::Level::kRequired},
            {"res.memory-balloon", "memory 64m", core::Level::kAdvisory},
            {"k8s.admission-privileged", "privileged pod", core::Level::kRequired},
            {"net.https-ip", "https by ip", core::Level::kRequired}};
  AddDns(m);
  AddWriteHome(m);
  AddBalloon(m);
  AddSkipAndError(m);
  return m;
}

core::Matrix CriteriaMatrix() {
  core::Matrix m = NormalMatrix();
  m.run_id = "20250301T120000Z-c71e3a";
  m.suite = "repl-acceptance";
  // A row the run never reached (no cells, no verdict), as after an interrupted run.
  m.rows.push_back({"net.udp", "udp", core::Level::kRequired});
  m.criteria = {
      {"No DNS", {"net.dns"}},
      {"No writes to the user's files", {"fs.write-home", "net.dns"}},
      {"Bounded execution", {"res.memory-balloon", "k8s.admission-privileged", "net.https-ip"}},
      {"No egress | `code` <b>x</b> ]]> & \x1b[31mred\x1b[0m\nsecond line ```", {"net.udp"}},
  };
  return m;
}

}  // namespace sandprobe::report::fixtures
