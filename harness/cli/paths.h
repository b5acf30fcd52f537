// Where sandprobe finds its tree (probes/, suites/, manifests/) and its reaper at run time.
#pragma once

#include <expected>
#include <filesystem>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/manifest.h"

namespace sandprobe::cli {

// --home, else $SANDPROBE_HOME, else the installed tree beside this executable
// (<prefix>/bin/sandprobe -> <prefix>/share/sandprobe, when it holds probes/), else the source
// tree this binary was built from.
std::filesystem::path ResolveHome(const std::string& flag);
// $SANDPROBE_REAPER, else sandprobe-reaper beside this executable.
std::string ResolveReaper();
// The control manifest a candidate names: a path (relative to the candidate's folder, then the
// working directory) or a name looked up as <candidate dir>/<name>.yaml, then
// <home>/manifests/<name>.yaml and <home>/manifests/*/<name>.yaml, then as a manifest `name:`
// (what the matrix shows, e.g. docker-open) in those folders. Elsewhere than beside the
// candidate, only the candidate's driver or the local baseline counts; two matches are an error
// listing both.
std::expected<std::filesystem::path, std::string> FindControl(const core::Manifest& candidate,
                                                              const std::filesystem::path& home);

}  // namespace sandprobe::cli
