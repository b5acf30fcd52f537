// Manifest YAML -> core::Manifest. Validates the common fields; the driver section is checked by
// the DriverSection the registry gives for the manifest's kind (config/manifest_sections.h).
#include <fmt/format.h>

#include <algorithm>

#include "config/config.h"
#include "config/manifest_sections.h"
#include "config/yaml_util.h"

namespace sandprobe::config {
namespace {

using internal::At;

// limits.noexec: `true` (every writable path), `false` (no claim, as if absent) or a list of
// absolute paths, each once.
std::expected<std::optional<core::NoexecClaim>, ConfigError> LoadNoexec(const std::string& file,
                                                                        const YAML::Node& node) {
  constexpr const char* kShape = "expected true (every writable path), false or a list of paths";
  if (node.IsScalar()) {
    const nlohmann::json v = YamlToJson(node);
    if (!v.is_boolean()) return std::unexpected(At(file, node, "limits.noexec", kShape));
    if (!v.get<bool>()) return std::nullopt;
    return core::NoexecClaim{.every_writable = true, .paths = {}};
  }
  if (!node.IsSequence() || node.size() == 0) {
    return std::unexpected(At(file, node, "limits.noexec", kShape));
  }
  core::NoexecClaim claim;
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string field = fmt::format("limits.noexec[{}]", i);
    if (!node[i].IsScalar()) return std::unexpected(At(file, node[i], field, "expected a path"));
    auto path = core::ParseClaimPath(node[i].Scalar());
    if (!path) return std::unexpected(At(file, node[i], field, path.error()));
    if (std::ranges::find(claim.paths, *path) != claim.paths.end()) {
      return std::unexpected(At(file, node[i], field, fmt::format("{} is listed twice", *path)));
    }
    claim.paths.push_back(*path);
  }
  return claim;
}

std::expected<void, ConfigError> LoadLimits(const std::string& file, const YAML::Node& node,
                                            core::Limits& limits) {
  if (!node.IsDefined() || node.IsNull()) return {};
  if (!node.IsMap()) return std::unexpected(At(file, node, "limits", "expected a mapping"));
  if (auto r =
          internal::OnlyKeys(file, node, "limits",
                             {"timeout", "memory", "tmp", "pids", "output", "noexec", "seccomp"});
      !r) {
    return r;
  }
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    const std::string field = "limits." + key;
    if (key == "noexec") {
      auto claim = LoadNoexec(file, kv.second);
      if (!claim) return std::unexpected(claim.error());
      limits.noexec = *claim;
      continue;
    }
    if (!kv.second.IsScalar())
      return std::unexpected(At(file, kv.second, field, "expected a value"));
    const std::string text = kv.second.Scalar();
    if (key == "seccomp") {
      auto claim = core::ParseSeccompClaim(text);
      if (!claim) {
        const std::string near = internal::DidYouMean(text, {"default"});
        return std::unexpected(
            At(file, kv.second, field,
               near.empty() ? claim.error() : claim.error() + "; did you mean " + near + "?"));
      }
      limits.seccomp = *claim;
      continue;
    }
    if (key == "timeout") {
      auto s = core::ParseSeconds(text);
      if (!s) return std::unexpected(At(file, kv.second, field, s.error()));
      if (*s <= 0 || *s > 24 * 3600) {  // a day: past that the deadline arithmetic overflows
        return std::unexpected(At(file, kv.second, field, "expected more than 0s and at most 24h"));
      }
      limits.timeout_s = *s;
      continue;
    }
    if (key == "pids") {
      auto n = core::ParseBytes(text);  // a plain count parses the same way
      if (!n || text.find_first_not_of("0123456789") != std::string::npos) {
        return std::unexpected(At(file, kv.second, field, "expected a whole number"));
      }
      limits.pids = *n;
      continue;
    }
    auto b = core::ParseBytes(text);
    if (!b) return std::unexpected(At(file, kv.second, field, b.error()));
    if (*b > (uint64_t{1} << 50)) {  // 1 PiB: a claim past it is a typo, and overflows sizing
      return std::unexpected(At(file, kv.second, field, "expected at most 1Pi"));
    }
    (key == "memory" ? limits.memory_bytes
     : key == "tmp"  ? limits.tmp_bytes
                     : limits.output_bytes) = *b;
  }
  return {};
}

}  // namespace

