#include "drivers/kubernetes/live_change.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string_view>

#include "config/yaml_json.h"
#include "config/yaml_util.h"
#include "core/limits.h"
#include "drivers/kubernetes/names.h"

namespace sandprobe::drivers::kube {
namespace {

using config::ConfigError;
using config::internal::At;

constexpr std::string_view kField = "kubernetes.liveChange";

constexpr size_t kMaxLabels = 16;  // a change of a few labels; the fact names every one

// A duration from min_s to max_s seconds.
std::expected<double, ConfigError> Seconds(const std::string& file, const YAML::Node& v,
                                           const std::string& field, double min_s, double max_s,
                                           const char* why) {
  auto s = v.IsScalar()
               ? core::ParseSeconds(v.Scalar())
               : std::expected<double, std::string>(std::unexpected("expected a duration"));
  if (!s) return std::unexpected(At(file, v, field, s.error() + ", such as 3s"));
  if (*s > max_s || *s < min_s) {
    return std::unexpected(
        At(file, v, field,
           fmt::format("must be at least {:g}s and at most {:g}s ({})", min_s, max_s, why)));
  }
  return *s;
}

// A label key the driver may change: valid, and not one of its own (sandprobe.io/...), which
// select the arm's pods and name the run.
std::expected<void, ConfigError> Key(const std::string& file, const YAML::Node& node,
                                     const std::string& field, const std::string& key) {
  if (!IsLabelKey(key)) {
    return std::unexpected(At(file, node, field,
                              fmt::format("not a label key: {} ([prefix/]name, name 1-63 "
                                          "characters of A-Z a-z 0-9 - _ .)",
                                          key)));
  }
  if (key.starts_with("sandprobe.io/")) {
    return std::unexpected(At(file, node, field,
                              fmt::format("{} is the driver's own label (it selects the arm's "
                                          "pods); change a label of your own",
                                          key)));
  }
  // The Job controller's labels, by which it and the driver find the Job's pods (job-name,
  // controller-uid, batch.kubernetes.io/...): changing one orphans the pod. And the reserved
  // kubernetes.io/ and k8s.io/ prefixes; app.kubernetes.io/ and the like stay the user's.
  const size_t slash = key.find('/');
  const std::string_view prefix =
      slash == std::string::npos ? "" : std::string_view(key).substr(0, slash);
  if (key == "job-name" || key == "controller-uid" || prefix == "batch.kubernetes.io" ||
      prefix == "kubernetes.io" || prefix == "k8s.io") {
    return std::unexpected(At(file, node, field,
                              fmt::format("{} is Kubernetes' own label (the Job controller and "
                                          "the driver find the Job's pods by such labels); "
                                          "change a label of your own",
                                          key)));
  }
  return {};
}

}  // namespace

nlohmann::json LiveChange::Patch() const {
  nlohmann::json labels = nlohmann::json::object();
  for (const auto& [k, v] : add_labels) labels[k] = v;
  for (const std::string& k : remove_labels) labels[k] = nullptr;
  return {{"metadata", {{"labels", labels}}}};
}

std::string LiveChange::Describe() const {
  std::vector<std::string> parts;
  for (const auto& [k, v] : add_labels) parts.push_back(k + "=" + v);
  if (!add_labels.empty()) {
    return fmt::format("added label{} {}", parts.size() > 1 ? "s" : "", fmt::join(parts, ", "));
  }
  return fmt::format("removed label{} {}", remove_labels.size() > 1 ? "s" : "",
                     fmt::join(remove_labels, ", "));
}

std::expected<LiveChange, ConfigError> ReadLiveChange(const std::string& file,
                                                      const YAML::Node& node) {
  const std::string field(kField);
  if (!node.IsMap()) {
    return std::unexpected(At(file, node, field,
                              "expected a mapping: {after: 3s, addLabels: {key: value}} or "
                              "{after: 3s, removeLabels: [key]}"));
  }
  config::internal::Errors errors;
  config::internal::OnlyKeys(file, node, field, {"after", "settle", "addLabels", "removeLabels"},
                             errors);
  LiveChange c;
  if (const YAML::Node a = node["after"]; a.IsDefined()) {
    if (auto s = Seconds(file, a, field + ".after", 0, 60,
                         "from the probe container first seen running to the change");
        errors.Check(s)) {
      c.after_s = *s;
    }
  }
  if (const YAML::Node a = node["settle"]; a.IsDefined()) {
    if (auto s = Seconds(file, a, field + ".settle", 0.1, 60,
                         "how long the policy may take to follow the change");
        errors.Check(s)) {
      c.settle_s = *s;
    }
  }
  const YAML::Node add = node["addLabels"], remove = node["removeLabels"];
  if (add.IsDefined() == remove.IsDefined()) {
    errors.Add(At(file, node, field, "give exactly one of addLabels and removeLabels"));
  }
  if (add.IsDefined()) {
    if (!add.IsMap() || add.size() == 0 || add.size() > kMaxLabels) {
      errors.Add(At(file, add, field + ".addLabels",
                    fmt::format("expected a mapping of 1 to {} label: value", kMaxLabels)));
    } else {
      for (const auto& kv : add) {
        const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
        const std::string at = field + ".addLabels." + key;
        if (!errors.Check(Key(file, kv.first, at, key))) continue;
        const nlohmann::json v = config::YamlToJson(kv.second);
        if (!v.is_string()) {
          errors.Add(At(file, kv.second, at, "expected a label value as a string (quote it)"));
        } else if (!IsLabelValue(v.get<std::string>())) {
          errors.Add(At(file, kv.second, at,
                        "not a label value: at most 63 characters of A-Z a-z 0-9 - _ ., "
                        "starting and ending with a letter or digit"));
        } else {
          c.add_labels[key] = v.get<std::string>();
        }
      }
    }
  }
  if (remove.IsDefined()) {
    if (!remove.IsSequence() || remove.size() == 0 || remove.size() > kMaxLabels) {
      errors.Add(At(file, remove, field + ".removeLabels",
                    fmt::format("expected a list of 1 to {} label keys", kMaxLabels)));
    } else {
      for (size_t i = 0; i < remove.size(); ++i) {
        const std::string at = fmt::format("{}.removeLabels[{}]", field, i);
        if (!remove[i].IsScalar() || !config::YamlToJson(remove[i]).is_string()) {
          errors.Add(At(file, remove[i], at, "expected a label key as a string (quote it)"));
          continue;
        }
        const std::string key = remove[i].Scalar();
        if (!errors.Check(Key(file, remove[i], at, key))) continue;
        if (std::ranges::find(c.remove_labels, key) != c.remove_labels.end()) {
          errors.Add(At(file, remove[i], at, key + " is listed twice"));
          continue;
        }
        c.remove_labels.push_back(key);
      }
    }
  }
  if (!errors.empty()) return errors.Fail();
  return c;
}

}  // namespace sandprobe::drivers::kube
