#include "drivers/kubernetes/kube_section.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <string_view>
#include <utility>

#include "config/yaml_json.h"
#include "config/yaml_util.h"
#include "core/limits.h"
#include "drivers/kubernetes/names.h"
#include "drivers/kubernetes/objects.h"
#include "drivers/kubernetes/template_fields.h"

namespace sandprobe::drivers::kube {
namespace {

using config::ConfigError;
using config::internal::At;
using Result = std::expected<void, ConfigError>;

// A duration's accepted range. The bounds keep a value meaning what it says: a wait of hours
// looks like a hung run, and a zero where something must happen never lets it happen.
struct Range {
  double min_s;
  bool min_open;  // the value must be more than min_s
  double max_s;
  const char* why;
};

std::string Seconds(double s) {
  if (s >= 3600 && static_cast<int>(s) % 3600 == 0) return fmt::format("{}h", s / 3600);
  if (s >= 60 && static_cast<int>(s) % 60 == 0) return fmt::format("{}m", s / 60);
  return fmt::format("{:g}s", s);
}

const Range* RangeOf(const std::string& key) {
  static const std::pair<const char*, Range> kRanges[] = {
      {"minPolicyAge", {0, false, 3600, "each Job waits until the arm's policy is this old"}},
      {"agedRerun", {0, true, 3600, "the -aged arm waits until its policy is this old"}},
      {"settledRerun", {0, true, 600, "every pod of the -settled arm waits this long"}},
      {"podSettle", {0, false, 600, "every pod waits this long before the probe starts"}},
      {"podStartTimeout", {1, false, 3600, "scheduling and the image pull of one Job's pod"}},
      {"apiTimeout", {0, true, 300, "one API call"}},
  };
  for (const auto& [name, range] : kRanges) {
    if (key == name) return &range;
  }
  return nullptr;
}

std::expected<double, ConfigError> Duration(const std::string& file, const YAML::Node& v,
                                            const std::string& field, const Range& r) {
  auto s =
      v.IsScalar()
          ? core::ParseSeconds(v.Scalar())
          : std::expected<double, std::string>(std::unexpected("expected a duration such as 60s"));
  if (!s) return std::unexpected(At(file, v, field, s.error()));
  if (*s > r.max_s || *s < r.min_s || (r.min_open && *s == r.min_s)) {
    return std::unexpected(At(file, v, field,
                              fmt::format("must be {}{} and at most {} ({}), not {}",
                                          r.min_open ? "more than " : "at least ", Seconds(r.min_s),
                                          Seconds(r.max_s), r.why, v.Scalar())));
  }
  return *s;
}

// A scalar that stays a string once read as JSON ("123" and "true" would not).
Result String(const std::string& file, const YAML::Node& v, const std::string& field) {
  if (v.IsScalar() && config::YamlToJson(v).is_string()) return {};
  return std::unexpected(At(file, v, field,
                            v.IsScalar()
                                ? fmt::format("expected a string (quote it: \"{}\")", v.Scalar())
                                : "expected a string"));
}

// Every leaf of a default object, list items of objects as "[]" ("spec.template.spec.containers
// [].securityContext.readOnlyRootFilesystem"): what a template's null would delete.
void Leaves(const nlohmann::json& j, const std::string& path, std::set<std::string>& out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [k, v] : j.items()) Leaves(v, path.empty() ? k : path + "." + k, out);
  } else if (j.is_array() && !j.empty() && j[0].is_object()) {
    for (const nlohmann::json& e : j) Leaves(e, path + "[]", out);
  } else {
    out.insert(path);
  }
}

