#include "drivers/command/command_driver.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/facts.h"
#include "core/text.h"
#include "drivers/given_secrets.h"
#include "process/process.h"

namespace sandprobe::drivers {
namespace {

constexpr double kHookDeadlineS = 30;

void ReplaceAll(std::string& s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

// What an argv starting with env(1) runs: env's options and NAME=VALUE assignments skipped.
// `search_path` is where env looks for it: the PATH the line sets, glibc's default after -i
// without one, else the harness's own PATH. `program` is "" when argv does not start with env or
// env's arguments are not understood here (-S splits a string): then only env is checked.
// A program an argv starts on its way to the sandbox, the PATH it is looked up in, and who runs it
// ("" for argv[0], found on the harness's own PATH).
struct Launch {
  std::string program;
  std::string search_path;
  std::string runner;
};

// What `env [options] [NAME=value...] program ...` runs, from argv[at]; {0, path} when it cannot
// tell (an option it does not follow). `path` is the PATH in force before env and becomes the one
// the program is searched in.
size_t EnvProgram(const std::vector<std::string>& argv, size_t at, std::string& path) {
  bool cleared = false, path_set = false;
  for (size_t i = at + 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "-i" || a == "--ignore-environment" || a == "-") {
      cleared = true;
    } else if (a == "-u" || a == "--unset" || a == "-C" || a == "--chdir") {
      ++i;  // takes the next argument
    } else if (a.starts_with("--unset=") || a.starts_with("--chdir=") || a == "-0" ||
               a == "--null" || a == "--" || (a.starts_with("-u") && a.size() > 2)) {
      continue;  // an option with its argument attached, or none
    } else if (a.starts_with("-")) {
      return 0;  // -S and the like: not followed here
    } else if (const size_t eq = a.find('='); eq != std::string::npos && eq > 0) {
      if (a.substr(0, eq) == "PATH") {
        path = a.substr(eq + 1);
        path_set = true;
      }
    } else {
      if (cleared && !path_set) path = "/bin:/usr/bin";  // glibc execvp without PATH
      return i;
    }
  }
  return 0;
}

// The chain of programs an argv starts: argv[0]; what `env` runs (the shipped bubblewrap lines
// start `env -i PATH=/usr/bin:/bin ...`); what `sh -c '... exec "$@"' name program ...` runs (a
// shell that prepares something, such as a new session keyring, then execs the rest).
std::vector<Launch> LaunchChain(const std::vector<std::string>& argv) {
  std::vector<Launch> chain;
  if (argv.empty()) return chain;
  const char* own = std::getenv("PATH");
  std::string path = own != nullptr ? own : "";
  chain.push_back({argv[0], "", ""});
  size_t at = 0;
  while (at < argv.size()) {
    const std::string base = std::filesystem::path(argv[at]).filename().string();
    size_t next = 0;
    if (base == "env") {
      next = EnvProgram(argv, at, path);
    } else if ((base == "sh" || base == "dash" || base == "bash") && at + 4 < argv.size() &&
               argv[at + 1] == "-c" && argv[at + 2].find("exec \"$@\"") != std::string::npos) {
      next = at + 4;  // argv[at + 3] is the shell's $0
    }
    if (next == 0) break;
    chain.push_back({argv[next], path, base});
    at = next;
  }
  return chain;
}

// How to get `program` when it is missing.
std::string InstallHint(const std::string& path) {
  const std::string program = std::filesystem::path(path).filename().string();
  if (program == "bwrap") return "install bubblewrap: apt-get install -y bubblewrap";
  if (program == "python3") return "install Python 3: apt-get install -y python3";
  if (program == "docker")
    return "install Docker: apt-get install -y docker.io (ci/services/dockerd)";
  return fmt::format("install {} or put it on PATH", path);
}

int Count(std::string_view text, std::string_view word) {
  int n = 0;
  for (size_t at = text.find(word); !word.empty() && at != std::string_view::npos;
       at = text.find(word, at + word.size()))
    ++n;
  return n;
}

// /proc/sys/dev/tty/legacy_tiocsti (Linux 6.2+): 1 or 0; "absent" on older kernels, where
// TIOCSTI on one's own controlling terminal is always allowed.
nlohmann::json LegacyTiocsti() {
  std::ifstream in("/proc/sys/dev/tty/legacy_tiocsti");
  int value = -1;
  if (!(in >> value)) return "absent";
  return value;
}

}  // namespace

void CommandDriver::AddTtyFacts(const process::TtyCapture& tty, core::Observation& obs) const {
  namespace f = core::fact;
  obs.driver_facts[f::kTty] = true;
  obs.driver_facts[f::kLegacyTiocsti] = LegacyTiocsti();
  if (!tty.error.empty()) {
    obs.driver_facts[f::kTtyError] = core::Bounded(tty.error, 300);
    return;  // no tty_injected: the row stays unknown
  }
  obs.driver_facts[f::kTtyInjected] = Count(tty.pending_input, context_.nonce);
  obs.driver_facts[f::kTtyInjectedSource] = fmt::format(
      "the harness read the input left pending on the sandbox's terminal after the call (what "
      "the shell that started it would read next): {} byte(s); kernel dev.tty.legacy_tiocsti = "
      "{}",
      tty.pending_input.size(), obs.driver_facts[f::kLegacyTiocsti].dump());
  obs.driver_facts[f::kTtyPendingInputBytes] = tty.pending_input.size();
  obs.driver_facts[f::kTtyOutputBytes] = tty.output.size();
  obs.driver_facts[f::kTtyOutputNonce] = Count(tty.output, context_.nonce) > 0;
}

CommandDriver::CommandDriver(std::string kind, CommandConfig config, DriverContext context)
    : kind_(std::move(kind)), config_(std::move(config)), context_(std::move(context)) {}

CommandDriver::CommandDriver(std::string kind, std::vector<std::string> argv, bool stdin_mode,
                             DriverContext context)
    : kind_(std::move(kind)), context_(std::move(context)) {
  config_.argv = std::move(argv);
  config_.stdin_mode = stdin_mode;
}

std::string CommandDriver::Expand(const std::string& arg, const std::string& invocation) const {
  std::string out = arg;
  ReplaceAll(out, "{run_id}", context_.run_id);
  ReplaceAll(out, "{run_folder}", context_.run_folder);
  ReplaceAll(out, "{invocation}", invocation);
  return out;
}

CommandDriver::HookResult CommandDriver::RunHook(const std::vector<std::string>& hook,
                                                 const std::string& invocation) const {
  process::ProcessSpec spec;
  for (const std::string& a : hook) spec.argv.push_back(Expand(a, invocation));
  spec.env = process::EnvironmentWith({});
  spec.deadline_s = kHookDeadlineS;
  spec.kill_grace_s = context_.kill_grace_s;
  spec.reaper_path = context_.reaper_path;
  core::OutputCollector collector(context_.nonce);
  const std::atomic<bool> never{false};  // hooks run to the end even after Ctrl-C: they clean up
  const process::ProcessResult r = process::RunProcess(spec, never, collector);
  core::Observation out;
  collector.Finish(out);
  HookResult h;
  h.stdout_text = out.stdout_head;
  h.ok = r.ending == core::Ending::kExited && r.exit_code == 0;
  if (!h.ok) {
    const std::string how = r.ending == core::Ending::kExited ? fmt::format("exit {}", r.exit_code)
                            : r.ending == core::Ending::kSignaled
                                ? fmt::format("signal {}", r.signal)
                            : r.ending == core::Ending::kDeadline
                                ? fmt::format("still running after {:g}s", kHookDeadlineS)
                                : r.error;
    h.problem = fmt::format("`{}` failed ({}): {}", spec.argv.front(), how,
                            core::Bounded(out.stderr_head, 400));
  }
  return h;
}

std::expected<void, SetupError> CommandDriver::Prepare() {
  const std::vector<std::string>& argv = config_.argv;
  if (argv.empty()) return std::unexpected(SetupError{"empty argv", "give command.argv"});
  // `env -i PATH=... sh -c '... exec "$@"' keyring bwrap ...` (the shipped bubblewrap lines):
  // every program on the way must exist, each on the PATH it is given.
  for (const Launch& l : LaunchChain(argv)) {
    if (l.runner.empty()) {
      if (process::FindExecutable(l.program).empty()) {
        return std::unexpected(SetupError{fmt::format("'{}' was not found on PATH", l.program),
                                          InstallHint(l.program)});
      }
    } else if (process::FindExecutable(l.program, l.search_path).empty()) {
      return std::unexpected(
          SetupError{fmt::format("'{}' (run by {}) was not found on the PATH it is given ({})",
                                 l.program, l.runner, l.search_path),
                     InstallHint(l.program)});
    }
  }
  if (process::FindExecutable(context_.reaper_path).empty()) {
    return std::unexpected(
        SetupError{fmt::format("sandprobe-reaper not found at '{}'", context_.reaper_path),
                   "build it (ci/build) or set SANDPROBE_REAPER to its path"});
  }
  if (!config_.preflight.empty()) {
    const HookResult h = RunHook(config_.preflight, "preflight");
    if (!h.ok) {
      return std::unexpected(
          SetupError{"preflight " + h.problem,
                     "the manifest's command.preflight checks that the sandbox can run; fix what "
                     "it reports (for docker: ci/services/dockerd, ci/images/probe-image)"});
    }
  }
  return {};
}

core::Observation CommandDriver::Execute(const Invocation& inv, const std::atomic<bool>& cancel) {
  process::ProcessSpec spec;
  for (const std::string& a : config_.argv)
    spec.argv.push_back(a == "{script}" ? inv.script : Expand(a, inv.invocation));
  if (config_.stdin_mode) spec.stdin_data = inv.script;
  spec.tty = config_.tty;
  spec.env = process::EnvironmentWith(inv.extra_env);
  spec.session_keys = inv.session_keys;
  if (config_.pass_planted_fds) spec.pass_fds = inv.planted_fds;
  spec.deadline_s = inv.deadline_s;
  spec.kill_grace_s = context_.kill_grace_s;
  spec.reaper_path = context_.reaper_path;

  core::OutputCollector collector(context_.nonce);
  const double started = SteadySeconds();
  const process::ProcessResult r = process::RunProcess(spec, cancel, collector);
  core::Observation obs;
  obs.timeline.push_back(PhaseSince("spawn+run", started));
  // From the invocation's own cgroup where the machine allows one (every process of the tree);
  // otherwise a lower bound, and the figure says so rather than pass for the probe's whole use.
  if (r.cpu_s) {
    obs.probe_cpu = core::CpuFigure{
        *r.cpu_s,
        r.cpu_whole_tree
            ? "the command's own cgroup (cgroup CPU account: every process of its tree; not what "
              "it hands to a daemon)"
            : "at least: wait4 rusage of sandprobe-reaper, what it reaped of the command's tree "
              "(misses what a daemon runs and a PID namespace's processes killed with its init; no "
              "cgroup of its own here)"};
  }
  collector.Finish(obs);
  obs.ending = r.ending;
  obs.exit_code = r.exit_code;
  obs.signal = r.signal;
  obs.duration_s = r.duration_s;
  obs.harness_error = r.error;
  obs.driver_facts[core::fact::kDriver] = kind_;
  obs.driver_facts[core::fact::kDescendantsKilled] = r.descendants_killed;
  if (config_.tty) AddTtyFacts(r.tty, obs);
  if (r.ending == core::Ending::kDeadline)
    obs.driver_facts[core::fact::kEndedBy] = "harness deadline";
  if (r.ending == core::Ending::kExited || r.ending == core::Ending::kSignaled) {
    obs.driver_facts[core::fact::kEndedBy] =
        "sandbox";  // the process ended before the harness deadline
    // What was still alive in the sandbox command's process tree when it ended by itself: a
    // detached process that outlived the call (proc.outlives-call), until the reaper killed it.
    obs.driver_facts[core::fact::kSurvivors] = r.descendants_killed;
    obs.driver_facts[core::fact::kSurvivorsSource] =
        "sandprobe-reaper: processes of the sandbox command's tree still alive when it exited "
        "(the harness then killed them)";
    obs.driver_facts[core::fact::kCallEndedUnixMs] = UnixMsNow();
    // What outlives the command's process tree (a container `docker run` left behind) can only
    // be heard: wait for the heartbeats of probes that ask (probe after_call_s).
    if (inv.after_call_s > 0) {
      const double waited = SteadySeconds();
      const auto until = std::chrono::steady_clock::now() +
                         std::chrono::milliseconds(static_cast<int>(inv.after_call_s * 1000));
      while (std::chrono::steady_clock::now() < until && !cancel.load())
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      obs.driver_facts[core::fact::kAfterCallWaitS] = inv.after_call_s;
      obs.timeline.push_back(PhaseSince("after-call", waited));
    }
  }
  if (!config_.after.empty()) {
    const double hooked = SteadySeconds();
    const HookResult h = RunHook(config_.after, inv.invocation);
    obs.timeline.push_back(PhaseSince("after-hook", hooked));
    const auto facts = nlohmann::json::parse(h.stdout_text, nullptr, false);
    if (facts.is_object()) {
      for (const auto& [k, v] : facts.items()) obs.driver_facts[k] = v;
    }
    if (!h.ok && obs.ending != core::Ending::kHarnessError) {
      obs.ending = core::Ending::kHarnessError;
      obs.harness_error = "after-invocation " + h.problem +
                          ": what the sandbox created for this probe may still exist";
    }
  }
  return obs;
}

std::vector<std::pair<std::string, std::string>> CommandDriver::GivenSecrets() const {
  return SecretsInArgv(config_.argv);
}

void CommandDriver::Cleanup() {
  if (!config_.cleanup.empty()) RunHook(config_.cleanup, "cleanup");
}

}  // namespace sandprobe::drivers
