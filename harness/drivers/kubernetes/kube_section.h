// The `kubernetes:` manifest section, read once when a manifest is loaded (`sandprobe validate`,
// `run`, `render`) into the driver's KubeSettings, so every mistake names file:line:col and the
// field (kubernetes.<key>) before any cluster is contacted. The fields are described in objects.h.
//
// Checked here: unknown keys (with "did you mean"), types, namespace (a DNS-1123 label), node (a
// DNS-1123 subdomain), the durations' ranges, logLimit, the field names of jobTemplate and
// canaryTemplate (template_fields.h), and the fields that need networkPolicy. Not checked here:
// the jobTemplate's values and fields newer than the field table: the preflight dry run does that
// (kubernetes_driver.h, Prepare).
#pragma once

#include <yaml-cpp/yaml.h>

#include <expected>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/manifest.h"
#include "drivers/kubernetes/objects.h"

namespace sandprobe::drivers::kube {

// The section -> KubeSettings (limits left empty: SettingsOf adds the manifest's). A relative
// networkPolicy path is resolved against the manifest's folder. Errors name the file, line,
// column and field: "m.yaml:9:5: kubernetes.namespace: ...".
std::expected<KubeSettings, config::ConfigError> ReadKubernetesSection(const std::string& file,
                                                                       const YAML::Node& root);

// The settings a loaded kubernetes manifest carries (core::Manifest::section), with the
// manifest's limits. Error: a manifest built in code without its section read (one line).
std::expected<KubeSettings, std::string> SettingsOf(const core::Manifest& manifest);

// What `sandprobe validate` says about a checked section beyond "ok": the template fields the
// table does not know (file:line:col: kubernetes.jobTemplate.<path>: ...) and, when there is a
// jobTemplate or canaryTemplate, that the full check is the preflight dry run against the cluster.
std::vector<std::string> KubernetesSectionNotes(const std::string& file, const YAML::Node& root);

}  // namespace sandprobe::drivers::kube