// The leaves of the driver's own Job (type "Job") or canary Pod ("Pod") before any template.
const std::set<std::string>& DefaultLeaves(std::string_view type) {
  static const auto* job = [] {
    auto* out = new std::set<std::string>;
    KubeSettings s;  // every limit the driver turns into a default claimed
    s.image = "x";
    s.limits.memory_bytes = s.limits.tmp_bytes = 1 << 20;
    Leaves(BuildJob(s, JobRequest{}), "", *out);
    return out;
  }();
  static const auto* pod = [] {
    auto* out = new std::set<std::string>;
    KubeSettings s;
    s.image = "x";
    Leaves(BuildCanaryPod(s, "r", "n", "", 1), "", *out);
    return out;
  }();
  return type == "Job" ? *job : *pod;
}

// A null scalar in the template where the driver sets a default: the merge patch deletes it
// (`readOnlyRootFilesystem: ~`, `automountServiceAccountToken: null`, `limits: {memory: ~}`), a
// hardening the file seems to keep and drops. A null where the driver sets nothing only removes
// what the template itself would not have (allowed). `reported`: marks already reported.
void NullsDeletingDefaults(const std::string& file, const YAML::Node& node, const std::string& path,
                           const std::string& field, const std::set<std::string>& leaves,
                           const std::set<std::pair<int, int>>& reported,
                           config::internal::Errors& errors) {
  if (node.IsMap()) {
    for (const auto& kv : node) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      NullsDeletingDefaults(file, kv.second, path.empty() ? key : path + "." + key,
                            field + "." + key, leaves, reported, errors);
    }
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      NullsDeletingDefaults(file, node[i], path + "[]", fmt::format("{}[{}]", field, i), leaves,
                            reported, errors);
    }
  } else if (node.IsNull() && leaves.contains(path) &&
             !reported.contains({node.Mark().line, node.Mark().column})) {
    errors.Add(At(file, node, field,
                  "empty: in the merge over the driver's defaults null deletes its default here; "
                  "give a value or remove the line"));
  }
}

Result Template(const std::string& file, const YAML::Node& v, const std::string& field,
                const char* type) {
  if (!v.IsMap()) {
    return std::unexpected(At(file, v, field, fmt::format("expected a mapping (a {})", type)));
  }
  config::internal::Errors errors;  // every certain finding, each at its place
  std::set<std::pair<int, int>> reported;
  for (const TemplateFinding& f : CheckTemplateFields(v, type)) {
    if (!f.certain) continue;
    errors.Add(At(file, f.node, field + "." + f.field, f.problem));
    reported.insert({f.node.Mark().line, f.node.Mark().column});
  }
  NullsDeletingDefaults(file, v, "", field, DefaultLeaves(type), reported, errors);
  if (!errors.empty()) return errors.Fail();
  return {};
}

