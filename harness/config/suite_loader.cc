// Suite YAML -> core::Suite.
#include <fmt/format.h>

#include <algorithm>

#include "config/config.h"
#include "config/yaml_util.h"

namespace sandprobe::config {

using internal::At;

namespace {

// criteria: a list of {name: the ticket's words, probes: [ids of this suite's entries]}.
// Every error names the file, line and column; an id not in the suite suggests the nearest one.
std::expected<std::vector<core::Criterion>, ConfigError> ParseCriteria(
    const std::string& source, const YAML::Node& node, const std::vector<std::string>& suite_ids) {
  std::vector<core::Criterion> out;
  if (!node.IsDefined() || node.IsNull()) return out;
  if (!node.IsSequence() || node.size() == 0) {
    return std::unexpected(At(source, node, "criteria",
                              "expected a non-empty list of criteria ({name: ..., probes: "
                              "[...]}), or no criteria: key"));
  }
  for (size_t i = 0; i < node.size(); ++i) {
    const YAML::Node c = node[i];
    const std::string path = fmt::format("criteria[{}]", i);
    if (!c.IsMap()) {
      return std::unexpected(
          At(source, c, path, "expected a mapping with name: and probes: (a list of probe ids)"));
    }
    if (auto r = internal::OnlyKeys(source, c, path, {"name", "probes"}); !r) {
      return std::unexpected(r.error());
    }
    auto name = internal::String(source, c, "name", path, true);
    if (!name) return std::unexpected(name.error());
    if (name->find_first_not_of(" \t") == std::string::npos) {
      return std::unexpected(At(source, c["name"], path + ".name",
                                "expected the criterion in words (e.g. the ticket's)"));
    }
    for (const core::Criterion& earlier : out) {
      if (earlier.name == *name) {
        return std::unexpected(
            At(source, c["name"], path + ".name", "criterion '" + *name + "' is listed twice"));
      }
    }
    const YAML::Node probes = c["probes"];
    if (!probes.IsDefined() || !probes.IsSequence() || probes.size() == 0) {
      return std::unexpected(At(source, probes.IsDefined() ? probes : c, path + ".probes",
                                "expected a non-empty list of probe ids from this suite"));
    }
    core::Criterion criterion{*name, {}};
    for (size_t j = 0; j < probes.size(); ++j) {
      const YAML::Node p = probes[j];
      const std::string field = fmt::format("{}.probes[{}]", path, j);
      if (!p.IsScalar() || p.Scalar().empty()) {
        return std::unexpected(At(source, p, field, "expected a probe id"));
      }
      const std::string& id = p.Scalar();
      if (std::ranges::find(suite_ids, id) == suite_ids.end()) {
        const std::string near = internal::DidYouMean(id, suite_ids);
        return std::unexpected(
            At(source, p, field,
               fmt::format("probe '{}' is not in this suite's probes{}", id,
                           near.empty() ? " (a criterion groups rows the suite runs)"
                                        : "; did you mean " + near + "?")));
      }
      if (std::ranges::find(criterion.probes, id) != criterion.probes.end()) {
        return std::unexpected(At(source, p, field, "probe " + id + " is listed twice"));
      }
      criterion.probes.push_back(id);
    }
    out.push_back(std::move(criterion));
  }
  return out;
}

}  // namespace

Loaded<core::Suite> ParseSuite(const std::string& text, const std::string& source) {
  auto root = internal::ReadYaml(text, source);
  if (!root) return std::unexpected(root.error());
  const YAML::Node& y = *root;
  if (auto r = internal::OnlyKeys(source, y, "", {"name", "description", "probes", "criteria"});
      !r) {
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
  std::vector<std::string> ids;
  for (const core::SuiteEntry& e : suite.entries) ids.push_back(e.probe);
  auto criteria = ParseCriteria(source, y["criteria"], ids);
  if (!criteria) return std::unexpected(criteria.error());
  suite.criteria = std::move(*criteria);
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
