// Suite YAML -> core::Suite.
#include <fmt/format.h>

#include <algorithm>

#include "config/config.h"
#include "config/yaml_util.h"

namespace sandprobe::config {

using internal::At;

Loaded<core::Suite> ParseSuite(const std::string& text, const std::string& source) {
  auto root = internal::ReadYaml(text, source);
  if (!root) return std::unexpected(root.error());
  const YAML::Node& y = *root;
  if (auto r = internal::OnlyKeys(source, y, "", {"name", "description", "probes"}); !r) {
    return std::unexpected(r.error());
  }
  core::Suite suite;
  suite.source_path = source;
  auto name = internal::String(source, y, "name", "", true);
  if (!name) return std::unexpected(name.error());
  suite.name = *name;
  auto description = internal::String(source, y, "description", "", false);
  if (!description) return std::unexpected(description.error());
  suite.description = *description;
  const YAML::Node probes = y["probes"];
  if (!probes.IsDefined() || !probes.IsSequence() || probes.size() == 0) {
    return std::unexpected(At(source, probes.IsDefined() ? probes : y, "probes",
                              "expected a non-empty list of probes"));
  }
  for (size_t i = 0; i < probes.size(); ++i) {
    const YAML::Node p = probes[i];
    const std::string path = fmt::format("probes[{}]", i);
    core::SuiteEntry entry;
    auto at = [](const YAML::Node& n) {
      return std::pair<int, int>{n.Mark().line + 1, n.Mark().column + 1};
    };
    if (p.IsScalar()) {
      entry.probe = p.Scalar();
      entry.id_at = at(p);
    } else if (p.IsMap()) {
      if (auto r = internal::OnlyKeys(source, p, path, {"id", "level", "params"}); !r) {
        return std::unexpected(r.error());
      }
      auto id = internal::String(source, p, "id", path, true);
      if (!id) return std::unexpected(id.error());
      entry.probe = *id;
      entry.id_at = at(p["id"]);
      auto level = internal::String(source, p, "level", path, false);
      if (!level) return std::unexpected(level.error());
      if (*level == "advisory") {
        entry.level = core::Level::kAdvisory;
      } else if (!level->empty() && *level != "required") {
        return std::unexpected(
            At(source, p["level"], path + ".level", "expected required or advisory"));
      }
      if (const YAML::Node params = p["params"]; params.IsDefined()) {
        if (!params.IsMap()) {
          return std::unexpected(At(source, params, path + ".params", "expected a mapping"));
        }
        entry.params = YamlToJson(params);
        for (const auto& kv : params) entry.param_at[kv.first.Scalar()] = at(kv.first);
      }
    } else {
      return std::unexpected(At(source, p, path, "expected a probe id or a mapping with id:"));
    }
    for (const auto& earlier : suite.entries) {
      if (earlier.probe == entry.probe) {
        return std::unexpected(At(source, p, path, "probe " + entry.probe + " is listed twice"));
      }
    }
    suite.entries.push_back(std::move(entry));
  }
  return suite;
}

std::expected<void, ConfigError> CheckSuiteEntries(
    const core::Suite& suite, const std::vector<core::ProbeDescriptor>& probes) {
  std::vector<std::string> ids;
  for (const core::ProbeDescriptor& p : probes) ids.push_back(p.id);
  for (size_t i = 0; i < suite.entries.size(); ++i) {
    const core::SuiteEntry& e = suite.entries[i];
    const std::string path = fmt::format("probes[{}]", i);
    auto it = std::ranges::find(probes, e.probe, &core::ProbeDescriptor::id);
    if (it == probes.end()) {
      const std::string near = internal::DidYouMean(e.probe, ids);
      return std::unexpected(ConfigError{
          suite.source_path, e.id_at.first, e.id_at.second, path + ".id",
          fmt::format("no probe '{}' in the probe tree{}", e.probe,
                      near.empty() ? " (see `sandprobe list`)" : "; did you mean " + near + "?")});
    }
    std::vector<std::string> names;
    for (const auto& [name, spec] : it->params) names.push_back(name);
    for (const auto& [name, value] : e.params.items()) {
      if (it->params.contains(name)) continue;
      const auto where = e.param_at.contains(name) ? e.param_at.at(name) : e.id_at;
      const std::string near = internal::DidYouMean(name, names);
      return std::unexpected(
          ConfigError{suite.source_path, where.first, where.second, path + ".params." + name,
                      fmt::format("probe {} has no such parameter{}", e.probe,
                                  near.empty() ? " (`sandprobe explain " + e.probe + "` lists them)"
                                               : "; did you mean " + near + "?")});
    }
  }
  return {};
}

Loaded<core::Suite> LoadSuite(const std::filesystem::path& file) {
  auto text = internal::ReadFile(file.string());
  if (!text) return std::unexpected(text.error());
  return ParseSuite(*text, file.string());
}

}  // namespace sandprobe::config
