// Real processes: exit statuses, deadlines, Ctrl-C, stdin, floods, and descendants that try to
// outlive the call (setsid + double fork) are all handled; nothing is left running.
#include "process/process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

namespace sandprobe::process {
namespace {

constexpr char kNonce[] = "00112233aabbccdd";

ProcessResult RunArgv(std::vector<std::string> argv, double deadline_s = 10,
                      std::optional<std::string> stdin_data = std::nullopt,
                      core::Observation* obs = nullptr, std::atomic<bool>* cancel = nullptr) {
  ProcessSpec spec{std::move(argv), EnvironmentWith({}), std::move(stdin_data), deadline_s, 1,
                   SANDPROBE_REAPER};
  core::OutputCollector collector(kNonce);
  std::atomic<bool> never{false};
  ProcessResult r = RunProcess(spec, cancel ? *cancel : never, collector);
  core::Observation local;
  collector.Finish(obs ? *obs : local);
  return r;
}

bool Alive(pid_t pid) { return kill(pid, 0) == 0; }

// python3 whose grandchild leaves the session and the process group, writes its pid to `pidfile`
// and sleeps 60 s, while its child exits at once; the top process then runs `then` (python).
std::vector<std::string> EscapeeArgv(const std::string& pidfile, const std::string& then) {
  return {"python3", "-c",
          "import os,signal,time\n"
          "if os.fork()==0:\n"
          "  os.setsid()\n"
          "  if os.fork()==0:\n"
          "    open('" +
              pidfile +
              "','w').write(str(os.getpid())); time.sleep(60)\n"
              "  os._exit(0)\n" +
              then};
}

// The pid written to `pidfile` by a descendant of the call is gone (within 1 s of the call's end).
void ExpectGone(const std::string& pidfile, const std::string& what_it_outlived) {
  std::ifstream in(pidfile);
  pid_t pid = 0;
  in >> pid;
  ASSERT_GT(pid, 0);
  for (int i = 0; i < 50 && Alive(pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(Alive(pid)) << "pid " << pid << " survived " << what_it_outlived;
}

// Terminal mode: stdin is the harness's pseudo-terminal and the controlling terminal of the
// sandbox's session; what is typed into it (TIOCSTI) is read back after the call as pending
// input, what is written to it as output, and nothing typed is ever run.
TEST(ProcessTest, TerminalModeReadsPendingInputAfterTheCall) {
  std::ifstream legacy("/proc/sys/dev/tty/legacy_tiocsti");
  int value = 1;
  legacy >> value;
  if (value == 0 && geteuid() != 0) GTEST_SKIP() << "legacy_tiocsti 0: TIOCSTI needs root";
  ProcessSpec spec{{"python3", "-c",
                    "import fcntl,os,termios\n"
                    "assert os.isatty(0)\n"
                    "t=os.open('/dev/tty',os.O_RDWR)\n"
                    "[fcntl.ioctl(0,termios.TIOCSTI,bytes([c])) for c in b'typed-word']\n"
                    "os.write(t,b'written-out\\n')\n"
                    "print('ok',flush=True)\n"},
                   EnvironmentWith({}),
                   std::nullopt,
                   10,
                   1,
                   SANDPROBE_REAPER};
  spec.tty = true;
  core::OutputCollector collector(kNonce);
  std::atomic<bool> never{false};
  const ProcessResult r = RunProcess(spec, never, collector);
  core::Observation obs;
  collector.Finish(obs);
  ASSERT_EQ(r.ending, core::Ending::kExited) << r.error << obs.stderr_head;
  EXPECT_EQ(r.exit_code, 0) << obs.stderr_head;
  EXPECT_EQ(obs.stdout_head, "ok\n");  // stdout stays the pipe
  EXPECT_EQ(r.tty.error, "");
  EXPECT_EQ(r.tty.pending_input, "typed-word");  // no newline: it was never a command line
  EXPECT_NE(r.tty.output.find("written-out"), std::string::npos) << r.tty.output;
  EXPECT_NE(r.tty.output.find("typed-word"), std::string::npos) << r.tty.output;  // the echo
}

// Without terminal mode the sandbox has no controlling terminal at all, whatever terminal the
// harness itself runs on: /dev/tty cannot be opened.
TEST(ProcessTest, WithoutTerminalModeThereIsNoControllingTerminal) {
  core::Observation obs;
  const ProcessResult r = RunArgv({"python3", "-c",
                                   "import os\n"
                                   "try:\n"
                                   "  os.open('/dev/tty', os.O_RDWR); print('opened')\n"
                                   "except OSError as e: print(e.errno == 6 and 'ENXIO' or e)\n"
                                   "print(os.isatty(0), os.getsid(0) == os.getpgid(0))\n"},
                                  10, std::nullopt, &obs);
  ASSERT_EQ(r.ending, core::Ending::kExited) << r.error;
  EXPECT_EQ(obs.stdout_head, "ENXIO\nFalse False\n");  // own group, in the reaper's session
  EXPECT_EQ(r.tty.pending_input, "");
}

TEST(ProcessTest, ExitCodesAndSignals) {
  auto r = RunArgv({"sh", "-c", "exit 7"});
  EXPECT_EQ(r.ending, core::Ending::kExited);
  EXPECT_EQ(r.exit_code, 7);
  r = RunArgv({"sh", "-c", "kill -KILL $$"});
  EXPECT_EQ(r.ending, core::Ending::kSignaled);
  EXPECT_EQ(r.signal, 9);
  r = RunArgv({"/nonexistent/binary"});
  EXPECT_EQ(r.ending, core::Ending::kExited);
  EXPECT_EQ(r.exit_code, 127);
}

// The CPU figure is the tree's: a grandchild's busy loop counts (wait4 rusage of the reaper,
// which waited for it), a sleeping tree counts next to nothing.
TEST(ProcessTest, CpuSecondsCountTheWholeTree) {
  auto busy = RunArgv({"sh", "-c",
                       "python3 -c 'import time\nend = time.process_time() + 0.4\n"
                       "while time.process_time() < end: pass' & wait"});
  ASSERT_EQ(busy.ending, core::Ending::kExited);
  ASSERT_TRUE(busy.cpu_s.has_value());
  EXPECT_GE(*busy.cpu_s, 0.4);
  EXPECT_LT(*busy.cpu_s, 5.0);
  auto idle = RunArgv({"sleep", "0.4"});
  ASSERT_TRUE(idle.cpu_s.has_value());
  EXPECT_LT(*idle.cpu_s, 0.2);
  EXPECT_GE(idle.duration_s, 0.4);
}

TEST(ProcessTest, DeadlineStopsTheTree) {
  const auto start = std::chrono::steady_clock::now();
  auto r = RunArgv({"sh", "-c", "trap '' TERM; while :; do :; done"}, 0.5);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.ending, core::Ending::kDeadline);
  EXPECT_LT(took, 0.5 + 1 + 2);  // deadline + grace + slack: a TERM-ignoring loop is KILLed
  EXPECT_GE(r.descendants_killed, 1);
}

TEST(ProcessTest, SetsidDoubleForkDoesNotSurvive) {
  const std::string pidfile = testing::TempDir() + "/escapee.pid";
  std::remove(pidfile.c_str());
  // The grandchild leaves the session and the process group, then outlives its parent.
  auto r = RunArgv(EscapeeArgv(pidfile, "time.sleep(0.5)\n"));
  EXPECT_EQ(r.ending, core::Ending::kExited);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_GE(r.descendants_killed, 1);
  ASSERT_NO_FATAL_FAILURE(ExpectGone(pidfile, "the call"));
}

// A hostile sandbox can kill its own sandprobe-reaper; its tree then comes to the harness (a
// subreaper), which kills it instead of leaving a daemon behind.
TEST(ProcessTest, KillingTheReaperLeavesNothingBehind) {
  BecomeSubreaper();
  const std::string pidfile = testing::TempDir() + "/daemon.pid";
  std::remove(pidfile.c_str());
  auto r = RunArgv(EscapeeArgv(pidfile,
                               "time.sleep(0.3)\n"
                               "os.kill(os.getppid(), signal.SIGKILL)\n"
                               "time.sleep(60)\n"),
                   20);
  EXPECT_EQ(r.ending, core::Ending::kHarnessError) << r.error;  // the reaper could not report
  EXPECT_GE(r.descendants_killed, 1);
  ASSERT_NO_FATAL_FAILURE(ExpectGone(pidfile, "its reaper's death"));
  EXPECT_LT(r.duration_s, 10);
}

TEST(ProcessTest, StdinAndRecords) {
  core::Observation obs;
  auto r = RunArgv(
      {"sh", "-c", "cat"}, 5,
      std::string("@@sandprobe ") + kNonce + " {\"kind\":\"result\",\"outcome\":\"ok\"}\n", &obs);
  EXPECT_EQ(r.ending, core::Ending::kExited);
  ASSERT_TRUE(obs.result);
  EXPECT_EQ((*obs.result)["outcome"], "ok");
}

TEST(ProcessTest, TenMegabyteFloodIsDrainedAndBounded) {
  core::Observation obs;
  auto r = RunArgv({"sh", "-c",
                    "head -c 10485760 /dev/urandom; echo; echo '@@sandprobe " +
                        std::string(kNonce) + " {\"kind\":\"result\",\"outcome\":\"x\"}'"},
                   20, std::nullopt, &obs);
  EXPECT_EQ(r.ending, core::Ending::kExited);
  EXPECT_GE(obs.stdout_bytes, 10485760u);
  EXPECT_LE(obs.stdout_head.size(), 3u * 64 * 1024);
  EXPECT_TRUE(obs.result);
}

TEST(ProcessTest, CancelReportsInterrupted) {
  std::atomic<bool> cancel{false};
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel = true;
  });
  auto r = RunArgv({"sleep", "30"}, 30, std::nullopt, nullptr, &cancel);
  t.join();
  EXPECT_EQ(r.ending, core::Ending::kInterrupted);
  EXPECT_LT(r.duration_s, 5);
}

TEST(ProcessTest, MissingReaperIsAHarnessError) {
  ProcessSpec spec{{"true"}, EnvironmentWith({}), std::nullopt, 5, 1, "/nonexistent/reaper"};
  core::OutputCollector c(kNonce);
  std::atomic<bool> never{false};
  auto r = RunProcess(spec, never, c);
  EXPECT_EQ(r.ending, core::Ending::kHarnessError);
  EXPECT_FALSE(r.error.empty());
}

// Every descriptor above 2 the command sees, by fstat (which opens nothing itself).
constexpr char kListFds[] =
    "import os\nfds=[]\nfor fd in range(3,1024):\n"
    "  try:\n    os.fstat(fd); fds.append(fd)\n  except OSError: pass\nprint(fds)";

std::string StdoutOf(ProcessSpec spec) {
  core::OutputCollector collector(kNonce);
  std::atomic<bool> never{false};
  RunProcess(spec, never, collector);
  core::Observation obs;
  collector.Finish(obs);
  return obs.stdout_head;
}

// fs.inherited-fds: a descriptor the harness (or whoever started it) left open without
// O_CLOEXEC never reaches a sandbox command; the ones passed on purpose arrive at 4, 5.
TEST(ProcessTest, OnlyWhatIsMeantIsInherited) {
  const int leaked = open("/", O_RDONLY | O_DIRECTORY);  // no O_CLOEXEC, as a careless caller
  ASSERT_GE(leaked, 3);
  ProcessSpec spec{
      {"python3", "-c", kListFds}, EnvironmentWith({}), std::nullopt, 10, 1, SANDPROBE_REAPER};
  EXPECT_EQ(StdoutOf(spec), "[]\n");
  const int dir = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const int file = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
  spec.pass_fds = {file, dir};
  EXPECT_EQ(StdoutOf(spec), "[4, 5]\n");
  spec.argv = {"python3", "-c",
               "import os; print(os.path.samestat(os.fstat(4), os.stat('/etc/hostname')), "
               "os.path.samestat(os.fstat(5), os.stat('/tmp')))"};
  EXPECT_EQ(StdoutOf(spec), "True True\n");
  for (int fd : {leaked, dir, file}) close(fd);
}

// cred.keyring: the launch plants the keys in a new session keyring of the command (linked to
// the user keyring), not in the harness's own session keyring.
TEST(ProcessTest, SessionKeysArePlantedInTheCommandsOwnSessionKeyring) {
  const std::string description = "sandprobe:process-test-" + std::to_string(getpid());
  ProcessSpec spec{{"python3", "-c",
                    "import ctypes,sys\n"
                    "libc=ctypes.CDLL(None); libc.syscall.restype=ctypes.c_long\n"
                    "nr={'x86_64':250,'aarch64':219}[__import__('os').uname().machine]\n"
                    "k=libc.syscall(nr,10,-3,b'user',sys.argv[1].encode(),0)\n"
                    "b=ctypes.create_string_buffer(64)\n"
                    "n=libc.syscall(nr,11,ctypes.c_long(k),b,64)\n"
                    "print(k>0, b.raw[:max(n,0)].decode())",
                    description},
                   EnvironmentWith({}),
                   std::nullopt,
                   10,
                   1,
                   SANDPROBE_REAPER};
  spec.session_keys = {{description, "payload-1"}};
  EXPECT_EQ(StdoutOf(spec), "True payload-1\n");
  spec.session_keys.clear();  // the harness's own session keyring never got it
  EXPECT_EQ(StdoutOf(spec), "False \n");
}

TEST(ProcessTest, EnvironmentWithOverrides) {
  setenv("SANDPROBE_TEST_VAR", "old", 1);
  auto env = EnvironmentWith({{"SANDPROBE_TEST_VAR", "new"}});
  int seen = 0;
  for (const auto& kv : env) {
    if (kv.starts_with("SANDPROBE_TEST_VAR=")) {
      ++seen;
      EXPECT_EQ(kv, "SANDPROBE_TEST_VAR=new");
    }
  }
  EXPECT_EQ(seen, 1);
  EXPECT_FALSE(FindExecutable("sh").empty());
  EXPECT_TRUE(FindExecutable("no-such-binary-sandprobe").empty());
}

}  // namespace
}  // namespace sandprobe::process
