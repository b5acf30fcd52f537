#include "process/cgroup.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "process/tree.h"

namespace sandprobe::process {
namespace {

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    const size_t at = text.find(sep);
    out.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return out;
    text.remove_prefix(at + 1);
  }
}

// True when `name` is one of the `sep`-separated items of `list`.
bool Lists(std::string_view list, char sep, std::string_view name) {
  const std::vector<std::string_view> items = Split(list, sep);
  return std::ranges::find(items, name) != items.end();
}

// mountinfo escapes space, tab, newline and backslash as \ooo (octal).
std::string Unescape(std::string_view field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && field.size() - i >= 4) {
      const std::string_view oct = field.substr(i + 1, 3);
      int value = 0;
      if (std::from_chars(oct.data(), oct.data() + 3, value, 8).ptr == oct.data() + 3) {
        out.push_back(static_cast<char>(value));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

struct Mount {
  std::string root, point, type, super_options;
};

std::vector<Mount> CgroupMounts(std::string_view mountinfo) {
  std::vector<Mount> out;
  for (std::string_view line : Split(mountinfo, '\n')) {
    const std::vector<std::string_view> f = Split(line, ' ');
    size_t dash = 0;
    for (size_t i = 6; i < f.size(); ++i) {
      if (f[i] == "-") {
        dash = i;
        break;
      }
    }
    if (dash == 0 || f.size() < dash + 4) continue;
    const std::string_view type = f[dash + 1];
    if (type != "cgroup" && type != "cgroup2") continue;
    out.push_back({Unescape(f[3]), Unescape(f[4]), std::string(type), std::string(f[dash + 3])});
  }
  return out;
}

// The directory of cgroup `path` (as /proc/self/cgroup gives it) under a mount of its hierarchy.
std::optional<std::string> Under(const Mount& m, std::string_view path) {
  if (path.empty() || path[0] != '/') return std::nullopt;
  std::string_view rest = path;
  if (m.root != "/") {
    if (!rest.starts_with(m.root)) return std::nullopt;
    rest.remove_prefix(m.root.size());
    if (!rest.empty() && rest[0] != '/') return std::nullopt;
  }
  std::string dir = m.point;
  if (rest != "/") dir += rest;
  return dir;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::atomic<unsigned> g_serial{0};

const std::optional<CpuAccountSite>& Site() {
  // Read once: the harness does not move between cgroups during a run.
  static const std::optional<CpuAccountSite> site =
      FindCpuAccountSite(ReadFile("/proc/self/mountinfo"), ReadFile("/proc/self/cgroup"));
  return site;
}

}  // namespace

std::optional<unsigned long long> ProcessStartTicks(pid_t pid) {
  // fields 3 (state) to 21 skipped: 5 signed, 7 unsigned, 6 signed; 22 is starttime
  unsigned long long ticks = 0;
  if (std::sscanf(
          StatFields(pid).c_str(),
          " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
          &ticks) != 1) {
    return std::nullopt;
  }
  return ticks;
}

int SweepStaleCgroups() {
  const std::optional<CpuAccountSite>& site = Site();
  if (!site) return 0;
  std::error_code ec;
  int removed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(site->dir, ec)) {
    const std::string name = entry.path().filename().string();
    unsigned long pid = 0;
    unsigned long long start = 0;
    unsigned serial = 0;
    char rest = 0;
    if (std::sscanf(name.c_str(), "sandprobe-%lu-%llu-%u%c", &pid, &start, &serial, &rest) != 3 ||
        pid == 0) {
      continue;
    }
    if (ProcessStartTicks(static_cast<pid_t>(pid)) == start) continue;  // its owner lives
    if (rmdir(entry.path().c_str()) == 0) ++removed;  // fails, harmlessly, while tasks remain
  }
  return removed;
}

std::optional<CpuAccountSite> FindCpuAccountSite(std::string_view mountinfo,
                                                 std::string_view proc_cgroup) {
  const std::vector<Mount> mounts = CgroupMounts(mountinfo);
  std::optional<std::string> v1_path, v2_path;
  for (std::string_view line : Split(proc_cgroup, '\n')) {
    const size_t first = line.find(':');
    if (first == std::string_view::npos) continue;
    const size_t second = line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    const std::string_view id = line.substr(0, first);
    const std::string_view controllers = line.substr(first + 1, second - first - 1);
    const std::string_view path = line.substr(second + 1);
    if (id == "0" && controllers.empty()) {
      v2_path = std::string(path);
    } else if (controllers == "cpuacct") {
      // cpuacct alone: co-mounted with cpu its cgroups weigh CPU too, with net_cls a new cgroup
      // resets the class id, with memory (old kernels, use_hierarchy 0) it escapes the limit
      v1_path = std::string(path);
    }
  }
  if (v1_path) {
    for (const Mount& m : mounts) {
      if (m.type == "cgroup" && Lists(m.super_options, ',', "cpuacct")) {
        if (auto dir = Under(m, *v1_path)) return CpuAccountSite{*dir, false};
      }
    }
  }
  if (v2_path) {
    for (const Mount& m : mounts) {
      if (m.type == "cgroup2") {
        if (auto dir = Under(m, *v2_path)) return CpuAccountSite{*dir, true};
      }
    }
  }
  return std::nullopt;
}

std::optional<double> CpuSecondsFromCgroup(bool v2, std::string_view text) {
  auto number = [](std::string_view s) -> std::optional<unsigned long long> {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
    unsigned long long v = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
    return v;
  };
  if (!v2) {
    const auto ns = number(text);
    if (!ns) return std::nullopt;
    return static_cast<double>(*ns) / 1e9;
  }
  for (std::string_view line : Split(text, '\n')) {
    if (!line.starts_with("usage_usec ")) continue;
    const auto us = number(line.substr(std::strlen("usage_usec ")));
    if (!us) return std::nullopt;
    return static_cast<double>(*us) / 1e6;
  }
  return std::nullopt;
}

std::optional<InvocationCgroup> InvocationCgroup::Create(std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<InvocationCgroup> {
    if (why != nullptr) *why = std::move(reason);
    return std::nullopt;
  };
  const std::optional<CpuAccountSite>& site = Site();
  static std::once_flag swept;
  std::call_once(swept, [] { SweepStaleCgroups(); });
  if (!site) return fail("no cgroup hierarchy that only accounts CPU (cpuacct alone, or cgroup2)");
  if (site->v2) {
    std::string control = ReadFile(site->dir + "/cgroup.subtree_control");  // "cpu memory\n"
    while (!control.empty() && control.back() == '\n') control.pop_back();
    if (Lists(control, ' ', "cpu")) {
      return fail(site->dir + " gives its children the cpu controller (a weight of their own)");
    }
  }
  // pid and start time name the owner (SweepStaleCgroups), the serial the invocation.
  static const unsigned long long started = ProcessStartTicks(getpid()).value_or(0);
  const std::string path = site->dir + "/sandprobe-" + std::to_string(getpid()) + "-" +
                           std::to_string(started) + "-" + std::to_string(g_serial.fetch_add(1));
  if (mkdir(path.c_str(), 0755) != 0) return fail(path + ": " + std::strerror(errno));
  return InvocationCgroup(path, site->v2);
}

InvocationCgroup::InvocationCgroup(InvocationCgroup&& other) noexcept
    : path_(std::move(other.path_)), v2_(other.v2_) {
  other.path_.clear();
}

InvocationCgroup::~InvocationCgroup() { Remove(); }

std::optional<double> InvocationCgroup::CpuSeconds() const {
  if (path_.empty()) return std::nullopt;
  const std::string text = ReadFile(path_ + (v2_ ? "/cpu.stat" : "/cpuacct.usage"));
  return CpuSecondsFromCgroup(v2_, text);
}

bool InvocationCgroup::Remove() {
  if (path_.empty()) return true;
  // EBUSY while the kernel releases the last exited tasks: a few milliseconds at most.
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (rmdir(path_.c_str()) == 0 || errno == ENOENT) {
      path_.clear();
      return true;
    }
    if (errno != EBUSY) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace sandprobe::process
