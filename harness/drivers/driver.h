// The driver interface: how a probe is deployed into one arm. Each driver declares what it can
// do, prepares (checks its sandbox exists), executes one probe invocation under a client-side
// deadline, and cleans up everything it created.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <expected>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/manifest.h"
#include "core/observation.h"
#include "core/probe.h"

namespace sandprobe::drivers {

// Seconds on the steady clock: the unit drivers time their phases in (core::Phase); the runner
// moves them to the run's clock (runner/invoke.h PlaceOnRunClock).
inline double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The phase `name` from `start` (SteadySeconds()) until now.
inline core::Phase PhaseSince(std::string name, double start) {
  return core::Phase{std::move(name), start, SteadySeconds()};
}

// One probe invocation as the runner hands it to a driver.
struct Invocation {
  std::string probe;       // probe id
  std::string invocation;  // per-invocation tag (also inside the script)
  std::string script;      // the deployed Python program (preamble + body), <= 64 KiB
  double deadline_s = 10;  // harness deadline, seconds from start
  // Planted in the environment of the process that launches the sandbox (canary secrets).
  std::vector<std::pair<std::string, std::string>> extra_env;
  // kubernetes: the node to run on ("" = the scheduler's choice; other drivers ignore it).
  std::string node = "";
  // kubernetes: the address family this invocation measures ("IPv4" | "IPv6"): its candidate's
  // kubernetes.ipFamily, for the candidate and for its control alike (the Job's node address and
  // SANDPROBE_IP_FAMILY); "" = the arm's own. Other drivers ignore it.
  std::string ip_family = "";
  // The probe's after_call_s: how long a driver whose call ends on the sandbox's word (http: the
  // answer; command: the command's exit) waits after the call for late evidence (canary
  // heartbeats of what outlived it); 0 = do not wait.
  double after_call_s = 0;
  // The probe's deploy mode (probe.yaml `deploy:`): kHarnessAdmission asks the platform's
  // admission control instead of running the script (kubernetes; other drivers ignore it).
  core::Deploy deploy = core::Deploy::kSandbox;
  // {description, payload} of the canary keys planted in a new session keyring of the process
  // that launches the sandbox (cred.keyring; process::ProcessSpec::session_keys). Drivers that
  // start the sandbox's process plant them (local, command); the others cannot.
  std::vector<std::pair<std::string, std::string>> session_keys = {};
  // Descriptors the harness opened as canaries (fs.inherited-fds: a directory outside every
  // sandbox root, a file holding a planted secret). Only the local baseline hands them on
  // (CommandConfig::pass_planted_fds), as an agent's plain subprocess that keeps its descriptors
  // would: the leak its control shows. Every other launch closes them.
  std::vector<int> planted_fds = {};
};

// The system clock in ms since the epoch: the canaries' clock (canary::Hit::unix_ms), for the
// driver fact call_ended_unix_ms.
inline int64_t UnixMsNow() {
  using std::chrono::duration_cast, std::chrono::milliseconds, std::chrono::system_clock;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

// Shared settings from the runner.
struct DriverContext {
  std::string nonce;        // the run's nonce: records without it are not evidence
  std::string reaper_path;  // sandprobe-reaper executable
  double kill_grace_s = 2;  // SIGTERM -> SIGKILL grace, seconds
  std::string run_id;       // labels/names of what a driver creates, for cleanup
  // The "{name}" placeholders the suite's parameters use (runner::PlaceholdersUsed), so a
  // driver deploys a target of its own (kubernetes: the in-cluster canary) only when asked for.
  std::set<std::string> placeholders_used = {};
  // Set on Ctrl-C; long setup steps (the in-cluster canary's deploy) watch it. May be null.
  const std::atomic<bool>* cancel = nullptr;
  // The run's canary folder (absolute path), whose .lock is held while the run lives. Drivers
  // label what they create with it, so `sandprobe cleanup` given another canary dir (another
  // user's HOME, --canary-dir) still sees that the run is alive (docs/design.md, "Cleanup").
  std::string run_folder = {};
};

// A setup problem found before any probe ran (exit code 3); `hint` says how to fix it.
struct SetupError {
  std::string message;
  std::string hint;
};

class Driver {
 public:
  virtual ~Driver() = default;
  virtual std::string_view kind() const = 0;  // "local", "command", ...
  // Checks that the sandbox can be used at all (binary on PATH, daemon reachable).
  virtual std::expected<void, SetupError> Prepare() = 0;
  // Runs one invocation; never throws; always returns with nothing left running. `cancel` is
  // set on Ctrl-C. The observation's ending, exit status, duration, output and driver facts are
  // filled: what the driver measured. Its identity (probe, arm, invocation, params, deadline) is
  // stamped by the runner.
  virtual core::Observation Execute(const Invocation& inv, const std::atomic<bool>& cancel) = 0;
  // Removes what the driver created. Idempotent.
  virtual void Cleanup() {}
  // What the last Cleanup() could not remove, one line each naming the arm and how to remove it
  // later (kubernetes: objects left after an API server stopped answering), for the operator and
  // the report's notes. Empty by default.
  virtual std::vector<std::string> CleanupWarnings() const { return {}; }
  // False when the harness does not start the sandbox's process itself (a running service): the
  // canary variable planted in the launching process's environment cannot reach it, so a probe
  // looking for that canary there proves nothing by not finding it.
  virtual bool PlantsEnvironment() const { return true; }
  // Secret-looking variables the arm's own configuration gives the sandbox, {name, value} (docker:
  // the manifest's config.Env entries whose names look like secrets). The runner looks for them
  // as it looks for the planted canaries (placeholder canary.env_given, the same in every arm)
  // and redacts their values from everything reported. Valid after Prepare(); empty by default.
  virtual std::vector<std::pair<std::string, std::string>> GivenSecrets() const { return {}; }
  // Weakenings and caveats found in Prepare() (e.g. insecure-skip-tls-verify, an image not
  // pinned by digest), for the report. Empty by default.
  virtual std::vector<std::string> Warnings() const { return {}; }
  // One line telling the operator how to check the sandbox by hand when it cannot run the
  // runner's trivial preflight probe (shown as the setup error's hint).
  virtual std::string PreflightHint() const {
    return "check the manifest's argv by hand, e.g. with a one-line python3 -c script";
  }
  // True when every invocation is a process tree of its own that shares no bounded capacity with
  // the others and runs under the host's scheduler, where a busy loop's nice 19 makes it yield:
  // one that only waits for its deadline then holds nothing the rest of the run needs
  // (RunOptions::deadline_workers). False (the default) for a cluster's pod quota, a run-code
  // service's worker pool, and containers (their CPU cgroup weighs as much as any neighbour,
  // whatever the nice inside).
  virtual bool IndependentSandboxes() const { return false; }
  // "{name}" placeholders this arm fills for the suite once Prepare() succeeded (kubernetes: the
  // in-cluster canary's addresses, canary.cluster.*, of the arm's address family), name -> value.
  // Empty by default.
  virtual std::map<std::string, std::string> Placeholders() const { return {}; }
  // What filled Placeholders() (kubernetes: the canary Pod, "<server>|<namespace>|<pod>"), "" =
  // nothing. Arms of one source may fill them differently (one canary, two address families):
  // each candidate's rows then use its own, and its control sends what the candidate sends.
  virtual std::string PlaceholderSource() const { return ""; }
  // The one address family the arm measures ("IPv4" | "IPv6": kubernetes.ipFamily), "" = none
  // declared (core::ArmInfo::ip_family, shown beside the arm's name).
  virtual std::string AddressFamily() const { return ""; }
  // True when this driver builds an invocation in Invocation::ip_family (kubernetes). A run whose
  // controls cannot leaves the family out of its rows (a note says so).
  virtual bool RunsInAddressFamily() const { return false; }
  // Why a probe measuring `measures` (core::ProbeDescriptor::measures, e.g. "interfaces") is
  // reported but not judged in this arm: its mechanism cannot change what the probe measures (a
  // NetworkPolicy filters packets; it never removes interfaces). "" = judged.
  virtual std::string NotJudgedReason(std::string_view /*measures*/) const { return ""; }
  // Findings about the arm gathered after its invocations ran, for the report's notes
  // (kubernetes: what was ruled out before concluding on a policy arm). Called once, before
  // Cleanup(). Empty by default.
  virtual std::vector<std::string> RunNotes() { return {}; }
};

// Builds the driver a manifest names. Errors: a driver this build does not have.
std::expected<std::unique_ptr<Driver>, SetupError> MakeDriver(const core::Manifest& manifest,
                                                              const DriverContext& context);

}  // namespace sandprobe::drivers
