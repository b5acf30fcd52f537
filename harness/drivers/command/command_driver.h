// `command` driver: deploys a probe through any CLI sandbox (bubblewrap, `docker run`, nsjail,
// firejail, `runsc do`) from an argv template with "{script}" as one argument, or the script on
// stdin. The `local` driver is this driver with `python3 -I -S -u -c {script}` and no sandbox.
// Evidence it adds: the exit status or signal of the sandbox command, and `survivors` (processes
// of the command's tree still alive when it exited, counted by sandprobe-reaper).
//
// A sandbox whose work outlives its CLI (`docker run` killed at the deadline leaves the container
// running) declares hook commands, run under the same reaper with a 30 s deadline:
//   preflight: run once by Prepare(); a non-zero exit is a setup error quoting its stderr
//              (e.g. [docker, image, inspect, IMAGE]: the image exists, nothing is pulled).
//   after:     run after every invocation, whatever ended it (Ctrl-C included), e.g. inspect and
//              force-remove the invocation's container. If its stdout is one JSON object, its
//              members are added to the driver facts (e.g. {"oom_killed": true} read by
//              `docker inspect`). A non-zero exit makes the cell a harness error: what the
//              sandbox created may still exist.
//   cleanup:   run once by Cleanup() (e.g. remove every container labelled with the run id).
// Terminal mode (`tty: true`): the sandbox command's stdin is a pseudo-terminal the harness owns
// and its controlling terminal, as for a sandbox started from an interactive shell
// (process::ProcessSpec::tty). After the call the harness reads the input left pending on it,
// which the shell would read as its next command line, and counts this run's nonce there: the
// facts tty_injected (read by proc.tty-inject's fact rule), tty_pending_input_bytes,
// tty_output_bytes, tty_output_nonce, and legacy_tiocsti (the kernel's
// /proc/sys/dev/tty/legacy_tiocsti: 1, 0 or "absent" on kernels before 6.2, where TIOCSTI is
// always allowed on one's own controlling terminal). Without it stdin is /dev/null (or the
// script) and there is no controlling terminal at all.
// In argv and hooks, "{run_id}", "{run_folder}" (the run's canary folder,
// DriverContext::run_folder: a label for what the sandbox creates, so `sandprobe cleanup` sees the
// run alive) and
// "{invocation}" are replaced inside any argument.
#pragma once

#include "drivers/driver.h"

namespace sandprobe::process {
struct TtyCapture;
}  // namespace sandprobe::process

namespace sandprobe::drivers {

struct CommandConfig {
  std::vector<std::string> argv;  // the template
  bool stdin_mode = false;        // send the script on stdin instead of substituting it
  bool tty = false;               // terminal mode (below)
  std::vector<std::string> preflight, after, cleanup;  // hooks; empty = none
  // Hand Invocation::planted_fds to the command (the local baseline only: a control that shows
  // what an inherited descriptor gives away). Every other descriptor is closed at launch.
  bool pass_planted_fds = false;
};

class CommandDriver : public Driver {
 public:
  CommandDriver(std::string kind, CommandConfig config, DriverContext context);
  // Shorthand without hooks.
  CommandDriver(std::string kind, std::vector<std::string> argv, bool stdin_mode,
                DriverContext context);
  std::string_view kind() const override { return kind_; }
  std::expected<void, SetupError> Prepare() override;
  core::Observation Execute(const Invocation& inv, const std::atomic<bool>& cancel) override;
  void Cleanup() override;
  // Each invocation is a process tree of its own (what the command contacts is its business: an
  // operator whose command is a client of a bounded pool, or starts a container whose CPU cgroup
  // has a weight of its own, as docker-cli-hardened does under --cpus 0.5, gives --jobs).
  bool IndependentSandboxes() const override { return true; }
  // What the argv itself gives the sandboxed program under a secret-looking name: docker/podman
  // -e NAME=value, bubblewrap --setenv NAME value (given_secrets.h SecretsInArgv).
  std::vector<std::pair<std::string, std::string>> GivenSecrets() const override;

 private:
  struct HookResult {
    bool ok = false;
    std::string stdout_text;
    std::string problem;  // why it failed: exit status and bounded stderr
  };
  HookResult RunHook(const std::vector<std::string>& hook, const std::string& invocation) const;
  std::string Expand(const std::string& arg, const std::string& invocation) const;
  void AddTtyFacts(const process::TtyCapture& tty, core::Observation& obs) const;

  std::string kind_;
  CommandConfig config_;
  DriverContext context_;
};

}  // namespace sandprobe::drivers
