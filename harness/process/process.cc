#include "process/process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/keyctl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "process/cgroup.h"
#include "process/tree.h"

extern char** environ;

namespace sandprobe::process {
namespace {

// sandprobe-reaper's first status line when it moved the command into its cgroup.
constexpr std::string_view kInCgroupLine = "cgroup\n";

// The reaper's final status line ("exited 0 0"), after the "cgroup" line if there is one.
std::string FinalReport(const std::string& status) {
  return status.starts_with(kInCgroupLine) ? status.substr(kInCgroupLine.size()) : status;
}

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct Pipe {
  int read = -1, write = -1;
  bool Open() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return false;
    read = fds[0];
    write = fds[1];
    return true;
  }
  void CloseBoth() {
    if (read >= 0) close(read);
    if (write >= 0) close(write);
    read = write = -1;
  }
};

// Reapers this process has started and not yet waited for; anything else among our children is
// an orphan (see SweepOrphans). Held across fork() so a new reaper is never mistaken for one.
std::mutex g_reapers_mu;
std::set<pid_t> g_live_reapers;

std::vector<char*> CStrings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// In the forked child (async-signal-safe calls only): a new anonymous session keyring linking the
// user keyring, holding `keys`. Failures are silent: the probe then finds no canary, and a
// control that finds none leaves the row INCONCLUSIVE, never PASS.
void PlantSessionKeys(const std::vector<std::pair<std::string, std::string>>& keys) {
  if (keys.empty()) return;
  if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, nullptr) < 0) return;
  syscall(SYS_keyctl, KEYCTL_LINK, KEY_SPEC_USER_KEYRING, KEY_SPEC_SESSION_KEYRING);
  for (const auto& [description, payload] : keys) {
    syscall(SYS_add_key, "user", description.c_str(), payload.data(), payload.size(),
            KEY_SPEC_SESSION_KEYRING);
  }
}

// In the forked child, before 0-3 are set up: copies of `pass` at 64 and up (no O_CLOEXEC),
// clear of every number the child assigns (a descriptor to pass may have any number, 3 included).
// At most 16; one that cannot be copied is -1 and never arrives.
size_t CopyPassed(const std::vector<int>& pass, int (&moved)[16]) {
  const size_t n = std::min<size_t>(pass.size(), 16);
  for (size_t i = 0; i < n; ++i) moved[i] = fcntl(pass[i], F_DUPFD, 64);
  return n;
}

// In the forked child, after 0-3: the copies at 4, 5, ... and every other descriptor from
// there up closed, whatever the harness or its own caller left open without O_CLOEXEC.
void KeepOnly(const int (&moved)[16], size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (moved[i] >= 0) dup2(moved[i], 4 + static_cast<int>(i));  // dup2 clears O_CLOEXEC
  }
  const int first_free = 4 + static_cast<int>(n);
  if (syscall(SYS_close_range, first_free, ~0U, 0) != 0) {
    for (int fd = first_free; fd < 65536; ++fd) close(fd);  // a kernel before 5.9
  }
}

// The harness's pseudo-terminal for terminal mode: the master it reads, the slave the sandbox
// gets as stdin and controlling terminal. Both close-on-exec here (the child dup2s the slave).
struct Pty {
  int master = -1, slave = -1;
  std::string Open() {
    master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0) return fmt::format("posix_openpt: {}", std::strerror(errno));
    char name[128];
    if (grantpt(master) != 0 || unlockpt(master) != 0 || ptsname_r(master, name, sizeof name) != 0)
      return fmt::format("pseudo-terminal set-up: {}", std::strerror(errno));
    slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (slave < 0) return fmt::format("open {}: {}", name, std::strerror(errno));
    fcntl(master, F_SETFL, O_NONBLOCK);
    return "";
  }
  void Close() {
    if (master >= 0) close(master);
    if (slave >= 0) close(slave);
    master = slave = -1;
  }
};

void AppendBounded(std::string& to, const char* data, size_t n) {
  to.append(data, std::min(n, TtyCapture::kTtyKeepBytes -
                                  std::min(to.size(), TtyCapture::kTtyKeepBytes)));
}

