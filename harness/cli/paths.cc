#include "cli/paths.h"

#include <unistd.h>

#include <cstdlib>

namespace sandprobe::cli {

namespace fs = std::filesystem;

fs::path ResolveHome(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("SANDPROBE_HOME"); env != nullptr && *env != '\0') return env;
  // An installed copy (cmake --install, the .deb): <prefix>/bin/sandprobe reads
  // <prefix>/share/sandprobe. A build tree has no such folder beside its bin/.
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = (self.parent_path() / SANDPROBE_HOME_FROM_BIN).lexically_normal();
    if (fs::is_directory(installed / "probes", ec)) return installed;
  }
  return SANDPROBE_SOURCE_ROOT;
}

std::string ResolveReaper() {
  if (const char* env = std::getenv("SANDPROBE_REAPER"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return (self.parent_path() / "sandprobe-reaper").string();
}

}  // namespace sandprobe::cli
