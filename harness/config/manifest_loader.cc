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

// Each key of limits: is checked on its own; every mistake is added to `errors`.
void LoadLimits(const std::string& file, const YAML::Node& node, core::Limits& limits,
                internal::Errors& errors) {
  if (!node.IsDefined() || node.IsNull()) return;
  if (!node.IsMap()) {
    errors.Add(At(file, node, "limits", "expected a mapping"));
    return;
  }
  static const std::vector<std::string> kKeys = {"timeout", "memory", "tmp",    "pids",
                                                 "output",  "noexec", "seccomp"};
  internal::OnlyKeys(file, node, "limits", kKeys, errors);
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    const std::string field = "limits." + key;
    if (std::ranges::find(kKeys, key) == kKeys.end()) continue;  // reported above
    if (key == "noexec") {
      auto claim = LoadNoexec(file, kv.second);
      if (errors.Check(claim)) limits.noexec = *claim;
      continue;
    }
    if (!kv.second.IsScalar()) {
      errors.Add(At(file, kv.second, field, "expected a value"));
      continue;
    }
    const std::string text = kv.second.Scalar();
    if (key == "seccomp") {
      auto claim = core::ParseSeccompClaim(text);
      if (!claim) {
        const std::string near = internal::DidYouMean(text, {"default"});
        errors.Add(
            At(file, kv.second, field,
               near.empty() ? claim.error() : claim.error() + "; did you mean " + near + "?"));
        continue;
      }
      limits.seccomp = *claim;
      continue;
    }
    if (key == "timeout") {
      auto s = core::ParseSeconds(text);
      if (!s) {
        errors.Add(At(file, kv.second, field, s.error()));
      } else if (*s <= 0 || *s > 24 * 3600) {  // a day: past that the deadline arithmetic overflows
        errors.Add(At(file, kv.second, field, "expected more than 0s and at most 24h"));
      } else {
        limits.timeout_s = *s;
      }
      continue;
    }
    if (key == "pids") {
      auto n = core::ParseBytes(text);  // a plain count parses the same way
      if (!n || text.find_first_not_of("0123456789") != std::string::npos) {
        errors.Add(At(file, kv.second, field, "expected a whole number"));
      } else {
        limits.pids = *n;
      }
      continue;
    }
    auto b = core::ParseBytes(text);
    // Past 1 PiB a claim is a typo, and overflows sizing.
    if (!b) {
      errors.Add(At(file, kv.second, field, b.error()));
    } else if (*b > (uint64_t{1} << 50)) {
      errors.Add(At(file, kv.second, field, "expected at most 1Pi"));
    } else {
      (key == "memory" ? limits.memory_bytes
       : key == "tmp"  ? limits.tmp_bytes
                       : limits.output_bytes) = *b;
    }
  }
}

}  // namespace

std::string KindNames(std::span<const DriverSection> sections) {
  std::string names;
  for (size_t i = 0; i < sections.size(); ++i) {
    names += (i == 0 ? "" : i + 1 == sections.size() ? " or " : ", ") + sections[i].kind;
  }
  return names;
}

// Every field is checked on its own and every mistake kept (internal::Errors); only the driver's
// section depends on another field: it is read when driver: names a known kind.
Loaded<core::Manifest> ParseManifest(const std::string& text, const std::string& source,
                                     std::span<const DriverSection> sections) {
  auto root = internal::ReadYaml(text, source);
  if (!root) return std::unexpected(root.error());
  const YAML::Node& y = *root;
  internal::Errors errors;
  std::vector<std::string> keys = {"name", "driver", "control", "description", "limits", "weakens"};
  for (const DriverSection& d : sections) keys.push_back(d.kind);
  internal::OnlyKeys(source, y, "", keys, errors);
  core::Manifest m;
  m.source_path = source;
  if (auto name = internal::String(source, y, "name", "", true); errors.Check(name)) {
    m.name = *name;
    if (m.name.empty() || m.name.size() > 64 ||
        m.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_.") != std::string::npos) {
      errors.Add(At(source, y["name"], "name", "expected 1-64 characters of [a-z0-9-_.]"));
    }
  }
  const DriverSection* kind = nullptr;
  if (auto driver = internal::String(source, y, "driver", "", true); errors.Check(driver)) {
    m.driver = *driver;
    const auto found = std::ranges::find(sections, m.driver, &DriverSection::kind);
    if (found == sections.end()) {
      errors.Add(
          At(source, y["driver"], "driver",
             fmt::format("unknown driver '{}' (expected {})", m.driver, KindNames(sections))));
    } else {
      kind = &*found;
    }
  }
  // Another kind's section would be read by nobody: a `command:` under `driver: local` runs the
  // probe with no sandbox at all while the file looks sandboxed.
  for (const DriverSection& d : sections) {
    if (kind != nullptr && d.kind != m.driver && y[d.kind].IsDefined()) {
      errors.Add(
          At(source, y[d.kind], d.kind,
             fmt::format("this manifest's driver is {}, so this section would be ignored; did you "
                         "mean driver: {}?",
                         m.driver, d.kind)));
    }
  }
  for (auto [key, out] : {std::pair{"control", &m.control}, {"description", &m.description}}) {
    if (auto v = internal::String(source, y, key, "", false); errors.Check(v)) *out = *v;
  }
  LoadLimits(source, y["limits"], m.limits, errors);
  if (const YAML::Node w = y["weakens"]; w.IsDefined()) {
    if (!w.IsSequence()) {
      errors.Add(At(source, w, "weakens", "expected a list of strings"));
    } else {
      for (size_t i = 0; i < w.size(); ++i) {
        if (!w[i].IsScalar()) {
          errors.Add(At(source, w[i], fmt::format("weakens[{}]", i), "expected a string"));
        } else {
          m.weakens.push_back(w[i].Scalar());
        }
      }
    }
  }
  // The kind's section, unless it is absent and a misspelt key was taken for it (`dokcer:`): the
  // typo is the mistake, not a second "needs a docker: section".
  if (kind != nullptr && !(!y[m.driver].IsDefined() && errors.Meant(m.driver))) {
    if (kind->read) {
      // A driver's reader walks the YAML itself: yaml-cpp's exceptions stop here too.
      try {
        errors.Check(kind->read(source, y, m.section));
      } catch (const YAML::Exception& e) {
        errors.Add(At(source, y[m.driver], m.driver, e.what()));
      }
    } else if (y[m.driver].IsDefined() && !y[m.driver].IsNull()) {
      m.section = YamlToJson(y[m.driver]);
    }
  }
  if (!errors.empty()) return errors.Fail();
  return m;
}

Loaded<core::Manifest> LoadManifest(const std::filesystem::path& file,
                                    std::span<const DriverSection> sections) {
  auto text = internal::ReadFile(file.string());
  if (!text) return std::unexpected(text.error());
  return ParseManifest(*text, file.string(), sections);
}

}  // namespace sandprobe::config