// Reads what is readable on a non-blocking fd into `to` (bounded; the rest is read and dropped).
void Drain(int fd, std::string& to) {
  char buf[4096];
  for (int i = 0; i < 1024; ++i) {
    const ssize_t r = read(fd, buf, sizeof buf);
    if (r > 0) {
      AppendBounded(to, buf, r);
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    break;
  }
}

// After the call: the input still pending on the terminal, read as the shell that started the
// sandbox would read its next command line. A line without its newline is not readable in
// canonical mode, so the line discipline is switched to non-canonical first (which makes the
// pending bytes readable as they are); nothing is written to the terminal.
void ReadPendingInput(const Pty& pty, TtyCapture& tty) {
  Drain(pty.master, tty.output);
  termios t{};
  if (tcgetattr(pty.slave, &t) != 0) {
    tty.error = fmt::format("tcgetattr: {}", std::strerror(errno));
    return;
  }
  t.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
  t.c_cc[VMIN] = 0;
  t.c_cc[VTIME] = 0;
  if (tcsetattr(pty.slave, TCSANOW, &t) != 0) {
    tty.error = fmt::format("tcsetattr: {}", std::strerror(errno));
    return;
  }
  fcntl(pty.slave, F_SETFL, O_NONBLOCK);
  Drain(pty.slave, tty.pending_input);
}

}  // namespace

void BecomeSubreaper() { prctl(PR_SET_CHILD_SUBREAPER, 1); }

