// report.json: the machine-readable matrix. Shape: reports/schema/report.schema.json. Strings are
// bounded and valid UTF-8 (JsonText); sandbox JSON values are bounded (JsonBounded); the dump
// replaces invalid UTF-8 instead of throwing.
#include "core/trials.h"
#include "report/escape.h"
#include "report/reporters.h"
#include "report/view.h"

namespace sandprobe::report {
namespace {

using Json = nlohmann::ordered_json;

constexpr size_t kNameBytes = 256;
constexpr size_t kTextBytes = 4096;     // reasons, errors, notes, canary details
constexpr size_t kExcerptBytes = 4096;  // raw stdout/stderr excerpt per stream
constexpr size_t kRecordBytes = 16 * 1024;
// Driver facts carry a multi-call probe's earlier calls (state.persists: up to 34 results).
constexpr size_t kFactsBytes = 64 * 1024;

Json Strings(const std::vector<std::string>& items, size_t max_bytes) {
  Json out = Json::array();
  for (const std::string& s : items) out.push_back(JsonText(s, max_bytes));
  return out;
}

// The claims of a manifest; absent limits are left out.
Json LimitsJson(const core::Limits& l) {
  Json out = Json::object();
  if (l.timeout_s) out["timeout_s"] = *l.timeout_s;
  if (l.memory_bytes) out["memory_bytes"] = *l.memory_bytes;
  if (l.tmp_bytes) out["tmp_bytes"] = *l.tmp_bytes;
  if (l.pids) out["pids"] = *l.pids;
  if (l.output_bytes) out["output_bytes"] = *l.output_bytes;
  if (l.noexec) {
    out["noexec"] = l.noexec->every_writable ? Json(true) : Strings(l.noexec->paths, kTextBytes);
  }
  if (l.seccomp) out["seccomp"] = std::string(core::ToString(*l.seccomp));
  return out;
}

Json ArmJson(const core::ArmInfo& arm) {
  Json out{{"name", JsonText(arm.name, kNameBytes)},
           {"role", core::ToString(arm.role)},
           {"driver", JsonText(arm.driver, kNameBytes)},
           {"description", JsonText(arm.description, kTextBytes)},
           {"source", JsonText(arm.source_path, kTextBytes)},
           {"weakens", Strings(arm.weakens, kTextBytes)},
           {"control", JsonText(arm.control, kNameBytes)},
           {"limits", LimitsJson(arm.limits)}};
  if (!arm.ip_family.empty()) out["ip_family"] = JsonText(arm.ip_family, kNameBytes);
  return out;
}

Json EvidenceJson(const core::Observation& obs) {
  Json hits = Json::array();
  for (const core::CanaryHit& h : obs.canary_hits) {
    Json hit = {{"kind", JsonText(h.kind, kNameBytes)},
                {"peer", JsonText(h.peer, kNameBytes)},
                {"detail", JsonText(h.detail, kTextBytes)}};
    if (h.unix_ms > 0) hit["unix_ms"] = h.unix_ms;  // still_running judges by it
    hits.push_back(std::move(hit));
  }
  const nlohmann::json* progress = obs.LastProgress();
  Json out{{"ending", core::ToString(obs.ending)},
           {"exit_code", obs.exit_code},
           {"signal", obs.signal},
           {"duration_s", obs.duration_s},
           {"deadline_s", obs.deadline_s},
           {"harness_error", JsonText(obs.harness_error, kTextBytes)},
           {"result", obs.result ? JsonBounded(*obs.result, kRecordBytes) : Json(nullptr)},
           {"last_progress", progress ? JsonBounded(*progress, kRecordBytes) : Json(nullptr)},
           {"records_count", obs.records.size()},
           {"dropped_records", obs.dropped_records},
           {"foreign_lines", obs.foreign_lines},
           {"canary_hits", std::move(hits)},
           {"driver_facts", JsonBounded(obs.ReportedFacts(), kFactsBytes)},
           {"stdout_bytes", obs.stdout_bytes},
           {"stderr_bytes", obs.stderr_bytes},
           {"stdout_excerpt", JsonText(obs.stdout_head, kExcerptBytes)},
           {"stderr_excerpt", JsonText(obs.stderr_head, kExcerptBytes)}};
  // Where the time and the CPU went (a run's, not a fixture's): seconds on the run's clock.
  if (!obs.timeline.empty()) {
    Json phases = Json::array();
    for (const core::Phase& p : obs.timeline) {
      phases.push_back(
          {{"phase", JsonText(p.name, kNameBytes)}, {"start_s", p.start_s}, {"end_s", p.end_s}});
    }
    out["timeline"] = std::move(phases);
  }
  if (obs.probe_cpu) {
    out["probe_cpu"] = {{"seconds", obs.probe_cpu->seconds},
                        {"source", JsonText(obs.probe_cpu->source, kTextBytes)}};
  }
  return out;
}

Json ObservationJson(const core::Cell& cell) {
  const core::Observation& obs = cell.observation;
  Json out{{"probe", JsonText(obs.probe, kNameBytes)},
           {"arm", JsonText(obs.arm, kNameBytes)},
           {"invocation", JsonText(obs.invocation, kNameBytes)},
           {"params", JsonBounded(obs.params, kRecordBytes)},
           {"exposure", core::ToString(cell.classification.exposure)},
           {"evidence_kind", core::ToString(cell.classification.evidence)},
           {"label", JsonText(cell.classification.label, kNameBytes)},
           {"reason", JsonText(cell.classification.reason, kTextBytes)},
           {"evidence", EvidenceJson(obs)}};
  if (!cell.trials.empty()) {  // --repeat N: every trial, and whether they disagreed
    Json trials = Json::array();
    for (const core::Trial& t : cell.trials) {
      trials.push_back({{"invocation", JsonText(t.invocation, kNameBytes)},
                        {"exposure", core::ToString(t.exposure)},
                        {"evidence_kind", core::ToString(t.evidence)},
                        {"label", JsonText(t.label, kNameBytes)}});
    }
    out["trials"] = std::move(trials);
    out["flaky"] = core::Flaky(cell);
    out["trial_counts"] = JsonText(core::TrialCounts(cell), kTextBytes);
  }
  return out;
}

Json VerdictJson(const core::Matrix& m, const core::VerdictCell& v) {
  core::Level level = core::Level::kRequired;
  for (const core::Row& row : m.rows) {
    if (row.probe == v.probe) level = row.level;
  }
  Json out{{"probe", JsonText(v.probe, kNameBytes)},
           {"candidate", JsonText(v.candidate, kNameBytes)},
           {"verdict", core::ToString(v.verdict.kind)},
           {"reason", JsonText(v.verdict.reason, kTextBytes)},
           {"validated_by", JsonText(v.verdict.validated_by, kNameBytes)},
           {"evidence_kind", core::ToString(v.verdict.evidence)},
           {"level", core::ToString(level)}};
  if (v.accepted) {  // --expect: the verdict stays FAIL; "shown" is what every format shows
    const core::Acceptance& a = *v.accepted;
    out["accepted"] = {{"reason", JsonText(a.reason, kTextBytes)},
                       {"expires", JsonText(a.expires, kNameBytes)},
                       {"expired", a.expired},
                       {"source", JsonText(a.source, kTextBytes)}};
    out["shown"] = ShownVerdictText(&v);
  }
  return out;
}

// The checklist: each criterion with its rows and, per candidate, whether it holds and which
// rows broke it ("MISSING": no verdict).
Json CriteriaJson(const core::Matrix& m) {
  Json out = Json::array();
  const auto checklist = Checklist(m);
  for (size_t i = 0; i < m.criteria.size(); ++i) {
    const core::Criterion& c = m.criteria[i];
    Json probes = Json::array(), results = Json::array();
    for (const std::string& p : c.probes) probes.push_back(JsonText(p, kNameBytes));
    for (const CandidateChecklist& list : checklist) {
      const ChecklistItem& item = list.items[i];
      Json broken = Json::array();
      for (const BrokenRow& row : item.broken) {
        broken.push_back({{"probe", JsonText(row.probe, kNameBytes)},
                          {"verdict", row.verdict},
                          {"reason", JsonText(row.reason, kTextBytes)}});
      }
      results.push_back({{"candidate", JsonText(list.candidate->name, kNameBytes)},
                         {"holds", item.holds},
                         {"broken", std::move(broken)}});
    }
    out.push_back({{"name", JsonText(c.name, kTextBytes)},
                   {"probes", std::move(probes)},
                   {"results", std::move(results)}});
  }
  return out;
}

Json SummaryJson(const core::Matrix& m) {
  Json candidates = Json::array();
  for (const core::ArmInfo* arm : CandidateArms(m)) {
    const VerdictCounts counts = CountVerdicts(m, arm->name);
    Json c{{"candidate", JsonText(arm->name, kNameBytes)}, {"total", counts.Total()}};
    for (const core::VerdictKind k : kVerdictOrder) {
      c[core::ToString(k)] = counts.Of(k);
      // Of the PASSes: those on the sandbox's word only (verdict evidence_kind "sandbox_word").
      if (k == core::VerdictKind::kPass) c["pass_on_sandbox_word"] = counts.on_sandbox_word;
    }
    c["ACCEPTED"] = counts.accepted;
    c["missing"] = counts.missing;
    candidates.push_back(std::move(c));
  }
  const int code = core::RunExitCode(m);
  return Json{{"exit_code", code},
              {"exit_meaning", ExitCodeMeaning(code)},
              {"candidates", std::move(candidates)}};
}

}  // namespace

std::string RenderJson(const core::Matrix& m) {
  Json arms = Json::array(), rows = Json::array(), observations = Json::array(),
       verdicts = Json::array();
  for (const core::ArmInfo& arm : m.arms) arms.push_back(ArmJson(arm));
  for (const core::Row& row : m.rows) {
    rows.push_back({{"probe", JsonText(row.probe, kNameBytes)},
                    {"label", JsonText(row.label, kNameBytes)},
                    {"level", core::ToString(row.level)}});
  }
  for (const core::Cell& cell : m.cells) observations.push_back(ObservationJson(cell));
  for (const core::VerdictCell& v : m.verdicts) verdicts.push_back(VerdictJson(m, v));
  Json report{{"schema_version", core::kReportSchemaVersion},
              {"generator", "sandprobe"},
              {"run_id", JsonText(m.run_id, kNameBytes)},
              {"nonce_hash", JsonText(m.nonce_hash, kNameBytes)},
              {"suite", JsonText(m.suite, kNameBytes)},
              {"started_at", JsonText(m.started_at, kNameBytes)},
              {"finished_at", JsonText(m.finished_at, kNameBytes)},
              {"interrupted", m.interrupted},
              {"criteria", CriteriaJson(m)},
              {"banners", Strings(m.banners, kTextBytes)},
              {"notes", Strings(m.notes, kTextBytes)},
              {"arms", std::move(arms)},
              {"rows", std::move(rows)},
              {"observations", std::move(observations)},
              {"verdicts", std::move(verdicts)},
              {"summary", SummaryJson(m)}};
  if (m.cost) {  // what the run cost the machine (core::RunCost), seconds
    const core::RunCost& c = *m.cost;
    report["cost"] = {{"wall_s", c.wall_s},
                      {"cpus", c.cpus},
                      {"machine_cpu_s", c.machine_cpu_s},
                      {"harness_cpu_s", c.harness_cpu_s},
                      {"children_cpu_s", c.children_cpu_s}};
  }
  return report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace sandprobe::report
