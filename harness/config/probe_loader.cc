// probe.yaml + probe.py -> core::ProbeDescriptor.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "config/config.h"
#include "config/yaml_util.h"
#include "core/params.h"

namespace sandprobe::config {
namespace {

using internal::At;

std::expected<core::Exposure, ConfigError> ExposureAt(const std::string& file,
                                                      const YAML::Node& node,
                                                      const std::string& field) {
  if (!node.IsScalar())
    return std::unexpected(At(file, node, field, "expected exposed, contained or unknown"));
  auto e = core::ParseExposure(node.Scalar());
  if (!e) return std::unexpected(At(file, node, field, "expected exposed, contained or unknown"));
  return *e;
}

// An optional `key: true|false` of `map`: absent leaves `out` as it was; a value that is no
// boolean is an error at `field` and leaves `out` too.
std::expected<void, ConfigError> OptionalBool(const std::string& file, const YAML::Node& map,
                                              const char* key, const std::string& field,
                                              bool& out) {
  const YAML::Node v = map[key];
  if (!v.IsDefined()) return {};
  const nlohmann::json b = YamlToJson(v);
  if (!b.is_boolean()) return std::unexpected(At(file, v, field, "expected true or false"));
  out = b.get<bool>();
  return {};
}

// Each parameter on its own; every mistake is added to `errors`.
void LoadParams(const std::string& file, const YAML::Node& node, core::ProbeDescriptor& p,
                internal::Errors& errors) {
  if (!node.IsDefined() || node.IsNull()) return;
  if (!node.IsMap()) {
    errors.Add(At(file, node, "params", "expected a mapping"));
    return;
  }
  for (const auto& kv : node) {
    const std::string name = kv.first.Scalar();
    const std::string field = "params." + name;
    const YAML::Node spec = kv.second;
    if (!spec.IsMap() || !spec["default"].IsDefined()) {
      errors.Add(At(file, spec, field, "expected a mapping with default:"));
      continue;
    }
    const size_t before = errors.size();
    internal::OnlyKeys(file, spec, field,
                       {"default", "description", "from_limit", "factor", "unit"}, errors);
    core::ParamSpec ps;
    ps.default_value = YamlToJson(spec["default"]);
    if (spec["description"].IsDefined()) ps.description = spec["description"].Scalar();
    if (spec["from_limit"].IsDefined()) {
      ps.from_limit = spec["from_limit"].Scalar();
      static constexpr const char* kLimits[] = {"memory", "tmp",    "pids",   "timeout",
                                                "output", "noexec", "seccomp"};
      if (std::ranges::find(kLimits, ps.from_limit) == std::end(kLimits)) {
        errors.Add(At(file, spec["from_limit"], field + ".from_limit",
                      "expected memory, tmp, pids, timeout, output, noexec or seccomp"));
      }
    }
    if (spec["factor"].IsDefined()) {
      const nlohmann::json f = YamlToJson(spec["factor"]);
      if (!f.is_number() || f.get<double>() <= 0) {
        errors.Add(At(file, spec["factor"], field + ".factor", "expected a positive number"));
      } else {
        ps.factor = f.get<double>();
      }
    }
    if (spec["unit"].IsDefined()) ps.unit = spec["unit"].Scalar();
    if (errors.size() == before) p.params[name] = std::move(ps);
  }
}

std::expected<void, ConfigError> LoadClassify(const std::string& file, const YAML::Node& node,
                                              core::ProbeDescriptor& p) {
  // A missing key of a const node is an invalid node whose IsMap() throws (yaml-cpp 0.7): ask
  // IsDefined() first (found by the probe fuzz target, docs/design.md "Fuzzing").
  if (!node.IsDefined() || !node.IsMap())
    return std::unexpected(At(file, node, "classify", "required mapping is missing"));
  if (auto r =
          internal::OnlyKeys(file, node, "classify",
                             {"outcomes", "killed", "timed_out", "deadline", "crashed",
                              "canary_hit", "canary_hit_kinds", "exceeds", "fact", "output",
                              "quiet_after_call", "still_running", "live_target", "live_change"});
      !r) {
    return r;
  }
  const YAML::Node outcomes = node["outcomes"];
  if (!outcomes.IsMap() || outcomes.size() == 0) {
    return std::unexpected(At(file, outcomes.IsDefined() ? outcomes : node, "classify.outcomes",
                              "expected a mapping of outcome -> exposure"));
  }
  for (const auto& kv : outcomes) {
    auto e = ExposureAt(file, kv.second, "classify.outcomes." + kv.first.Scalar());
    if (!e) return std::unexpected(e.error());
    p.classify.outcomes[kv.first.Scalar()] = *e;
  }
  for (auto [key, out] : {std::pair{"killed", &p.classify.killed},
                          {"timed_out", &p.classify.timed_out},
                          {"deadline", &p.classify.deadline},
                          {"crashed", &p.classify.crashed},
                          {"canary_hit", &p.classify.canary_hit}}) {
    if (!node[key].IsDefined()) continue;
    auto e = ExposureAt(file, node[key], std::string("classify.") + key);
    if (!e) return std::unexpected(e.error());
    *out = *e;
  }
  if (auto r =
          OptionalBool(file, node, "live_change", "classify.live_change", p.classify.live_change);
      !r) {
    return r;
  }
  if (const YAML::Node kinds = node["canary_hit_kinds"]; kinds.IsDefined()) {
    // The kinds canary.h's listeners log (Hit::kind), and the in-cluster canary's held-open
    // kinds (harness/drivers/kubernetes/cluster_canary.py: a nonce over a flow kept open).
    static constexpr std::string_view kKinds[] = {
        "http", "credential", "docker", "tcp", "udp", "dns", "dns-tcp", "tcp-held", "udp-held"};
    const std::string known = fmt::format("{}", fmt::join(kKinds, ", "));
    if (!kinds.IsSequence() || kinds.size() == 0) {
      return std::unexpected(At(file, kinds, "classify.canary_hit_kinds",
                                "expected a non-empty list of hit kinds (" + known + ")"));
    }
    for (const YAML::Node& k : kinds) {
      if (!k.IsScalar() || std::ranges::find(kKinds, k.Scalar()) == std::end(kKinds)) {
        return std::unexpected(
            At(file, k, "classify.canary_hit_kinds", "unknown hit kind; expected one of " + known));
      }
      p.classify.canary_hit_kinds.push_back(k.Scalar());
    }
  }
  if (const YAML::Node ex = node["exceeds"]; ex.IsDefined()) {
    if (!ex.IsMap() || !ex["field"].IsScalar() || !ex["param"].IsScalar()) {
      return std::unexpected(
          At(file, ex, "classify.exceeds", "expected {field: <record field>, param: <param>}"));
    }
    p.classify.exceeds = core::ExceedsRule{ex["field"].Scalar(), ex["param"].Scalar()};
    if (!p.params.contains(p.classify.exceeds->param)) {
      return std::unexpected(
          At(file, ex["param"], "classify.exceeds.param", "names no parameter of this probe"));
    }
  }
  if (const YAML::Node f = node["fact"]; f.IsDefined()) {
    if (!f.IsMap() || !f["name"].IsScalar()) {
      return std::unexpected(At(file, f, "classify.fact",
                                "expected {name: <driver fact>, above_zero: <exposure>, "
                                "zero: <exposure>}"));
    }
    if (auto r = internal::OnlyKeys(file, f, "classify.fact", {"name", "above_zero", "zero"}); !r)
      return r;
    core::FactRule rule{.fact = f["name"].Scalar()};
    for (auto [key, out] : {std::pair{"above_zero", &rule.above_zero}, {"zero", &rule.zero}}) {
      if (!f[key].IsDefined()) continue;
      auto e = ExposureAt(file, f[key], std::string("classify.fact.") + key);
      if (!e) return std::unexpected(e.error());
      *out = *e;
    }
    p.classify.fact = rule;
  }
  if (const YAML::Node o = node["output"]; o.IsDefined()) {
    static constexpr std::pair<const char*, double> kUnits[] = {
        {"B", 1}, {"KiB", 1024}, {"MiB", 1 << 20}};
    const std::string unit = o["unit"].IsDefined() ? o["unit"].Scalar() : "MiB";
    const auto u = std::ranges::find(kUnits, unit, &std::pair<const char*, double>::first);
    if (!o.IsMap() || !o["param"].IsScalar() || u == std::end(kUnits)) {
      return std::unexpected(
          At(file, o, "classify.output", "expected {param: <param>, unit: B | KiB | MiB}"));
    }
    if (!p.params.contains(o["param"].Scalar())) {
      return std::unexpected(
          At(file, o["param"], "classify.output.param", "names no parameter of this probe"));
    }
    p.classify.output = core::OutputRule{o["param"].Scalar(), u->second};
  }
  if (const YAML::Node q = node["quiet_after_call"]; q.IsDefined()) {
    if (!q.IsMap() || !q["param"].IsScalar() || !q["exposure"].IsDefined()) {
      return std::unexpected(At(file, q, "classify.quiet_after_call",
                                "expected {param: <canary param>, exposure: <exposure>}"));
    }
    if (!p.params.contains(q["param"].Scalar())) {
      return std::unexpected(At(file, q["param"], "classify.quiet_after_call.param",
                                "names no parameter of this probe"));
    }
    auto e = ExposureAt(file, q["exposure"], "classify.quiet_after_call.exposure");
    if (!e) return std::unexpected(e.error());
    p.classify.quiet_after_call = core::QuietAfterCallRule{q["param"].Scalar(), *e};
  }
  if (const YAML::Node r = node["still_running"]; r.IsDefined()) {
    if (!r.IsMap() || !r["param"].IsScalar() || r.size() != 1) {
      return std::unexpected(
          At(file, r, "classify.still_running", "expected {param: <heartbeat canary param>}"));
    }
    if (!p.params.contains(r["param"].Scalar())) {
      return std::unexpected(
          At(file, r["param"], "classify.still_running.param", "names no parameter of this probe"));
    }
    p.classify.still_running = core::StillRunningRule{r["param"].Scalar()};
  }
  if (const YAML::Node l = node["live_target"]; l.IsDefined()) {
    constexpr const char* kShape =
        "expected {refused: <outcome>, reached: [<outcome>, ...], target: <result field>}";
    auto has = [&](const char* key) { return l.IsMap() && l[key].IsDefined(); };
    if (!has("refused") || !has("reached") || !has("target") || !l["refused"].IsScalar() ||
        !l["reached"].IsSequence() || l["reached"].size() == 0 || !l["target"].IsScalar()) {
      return std::unexpected(At(file, l, "classify.live_target", kShape));
    }
    if (auto r =
            internal::OnlyKeys(file, l, "classify.live_target", {"refused", "reached", "target"});
        !r) {
      return r;
    }
    core::LiveTargetRule rule{
        .refused = l["refused"].Scalar(), .reached = {}, .target = l["target"].Scalar()};
    // Both must be outcomes this probe declares exposed: the rule turns one reach into another's
    // proof, never a declared containment into anything.
    auto declared_exposed = [&](const YAML::Node& n,
                                const std::string& field) -> std::expected<void, ConfigError> {
      const auto it =
          n.IsScalar() ? p.classify.outcomes.find(n.Scalar()) : p.classify.outcomes.end();
      if (it == p.classify.outcomes.end() || it->second != core::Exposure::kExposed)
        return std::unexpected(At(file, n, field, "names no outcome this probe declares exposed"));
      return {};
    };
    if (auto r = declared_exposed(l["refused"], "classify.live_target.refused"); !r) return r;
    for (const YAML::Node& o : l["reached"]) {
      if (auto r = declared_exposed(o, "classify.live_target.reached"); !r) return r;
      rule.reached.push_back(o.Scalar());
    }
    p.classify.live_target = std::move(rule);
  }
  return {};
}

// needs: [planted-env, live-canary], deploy: sandbox | harness-admission, beyond_policy: true|false
// and measures: interfaces (all optional).
void LoadNeedsAndDeploy(const std::string& file, const YAML::Node& y, core::ProbeDescriptor& p,
                        internal::Errors& errors) {
  const YAML::Node needs = y["needs"];
  if (needs.IsDefined() && !needs.IsSequence()) {
    errors.Add(At(file, needs, "needs", "expected a list, e.g. [planted-env]"));
  } else if (needs.IsDefined()) {
    for (size_t i = 0; i < needs.size(); ++i) {
      const YAML::Node n = needs[i];
      const std::string field = fmt::format("needs[{}]", i);
      if (!n.IsScalar() || (n.Scalar() != "planted-env" && n.Scalar() != "live-canary")) {
        errors.Add(At(file, n, field, "expected planted-env or live-canary"));
        continue;
      }
      const core::Need need =
          n.Scalar() == "planted-env" ? core::Need::kPlantedEnv : core::Need::kLiveCanary;
      if (!p.Needs(need)) p.needs.push_back(need);
    }
  }
  if (const YAML::Node d = y["deploy"]; d.IsDefined()) {
    const std::string v = d.IsScalar() ? d.Scalar() : "";
    if (v == "sandbox") {
      p.deploy = core::Deploy::kSandbox;
    } else if (v == "harness-admission") {
      p.deploy = core::Deploy::kHarnessAdmission;
    } else {
      errors.Add(At(file, d, "deploy", "expected sandbox or harness-admission"));
    }
  }
  errors.Check(OptionalBool(file, y, "beyond_policy", "beyond_policy", p.beyond_policy));
  if (const YAML::Node m = y["measures"]; m.IsDefined()) {
    if (!m.IsScalar() || m.Scalar() != "interfaces") {
      errors.Add(At(file, m, "measures", "expected interfaces"));
    } else {
      p.measures = m.Scalar();
    }
  }
}

// Each top-level field on its own; classify: and claim: name parameters, so they are read once
// params: has read without a mistake.
Loaded<core::ProbeDescriptor> ParseProbeDocument(const YAML::Node& y, const std::string& file) {
  internal::Errors errors;
  internal::OnlyKeys(file, y, "",
                     {"id", "label", "category", "description", "requires_control", "drivers",
                      "params", "classify", "calls", "concurrent", "after_call_s", "needs",
                      "deploy", "measures", "claim", "beyond_policy"},
                     errors);
  core::ProbeDescriptor p;
  p.source_path = file;
  bool names_read = true;
  for (auto [key, out, required] : {std::tuple{"id", &p.id, true},
                                    {"label", &p.label, true},
                                    {"category", &p.category, true},
                                    {"description", &p.description, true}}) {
    auto v = internal::String(file, y, key, "", required);
    if (!errors.Check(v)) {
      names_read = false;
      continue;
    }
    *out = *v;
  }
  if (names_read && (p.id.find('.') == std::string::npos || !p.id.starts_with(p.category + "."))) {
    errors.Add(At(file, y["id"], "id", "expected <category>.<name> matching category:"));
  }
  errors.Check(OptionalBool(file, y, "requires_control", "requires_control", p.requires_control));
  const YAML::Node drivers = y["drivers"];
  if (drivers.IsDefined()) {
    if (!drivers.IsSequence()) {
      errors.Add(At(file, drivers, "drivers", "expected a list"));
    } else {
      for (const auto& d : drivers) p.drivers.push_back(d.Scalar());
    }
  }
  if (p.drivers.empty()) p.drivers = {"all"};
  const bool concurrent_read =
      errors.Check(OptionalBool(file, y, "concurrent", "concurrent", p.concurrent));
  if (const YAML::Node c = y["calls"]; c.IsDefined() && concurrent_read) {
    const nlohmann::json v = YamlToJson(c);
    const int least = p.concurrent ? 0 : 1;  // a concurrent pair needs no sequential call first
    // Compared as the 64-bit value it is: read as int, 4294967297 was 1 and passed.
    const bool in_range =
        v.is_number_unsigned()  ? v.get<uint64_t>() <= 32 && v.get<uint64_t>() >= uint64_t(least)
        : v.is_number_integer() ? v.get<int64_t>() >= least && v.get<int64_t>() <= 32
                                : false;
    if (!in_range) {
      errors.Add(At(file, c, "calls", fmt::format("expected a whole number from {} to 32", least)));
    } else {
      p.calls = v.get<int>();
    }
  }
  if (const YAML::Node a = y["after_call_s"]; a.IsDefined()) {
    const nlohmann::json v = YamlToJson(a);
    if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > 30) {
      errors.Add(At(file, a, "after_call_s", "expected seconds from 0 to 30"));
    } else {
      p.after_call_s = v.get<double>();
    }
  }
  LoadNeedsAndDeploy(file, y, p, errors);
  const size_t before_params = errors.size();
  LoadParams(file, y["params"], p, errors);
  if (errors.size() == before_params) {
    errors.Check(LoadClassify(file, y["classify"], p));
    if (const YAML::Node c = y["claim"]; c.IsDefined()) {
      // The parameter must carry a claim, or the row could never be judged.
      const auto spec = c.IsScalar() ? p.params.find(c.Scalar()) : p.params.end();
      if (spec == p.params.end() || !core::IsClaimLimit(spec->second.from_limit)) {
        errors.Add(At(file, c, "claim", "expected a parameter with from_limit noexec or seccomp"));
      } else {
        p.claim = c.Scalar();
      }
    }
  }
  if (!errors.empty()) return errors.Fail();
  return p;
}

}  // namespace

