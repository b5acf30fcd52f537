// Field names of the objects a manifest patches: kubernetes.jobTemplate (a batch/v1 Job) and
// kubernetes.canaryTemplate (a core/v1 Pod). Checked on load, without a cluster, so a typo such as
// `containerz` or `securityContex` is an error at its line and column instead of a field the API
// server would drop (or, with fieldValidation=Strict, refuse at the preflight dry run).
//
// The table: Kubernetes API v1.32 (the API reference v1.32; k8s.io/api v0.32 core/v1 and batch/v1
// types and k8s.io/apimachinery meta/v1 ObjectMeta and LabelSelector, their json field names).
// Each type listed has ALL its fields of that version; the types it does not list (Affinity,
// Probe, Lifecycle, the volume sources but emptyDir, the status types...) are not looked into.
// A newer Kubernetes may add fields, so a key the table does not know is only an error when it is
// a typo of one it knows: at most two edits away (config::internal::EditDistance; a case-only
// difference is none, and the API server's decoding is case-sensitive). Any other unknown key is
// a note for `sandprobe validate`, and the preflight dry run decides.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <vector>

namespace sandprobe::drivers::kube {

struct TemplateFinding {
  YAML::Node node;      // the key (an unknown field) or the value (a wrong shape): its mark
  std::string field;    // the path below the template: "spec.template.spec.containers[0].name"
  std::string problem;  // "unknown field; did you mean containers?", "expected a list of ..."
  // True: certainly wrong in every Kubernetes version (a near-miss of a known name, a mapping
  // where a list belongs): an error on load. False: unknown to this table only: a note.
  bool certain = false;
};

// Walks `object` as a `type` ("Job" or "Pod") merge patch, in document order. A null value
// (a merge patch's "remove this field") is never a finding.
std::vector<TemplateFinding> CheckTemplateFields(const YAML::Node& object, std::string_view type);

// "Kubernetes API v1.32": the version the table was written from, for messages.
inline constexpr char kFieldTableVersion[] = "Kubernetes API v1.32";

}  // namespace sandprobe::drivers::kube
