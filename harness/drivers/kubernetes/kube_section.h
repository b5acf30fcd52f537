// The `kubernetes:` manifest section, checked when a manifest is loaded (`sandprobe validate`,
// `run`, `render`), so every mistake names file:line:col and the field (kubernetes.<key>) before
// any cluster is contacted. The fields are described in objects.h; ParseSettings turns the checked
// section into the driver's KubeSettings and keeps its own checks as a second line of defence.
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

namespace sandprobe::drivers::kube {

// Errors name the file, line, column and field: "m.yaml:9:5: kubernetes.namespace: ...".
std::expected<void, config::ConfigError> CheckKubernetesSection(const std::string& file,
                                                                const YAML::Node& root);

// What `sandprobe validate` says about a checked section beyond "ok": the template fields the
// table does not know (file:line:col: kubernetes.jobTemplate.<path>: ...) and, when there is a
// jobTemplate or canaryTemplate, that the full check is the preflight dry run against the cluster.
std::vector<std::string> KubernetesSectionNotes(const std::string& file, const YAML::Node& root);

}  // namespace sandprobe::drivers::kube
