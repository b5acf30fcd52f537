// Observation: the raw facts of one probe invocation in one arm, with no judgement. Drivers fill
// the ending and driver facts; the output collector fills records and bounded raw output.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace sandprobe::core {

// How the invocation ended, as the harness saw it.
enum class Ending {
  kExited,        // the sandbox process exited on its own (exit_code is valid)
  kSignaled,      // killed by a signal the harness did not send (signal is valid)
  kDeadline,      // still running at the harness deadline; the harness killed it
  kInterrupted,   // the run was interrupted (SIGINT/SIGTERM) before the probe ended
  kHarnessError,  // the harness or driver failed; harness_error says why
  kNotRun,        // never started (skipped, or the run stopped first)
};
std::string_view ToString(Ending e);

// A canary listener's record that this invocation reached it (server-side proof).
struct CanaryHit {
  std::string kind;     // "http" | "tcp" | "dns"
  std::string peer;     // client "ip:port" as the canary saw it
  std::string detail;   // bounded request summary
  int64_t unix_ms = 0;  // when the canary logged it (its own wall clock, ms since the epoch); 0 =
                        // not known (a target whose log carries no time)
};

// One phase of an invocation's life, seconds on the run's clock (0 = when the run began to
// invoke probes; steady, not wall time). The runner's phases: "queued" (planned, waiting for a job
// slot) and "invoke" (the driver's Execute, all calls of a sequence). A driver's own phases sit
// inside "invoke": command and local "spawn+run", "after-call" (listening for heartbeats),
// "after-hook"; docker "create", "start", "wait", "inspect+logs", "remove"; kubernetes
// "policy-age", "create", "pod-start" (until a container runs), "running", "logs+status",
// "delete", "canary-log", or "dry-run" (admission); http "health-before", "request" (until the
// answer's first body byte), "response", "after-call", "health-after".
struct Phase {
  std::string name;
  double start_s = 0;
  double end_s = 0;
};

// CPU an invocation is known to have used, seconds (user + system), with where the figure comes
// from; unset where the platform does not say.
struct CpuFigure {
  double seconds = 0;
  // e.g. "the command's own cgroup (...)"; a source starting "at least" marks a lower bound
  // ("at least: wait4 rusage of sandprobe-reaper, ...").
  std::string source;
  bool LowerBound() const { return source.starts_with("at least"); }
};

struct Observation {
  std::string probe;       // probe id
  std::string arm;         // arm (manifest) name
  std::string invocation;  // per-invocation tag carried in the script and in canary hits
  std::string params_key;  // canonical JSON of the resolved parameters (control matching)
  nlohmann::json params = nlohmann::json::object();

  Ending ending = Ending::kNotRun;
  int exit_code = 0;          // valid for kExited
  int signal = 0;             // valid for kSignaled
  double duration_s = 0;      // wall time from start to end, seconds
  double deadline_s = 0;      // the harness deadline that applied, seconds
  std::string harness_error;  // for kHarnessError

  // Nonce-tagged records in arrival order (bounded), and the first "result" record.
  std::vector<nlohmann::json> records;
  std::optional<nlohmann::json> result;
  size_t dropped_records = 0;  // records beyond the bound
  size_t foreign_lines = 0;    // marker lines with a wrong nonce or invalid JSON: never evidence

  // Raw output, untrusted: valid UTF-8 (invalid bytes replaced), bounded head.
  std::string stdout_head;
  std::string stderr_head;
  uint64_t stdout_bytes = 0;  // total bytes seen
  uint64_t stderr_bytes = 0;

  std::vector<CanaryHit> canary_hits;
  // Facts from the driver that beat self-reports, e.g. {"oom_killed": true} from
  // Docker Engine API ContainerInspect State.OOMKilled; {"descendants_killed": 2}.
  nlohmann::json driver_facts = nlohmann::json::object();

  // The harness's own findings about this cell (runner/invoke.cc), read by the judge:
  // why the cell is reported but not judged in its arm ("" = judged; drivers::Driver::
  // NotJudgedReason or core::UnclaimedReason: the verdict is SKIP with it and banners ignore the
  // cell), and whether the planted env canary could not be planted in this sandbox (a service the
  // harness did not start: a clean result proves nothing, docs/traps.md trap 22).
  std::string not_judged;
  bool canary_not_planted = false;
  // Where the time went (Phase) and the CPU the sandboxed program itself used (a command's rusage,
  // a container's cgroup), for the run's timeline and CPU account; never judged.
  std::vector<Phase> timeline;
  std::optional<CpuFigure> probe_cpu;

  // The last "progress" record, if any (e.g. the balloon's last flushed step).
  const nlohmann::json* LastProgress() const;
  // What reports show as the driver facts: driver_facts with the harness findings above under
  // their fact keys (fact::kNotJudged, fact::kCanaryNotPlanted) when set.
  nlohmann::json ReportedFacts() const;
  // The inverse, for a report read back: `facts` (as ReportedFacts wrote them) split into
  // driver_facts and the harness findings.
  void SetReportedFacts(nlohmann::json facts);
};

}  // namespace sandprobe::core