int SweepOrphans() {
  std::lock_guard lock(g_reapers_mu);
  const pid_t self = getpid();
  std::vector<pid_t> orphans;
  for (pid_t p : Children(self)) {
    if (!g_live_reapers.contains(p)) orphans.push_back(p);
  }
  const int killed = orphans.empty() ? 0 : KillTrees(orphans);
  for (pid_t p : orphans) {
    for (int i = 0; i < 100 && waitpid(p, nullptr, WNOHANG) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  return killed;
}

std::vector<std::string> EnvironmentWith(
    const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    bool overridden = false;
    for (const auto& [k, v] : extra) overridden = overridden || k == key;
    if (!overridden) env.push_back(kv);
  }
  for (const auto& [k, v] : extra) env.push_back(k + "=" + v);
  return env;
}

std::string FindExecutable(const std::string& argv0) {
  const char* path = std::getenv("PATH");
  return FindExecutable(argv0, path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
}

std::string FindExecutable(const std::string& argv0, std::string_view search_path) {
  if (argv0.empty()) return "";
  if (argv0.find('/') != std::string::npos) return access(argv0.c_str(), X_OK) == 0 ? argv0 : "";
  std::string_view rest = search_path;
  while (true) {
    const size_t colon = rest.find(':');
    const std::string dir(rest.substr(0, colon));
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + argv0;
    if (access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate)) {
      return candidate;
    }
    if (colon == std::string_view::npos) return "";
    rest.remove_prefix(colon + 1);
  }
}

ProcessResult RunProcess(const ProcessSpec& spec, const std::atomic<bool>& cancel,
                         core::OutputCollector& out) {
  ProcessResult result;
  if (spec.argv.empty()) {
    result.error = "empty argv";
    return result;
  }
  Pipe in, o, e, st;
  if (!in.Open() || !o.Open() || !e.Open() || !st.Open()) {
    result.error = fmt::format("pipe: {}", std::strerror(errno));
    in.CloseBoth(), o.CloseBoth(), e.CloseBoth(), st.CloseBoth();
    return result;
  }
  Pty pty;
  if (spec.tty) {
    if (std::string why = pty.Open(); !why.empty()) {
      result.error = "terminal mode: " + why;
      result.tty.error = why;
      in.CloseBoth(), o.CloseBoth(), e.CloseBoth(), st.CloseBoth();
      pty.Close();
      return result;
    }
  }
  const int tty_slave = pty.slave;
  // Everything the child needs is built before fork: only async-signal-safe calls after it.
  std::vector<std::string> args = {"sandprobe-reaper", "3",
                                   std::to_string(static_cast<int>(spec.kill_grace_s * 1000))};
  // The tree's CPU from a cgroup of its own where this machine allows it (process/cgroup.h).
  std::optional<InvocationCgroup> cgroup = InvocationCgroup::Create();
  if (cgroup) {
    args.push_back("--cgroup");
    args.push_back(cgroup->procs_file());
  }
  args.push_back("--");
  args.insert(args.end(), spec.argv.begin(), spec.argv.end());
  std::vector<std::string> env = spec.env;
  std::vector<char*> c_args = CStrings(args), c_env = CStrings(env);
  const char* reaper = spec.reaper_path.c_str();

  const auto start = Clock::now();
  // Block every signal across fork: the child must never run the harness's handlers (a Ctrl-C
  // to the group between fork and exec would), and sandprobe-reaper starts with them blocked, so
  // a stop sent before it installs its own handlers stays pending instead of killing it.
  sigset_t all, saved;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &saved);
  std::unique_lock registry(g_reapers_mu);
  const pid_t pid = fork();
  if (pid > 0) g_live_reapers.insert(pid);
  if (pid != 0) {
    registry.unlock();
    pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  }
  if (pid < 0) {
    result.error = fmt::format("fork: {}", std::strerror(errno));
    in.CloseBoth(), o.CloseBoth(), e.CloseBoth(), st.CloseBoth();
    pty.Close();
    return result;
  }
  if (pid == 0) {
    // Own session (and so its own process group): a terminal Ctrl-C reaches only the harness,
    // which stops each reaper itself and so records the probe as interrupted, and the terminal
    // the harness may run on is nobody's controlling terminal in there. In terminal mode the
    // harness's pseudo-terminal becomes the session's controlling terminal instead.
    setsid();
    for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);  // the mask stays full over exec
    int passed[16];
    const size_t n_passed = CopyPassed(spec.pass_fds, passed);
    if (tty_slave >= 0) {
      ioctl(tty_slave, TIOCSCTTY, 0);
      dup2(tty_slave, 0);
    } else {
      dup2(in.read, 0);
    }
    dup2(o.write, 1);
    dup2(e.write, 2);
    dup2(st.write, 3);  // dup2 clears O_CLOEXEC on the new descriptor
    KeepOnly(passed, n_passed);
    PlantSessionKeys(spec.session_keys);
    execve(reaper, c_args.data(), c_env.data());
    const char msg[] = "sandprobe: cannot execute sandprobe-reaper\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(125);
  }
  close(in.read), close(o.write), close(e.write), close(st.write);
  int stdin_fd = in.write;
  if (!spec.stdin_data || spec.tty) {
    close(stdin_fd);
    stdin_fd = -1;
  } else {
    fcntl(stdin_fd, F_SETFL, O_NONBLOCK);
  }
  size_t stdin_off = 0;
  int orphans_killed = 0;
  int wstatus = 0;
  bool reaped = false;
  struct rusage usage {};  // wait4's account of the reaper's tree (ProcessResult::cpu_s)
  bool counted = false;
  std::string status_line;
  int out_fd = o.read, err_fd = e.read, status_fd = st.read;
  bool stop_sent = false, kill_sent = false, read_pty = true;
  Clock::time_point stop_time;
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(spec.deadline_s));
  char buf[65536];
  while (out_fd >= 0 || err_fd >= 0 || status_fd >= 0) {
    const auto now = Clock::now();
    if (!stop_sent && (now >= deadline || cancel.load())) {
      result.ending = cancel.load() ? core::Ending::kInterrupted : core::Ending::kDeadline;
      if (!reaped) kill(pid, SIGTERM);
      stop_sent = true;
      stop_time = now;
    }
    // Backstop: a reaper that does not finish in time is killed; its tree may then survive.
    if (stop_sent && !kill_sent && Since(stop_time) > spec.kill_grace_s + 5) {
      if (!reaped) kill(pid, SIGKILL);
      kill_sent = true;
      result.error = "sandprobe-reaper did not stop in time and was killed";
    }
    if (kill_sent && Since(stop_time) > spec.kill_grace_s + 8) break;
    pollfd fds[5];
    int n = 0;
    for (int fd : {out_fd, err_fd, status_fd}) {
      if (fd >= 0) fds[n++] = {fd, POLLIN, 0};
    }
    if (stdin_fd >= 0) fds[n++] = {stdin_fd, POLLOUT, 0};
    if (pty.master >= 0 && read_pty) fds[n++] = {pty.master, POLLIN, 0};
    int timeout_ms = 100;
    if (!stop_sent) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
      timeout_ms = static_cast<int>(std::clamp<int64_t>(left.count(), 0, 100));
    }
    if (poll(fds, n, timeout_ms) < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == pty.master) {  // the terminal's output: kept bounded, never a record
        Drain(pty.master, result.tty.output);
        // A terminal hung up from inside (vhangup) would wake poll() for ever: stop watching.
        if (fds[i].revents & (POLLHUP | POLLERR | POLLNVAL)) read_pty = false;
        continue;
      }
      int& fd = fds[i].fd == out_fd      ? out_fd
                : fds[i].fd == err_fd    ? err_fd
                : fds[i].fd == status_fd ? status_fd
                                         : stdin_fd;
      if (fd == stdin_fd) {
        const std::string& data = *spec.stdin_data;
        const ssize_t w = write(fd, data.data() + stdin_off, data.size() - stdin_off);
        if (w > 0) stdin_off += w;
        if (w < 0 && errno != EAGAIN && errno != EINTR) stdin_off = data.size();
        if (stdin_off >= data.size()) {
          close(fd);
          fd = -1;
        }
        continue;
      }
      const ssize_t r = read(fd, buf, sizeof buf);
      if (r > 0) {
        if (fd == out_fd) out.FeedStdout({buf, static_cast<size_t>(r)});
        if (fd == err_fd) out.FeedStderr({buf, static_cast<size_t>(r)});
        if (fd == status_fd && status_line.size() < 256) status_line.append(buf, r);
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        if (fd == status_fd && FinalReport(status_line).empty() && !reaped) {
          // The reaper died without a word (the sandbox killed it). Once it is reaped, its
          // children have been re-parented to us (a subreaper): kill that tree now.
          while (true) {
            if (wait4(pid, &wstatus, 0, &usage) == pid) {
              counted = true;  // the reaper's own and what it reaped; its orphans are not in it
              break;
            }
            if (errno != EINTR) break;
          }
          reaped = true;
          {
            std::lock_guard lock(g_reapers_mu);
            g_live_reapers.erase(pid);
          }
          orphans_killed += SweepOrphans();
        }
        close(fd);
        fd = -1;
      }
    }
  }
  for (int fd : {out_fd, err_fd, status_fd, stdin_fd}) {
    if (fd >= 0) close(fd);
  }
  while (!reaped) {
    if (wait4(pid, &wstatus, 0, &usage) == pid) {
      counted = true;
      break;
    }
    if (errno != EINTR) break;
  }
  if (spec.tty) {  // the whole tree is gone: what it left on the terminal stays there
    ReadPendingInput(pty, result.tty);
    pty.Close();
  }
  {
    std::lock_guard lock(g_reapers_mu);
    g_live_reapers.erase(pid);
  }
  result.duration_s = Since(start);
  if (counted) {
    auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
    result.cpu_s = seconds(usage.ru_utime) + seconds(usage.ru_stime);
  }
  char kind[16] = {0};
  int code = 0, killed = 0;
  const bool reported =
      std::sscanf(FinalReport(status_line).c_str(), "%15s %d %d", kind, &code, &killed) == 3;
  // The reaper died without reporting (something killed it): its tree came to us as orphans.
  if (!reported) result.descendants_killed = orphans_killed + SweepOrphans();
  // The whole tree is gone now (the reaper's sweep, or ours just above): the cgroup's account,
  // when the reaper said the command went in; otherwise the wait4 figure stays.
  if (cgroup && status_line.starts_with(kInCgroupLine)) {
    if (const std::optional<double> cpu = cgroup->CpuSeconds()) {
      result.cpu_s = *cpu;
      result.cpu_whole_tree = true;
    }
    cgroup->Remove();
  }
  if (!reported) {
    if (stop_sent && result.error.empty()) return result;  // stopped before it reported: fine
    result.ending = core::Ending::kHarnessError;
    if (result.error.empty()) {
      result.error = WIFSIGNALED(wstatus)
                         ? fmt::format(
                               "sandprobe-reaper was killed by signal {} before it could report "
                               "(from inside the sandbox?); the {} processes it left were killed",
                               WTERMSIG(wstatus), result.descendants_killed)
                         : fmt::format("sandprobe-reaper reported no status (exit {})",
                                       WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
    }
    return result;
  }
  result.descendants_killed = killed;
  if (!stop_sent && cancel.load()) result.ending = core::Ending::kInterrupted;
  if (stop_sent || cancel.load())
    return result;  // kDeadline or kInterrupted, set when the stop was sent
  if (std::strcmp(kind, "signaled") == 0) {
    result.ending = core::Ending::kSignaled;
    result.signal = code;
  } else {
    result.ending = core::Ending::kExited;
    result.exit_code = code;
  }
  return result;
}

}  // namespace sandprobe::process
