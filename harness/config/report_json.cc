#include "config/report_json.h"

#include <fmt/format.h>

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "core/params.h"

namespace sandprobe::config {
namespace {

using Json = nlohmann::json;

// A bad field: its JSON path and what was expected. Thrown inside this file only.
struct BadField {
  std::string path;
  std::string message;
};

const Json& Get(const Json& j, std::string_view key, const std::string& path) {
  if (!j.is_object()) throw BadField{path, "expected an object"};
  const auto it = j.find(key);
  if (it == j.end()) throw BadField{fmt::format("{}/{}", path, key), "missing"};
  return *it;
}

std::string Str(const Json& j, std::string_view key, const std::string& path) {
  const Json& v = Get(j, key, path);
  if (!v.is_string()) throw BadField{fmt::format("{}/{}", path, key), "expected a string"};
  return v.get<std::string>();
}

template <typename T>
T Num(const Json& j, std::string_view key, const std::string& path) {
  const Json& v = Get(j, key, path);
  if (!v.is_number()) throw BadField{fmt::format("{}/{}", path, key), "expected a number"};
  if constexpr (std::is_unsigned_v<T>) {
    if (!v.is_number_unsigned()) {
      throw BadField{fmt::format("{}/{}", path, key), "expected a count (>= 0)"};
    }
  }
  if constexpr (std::is_integral_v<T>) {
    // A float or an integer past T's range would be converted with undefined behaviour (seen
    // while writing the report.json fuzz target: 1e300 as an exit code).
    const bool fits = v.is_number_unsigned()  ? std::in_range<T>(v.get<uint64_t>())
                      : v.is_number_integer() ? std::in_range<T>(v.get<int64_t>())
                                              : false;
    if (!fits) {
      throw BadField{fmt::format("{}/{}", path, key),
                     fmt::format("expected a whole number from {} to {}",
                                 std::numeric_limits<T>::min(), std::numeric_limits<T>::max())};
    }
  }
  return v.get<T>();
}

bool Bool(const Json& j, std::string_view key, const std::string& path) {
  const Json& v = Get(j, key, path);
  if (!v.is_boolean()) throw BadField{fmt::format("{}/{}", path, key), "expected true or false"};
  return v.get<bool>();
}

const Json& Array(const Json& j, std::string_view key, const std::string& path) {
  const Json& v = Get(j, key, path);
  if (!v.is_array()) throw BadField{fmt::format("{}/{}", path, key), "expected an array"};
  return v;
}

std::vector<std::string> Strings(const Json& j, std::string_view key, const std::string& path) {
  std::vector<std::string> out;
  const Json& a = Array(j, key, path);
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_string())
      throw BadField{fmt::format("{}/{}/{}", path, key, i), "expected a string"};
    out.push_back(a[i].get<std::string>());
  }
  return out;
}

// One of `names` (each ToString(T) of an enum value), as that value.
template <typename T, size_t N>
T Enum(const Json& j, std::string_view key, const std::string& path, const T (&values)[N]) {
  const std::string s = Str(j, key, path);
  std::string allowed;
  for (const T v : values) {
    if (core::ToString(v) == s) return v;
    allowed += fmt::format("{}{}", allowed.empty() ? "" : ", ", core::ToString(v));
  }
  throw BadField{fmt::format("{}/{}", path, key), "expected one of " + allowed};
}

constexpr core::ArmRole kRoles[] = {core::ArmRole::kControl, core::ArmRole::kCandidate};
constexpr core::Level kLevels[] = {core::Level::kRequired, core::Level::kAdvisory};
constexpr core::Exposure kExposures[] = {core::Exposure::kExposed, core::Exposure::kContained,
                                         core::Exposure::kUnknown};
// "sandbox_word" only exists from schema version 3 on; an older report never holds it.
constexpr core::Evidence kEvidence[] = {core::Evidence::kPositive, core::Evidence::kAbsence,
                                        core::Evidence::kSandboxWord, core::Evidence::kNone};
constexpr core::Ending kEndings[] = {core::Ending::kExited,       core::Ending::kSignaled,
                                     core::Ending::kDeadline,     core::Ending::kInterrupted,
                                     core::Ending::kHarnessError, core::Ending::kNotRun};
constexpr core::VerdictKind kVerdicts[] = {core::VerdictKind::kPass, core::VerdictKind::kFail,
                                           core::VerdictKind::kInconclusive,
                                           core::VerdictKind::kSkip, core::VerdictKind::kError};