// One key of the section, checked and stored in `s`.
Result Key(const std::string& file, const std::string& key, const YAML::Node& v, KubeSettings& s) {
  const std::string field = "kubernetes." + key;
  if (key == "liveChange") {
    auto c = ReadLiveChange(file, v);
    if (!c) return std::unexpected(c.error());
    s.live_change = std::move(*c);
    return {};
  }
  if (key == "jobTemplate" || key == "canaryTemplate") {
    const bool job = key == "jobTemplate";
    if (auto r = Template(file, v, field, job ? "Job" : "Pod"); !r) return r;
    (job ? s.job_template : s.canary_template) = config::YamlToJson(v);
    return {};
  }
  if (const Range* range = RangeOf(key)) {
    auto d = Duration(file, v, field, *range);
    if (!d) return std::unexpected(d.error());
    if (key == "minPolicyAge") s.min_policy_age_s = *d;
    if (key == "podStartTimeout") s.pod_start_timeout_s = *d;
    if (key == "apiTimeout") s.api_timeout_s = *d;
    if (key == "podSettle") s.pod_settle_s = *d;
    if (key == "agedRerun") s.aged_rerun_s = *d;
    if (key == "settledRerun") s.settled_rerun_s = *d;
    return {};
  }
  if (key == "logLimit") {
    constexpr uint64_t kMax = 8 << 20;  // ApiClient reads at most 8 MiB of a body (api_client.h)
    auto b = v.IsScalar() ? core::ParseBytes(v.Scalar())
                          : std::expected<uint64_t, std::string>(std::unexpected(""));
    if (!b || *b == 0 || *b > kMax) {
      return std::unexpected(At(file, v, field,
                                fmt::format("expected a size from 1 to 8Mi, such as 1Mi (the API "
                                            "client reads at most 8 MiB of a log){}",
                                            b || b.error().empty() ? "" : ": " + b.error())));
    }
    s.log_limit_bytes = *b;
    return {};
  }
  if (auto r = String(file, v, field); !r) return r;
  const std::string& text = v.Scalar();
  if (key == "namespace" && !IsDnsLabel(text)) {
    return std::unexpected(At(file, v, field,
                              "not a namespace name: a DNS-1123 label is 1-63 characters of a-z, "
                              "0-9 and '-', starting and ending with a letter or digit"));
  }
  if (key == "node" && !IsDnsSubdomain(text)) {
    return std::unexpected(At(file, v, field,
                              "not a node name: a DNS-1123 subdomain is at most 253 characters of "
                              "a-z, 0-9, '-' and '.', each part starting and ending with a letter "
                              "or digit"));
  }
  if (key == "ipFamily") {  // Kubernetes' own spelling (Service spec.ipFamilies)
    if (text != "IPv4" && text != "IPv6") {
      std::string lower = text;
      for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      const std::string hint =
          lower == "ipv4" || lower == "ipv6"
              ? fmt::format("; did you mean {}?", lower == "ipv4" ? "IPv4" : "IPv6")
          : lower.find("dual") != std::string::npos
              ? "; one family per arm: give two arms, one of each"
              : "";
      return std::unexpected(
          At(file, v, field,
             fmt::format("expected IPv4 or IPv6 (as Service spec.ipFamilies spells them), not "
                         "'{}'{}",
                         text, hint)));
    }
    s.ip_family = text;
    return {};
  }
  if (text.empty() && key != "context") {
    return std::unexpected(At(file, v, field, "empty: give a value or leave the field out"));
  }
  std::string* out = key == "namespace"       ? &s.namespace_name
                     : key == "image"         ? &s.image
                     : key == "networkPolicy" ? &s.network_policy
                     : key == "node"          ? &s.node
                     : key == "kubeconfig"    ? &s.cluster.kubeconfig
                     : key == "context"       ? &s.cluster.context
                     : key == "inClusterRoot" ? &s.cluster.in_cluster_root
                                              : nullptr;
  if (out == nullptr) {  // kSectionKeys has a key this function does not store
    return std::unexpected(At(file, v, field, "known but not read (a sandprobe bug)"));
  }
  *out = text;
  if (key == "networkPolicy" && text != kDenyAllEgress) {
    std::filesystem::path p = text;
    if (p.is_relative()) p = std::filesystem::path(file).parent_path() / p;
    *out = p.string();
  }
  return {};
}

}  // namespace

