// Running one sandbox command under a deadline, through sandprobe-reaper, with output streamed
// into an OutputCollector. The only place that forks. Used by the local and command drivers.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/observation.h"
#include "core/output.h"

namespace sandprobe::process {

struct ProcessSpec {
  std::vector<std::string> argv;          // argv[0] is looked up on PATH
  std::vector<std::string> env;           // the child's whole environment, "KEY=VALUE"
  std::optional<std::string> stdin_data;  // written to stdin, then closed; /dev/null if absent
  double deadline_s = 10;                 // seconds from start until the harness stops it
  double kill_grace_s = 2;                // seconds between SIGTERM and SIGKILL of the tree
  std::string reaper_path;                // the sandprobe-reaper executable
  // Descriptors (at most 16) handed to the child on purpose, at 4, 5, ... in this order (the local
  // baseline's planted descriptor canaries, fs.inherited-fds). Every other descriptor above 3 is
  // closed in the child before sandprobe-reaper runs (close_range), whatever the harness or its own
  // caller left open without O_CLOEXEC: a sandbox command inherits only what is meant for it.
  std::vector<int> pass_fds = {};
  // {description, payload} of "user" keys planted in a new anonymous session keyring of the
  // child, which links the user keyring as pam_keyinit does: the caller's session keyring as
  // the sandbox command inherits it (cred.keyring). Empty: the child keeps the harness's own.
  std::vector<std::pair<std::string, std::string>> session_keys = {};
  // Terminal mode: stdin is the slave of a pseudo-terminal the harness opens (posix_openpt) and
  // it is the controlling terminal of the reaper's new session, as when a sandbox is started
  // from an interactive shell; stdin_data is ignored. stdout and stderr stay pipes (the records).
  // Without it the reaper starts a new session with no controlling terminal at all, so no
  // sandbox ever reaches the terminal the harness itself may run on.
  bool tty = false;
};

// What the harness read from its pseudo-terminal (terminal mode): the bytes the terminal wrote to
// its master side during the call (echo, and whatever the sandbox wrote to it), and the input
// that was still pending on the slave side after the call, read as a shell would read its next
// command line. Each at most kTtyKeepBytes; nothing read is ever executed.
struct TtyCapture {
  static constexpr size_t kTtyKeepBytes = 65536;
  std::string output;         // master side: echo of the input and writes to the terminal
  std::string pending_input;  // slave side after the call: input nobody had read
  std::string error;          // why the terminal could not be set up or read ("" = fine)
};

struct ProcessResult {
  core::Ending ending = core::Ending::kHarnessError;
  int exit_code = 0;           // for kExited
  int signal = 0;              // for kSignaled
  double duration_s = 0;       // wall seconds from fork to the end of the tree
  int descendants_killed = 0;  // processes the reaper had to kill after the main one ended
  std::string error;           // for kHarnessError
  TtyCapture tty;              // terminal mode only
  // User + system CPU seconds of the command's tree. With `cpu_whole_tree`, from the cgroup the
  // command ran in (process/cgroup.h): every process it started, however it ended. Otherwise a
  // lower bound, the wait4 rusage of sandprobe-reaper and what it reaped (a child's figures hold
  // only its waited-for descendants: a PID namespace's processes killed with their init are not
  // in it, nor the orphans of a reaper that was killed).
  std::optional<double> cpu_s;
  bool cpu_whole_tree = false;
};

// Runs spec.argv and returns how it ended. `cancel` (Ctrl-C) stops the tree like a deadline but
// reports kInterrupted. Never leaves a process behind: the reaper kills every descendant.
ProcessResult RunProcess(const ProcessSpec& spec, const std::atomic<bool>& cancel,
                         core::OutputCollector& out);

// Makes the calling process a child subreaper (prctl PR_SET_CHILD_SUBREAPER): processes orphaned
// by a sandprobe-reaper that was itself killed (a hostile sandbox can kill its parent) come to
// us instead of init, and SweepOrphans() kills them. Call once at start-up of the harness.
void BecomeSubreaper();

// Kills every child of this process that is not a live sandprobe-reaper, with its whole tree,
// and reaps them. Returns how many processes were signalled. Safe to call from any thread.
int SweepOrphans();

// The current process environment plus `extra` (which wins), as "KEY=VALUE" strings.
std::vector<std::string> EnvironmentWith(
    const std::vector<std::pair<std::string, std::string>>& extra);

// Path of argv0 on PATH (or argv0 itself when it holds a '/'), or "" when not executable.
std::string FindExecutable(const std::string& argv0);
// The same on `search_path` (colon-separated directories) instead of this process's PATH.
std::string FindExecutable(const std::string& argv0, std::string_view search_path);

}  // namespace sandprobe::process