core::ArmInfo ReadArm(const Json& j, const std::string& path) {
  core::ArmInfo a;
  a.name = Str(j, "name", path);
  a.role = Enum(j, "role", path, kRoles);
  a.driver = Str(j, "driver", path);
  a.description = Str(j, "description", path);
  a.source_path = Str(j, "source", path);
  a.weakens = Strings(j, "weakens", path);
  a.control = Str(j, "control", path);
  if (j.contains("ip_family")) a.ip_family = Str(j, "ip_family", path);  // only when declared
  const Json& l = Get(j, "limits", path);
  const std::string lp = path + "/limits";
  if (!l.is_object()) throw BadField{lp, "expected an object"};
  if (l.contains("timeout_s")) a.limits.timeout_s = Num<double>(l, "timeout_s", lp);
  if (l.contains("memory_bytes")) a.limits.memory_bytes = Num<uint64_t>(l, "memory_bytes", lp);
  if (l.contains("tmp_bytes")) a.limits.tmp_bytes = Num<uint64_t>(l, "tmp_bytes", lp);
  if (l.contains("pids")) a.limits.pids = Num<uint64_t>(l, "pids", lp);
  if (l.contains("output_bytes")) a.limits.output_bytes = Num<uint64_t>(l, "output_bytes", lp);
  return a;
}

void ReadEvidence(const Json& j, const std::string& path, core::Observation& o) {
  o.ending = Enum(j, "ending", path, kEndings);
  o.exit_code = Num<int>(j, "exit_code", path);
  o.signal = Num<int>(j, "signal", path);
  o.duration_s = Num<double>(j, "duration_s", path);
  o.deadline_s = Num<double>(j, "deadline_s", path);
  o.harness_error = Str(j, "harness_error", path);
  if (const Json& r = Get(j, "result", path); !r.is_null()) o.result = r;
  // Only the count and the last progress record are kept (see report_json.h).
  const size_t records = Num<size_t>(j, "records_count", path);
  o.records.assign(records, Json(nullptr));
  if (const Json& p = Get(j, "last_progress", path); !p.is_null()) {
    if (o.records.empty()) throw BadField{path + "/last_progress", "set, but records_count is 0"};
    o.records.back() = p;
  }
  o.dropped_records = Num<size_t>(j, "dropped_records", path);
  o.foreign_lines = Num<size_t>(j, "foreign_lines", path);
  const Json& hits = Array(j, "canary_hits", path);
  for (size_t i = 0; i < hits.size(); ++i) {
    const std::string hp = fmt::format("{}/canary_hits/{}", path, i);
    core::CanaryHit h{Str(hits[i], "kind", hp), Str(hits[i], "peer", hp),
                      Str(hits[i], "detail", hp), 0};
    if (hits[i].contains("unix_ms")) h.unix_ms = Num<int64_t>(hits[i], "unix_ms", hp);
    o.canary_hits.push_back(std::move(h));
  }
  o.SetReportedFacts(Get(j, "driver_facts", path));
  o.stdout_bytes = Num<uint64_t>(j, "stdout_bytes", path);
  o.stderr_bytes = Num<uint64_t>(j, "stderr_bytes", path);
  o.stdout_head = Str(j, "stdout_excerpt", path);
  o.stderr_head = Str(j, "stderr_excerpt", path);
  if (j.contains("timeline")) {
    const Json& phases = Array(j, "timeline", path);
    for (size_t i = 0; i < phases.size(); ++i) {
      const std::string pp = fmt::format("{}/timeline/{}", path, i);
      o.timeline.push_back({Str(phases[i], "phase", pp), Num<double>(phases[i], "start_s", pp),
                            Num<double>(phases[i], "end_s", pp)});
    }
  }
  if (j.contains("probe_cpu")) {
    const Json& c = Get(j, "probe_cpu", path);
    o.probe_cpu = core::CpuFigure{Num<double>(c, "seconds", path + "/probe_cpu"),
                                  Str(c, "source", path + "/probe_cpu")};
  }
}

core::Cell ReadCell(const Json& j, const std::string& path) {
  core::Cell c;
  core::Observation& o = c.observation;
  o.probe = Str(j, "probe", path);
  o.arm = Str(j, "arm", path);
  o.invocation = Str(j, "invocation", path);
  o.params = Get(j, "params", path);
  o.params_key = core::ParamsKey(o.params);  // ShownCell matches control cells by it
  c.classification.exposure = Enum(j, "exposure", path, kExposures);
  c.classification.evidence = Enum(j, "evidence_kind", path, kEvidence);
  c.classification.label = Str(j, "label", path);
  c.classification.reason = Str(j, "reason", path);
  ReadEvidence(Get(j, "evidence", path), path + "/evidence", o);
  if (j.contains("trials")) {
    const Json& trials = Array(j, "trials", path);
    for (size_t i = 0; i < trials.size(); ++i) {
      const std::string tp = fmt::format("{}/trials/{}", path, i);
      c.trials.push_back(
          {Str(trials[i], "invocation", tp), Enum(trials[i], "exposure", tp, kExposures),
           Enum(trials[i], "evidence_kind", tp, kEvidence), Str(trials[i], "label", tp)});
    }
  }
  return c;
}

