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
// Each criterion is checked on its own; every mistake is added to `errors`.
std::vector<core::Criterion> ParseCriteria(const std::string& source, const YAML::Node& node,
                                           const std::vector<std::string>& suite_ids,
                                           internal::Errors& errors) {
  std::vector<core::Criterion> out;
  if (!node.IsDefined() || node.IsNull()) return out;
  if (!node.IsSequence() || node.size() == 0) {
    errors.Add(At(source, node, "criteria",
                  "expected a non-empty list of criteria ({name: ..., probes: "
                  "[...]}), or no criteria: key"));
    return out;
  }
  for (size_t i = 0; i < node.size(); ++i) {
    const YAML::Node c = node[i];
    const std::string path = fmt::format("criteria[{}]", i);
    if (!c.IsMap()) {
      errors.Add(
          At(source, c, path, "expected a mapping with name: and probes: (a list of probe ids)"));
      continue;
    }
    const size_t before = errors.size();
    internal::OnlyKeys(source, c, path, {"name", "probes"}, errors);
    std::string name;
    if (auto n = internal::String(source, c, "name", path, true); errors.Check(n)) {
      name = *n;
      if (name.find_first_not_of(" \t") == std::string::npos) {
        errors.Add(At(source, c["name"], path + ".name",
                      "expected the criterion in words (e.g. the ticket's)"));
      }
      for (const core::Criterion& earlier : out) {
        if (earlier.name == name) {
          errors.Add(
              At(source, c["name"], path + ".name", "criterion '" + name + "' is listed twice"));
        }
      }
    }
    const YAML::Node probes = c["probes"];
    core::Criterion criterion{name, {}};
    if (!probes.IsDefined() || !probes.IsSequence() || probes.size() == 0) {
      errors.Add(At(source, probes.IsDefined() ? probes : c, path + ".probes",
                    "expected a non-empty list of probe ids from this suite"));
      continue;
    }
    for (size_t j = 0; j < probes.size(); ++j) {
      const YAML::Node p = probes[j];
      const std::string field = fmt::format("{}.probes[{}]", path, j);
      if (!p.IsScalar() || p.Scalar().empty()) {
        errors.Add(At(source, p, field, "expected a probe id"));
        continue;
      }
      const std::string& id = p.Scalar();
      if (std::ranges::find(suite_ids, id) == suite_ids.end()) {
        const std::string near = internal::DidYouMean(id, suite_ids);
        errors.Add(At(source, p, field,
                      fmt::format("probe '{}' is not in this suite's probes{}", id,
                                  near.empty() ? " (a criterion groups rows the suite runs)"
                                               : "; did you mean " + near + "?")));
      } else if (std::ranges::find(criterion.probes, id) != criterion.probes.end()) {
        errors.Add(At(source, p, field, "probe " + id + " is listed twice"));
      } else {
        criterion.probes.push_back(id);
      }
    }
    if (errors.size() == before) out.push_back(std::move(criterion));
  }
  return out;
}

// The entry `e` (probes[index] of the file) against the probe tree: an unknown probe id, or each
// parameter name the probe does not have.
void CheckEntry(const std::string& source, const core::SuiteEntry& e, size_t index,
                const std::vector<core::ProbeDescriptor>& probes,
                const std::vector<std::string>& ids, internal::Errors& errors) {
  const std::string path = fmt::format("probes[{}]", index);
  auto it = std::ranges::find(probes, e.probe, &core::ProbeDescriptor::id);
  if (it == probes.end()) {
    const std::string near = internal::DidYouMean(e.probe, ids);
    errors.Add(ConfigError{
        source, e.id_at.first, e.id_at.second, path + ".id",
        fmt::format("no probe '{}' in the probe tree{}", e.probe,
                    near.empty() ? " (see `sandprobe list`)" : "; did you mean " + near + "?")});
    return;
  }
  std::vector<std::string> names;
  for (const auto& [name, spec] : it->params) names.push_back(name);
  for (const auto& [name, value] : e.params.items()) {
    if (it->params.contains(name)) continue;
    const auto where = e.param_at.contains(name) ? e.param_at.at(name) : e.id_at;
    const std::string near = internal::DidYouMean(name, names);
    errors.Add(
        ConfigError{source, where.first, where.second, path + ".params." + name,
                    fmt::format("probe {} has no such parameter{}", e.probe,
                                near.empty() ? " (`sandprobe explain " + e.probe + "` lists them)"
                                             : "; did you mean " + near + "?")});
  }
}

std::vector<std::string> Ids(const std::vector<core::ProbeDescriptor>& probes) {
  std::vector<std::string> ids;
  for (const core::ProbeDescriptor& p : probes) ids.push_back(p.id);
  return ids;
}

