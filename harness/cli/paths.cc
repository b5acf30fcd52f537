#include "cli/paths.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

namespace sandprobe::cli {

namespace fs = std::filesystem;

fs::path ResolveHome(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("SANDPROBE_HOME"); env != nullptr && *env != '\0') return env;
  return SANDPROBE_SOURCE_ROOT;
}

std::string ResolveReaper() {
  if (const char* env = std::getenv("SANDPROBE_REAPER"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return (self.parent_path() / "sandprobe-reaper").string();
}

std::expected<fs::path, std::string> FindControl(const core::Manifest& candidate,
                                                 const fs::path& home) {
  const std::string& ref = candidate.control;
  const fs::path dir = fs::path(candidate.source_path).parent_path();
  std::vector<fs::path> tries;
  if (ref.find('/') != std::string::npos || ref.ends_with(".yaml")) {
    tries = {dir / ref, fs::path(ref)};
  } else {
    tries = {dir / (ref + ".yaml"), home / "manifests" / (ref + ".yaml")};
    std::error_code ec;
    for (const auto& sub : fs::directory_iterator(home / "manifests", ec)) {
      if (sub.is_directory()) tries.push_back(sub.path() / (ref + ".yaml"));
    }
  }
  for (const fs::path& p : tries) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p;
  }
  std::string looked;
  for (const fs::path& p : tries) looked += (looked.empty() ? "" : ", ") + p.string();
  return std::unexpected(fmt::format("control '{}' named by {} was not found (looked in {})", ref,
                                     candidate.source_path, looked));
}

}  // namespace sandprobe::cli