std::string KindNames(std::span<const DriverSection> sections) {
  std::string names;
  for (size_t i = 0; i < sections.size(); ++i) {
    names += (i == 0 ? "" : i + 1 == sections.size() ? " or " : ", ") + sections[i].kind;
  }
  return names;
}

Loaded<core::Manifest> ParseManifest(const std::string& text, const std::string& source,
                                     std::span<const DriverSection> sections) {
  auto root = internal::ReadYaml(text, source);
  if (!root) return std::unexpected(root.error());
  const YAML::Node& y = *root;
  std::vector<std::string> keys = {"name", "driver", "control", "description", "limits", "weakens"};
  for (const DriverSection& d : sections) keys.push_back(d.kind);
  if (auto r = internal::OnlyKeys(source, y, "", keys); !r) return std::unexpected(r.error());
  core::Manifest m;
  m.source_path = source;
  auto name = internal::String(source, y, "name", "", true);
  if (!name) return std::unexpected(name.error());
  m.name = *name;
  if (m.name.empty() || m.name.size() > 64 ||
      m.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_.") != std::string::npos) {
    return std::unexpected(
        At(source, y["name"], "name", "expected 1-64 characters of [a-z0-9-_.]"));
  }
  auto driver = internal::String(source, y, "driver", "", true);
  if (!driver) return std::unexpected(driver.error());
  m.driver = *driver;
  const auto kind = std::ranges::find(sections, m.driver, &DriverSection::kind);
  if (kind == sections.end()) {
    return std::unexpected(
        At(source, y["driver"], "driver",
           fmt::format("unknown driver '{}' (expected {})", m.driver, KindNames(sections))));
  }
  // Another kind's section would be read by nobody: a `command:` under `driver: local` runs the
  // probe with no sandbox at all while the file looks sandboxed.
  for (const DriverSection& d : sections) {
    if (d.kind != m.driver && y[d.kind].IsDefined()) {
      return std::unexpected(
          At(source, y[d.kind], d.kind,
             fmt::format("this manifest's driver is {}, so this section would be ignored; did you "
                         "mean driver: {}?",
                         m.driver, d.kind)));
    }
  }
  for (auto [key, out] : {std::pair{"control", &m.control}, {"description", &m.description}}) {
    auto v = internal::String(source, y, key, "", false);
    if (!v) return std::unexpected(v.error());
    *out = *v;
  }
  if (auto r = LoadLimits(source, y["limits"], m.limits); !r) return std::unexpected(r.error());
  if (const YAML::Node w = y["weakens"]; w.IsDefined()) {
    if (!w.IsSequence())
      return std::unexpected(At(source, w, "weakens", "expected a list of strings"));
    for (size_t i = 0; i < w.size(); ++i) {
      if (!w[i].IsScalar()) {
        return std::unexpected(
            At(source, w[i], fmt::format("weakens[{}]", i), "expected a string"));
      }
      m.weakens.push_back(w[i].Scalar());
    }
  }
  if (kind->read) {
    // A driver's reader walks the YAML itself: yaml-cpp's exceptions stop here too.
    try {
      if (auto read = kind->read(source, y, m.section); !read) {
        return std::unexpected(read.error());
      }
    } catch (const YAML::Exception& e) {
      return std::unexpected(At(source, y[m.driver], m.driver, e.what()));
    }
  } else if (y[m.driver].IsDefined() && !y[m.driver].IsNull()) {
    m.section = YamlToJson(y[m.driver]);
  }
  return m;
}

Loaded<core::Manifest> LoadManifest(const std::filesystem::path& file,
                                    std::span<const DriverSection> sections) {
  auto text = internal::ReadFile(file.string());
  if (!text) return std::unexpected(text.error());
  return ParseManifest(*text, file.string(), sections);
}

}  // namespace sandprobe::config
