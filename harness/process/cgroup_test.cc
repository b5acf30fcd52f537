// An invocation's CPU from a cgroup of its own (process/cgroup.h): where the cgroup goes, how its
// account is read, and, where this machine allows one, that it counts what wait4 cannot.
#include "process/cgroup.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "core/output.h"
#include "process/process.h"

namespace sandprobe::process {
namespace {

// mountinfo lines as Debian 12 writes them: a hybrid machine with every v1 controller apart (this
// CI's kind), systemd's cpu,cpuacct co-mount, and a pure cgroup2 machine.
constexpr const char* kSplitV1 =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
constexpr const char* kCoMounted =
    "33 31 0:30 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:9 - cgroup cgroup rw,cpu,cpuacct\n";
constexpr const char* kCoMountedAndV2 =
    "33 31 0:30 / /sys/fs/cgroup/cpu,cpuacct rw shared:9 - cgroup cgroup rw,cpu,cpuacct\n"
    "30 23 0:26 / /sys/fs/cgroup/unified rw shared:4 - cgroup2 cgroup2 rw\n";
constexpr const char* kV2 =
    "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev shared:4 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";
constexpr const char* kV2InContainer =  // a container's cgroup bind-mounted as its root
    "30 23 0:26 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw\n";
constexpr const char* kEscaped =  // a mount point with a space (\040)
    "33 31 0:30 / /mnt/my\\040cg rw - cgroup cgroup rw,cpuacct\n";

TEST(CgroupTest, FindCpuAccountSiteTable) {
  const struct {
    const char* mountinfo;
    const char* proc_cgroup;
    std::optional<CpuAccountSite> site;
  } cases[] = {
      {kSplitV1, "2:cpuacct:/\n1:cpu:/\n0::/\n", CpuAccountSite{"/sys/fs/cgroup/cpuacct", false}},
      {kSplitV1, "2:cpuacct:/ci/job\n0::/x\n",
       CpuAccountSite{"/sys/fs/cgroup/cpuacct/ci/job", false}},
      // co-mounted with cpu: its cgroups weigh CPU, so not there; the cgroup2 mount instead
      {kCoMounted, "4:cpu,cpuacct:/user.slice\n0::/\n", std::nullopt},
      {kCoMountedAndV2, "4:cpu,cpuacct:/user.slice\n0::/a.scope\n",
       CpuAccountSite{"/sys/fs/cgroup/unified/a.scope", true}},
      {kV2, "0::/user.slice/user-0.slice/session-3.scope\n",
       CpuAccountSite{"/sys/fs/cgroup/user.slice/user-0.slice/session-3.scope", true}},
      {kV2InContainer, "0::/docker/abc\n", CpuAccountSite{"/sys/fs/cgroup", true}},
      {kV2InContainer, "0::/docker/abc/sub\n", CpuAccountSite{"/sys/fs/cgroup/sub", true}},
      {kV2InContainer, "0::/docker/abcdef\n", std::nullopt},  // not under the mount's root
      {kV2InContainer, "0::/other\n", std::nullopt},
      {kEscaped, "3:cpuacct:/\n", CpuAccountSite{"/mnt/my cg", false}},
      // cpuacct beside another controller: a new cgroup there is not for accounting only
      {"33 31 0:30 / /sys/fs/cgroup/net_cls,cpuacct rw - cgroup cgroup rw,net_cls,cpuacct\n",
       "3:net_cls,cpuacct:/\n", std::nullopt},
      {kV2, "", std::nullopt},
      {"", "0::/\n", std::nullopt},
      {"garbage\n\n - \n", "nonsense\n0:/\n::\n", std::nullopt},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.mountinfo) + "|" + c.proc_cgroup);
    EXPECT_EQ(FindCpuAccountSite(c.mountinfo, c.proc_cgroup), c.site);
  }
}

TEST(CgroupTest, CpuSecondsFromCgroupTable) {
  const struct {
    bool v2;
    const char* text;
    std::optional<double> seconds;
  } cases[] = {
      {false, "1500000000\n", 1.5},  // cpuacct.usage: nanoseconds
      {false, "0\n", 0.0},
      {false, "", std::nullopt},
      {false, "12 34\n", std::nullopt},
      {false, "-5\n", std::nullopt},
      {true, "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n", 2.5},
      {true, "nr_periods 0\nusage_usec 7\n", 7e-6},
      {true, "user_usec 2000000\n", std::nullopt},
      {true, "usage_usec x\n", std::nullopt},
      {true, "usage_usec_extra 3\n", std::nullopt},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    const auto got = CpuSecondsFromCgroup(c.v2, c.text);
    ASSERT_EQ(got.has_value(), c.seconds.has_value());
    if (got) {
      EXPECT_NEAR(*got, *c.seconds, 1e-12);
    }
  }
}

// `script` run by python3 under sandprobe-reaper, as the command driver runs a probe.
ProcessResult RunPython(const std::string& script, double deadline_s) {
  ProcessSpec spec;
  spec.argv = {"/usr/bin/python3", "-I", "-S", "-c", script};
  spec.deadline_s = deadline_s;
  spec.kill_grace_s = 1;
  spec.reaper_path = SANDPROBE_REAPER;
  std::atomic<bool> cancel{false};
  core::OutputCollector out("nonce");
  return RunProcess(spec, cancel, out);
}