core::VerdictCell ReadVerdict(const Json& j, const std::string& path) {
  core::VerdictCell v;
  v.probe = Str(j, "probe", path);
  v.candidate = Str(j, "candidate", path);
  v.verdict.kind = Enum(j, "verdict", path, kVerdicts);
  v.verdict.reason = Str(j, "reason", path);
  v.verdict.validated_by = Str(j, "validated_by", path);
  v.verdict.evidence = Enum(j, "evidence_kind", path, kEvidence);
  if (j.contains("accepted")) {
    const Json& a = Get(j, "accepted", path);
    const std::string ap = path + "/accepted";
    v.accepted = core::Acceptance{Str(a, "reason", ap), Str(a, "expires", ap),
                                  Bool(a, "expired", ap), Str(a, "source", ap)};
  }
  return v;
}

core::Matrix Read(const Json& j) {
  core::Matrix m;
  if (Str(j, "generator", "") != "sandprobe") {
    throw BadField{"/generator", "not a sandprobe report"};
  }
  m.schema_version = Num<int>(j, "schema_version", "");
  if (m.schema_version < 1 || m.schema_version > core::kReportSchemaVersion) {
    throw BadField{"/schema_version", fmt::format("this sandprobe reads versions 1 to {}, not {}",
                                                  core::kReportSchemaVersion, m.schema_version)};
  }
  m.schema_version = core::kReportSchemaVersion;  // what it is re-rendered as
  m.run_id = Str(j, "run_id", "");
  m.nonce_hash = Str(j, "nonce_hash", "");
  m.suite = Str(j, "suite", "");
  m.started_at = Str(j, "started_at", "");
  m.finished_at = Str(j, "finished_at", "");
  m.interrupted = Bool(j, "interrupted", "");
  m.banners = Strings(j, "banners", "");
  m.notes = Strings(j, "notes", "");
  const Json& arms = Array(j, "arms", "");
  for (size_t i = 0; i < arms.size(); ++i)
    m.arms.push_back(ReadArm(arms[i], fmt::format("/arms/{}", i)));
  const Json& rows = Array(j, "rows", "");
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string p = fmt::format("/rows/{}", i);
    m.rows.push_back(
        {Str(rows[i], "probe", p), Str(rows[i], "label", p), Enum(rows[i], "level", p, kLevels)});
  }
  const Json& cells = Array(j, "observations", "");
  for (size_t i = 0; i < cells.size(); ++i) {
    m.cells.push_back(ReadCell(cells[i], fmt::format("/observations/{}", i)));
  }
  const Json& verdicts = Array(j, "verdicts", "");
  for (size_t i = 0; i < verdicts.size(); ++i) {
    m.verdicts.push_back(ReadVerdict(verdicts[i], fmt::format("/verdicts/{}", i)));
  }
  if (j.contains("cost")) {
    const Json& c = Get(j, "cost", "");
    m.cost = core::RunCost{.wall_s = Num<double>(c, "wall_s", "/cost"),
                           .cpus = Num<int>(c, "cpus", "/cost"),
                           .machine_cpu_s = Num<double>(c, "machine_cpu_s", "/cost"),
                           .harness_cpu_s = Num<double>(c, "harness_cpu_s", "/cost"),
                           .children_cpu_s = Num<double>(c, "children_cpu_s", "/cost")};
  }
  return m;
}

}  // namespace

std::expected<core::Matrix, std::string> ParseReportJson(std::string_view text,
                                                         const std::string& source) {
  try {
    return Read(Json::parse(text));
  } catch (const BadField& e) {
    return std::unexpected(
        fmt::format("{}: {}: {}", source, e.path.empty() ? "/" : e.path, e.message));
  } catch (const Json::exception& e) {
    return std::unexpected(fmt::format("{}: not valid report JSON: {}", source, e.what()));
  }
}

std::expected<core::Matrix, std::string> LoadReportJson(const std::filesystem::path& file) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(file, ec);
  if (ec) return std::unexpected(fmt::format("{}: {}", file.string(), ec.message()));
  if (size > (512u << 20)) {
    return std::unexpected(
        fmt::format("{}: {} bytes, over the 512 MiB a report may have", file.string(), size));
  }
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) return std::unexpected(file.string() + ": cannot read");
  return ParseReportJson(text.str(), file.string());
}

}  // namespace sandprobe::config
