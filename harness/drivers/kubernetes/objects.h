// The objects the kubernetes driver submits, built as JSON. Pure: no I/O, no clocks; pinned by
// golden files (testdata/*.json, objects_test.cc).
//
// API reference checked: batch/v1 Job (JobSpec: backoffLimit, activeDeadlineSeconds,
// ttlSecondsAfterFinished, template), core/v1 Pod (PodSpec: restartPolicy,
// automountServiceAccountToken, enableServiceLinks, securityContext, nodeName, runtimeClassName,
// volumes[].emptyDir.sizeLimit; Container: command, securityContext, resources, volumeMounts),
// networking.k8s.io/v1 NetworkPolicy (podSelector, policyTypes, egress).
//
// Manifest section (`kubernetes:`), all optional but image:
//   kubeconfig: ~/.kube/config | in-cluster     context: name      namespace: sandprobe
//   image: registry/probe@sha256:...            # by digest; a tag draws a warning
//   networkPolicy: deny-all-egress | policy.yaml  # the arm is "the same Job, selected by a policy"
//   minPolicyAge: 60s                           # wait until the policy is this old before a Job
//   agedRerun: 60s                              # also an `-aged` arm (minPolicyAge 60s; arms.h)
//   settledRerun: 5s                            # also an `-settled` arm whose pods wait 5s before
//                                               # probing (late enforcement for new pods)
//   jobTemplate: {...}                          # RFC 7386 merge patch over the default Job
//   canaryTemplate: {...}                       # merge patch over the in-cluster canary's Pod
//   podStartTimeout: 120s  apiTimeout: 15s  logLimit: 1Mi  node: name
// Checked on load with file:line:col (kube_section.h: types, ranges, the templates' field names);
// the Job as rendered is dry-run with fieldValidation=Strict before any probe (the driver).
// jobTemplate is merged as a JSON merge patch, so arrays are replaced whole — except
// spec.template.spec.containers: an entry named `probe` (or the only entry, unnamed) is merged
// into the probe container. The probe's command, name and image and the sandprobe.io labels
// always win; `args` is removed (it would be appended to the command).
#pragma once

#include <cstdint>
#include <expected>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/manifest.h"
#include "drivers/kubernetes/kubeconfig.h"
#include "drivers/kubernetes/live_change.h"

