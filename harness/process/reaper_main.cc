// sandprobe-reaper: runs one sandbox command and guarantees that nothing it started survives.
//
//   sandprobe-reaper STATUS_FD GRACE_MS [--cgroup PROCS_FILE] -- ARGV...
//
// The harness starts it as the leader of a new session (process.cc); in terminal mode with the
// harness's pseudo-terminal as stdin and controlling terminal, and the command as its foreground
// job. It becomes a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so descendants that call
// setsid() and double-fork are re-parented to it instead of init (docs/traps.md, trap 16: killpg is
// not a tree kill). It starts ARGV in a new process group with stdin/stdout/stderr inherited. When
// ARGV's main process exits (after a 250 ms settle for what the sandbox tears down itself), or on
// SIGTERM/SIGINT (the harness deadline or Ctrl-C), or when the harness
// dies (PR_SET_PDEATHSIG), it stops the whole tree: SIGTERM, GRACE_MS to go, then SIGSTOP+SIGKILL
// for every process whose parent chain leads to it (found in /proc), until none is left.
// Finally it writes one line to STATUS_FD:  "exited <code> <killed>" or "signaled <sig> <killed>"
// where <killed> counts descendants it had to kill (not those already dying: a SIGKILL pending,
// e.g. from a PID namespace's teardown); exit status 0 on success, 125 on its own error.
// With --cgroup, ARGV's process is moved into that cgroup (its pid written to PROCS_FILE) before it
// runs anything, so everything it starts is counted there (process/cgroup.h); a line "cgroup"
// comes first on STATUS_FD, as soon as the move succeeded.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "process/tree.h"

namespace {

using sandprobe::process::Descendants;

volatile sig_atomic_t g_stop_requested = 0;
void OnStop(int) { g_stop_requested = 1; }

void ReapAvailable(pid_t main_pid, int& main_status, bool& main_done) {
  int status = 0;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    if (pid == main_pid) {
      main_status = status;
      main_done = true;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const char* procs_file = nullptr;
  int dashes = 3;
  if (argc > 5 && std::strcmp(argv[3], "--cgroup") == 0) {
    procs_file = argv[4];
    dashes = 5;
  }
  if (argc < dashes + 2 || std::strcmp(argv[dashes], "--") != 0) {
    std::fprintf(stderr,
                 "usage: sandprobe-reaper STATUS_FD GRACE_MS [--cgroup PROCS_FILE] -- ARGV...\n");
    return 125;
  }
  char** command = argv + dashes + 1;
  const int status_fd = std::atoi(argv[1]);
  const int grace_ms = std::atoi(argv[2]);
  const pid_t self = getpid();
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  struct sigaction sa {};
  sa.sa_handler = OnStop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a write to a gone reader fails (EPIPE) instead of killing us
  // The harness starts us with every signal blocked (so an early stop is not lost): take them
  // now that the handlers are in place; a pending SIGTERM runs OnStop here.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (getppid() == 1) return 125;  // the harness is already gone

  // The child waits on `go` until it is in its cgroup: nothing it starts may run outside it.
  int go[2];
  if (pipe2(go, O_CLOEXEC) != 0) {
    std::perror("sandprobe-reaper: pipe");
    return 125;
  }
  const pid_t child = fork();
  if (child < 0) {
    std::perror("sandprobe-reaper: fork");
    return 125;
  }
  if (child == 0) {
    setpgid(0, 0);
    close(status_fd);
    close(go[1]);
    // Default dispositions before the wait: a stop sent meanwhile ends the child as it would end
    // the command.
    for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
    char byte = 0;
    ssize_t got;
    while ((got = read(go[0], &byte, 1)) < 0 && errno == EINTR) {
    }
    // No go (the reaper died before it said so): nothing runs unwatched or outside its cgroup.
    if (got != 1 || byte != 'g') _exit(125);
    close(go[0]);
    execvp(command[0], command);
    std::fprintf(stderr, "sandprobe-reaper: cannot execute %s: %s\n", command[0],
                 std::strerror(errno));
    _exit(127);
  }
  close(go[0]);
  setpgid(child, child);
  // Terminal mode (the harness made a pseudo-terminal our session's controlling terminal and our
  // stdin): the command becomes the terminal's foreground job, as an interactive shell makes it.
  if (isatty(0) && tcgetsid(0) == getsid(0)) tcsetpgrp(0, child);
  bool in_cgroup = false;
  if (procs_file != nullptr) {
    const int fd = open(procs_file, O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      const std::string pid = std::to_string(child);
      in_cgroup = write(fd, pid.data(), pid.size()) == static_cast<ssize_t>(pid.size());
      close(fd);
    }
  }
  // Said at once, not with the final line: a harness whose reaper is killed later still knows
  // that the cgroup holds the tree.
  if (in_cgroup) (void)!write(status_fd, "cgroup\n", 7);
  (void)!write(go[1], "g", 1);
  close(go[1]);

  int main_status = 0;
  bool main_done = false;
  while (!main_done && !g_stop_requested) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid == child) {
      main_status = status;
      main_done = true;
    } else if (pid < 0 && errno == ECHILD) {
      break;
    }
  }

  // Stop the tree: a polite SIGTERM when asked to stop (deadline), then SIGKILL for everything.
  int killed = 0;
  if (g_stop_requested && !main_done) {
    kill(-child, SIGTERM);
    for (pid_t pid : Descendants(self)) kill(pid, SIGTERM);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
    while (std::chrono::steady_clock::now() < until) {
      ReapAvailable(child, main_status, main_done);
      if (main_done && Descendants(self).empty()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  if (main_done && !g_stop_requested) {
    // The main process ended by itself. What a sandbox tears down with it (bubblewrap's PID
    // namespace: the kernel SIGKILLs the rest when its init exits) may take a few milliseconds
    // to go; only what is still alive after this settle time outlived the call (the survivors
    // that proc.outlives-call looks for).
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(250);
    while (!Descendants(self).empty() && std::chrono::steady_clock::now() < until) {
      ReapAvailable(child, main_status, main_done);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  // What the sandbox is already ending (a SIGKILL pending from a PID namespace's teardown) is not
  // a survivor, however long the kernel takes with it.
  std::set<pid_t> dying;
  for (pid_t pid : Descendants(self)) {
    if (sandprobe::process::Dying(pid)) dying.insert(pid);
  }
  for (int round = 0; round < 200; ++round) {
    const std::vector<pid_t> rest = Descendants(self);
    if (rest.empty()) break;
    for (pid_t pid : rest) kill(pid, SIGSTOP);  // freeze first so nothing forks past the sweep
    for (pid_t pid : rest) {
      if (kill(pid, SIGKILL) == 0 && (pid != child || !main_done) && !dying.contains(pid)) ++killed;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ReapAvailable(child, main_status, main_done);
  }
  while (!main_done) {
    int status = 0;
    const pid_t pid = waitpid(child, &status, 0);
    if (pid == child) {
      main_status = status;
      main_done = true;
    } else if (pid < 0 && errno != EINTR) {
      break;
    }
  }
  ReapAvailable(child, main_status, main_done);

  char line[96];
  const int n =
      WIFSIGNALED(main_status)
          ? std::snprintf(line, sizeof line, "signaled %d %d\n", WTERMSIG(main_status), killed)
          : std::snprintf(line, sizeof line, "exited %d %d\n", WEXITSTATUS(main_status), killed);
  if (write(status_fd, line, n) != n) return 125;
  return 0;
}
