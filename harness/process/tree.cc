#include "process/tree.h"

#include <dirent.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>

namespace sandprobe::process {
namespace {

// pid -> ppid for every live process in /proc. Zombies are already dead and have no children.
std::map<pid_t, pid_t> ParentMap() {
  std::map<pid_t, pid_t> out;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return out;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    char state = 0;
    long ppid = 0;
    if (std::sscanf(StatFields(static_cast<pid_t>(pid)).c_str(), " %c %ld", &state, &ppid) == 2 &&
        state != 'Z') {
      out[pid] = ppid;
    }
  }
  closedir(dir);
  return out;
}

std::set<pid_t> Below(const std::map<pid_t, pid_t>& parents, std::set<pid_t> tree) {
  bool grew = true;
  while (grew) {
    grew = false;
    for (const auto& [pid, ppid] : parents) {
      if (tree.contains(ppid) && !tree.contains(pid)) {
        tree.insert(pid);
        grew = true;
      }
    }
  }
  return tree;
}

}  // namespace

std::string StatFields(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return "";
  const size_t close = line.rfind(')');
  return close == std::string::npos ? "" : line.substr(close + 1);
}

std::vector<pid_t> Descendants(pid_t root) {
  std::set<pid_t> tree = Below(ParentMap(), {root});
  tree.erase(root);
  return {tree.begin(), tree.end()};
}

bool Dying(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  constexpr unsigned long long kSigkillBit = 1ull << (SIGKILL - 1);
  while (std::getline(status, line)) {
    if (line.starts_with("State:") && line.find('X') != std::string::npos) return true;
    if (line.starts_with("SigPnd:") || line.starts_with("ShdPnd:")) {
      const unsigned long long mask = std::strtoull(line.c_str() + 7, nullptr, 16);
      if (mask & kSigkillBit) return true;
    }
  }
  return false;
}

std::vector<pid_t> Children(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& [pid, ppid] : ParentMap()) {
    if (ppid == parent) out.push_back(pid);
  }
  return out;
}

int KillTrees(const std::vector<pid_t>& pids, int rounds) {
  std::set<pid_t> roots(pids.begin(), pids.end());
  int signalled = 0;
  for (int round = 0; round < rounds && !roots.empty(); ++round) {
    const auto parents = ParentMap();
    std::set<pid_t> live;
    for (pid_t p : roots) {
      if (parents.contains(p)) live.insert(p);
    }
    if (live.empty()) break;
    const std::set<pid_t> tree = Below(parents, live);
    for (pid_t p : tree) kill(p, SIGSTOP);
    for (pid_t p : tree) {
      if (kill(p, SIGKILL) == 0) ++signalled;
    }
    roots = tree;  // children forked before the freeze are found in the next sweep
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return signalled;
}

}  // namespace sandprobe::process