Loaded<core::ProbeDescriptor> ParseProbe(const std::string& text, const std::string& file) {
  auto root = internal::ReadYaml(text, file);
  if (!root) return std::unexpected(root.error());
  // yaml-cpp's exceptions stop here too: a lookup the checks above missed (a missing key of a
  // const node read as a value, a subscript of a scalar) is an error naming the file, never a
  // crash (docs/design.md "Fuzzing").
  try {
    return ParseProbeDocument(*root, file);
  } catch (const YAML::Exception& e) {
    return std::unexpected(ConfigError{file, e.mark.is_null() ? 0 : e.mark.line + 1,
                                       e.mark.is_null() ? 0 : e.mark.column + 1, "", e.msg});
  }
}

Loaded<core::ProbeDescriptor> LoadProbe(const std::filesystem::path& dir) {
  const std::string file = (dir / "probe.yaml").string();
  auto text = internal::ReadFile(file);
  if (!text) return std::unexpected(text.error());
  auto p = ParseProbe(*text, file);
  if (!p) return p;
  auto script = internal::ReadFile((dir / "probe.py").string());
  if (!script) return std::unexpected(script.error());
  p->script = *script;
  return p;
}

Loaded<std::vector<core::ProbeDescriptor>> LoadProbeTree(const std::filesystem::path& root) {
  std::vector<core::ProbeDescriptor> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(root, ec)) {
    return std::unexpected(ConfigError{root.string(), 0, 0, "", "probe directory not found"});
  }
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root, ec)) {
    if (entry.path().filename() != "probe.yaml") continue;
    auto p = LoadProbe(entry.path().parent_path());
    if (!p) return std::unexpected(p.error());
    for (const auto& other : out) {
      if (other.id == p->id) {
        return std::unexpected(ConfigError{
            p->source_path, 0, 0, "id", "duplicate probe id (also in " + other.source_path + ")"});
      }
    }
    out.push_back(std::move(*p));
  }
  if (ec) return std::unexpected(ConfigError{root.string(), 0, 0, "", ec.message()});
  std::ranges::sort(out, {}, &core::ProbeDescriptor::id);
  return out;
}

Loaded<std::string> DetectKind(const std::filesystem::path& file) {
  auto text = internal::ReadFile(file.string());
  if (!text) return std::unexpected(text.error());
  auto root = internal::ReadYaml(*text, file.string());
  if (!root) return std::unexpected(root.error());
  if ((*root)["driver"].IsDefined()) return std::string("manifest");
  if ((*root)["probes"].IsDefined()) return std::string("suite");
  if ((*root)["id"].IsDefined() && (*root)["classify"].IsDefined()) return std::string("probe");
  if ((*root)["expectations"].IsDefined()) return std::string("expectations");
  return std::unexpected(ConfigError{file.string(), 1, 1, "",
                                     "not a manifest (driver:), suite (probes:), probe "
                                     "descriptor (id:, classify:) or expectations file "
                                     "(expectations:)"});
}

}  // namespace sandprobe::config
