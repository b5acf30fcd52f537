#include <fmt/format.h>

#include <algorithm>

#include "drivers/registry.h"
#include "home/home.h"

namespace sandprobe::home {

namespace fs = std::filesystem;

namespace {

// Manifests whose `name:` is `ref`, of the candidate's driver or the local baseline, in the
// candidate's folder, <home>/manifests and its subfolders (the candidate itself excluded). One
// match -> {it}; none -> {}; more -> an error listing them.
std::expected<std::vector<fs::path>, std::string> ControlsNamed(const std::string& ref,
                                                                const core::Manifest& candidate,
                                                                const fs::path& dir,
                                                                const fs::path& home) {
  std::vector<fs::path> dirs = {dir, home / "manifests"};
  std::error_code ec;
  for (const auto& sub : fs::directory_iterator(home / "manifests", ec)) {
    if (sub.is_directory()) dirs.push_back(sub.path());
  }
  std::vector<fs::path> found;
  std::error_code self_ec;
  const fs::path self = fs::weakly_canonical(candidate.source_path, self_ec);
  for (const fs::path& d : dirs) {
    std::error_code it_ec;
    for (const auto& f : fs::directory_iterator(d, it_ec)) {
      if (!f.is_regular_file() || f.path().extension() != ".yaml") continue;
      std::error_code c_ec;
      const fs::path canon = fs::weakly_canonical(f.path(), c_ec);
      if (canon == self || std::ranges::find(found, canon) != found.end()) continue;
      auto m = drivers::LoadManifest(f.path());
      if (!m || m->name != ref) continue;
      const drivers::DriverKind* kind = drivers::Registry().Find(m->driver);
      if (m->driver == candidate.driver || (kind != nullptr && kind->baseline)) {
        found.push_back(canon);
      }
    }
  }
  if (found.size() > 1) {
    std::string list;
    for (const fs::path& p : found) list += (list.empty() ? "" : ", ") + p.string();
    return std::unexpected(fmt::format(
        "control '{}' named by {} is ambiguous: manifests named {}: {}; give --control or a path "
        "in control:",
        ref, candidate.source_path, ref, list));
  }
  return found;
}

}  // namespace

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
  // Beside the candidate first (and an explicit path): that is what the author meant.
  for (size_t i = 0; i < std::min<size_t>(2, tries.size()); ++i) {
    std::error_code ec;
    if (fs::is_regular_file(tries[i], ec)) return tries[i];
  }
  // Elsewhere in the tree only an unambiguous match of the candidate's own driver (or the local
  // baseline) will do: manifests/docker/open.yaml must never control a kubernetes copy.
  std::vector<fs::path> found;
  std::string other;
  for (size_t i = 2; i < tries.size(); ++i) {
    std::error_code ec;
    if (!fs::is_regular_file(tries[i], ec)) continue;
    auto m = drivers::LoadManifest(tries[i]);
    const drivers::DriverKind* kind = m ? drivers::Registry().Find(m->driver) : nullptr;
    if (m && (m->driver == candidate.driver || (kind != nullptr && kind->baseline))) {
      found.push_back(tries[i]);
    } else if (m) {
      other +=
          fmt::format("{}{} (driver {})", other.empty() ? "" : ", ", tries[i].string(), m->driver);
    }
  }
  if (found.empty() && other.empty() && ref.find('/') == std::string::npos &&
      !ref.ends_with(".yaml")) {
    // Not a file name: a manifest `name:` (the name the matrix shows, e.g. docker-open).
    auto named = ControlsNamed(ref, candidate, dir, home);
    if (!named) return std::unexpected(named.error());
    if (!named->empty()) return named->front();
  }
  if (found.size() == 1) return found.front();
  if (found.size() > 1) {
    std::string list;
    for (const fs::path& p : found) list += (list.empty() ? "" : ", ") + p.string();
    return std::unexpected(
        fmt::format("control '{}' named by {} is ambiguous ({}): give "
                    "--control or a path in control:",
                    ref, candidate.source_path, list));
  }
  if (!other.empty()) {
    return std::unexpected(fmt::format(
        "control '{}' named by {} (driver {}) matches only other drivers' manifests: {}; give "
        "--control or a path in control:",
        ref, candidate.source_path, candidate.driver, other));
  }
  std::string looked;
  for (const fs::path& p : tries) looked += (looked.empty() ? "" : ", ") + p.string();
  return std::unexpected(fmt::format("control '{}' named by {} was not found (looked in {})", ref,
                                     candidate.source_path, looked));
}

}  // namespace sandprobe::home