// Every entry is read on its own, and checked against `probes` when given; a mistake in one entry
// hides nothing in another.
Loaded<core::Suite> Parse(const std::string& text, const std::string& source,
                          const std::vector<core::ProbeDescriptor>* probe_tree) {
  auto root = internal::ReadYaml(text, source);
  if (!root) return std::unexpected(root.error());
  const YAML::Node& y = *root;
  internal::Errors errors;
  internal::OnlyKeys(source, y, "", {"name", "description", "probes", "criteria"}, errors);
  core::Suite suite;
  suite.source_path = source;
  if (auto name = internal::String(source, y, "name", "", true); errors.Check(name)) {
    suite.name = *name;
  }
  if (auto d = internal::String(source, y, "description", "", false); errors.Check(d)) {
    suite.description = *d;
  }
  const std::vector<std::string> tree_ids =
      probe_tree ? Ids(*probe_tree) : std::vector<std::string>{};
  // The ids the entries name, read or not: what criteria may refer to.
  std::vector<std::string> named;
  const YAML::Node probes = y["probes"];
  if (!probes.IsDefined() || !probes.IsSequence() || probes.size() == 0) {
    errors.Add(At(source, probes.IsDefined() ? probes : y, "probes",
                  "expected a non-empty list of probes"));
  } else {
    for (size_t i = 0; i < probes.size(); ++i) {
      const YAML::Node p = probes[i];
      const std::string path = fmt::format("probes[{}]", i);
      if (p.IsScalar()) named.push_back(p.Scalar());
      // IsDefined first: on a const node a missing key is an invalid node, and IsScalar() throws.
      if (p.IsMap() && p["id"].IsDefined() && p["id"].IsScalar()) named.push_back(p["id"].Scalar());
      core::SuiteEntry entry;
      auto at = [](const YAML::Node& n) {
        return std::pair<int, int>{n.Mark().line + 1, n.Mark().column + 1};
      };
      const size_t before = errors.size();
      if (p.IsScalar()) {
        entry.probe = p.Scalar();
        entry.id_at = at(p);
      } else if (p.IsMap()) {
        internal::OnlyKeys(source, p, path, {"id", "level", "params"}, errors);
        if (auto id = internal::String(source, p, "id", path, true); errors.Check(id)) {
          entry.probe = *id;
          entry.id_at = at(p["id"]);
        }
        if (auto level = internal::String(source, p, "level", path, false); errors.Check(level)) {
          if (*level == "advisory") {
            entry.level = core::Level::kAdvisory;
          } else if (!level->empty() && *level != "required") {
            errors.Add(At(source, p["level"], path + ".level", "expected required or advisory"));
          }
        }
        if (const YAML::Node params = p["params"]; params.IsDefined()) {
          if (!params.IsMap()) {
            errors.Add(At(source, params, path + ".params", "expected a mapping"));
          } else {
            entry.params = YamlToJson(params);
            for (const auto& kv : params) entry.param_at[kv.first.Scalar()] = at(kv.first);
          }
        }
      } else {
        errors.Add(At(source, p, path, "expected a probe id or a mapping with id:"));
        continue;
      }
      if (entry.probe.empty() && errors.size() > before) continue;  // no id to go on with
      bool twice = false;
      for (const auto& earlier : suite.entries) {
        if (earlier.probe == entry.probe) {
          errors.Add(At(source, p, path, "probe " + entry.probe + " is listed twice"));
          twice = true;
          break;
        }
      }
      if (!twice && probe_tree != nullptr) {
        CheckEntry(source, entry, i, *probe_tree, tree_ids, errors);
      }
      if (errors.size() == before) suite.entries.push_back(std::move(entry));
    }
  }
  auto criteria = ParseCriteria(source, y["criteria"], named, errors);
  if (!errors.empty()) return errors.Fail();
  suite.criteria = std::move(criteria);
  return suite;
}

}  // namespace

Loaded<core::Suite> ParseSuite(const std::string& text, const std::string& source) {
  return Parse(text, source, nullptr);
}

std::expected<void, ConfigError> CheckSuiteEntries(
    const core::Suite& suite, const std::vector<core::ProbeDescriptor>& probes) {
  const std::vector<std::string> ids = Ids(probes);
  internal::Errors errors;
  for (size_t i = 0; i < suite.entries.size(); ++i) {
    CheckEntry(suite.source_path, suite.entries[i], i, probes, ids, errors);
  }
  if (!errors.empty()) return errors.Fail();
  return {};
}

Loaded<core::Suite> LoadSuite(const std::filesystem::path& file) {
  auto text = internal::ReadFile(file.string());
  if (!text) return std::unexpected(text.error());
  return ParseSuite(*text, file.string());
}

Loaded<core::Suite> LoadSuite(const std::filesystem::path& file,
                              const std::vector<core::ProbeDescriptor>& probes) {
  auto text = internal::ReadFile(file.string());
  if (!text) return std::unexpected(text.error());
  return Parse(*text, file.string(), &probes);
}

}  // namespace sandprobe::config
