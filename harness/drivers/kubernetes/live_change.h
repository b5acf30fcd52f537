// kubernetes.liveChange: a change the driver makes to each probe pod of an arm while the probe
// runs (docs/design.md, "Live changes"): labels added, so that a policy comes to select a running
// pod, or removed, so that one stops selecting it. The driver PATCHes the pod (RFC 7386 merge
// patch on metadata.labels, Kubernetes API: PATCH /api/v1/namespaces/{ns}/pods/{name}) `after`
// seconds after it first sees the probe container running, and records when the API server
// accepted it (driver facts live_change, live_change_unix_ms, live_change_settle_s; or
// live_change_error). A probe that declares classify.live_change is judged on what the canary
// logged later than that time plus `settle` (core/classify.h). Pure except ReadLiveChange's YAML.
#pragma once

#include <yaml-cpp/yaml.h>

#include <expected>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/config.h"

namespace sandprobe::drivers::kube {

struct LiveChange {
  double after_s = 3;   // seconds from the probe's start (running + podSettle) to the PATCH
  double settle_s = 5;  // seconds the policy may take to follow the change
  std::map<std::string, std::string> add_labels;  // key -> value
  std::vector<std::string> remove_labels;         // keys

  // {"metadata": {"labels": {key: value, removed key: null}}}
  nlohmann::json Patch() const;
  // "added label a=b", "removed labels a, b": the driver fact live_change.
  std::string Describe() const;
};

// kubernetes.liveChange: {after: 3s, settle: 5s, addLabels: {k: v}} or {..., removeLabels: [k]},
// exactly one of the two, label keys and values as the API takes them (names.h), none of the
// driver's own sandprobe.io/ labels nor Kubernetes' (job-name, controller-uid, batch.kubernetes.io/,
// kubernetes.io/ and k8s.io/: the Job controller finds its pods by them); after 0-60 s (counted from
// the probe's start: the container first seen running plus podSettle), settle more than 0 and at
// most 60 s. Errors name the file, line and field.
std::expected<LiveChange, config::ConfigError> ReadLiveChange(const std::string& file,
                                                              const YAML::Node& node);

}  // namespace sandprobe::drivers::kube
