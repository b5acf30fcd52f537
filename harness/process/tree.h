// Process trees read from /proc: who descends from whom, and killing a whole tree. Shared by
// sandprobe-reaper (its own descendants) and the harness (orphans of a reaper that was killed).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace sandprobe::process {

// Every live (non-zombie) process whose parent chain leads to `root`, excluding root.
std::vector<pid_t> Descendants(pid_t root);

// True when `pid` is already on its way out: state X (dead), or a SIGKILL pending for it
// (/proc/<pid>/status SigPnd or ShdPnd bit 9), as when the kernel tears down a PID namespace
// whose init exited. Such a process did not outlive its sandbox: it is being ended by it.
bool Dying(pid_t pid);

// The fields of /proc/<pid>/stat after the command name (which may hold spaces and parens),
// starting with field 3, the state; "" when there is no such process.
std::string StatFields(pid_t pid);

// The live (non-zombie) processes whose parent is `parent`.
std::vector<pid_t> Children(pid_t parent);

// Freezes (SIGSTOP) then SIGKILLs `pids` and everything below them, repeating until none is left
// or `rounds` sweeps are done, so nothing forks past the sweep. Returns how many were signalled.
// Reaping is the caller's business (these may or may not be its children).
int KillTrees(const std::vector<pid_t>& pids, int rounds = 50);

}  // namespace sandprobe::process
