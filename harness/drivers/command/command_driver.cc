#include "drivers/command/command_driver.h"

#include <fmt/format.h>

#include "drivers/process/process.h"

namespace sandprobe::drivers {

CommandDriver::CommandDriver(std::string kind, std::vector<std::string> argv, bool stdin_mode,
                             DriverContext context)
    : kind_(std::move(kind)),
      argv_(std::move(argv)),
      stdin_mode_(stdin_mode),
      context_(std::move(context)) {}

std::expected<void, SetupError> CommandDriver::Prepare() {
  if (argv_.empty()) return std::unexpected(SetupError{"empty argv", "give command.argv"});
  if (FindExecutable(argv_[0]).empty()) {
    std::string hint = fmt::format("install {} or put it on PATH", argv_[0]);
    if (argv_[0] == "bwrap") hint = "install bubblewrap: apt-get install -y bubblewrap";
    if (argv_[0] == "python3") hint = "install Python 3: apt-get install -y python3";
    if (argv_[0] == "docker")
      hint = "install Docker: apt-get install -y docker.io (ci/services/dockerd)";
    return std::unexpected(SetupError{fmt::format("'{}' was not found on PATH", argv_[0]), hint});
  }
  if (FindExecutable(context_.reaper_path).empty()) {
    return std::unexpected(
        SetupError{fmt::format("sandprobe-reaper not found at '{}'", context_.reaper_path),
                   "build it (ci/build) or set SANDPROBE_REAPER to its path"});
  }
  return {};
}

core::Observation CommandDriver::Execute(const Invocation& inv, const std::atomic<bool>& cancel) {
  ProcessSpec spec;
  for (const std::string& a : argv_) spec.argv.push_back(a == "{script}" ? inv.script : a);
  if (stdin_mode_) spec.stdin_data = inv.script;
  spec.env = EnvironmentWith(inv.extra_env);
  spec.deadline_s = inv.deadline_s;
  spec.kill_grace_s = context_.kill_grace_s;
  spec.reaper_path = context_.reaper_path;

  core::OutputCollector collector(context_.nonce);
  const ProcessResult r = RunProcess(spec, cancel, collector);
  core::Observation obs;
  collector.Finish(obs);
  obs.probe = inv.probe;
  obs.invocation = inv.invocation;
  obs.ending = r.ending;
  obs.exit_code = r.exit_code;
  obs.signal = r.signal;
  obs.duration_s = r.duration_s;
  obs.deadline_s = inv.deadline_s;
  obs.harness_error = r.error;
  obs.driver_facts["driver"] = kind_;
  obs.driver_facts["descendants_killed"] = r.descendants_killed;
  if (r.ending == core::Ending::kDeadline) obs.driver_facts["ended_by"] = "harness deadline";
  if (r.ending == core::Ending::kExited || r.ending == core::Ending::kSignaled) {
    obs.driver_facts["ended_by"] = "sandbox";  // the process ended before the harness deadline
  }
  return obs;
}

}  // namespace sandprobe::drivers