namespace sandprobe::drivers::kube {

inline constexpr char kRunLabel[] = "sandprobe.io/run";
inline constexpr char kArmLabel[] = "sandprobe.io/arm";
inline constexpr char kInvocationLabel[] = "sandprobe.io/invocation";
inline constexpr char kProbeLabel[] = "sandprobe.io/probe";
// The run's canary folder (DriverContext::run_folder), an annotation: a path is no label value.
// `sandprobe cleanup` spares the objects of a run whose folder is locked, wherever it is.
inline constexpr char kRunFolderAnnotation[] = "sandprobe.io/run-folder";
inline constexpr char kContainerName[] = "probe";
// Where the probe container's stderr goes: the kubelet reads the last 4 KiB of this file into
// status.containerStatuses[].state.terminated.message (Kubernetes API: Container.
// terminationMessagePath, policy File).
inline constexpr char kTerminationMessagePath[] = "/dev/termination-log";
// The probe container's one environment variable of the driver's: the address of the node the
// pod runs on (Kubernetes downward API, status.hostIP), for net.node-local. Replaces a template's
// variable of the same name.
inline constexpr char kNodeIpEnv[] = "SANDPROBE_NODE_IP";
// An arm with kubernetes.ipFamily: its family ("IPv4" | "IPv6") in this variable, and the node's
// addresses of every family in kNodeIpEnv (downward API status.hostIPs, comma-separated): the
// probe picks the address of its arm's family. Both replace a template's variables of these names.
inline constexpr char kIpFamilyEnv[] = "SANDPROBE_IP_FAMILY";
// The probe container's command: argv[kProbeCommandAt..] is
// `timeout -k 2 T python3 -I -S -u -c SCRIPT`
// after `python3 -I -S -c <stderr_tail.py> TERMINATION_LOG SETTLE_S`.
inline constexpr size_t kProbeCommandAt = 7;
inline constexpr char kDenyAllEgress[] = "deny-all-egress";
// The keys of the `kubernetes:` section (kube_section.h reads them on load).
inline constexpr const char* kSectionKeys[] = {
    "kubeconfig",     "context",       "namespace",       "image",        "jobTemplate",
    "networkPolicy",  "minPolicyAge",  "podStartTimeout", "apiTimeout",   "logLimit",
    "node",           "inClusterRoot", "agedRerun",       "settledRerun", "podSettle",
    "canaryTemplate", "liveChange",    "ipFamily"};

struct KubeSettings {
  std::string namespace_name;  // "" = the kubeconfig context's, else "default"
  std::string image;           // container image (required)
  nlohmann::json job_template = nlohmann::json::object();
  std::string network_policy;   // "" | "deny-all-egress" | a policy file path (absolute)
  double min_policy_age_s = 0;  // seconds
  // RFC 7386 merge patch over the in-cluster canary's Pod (kubernetes.canaryTemplate), for what
  // the cluster's admission or scheduling demands: runtimeClassName, imagePullSecrets,
  // nodeSelector, tolerations. Its name, labels and container always stay the driver's.
  nlohmann::json canary_template = nlohmann::json::object();
  // Seconds the probe container waits before the probe starts (the `-settled` arm variant made
  // by settledRerun: a pod that is no longer new, for the "enforced late for new pods" finding).
  double pod_settle_s = 0;
  double pod_start_timeout_s = 120;  // seconds from Job creation to a running container
  double api_timeout_s = 15;         // seconds, one API call
  uint64_t log_limit_bytes = 1 << 20;
  std::string node;       // "" = the scheduler's choice
  ClusterChoice cluster;  // kubeconfig, context, inClusterRoot
  // The arm's twins (arms.h ArmVariants): re-run once the policy is this old (agedRerun), re-run
  // with pods that wait this long (settledRerun); seconds, unset = no twin.
  std::optional<double> aged_rerun_s, settled_rerun_s;
  core::Limits limits;                    // the manifest's claims (memory, tmp, timeout)
  std::optional<LiveChange> live_change;  // kubernetes.liveChange: a change to each running pod
  // kubernetes.ipFamily: "" (the cluster's default family), "IPv4" or "IPv6". The arm's
  // {canary.cluster.*} are then the canary's addresses of that family, through a Service of that
  // family only (Service spec.ipFamilies, SingleStack), and its probes get that family's node
  // address (kIpFamilyEnv): one run measures each family of a dual-stack cluster.
  std::string ip_family;
};

// One Job's inputs.
struct JobRequest {
  std::string run_id;
  std::string arm;         // manifest name
  std::string invocation;  // per-invocation tag
  std::string probe;       // probe id
  std::string script;      // the deployed program, the single -c argument
  double timeout_s = 10;   // the `timeout -k 2 <t>` value, seconds
  std::string node;        // "" = settings.node
  std::string ip_family = "";  // "" = settings.ip_family (Invocation::ip_family)
};

// `timeout` for the container command: the claimed limits.timeout, or for an arm that claims
// none (a control) the harness deadline + 30 s, so the harness deadline ends it first.
double ContainerTimeout(const core::Limits& limits, double deadline_s);

// batch/v1 Job: defaults, then the jobTemplate merge patch, then the fields that always win.
nlohmann::json BuildJob(const KubeSettings& settings, const JobRequest& request);
// core/v1 Pod for the admission dry run: the Job's pod template as a bare Pod, without
// runtimeClassName (that absence is what admission must reject).
nlohmann::json BuildAdmissionPod(const KubeSettings& settings, const JobRequest& request);
// Sets metadata.annotations[kRunFolderAnnotation] = folder on an object about to be created, and
// on a Job's pod template too (its pods carry it). An empty folder changes nothing.
void AnnotateRunFolder(nlohmann::json& object, const std::string& folder);
// networking.k8s.io/v1 NetworkPolicy denying all egress of the arm's pods.
nlohmann::json BuildDenyAllEgressPolicy(const std::string& run_id, const std::string& arm);
// A user's NetworkPolicy (YAML text) renamed to PolicyName(run, arm), labelled with the run,
// annotated with its original name, and its podSelector narrowed to the arm's pods (matchLabels
// sandprobe.io/run and sandprobe.io/arm added), so it never selects the control or the canary.
// Errors: not YAML, not a NetworkPolicy.
std::expected<nlohmann::json, std::string> PolicyFromYaml(const std::string& text,
                                                          const std::string& source,
                                                          const std::string& run_id,
                                                          const std::string& arm);

// The run's in-cluster canary (cluster_canary.h): a bare Pod running `script` (the embedded
// cluster_canary.py) with the nonce, and a ClusterIP Service selecting it. Both are named
// CanaryName(run) and labelled {sandprobe.io/run, sandprobe.io/role: canary}; the Pod is hardened
// like a probe's (non-root 65534, no capabilities, read-only root, RuntimeDefault seccomp, no
// service-account token) and asks for the safe sysctl net.ipv4.ip_unprivileged_port_start=0 so
// it can serve ports 53 and 80 unprivileged; activeDeadlineSeconds bounds its life.
// Ports (Service port == targetPort): http 80/TCP, tcp 7000/TCP, udp 7001/UDP, dns 53/UDP,
// dns-tcp 53/TCP.
inline constexpr char kRoleLabel[] = "sandprobe.io/role";
inline constexpr int kCanaryHttpPort = 80, kCanaryTcpPort = 7000, kCanaryUdpPort = 7001,
                     kCanaryDnsPort = 53;
std::string CanaryName(const std::string& run_id);
nlohmann::json BuildCanaryPod(const KubeSettings& settings, const std::string& run_id,
                              const std::string& nonce, const std::string& script, double max_s);
// `family` "" = the Service as above, in the cluster's default family; "IPv4" | "IPv6" = a second
// Service of that family only (ipFamilies [family], ipFamilyPolicy SingleStack), named
// CanaryServiceName(run, family), selecting the same Pod: its DNS name has that family's address
// only, so a probe that resolves the name uses that family.
std::string CanaryServiceName(const std::string& run_id, const std::string& family);
nlohmann::json BuildCanaryService(const std::string& run_id, const std::string& family = "");

// Names and label values (DNS-1123 label rules; a hash suffix keeps truncated names unique).
std::string JobName(const std::string& run_id, const std::string& invocation);

// What a Job (as BuildJob made it, jobTemplate applied) gives back of the hardened defaults, one
// line each, for the report's notes: hostNetwork/hostPID/hostIPC, a service-account token, root
// (runAsUser 0 or runAsNonRoot false), privileged, allowPrivilegeEscalation, a writable root,
// added capabilities, extra containers. Empty when the template keeps the defaults.
std::vector<std::string> TemplateWeakenings(const nlohmann::json& job);
std::string PolicyName(const std::string& run_id, const std::string& arm);
std::string LabelValue(const std::string& s);
std::string RunSelector(const std::string& run_id);  // "sandprobe.io/run=<run>"
// Bytes as a Kubernetes quantity: "256Mi", "1Gi", "1000" (exact, never rounded).
std::string Quantity(uint64_t bytes);

// JSON -> YAML with yaml-cpp; a string that config::YamlToJson would read as another type is
// quoted, multi-line strings come out as literal blocks. Used by `sandprobe render`.
std::string JsonToYaml(const nlohmann::json& value);

}  // namespace sandprobe::drivers::kube
