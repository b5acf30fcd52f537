// Matrix: probes x arms of observations, plus one verdict per probe x candidate. The runner
// produces it; reporters render it and never judge.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/exposure.h"
#include "core/manifest.h"
#include "core/observation.h"
#include "core/suite.h"
#include "core/verdict.h"

namespace sandprobe::core {

// 2: observations carry their trials (--repeat) and verdicts their acceptance (--expect).
// 3: evidence_kind "sandbox_word", and the summary's pass_on_sandbox_word count.
inline constexpr int kReportSchemaVersion = 3;

struct ArmInfo {
  std::string name;
  ArmRole role = ArmRole::kCandidate;
  std::string driver;
  std::string description;
  std::string source_path;
  std::vector<std::string> weakens;  // declared isolation-weakening options
  std::string control;               // for candidates: the control named by the manifest
  Limits limits;                     // what the manifest claims (probes size attacks from it)
  // The one address family the arm measures (drivers::Driver::AddressFamily, kubernetes.ipFamily:
  // "IPv4" | "IPv6"), "" = none declared. Shown beside the arm's name in columns and banners.
  std::string ip_family = "";
};

// "name", or "name (IPv6)" for an arm that measures one address family.
std::string ArmTitle(const ArmInfo& arm);

struct Row {
  std::string probe;  // probe id
  std::string label;  // row label
  Level level = Level::kRequired;
  // The probe's category ("net", "cred", ...), for run-level findings (core/banners.h). Not
  // rendered: reports name rows by probe id and label only.
  std::string category = "";
  // ProbeDescriptor::beyond_policy: its exposed cells are traffic beyond the arm's own policy as
  // written, so a fresh pod's leak there can be late enforcement under an allow-list policy too.
  bool beyond_policy = false;
};

// One probe in one arm. Controls can hold several cells per probe: one per distinct parameter set
// (params_key) that the candidates needed.
// One trial of an invocation run several times (`sandprobe run --repeat N`): how it was
// classified. The cell's observation is one of the trials (core/trials.h picks which).
struct Trial {
  std::string invocation;  // the trial's own invocation tag (canary hits are matched by it)
  Exposure exposure = Exposure::kUnknown;
  Evidence evidence = Evidence::kNone;
  std::string label;  // matrix cell text of that trial, e.g. "blocked", "REACHED"
};

struct Cell {
  Observation observation;
  Classification classification;
  // Every trial of a repeated invocation, in the order they ended; empty when it ran once.
  std::vector<Trial> trials = {};
};

// A known FAIL accepted by an expectations file (`run --expect`, core/expect.h). The verdict stays
// FAIL; an unexpired acceptance keeps it from failing the gate, an expired one does not.
struct Acceptance {
  std::string reason;
  std::string expires;   // YYYY-MM-DD, the last day the acceptance holds (UTC)
  bool expired = false;  // judged against the run's date (UTC)
  std::string source;    // "file:line:col" of the expectation
};

struct VerdictCell {
  std::string probe;
  std::string candidate;
  Verdict verdict;
  std::optional<Acceptance> accepted = std::nullopt;

  // FAIL under an unexpired acceptance: reported as ACCEPTED, does not fail the gate.
  bool Accepted() const {
    return verdict.kind == VerdictKind::kFail && accepted.has_value() && !accepted->expired;
  }
  // A PASS resting only on the sandbox's own word (Evidence::kSandboxWord): still a PASS for the
  // gate, but every format marks it and counts it apart ("N PASS (M on the sandbox's word)").
  bool OnSandboxWord() const {
    return verdict.kind == VerdictKind::kPass && verdict.evidence == Evidence::kSandboxWord;
  }
};

// What the run cost the machine, measured by the runner around the probes' invocations (from
// the first to the last): seconds of wall time and of CPU (user + system). machine: every
// process (/proc/stat, all CPUs); harness: sandprobe's own threads (getrusage RUSAGE_SELF);
// children: the processes it waited for (RUSAGE_CHILDREN: reapers and what they reaped, CLI
// tools). Never judged.
struct RunCost {
  double wall_s = 0;
  int cpus = 0;  // online CPUs: the floor of the wall time is machine_cpu_s / cpus
  double machine_cpu_s = 0;
  double harness_cpu_s = 0;
  double children_cpu_s = 0;
};

struct Matrix {
  int schema_version = kReportSchemaVersion;
  std::string run_id;
  std::string nonce_hash;  // short sha256 prefix of the nonce (the nonce itself is not secret,
                           // but reports need not carry it)
  std::string suite;
  std::string started_at;   // RFC 3339 UTC
  std::string finished_at;  // RFC 3339 UTC
  bool interrupted = false;
  std::vector<std::string> banners;  // one-line findings shown above the matrix (core/banners.h)
  std::vector<std::string> notes;    // run-level notes and warnings
  std::vector<ArmInfo> arms;
  std::vector<Row> rows;
  std::vector<Cell> cells;
  std::vector<VerdictCell> verdicts;
  std::vector<Criterion> criteria;  // the suite's acceptance criteria (judged: core/criteria.h)
  std::optional<RunCost> cost;      // set by a run (runner/run.cc), absent in a fixture

  // The cell of a probe in an arm: for a candidate its only cell; for a control the one whose
  // params match `params_key`, or the first when params_key is empty. nullptr if none.
  const Cell* Find(std::string_view probe, std::string_view arm,
                   std::string_view params_key = "") const;
  const VerdictCell* FindVerdict(std::string_view probe, std::string_view candidate) const;
  const ArmInfo* FindArm(std::string_view name) const;
};

// Exit code of `sandprobe run` (docs/design.md): 0 every required verdict PASS or SKIP; 1 a
// required FAIL; 2 no FAIL but a required INCONCLUSIVE or ERROR (or the run was interrupted). An
// accepted FAIL (VerdictCell::Accepted) counts as neither; an expired acceptance is a FAIL again.
int RunExitCode(const Matrix& m);

}  // namespace sandprobe::core