std::expected<KubeSettings, ConfigError> ReadKubernetesSection(const std::string& file,
                                                               const YAML::Node& root) {
  const YAML::Node section = root["kubernetes"];
  if (!section.IsDefined() || section.IsNull()) {
    return std::unexpected(At(file, root, "kubernetes",
                              "driver kubernetes needs a kubernetes: section (at least image:)"));
  }
  if (!section.IsMap())
    return std::unexpected(At(file, section, "kubernetes", "expected a mapping"));
  // Every key on its own; the rules between keys only once each key reads.
  config::internal::Errors errors;
  const std::vector<std::string> keys(std::begin(kSectionKeys), std::end(kSectionKeys));
  config::internal::OnlyKeys(file, section, "kubernetes", keys, errors);
  KubeSettings s;
  for (const auto& kv : section) {
    if (std::ranges::find(keys, kv.first.Scalar()) == keys.end()) continue;  // reported above
    errors.Check(Key(file, kv.first.Scalar(), kv.second, s));
  }
  if (!errors.empty()) return errors.Fail();
  if (s.image.empty()) {
    return std::unexpected(At(file, section, "kubernetes.image",
                              "required (the probe image, by digest: registry/name@sha256:...)"));
  }
  // A live change the probe cannot outlast is never judged: its container's `timeout` (the
  // manifest's limits.timeout) must end after the change and its settle.
  if (const YAML::Node limits = root["limits"]; s.live_change && limits.IsDefined() &&
                                                limits.IsMap() && limits["timeout"].IsDefined() &&
                                                limits["timeout"].IsScalar()) {
    const auto timeout = core::ParseSeconds(limits["timeout"].Scalar());
    const double end = s.live_change->after_s + s.live_change->settle_s;
    if (timeout && end >= *timeout) {
      return std::unexpected(At(
          file, section["liveChange"], "kubernetes.liveChange",
          fmt::format("after + settle ({:g}s) must end before limits.timeout ({:g}s): the probe "
                      "has to go on trying after the settle (raise the timeout, or shorten them)",
                      end, *timeout)));
    }
  }
  const bool policy = !s.network_policy.empty();
  for (const char* key : {"minPolicyAge", "agedRerun", "settledRerun"}) {
    const YAML::Node v = section[key];
    if (!v.IsDefined() || policy) continue;
    if (std::string_view(key) == "minPolicyAge" && s.min_policy_age_s == 0) continue;
    return std::unexpected(At(file, v, std::string("kubernetes.") + key,
                              "needs networkPolicy: it only applies to a policy arm"));
  }
  if (s.aged_rerun_s && section["minPolicyAge"].IsDefined() &&
      *s.aged_rerun_s <= s.min_policy_age_s) {
    return std::unexpected(At(file, section["agedRerun"], "kubernetes.agedRerun",
                              fmt::format("must be longer than minPolicyAge ({}): the -aged arm "
                                          "would be no older than the fresh one",
                                          section["minPolicyAge"].Scalar())));
  }
  return s;
}

std::expected<KubeSettings, std::string> SettingsOf(const core::Manifest& manifest) {
  const auto* read = std::any_cast<KubeSettings>(&manifest.section);
  if (read == nullptr) {
    return std::unexpected(fmt::format(
        "manifest {}: its kubernetes section was not read (a manifest is loaded through the "
        "driver registry: LoadManifest)",
        manifest.source_path));
  }
  KubeSettings s = *read;
  s.limits = manifest.limits;
  return s;
}

std::vector<std::string> KubernetesSectionNotes(const std::string& file, const YAML::Node& root) {
  std::vector<std::string> notes;
  const YAML::Node section = root["kubernetes"];
  if (!section.IsDefined() || !section.IsMap()) return notes;
  std::vector<std::string> templates;
  for (auto [key, type] : {std::pair{"jobTemplate", "Job"}, {"canaryTemplate", "Pod"}}) {
    const YAML::Node t = section[key];
    if (!t.IsDefined() || !t.IsMap()) continue;
    templates.push_back(fmt::format("kubernetes.{}", key));
    for (const TemplateFinding& f : CheckTemplateFields(t, type)) {
      if (!f.certain) {
        notes.push_back(At(file, f.node, fmt::format("kubernetes.{}.{}", key, f.field),
                           f.problem + "; a newer Kubernetes may have it: the preflight dry run "
                                       "decides")
                            .ToString());
      }
    }
  }
  if (!templates.empty()) {
    notes.push_back(fmt::format(
        "{}: {}: field names checked against sandprobe's table ({}); values, and fields of newer "
        "versions, are checked by the cluster when a run starts (fieldValidation=Strict: a "
        "server-side dry run of the Job before any probe; the canary Pod's create)",
        file, fmt::join(templates, " and "), kFieldTableVersion));
  }
  return notes;
}

}  // namespace sandprobe::drivers::kube
