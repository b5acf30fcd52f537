// Where sandprobe finds its home (probes/, suites/, manifests/; read by home/home.h) and its
// reaper at run time.
#pragma once

#include <filesystem>
#include <string>

namespace sandprobe::cli {

// --home, else $SANDPROBE_HOME, else the installed tree beside this executable
// (<prefix>/bin/sandprobe -> <prefix>/share/sandprobe, when it holds probes/), else the source
// tree this binary was built from.
std::filesystem::path ResolveHome(const std::string& flag);
// $SANDPROBE_REAPER, else sandprobe-reaper beside this executable.
std::string ResolveReaper();

}  // namespace sandprobe::cli
