// The CPU an invocation's whole process tree used, from a cgroup of its own. wait4's rusage misses
// what a parent never waits for: a PID namespace's init that dies reaps its processes with SIGCHLD
// ignored, so the kernel drops their times (a bubblewrap sandbox stopped at its deadline counted
// 0.01 s for a 15 s loop; docs/traps.md, trap 57). A cgroup counts every task in it
// however it ends.
//
// The cgroup is a child of the harness's own (the harness's limits still apply) in a hierarchy
// that accounts CPU without scheduling it: cgroup v1 `cpuacct` mounted without `cpu`, or cgroup v2
// where the parent does not enable the `cpu` controller for its children. A cgroup with its own
// CPU weight would undo the busy loop's nice 19 (docs/traps.md, trap 41). Anywhere else (not
// root, read-only cgroupfs, cpu,cpuacct co-mounted) there is no cgroup and the caller falls back
// to rusage.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace sandprobe::process {

// Where invocation cgroups go: `dir` (a directory of the cgroup filesystem) and how its CPU is
// read (v1: cpuacct.usage, nanoseconds; v2: cpu.stat usage_usec, microseconds).
struct CpuAccountSite {
  std::string dir;
  bool v2 = false;
  bool operator==(const CpuAccountSite&) const = default;
};

// The site for a process whose /proc/self/mountinfo and /proc/self/cgroup read as given: the
// process's own cgroup in the v1 hierarchy whose only controller is cpuacct, else in the v2
// hierarchy; nullopt when neither is mounted or the process's cgroup lies outside the mount's
// root. Pure.
std::optional<CpuAccountSite> FindCpuAccountSite(std::string_view mountinfo,
                                                 std::string_view proc_cgroup);

// CPU seconds from the text of cpuacct.usage (v1) or cpu.stat (v2); nullopt when malformed.
std::optional<double> CpuSecondsFromCgroup(bool v2, std::string_view text);

// Removes the empty invocation cgroups (`sandprobe-<pid>-<start>-<n>`) of sandprobe processes
// that are gone (a harness killed with SIGKILL runs no destructor): no process `pid` started at
// clock tick `start` (/proc/<pid>/stat field 22) is alive in this PID namespace. Returns how many
// it removed. Called once per process by the first Create(). A directory that still holds tasks
// is never removed (the kernel refuses).
int SweepStaleCgroups();

// /proc/<pid>/stat's starttime (clock ticks after boot); nullopt when there is no such process.
std::optional<unsigned long long> ProcessStartTicks(pid_t pid);

// One invocation's cgroup. Create() makes `<site>/sandprobe-<pid>-<start>-<n>`; nullopt when that
// is not possible here (the reason is in `why`). The process to account is moved in by writing its
// pid to procs_file() before it runs anything. Remove() deletes the directory once its tasks are
// gone (retrying while the last of them are released); the destructor removes it too.
class InvocationCgroup {
 public:
  static std::optional<InvocationCgroup> Create(std::string* why = nullptr);
  InvocationCgroup(InvocationCgroup&& other) noexcept;
  InvocationCgroup& operator=(InvocationCgroup&&) = delete;
  ~InvocationCgroup();

  const std::string& path() const { return path_; }
  std::string procs_file() const { return path_ + "/cgroup.procs"; }
  // User + system CPU seconds of every task that ran in the cgroup; nullopt when unreadable.
  std::optional<double> CpuSeconds() const;
  // True when the directory is gone (or was never there).
  bool Remove();

 private:
  InvocationCgroup(std::string path, bool v2) : path_(std::move(path)), v2_(v2) {}
  std::string path_;
  bool v2_ = false;
};

}  // namespace sandprobe::process