// The case wait4 cannot count: a parent that ignores SIGCHLD has its children auto-reaped (as a
// dying PID namespace init does), so their CPU never reaches anyone's rusage. The cgroup has it.
TEST(CgroupTest, CountsWhatNoParentWaitedFor) {
  std::string why;
  std::optional<InvocationCgroup> probe = InvocationCgroup::Create(&why);
  if (!probe) GTEST_SKIP() << "no invocation cgroup here: " << why;
  const std::filesystem::path site = std::filesystem::path(probe->path()).parent_path();
  probe.reset();
  const ProcessResult r = RunPython(
      "import os, signal, time\n"
      "signal.signal(signal.SIGCHLD, signal.SIG_IGN)\n"
      "pid = os.fork()\n"
      "if pid == 0:\n"
      "    t = time.process_time()\n"
      "    while time.process_time() - t < 0.6: pass\n"
      "    os._exit(0)\n"
      "while True:  # until the child is gone (auto-reaped), however slow the machine\n"
      "    try: os.kill(pid, 0)\n"
      "    except ProcessLookupError: break\n"
      "    time.sleep(0.02)\n",
      30);
  ASSERT_EQ(r.ending, core::Ending::kExited) << r.error;
  ASSERT_TRUE(r.cpu_s.has_value());
  EXPECT_TRUE(r.cpu_whole_tree);
  EXPECT_GE(*r.cpu_s, 0.55);  // the child's 0.6 s, which no wait4 saw
  // and nothing is left behind in the cgroup filesystem
  const std::string ours = "sandprobe-" + std::to_string(getpid()) + "-";  // any start, any serial
  for (const auto& entry : std::filesystem::directory_iterator(site)) {
    EXPECT_FALSE(entry.path().filename().string().starts_with(ours)) << entry.path();
  }
}

// A sandbox that kills its sandprobe-reaper: the harness sweeps the orphans, and the cgroup still
// has what they used (wait4 saw none of it: the reaper never reaped the command).
TEST(CgroupTest, CountsTheTreeOfAKilledReaper) {
  BecomeSubreaper();  // as the harness is: the killed reaper's orphans come to us
  std::string why;
  if (!InvocationCgroup::Create(&why)) GTEST_SKIP() << "no invocation cgroup here: " << why;
  const ProcessResult r = RunPython(
      "import os, signal, time\n"
      "t = time.process_time()\n"
      "while time.process_time() - t < 0.5: pass\n"
      "os.kill(os.getppid(), signal.SIGKILL)\n"
      "time.sleep(30)\n",
      20);
  EXPECT_EQ(r.ending, core::Ending::kHarnessError);
  EXPECT_NE(r.error.find("sandprobe-reaper was killed by signal 9"), std::string::npos) << r.error;
  EXPECT_GE(r.descendants_killed, 1);
  ASSERT_TRUE(r.cpu_s.has_value());
  EXPECT_TRUE(r.cpu_whole_tree);
  EXPECT_GE(*r.cpu_s, 0.45);
}

TEST(CgroupTest, RemovedAfterTheInvocation) {
  std::string why;
  std::optional<InvocationCgroup> cg = InvocationCgroup::Create(&why);
  if (!cg) GTEST_SKIP() << "no invocation cgroup here: " << why;
  const std::string path = cg->path();
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_TRUE(cg->Remove());
  EXPECT_NE(stat(path.c_str(), &st), 0);
  EXPECT_EQ(errno, ENOENT);
  std::optional<InvocationCgroup> other = InvocationCgroup::Create();
  ASSERT_TRUE(other.has_value());
  const std::string other_path = other->path();
  EXPECT_NE(other_path, path);
  other.reset();  // the destructor removes it too
  EXPECT_NE(stat(other_path.c_str(), &st), 0);
}

// A harness killed with SIGKILL leaves its empty cgroups; the next one removes those of owners
// that are gone and keeps the rest.
TEST(CgroupTest, StaleCgroupsOfDeadOwnersAreSwept) {
  std::string why;
  std::optional<InvocationCgroup> probe = InvocationCgroup::Create(&why);
  if (!probe) GTEST_SKIP() << "no invocation cgroup here: " << why;
  const std::filesystem::path site = std::filesystem::path(probe->path()).parent_path();
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  ASSERT_GT(gone, 0);
  ASSERT_EQ(waitpid(gone, nullptr, 0), gone);
  const std::string me = std::to_string(getpid());
  const auto my_start = ProcessStartTicks(getpid());
  ASSERT_TRUE(my_start.has_value());
  const std::filesystem::path stale = site / ("sandprobe-" + std::to_string(gone) + "-5-7");
  // our pid, but not our start: an earlier process that had our pid
  const std::filesystem::path reused =
      site / ("sandprobe-" + me + "-" + std::to_string(*my_start + 1) + "-7");
  const std::filesystem::path live =
      site / ("sandprobe-" + me + "-" + std::to_string(*my_start) + "-99999");
  const std::filesystem::path other = site / "sandprobe-notapid";
  for (const auto& dir : {stale, reused, live, other}) {
    ASSERT_EQ(mkdir(dir.c_str(), 0755), 0) << dir;
  }
  EXPECT_GE(SweepStaleCgroups(), 2);
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_FALSE(std::filesystem::exists(reused));
  EXPECT_TRUE(std::filesystem::exists(live));
  EXPECT_TRUE(std::filesystem::exists(other));
  rmdir(live.c_str());
  rmdir(other.c_str());
}

}  // namespace
}  // namespace sandprobe::process
