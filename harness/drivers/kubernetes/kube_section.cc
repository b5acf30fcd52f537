#include "drivers/kubernetes/kube_section.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

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

Result Template(const std::string& file, const YAML::Node& v, const std::string& field,
                const char* type) {
  if (!v.IsMap()) {
    return std::unexpected(At(file, v, field, fmt::format("expected a mapping (a {})", type)));
  }
  for (const TemplateFinding& f : CheckTemplateFields(v, type)) {
    if (f.certain) return std::unexpected(At(file, f.node, field + "." + f.field, f.problem));
  }
  return {};
}

Result Key(const std::string& file, const std::string& key, const YAML::Node& v) {
  const std::string field = "kubernetes." + key;
  if (key == "jobTemplate") return Template(file, v, field, "Job");
  if (key == "canaryTemplate") return Template(file, v, field, "Pod");
  if (const Range* range = RangeOf(key)) {
    if (auto d = Duration(file, v, field, *range); !d) return std::unexpected(d.error());
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
    return {};
  }
  if (auto s = String(file, v, field); !s) return s;
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
  if (text.empty() && key != "context") {
    return std::unexpected(At(file, v, field, "empty: give a value or leave the field out"));
  }
  return {};
}

}  // namespace

std::expected<void, ConfigError> CheckKubernetesSection(const std::string& file,
                                                        const YAML::Node& root) {
  const YAML::Node section = root["kubernetes"];
  if (!section.IsDefined() || section.IsNull()) {
    return std::unexpected(At(file, root, "kubernetes",
                              "driver kubernetes needs a kubernetes: section (at least image:)"));
  }
  if (!section.IsMap())
    return std::unexpected(At(file, section, "kubernetes", "expected a mapping"));
  if (auto r = config::internal::OnlyKeys(
          file, section, "kubernetes",
          std::vector<std::string>(std::begin(kSectionKeys), std::end(kSectionKeys)));
      !r) {
    return r;
  }
  for (const auto& kv : section) {
    if (auto r = Key(file, kv.first.Scalar(), kv.second); !r) return r;
  }
  if (!section["image"].IsDefined()) {
    return std::unexpected(At(file, section, "kubernetes.image",
                              "required (the probe image, by digest: registry/name@sha256:...)"));
  }
  const bool policy = section["networkPolicy"].IsDefined();
  for (const char* key : {"minPolicyAge", "agedRerun", "settledRerun"}) {
    const YAML::Node v = section[key];
    if (!v.IsDefined() || policy) continue;
    if (std::string_view(key) == "minPolicyAge" && *core::ParseSeconds(v.Scalar()) == 0) continue;
    return std::unexpected(At(file, v, std::string("kubernetes.") + key,
                              "needs networkPolicy: it only applies to a policy arm"));
  }
  if (const YAML::Node aged = section["agedRerun"], fresh = section["minPolicyAge"];
      aged.IsDefined() && fresh.IsDefined() &&
      *core::ParseSeconds(aged.Scalar()) <= *core::ParseSeconds(fresh.Scalar())) {
    return std::unexpected(At(file, aged, "kubernetes.agedRerun",
                              fmt::format("must be longer than minPolicyAge ({}): the -aged arm "
                                          "would be no older than the fresh one",
                                          fresh.Scalar())));
  }
  return {};
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
