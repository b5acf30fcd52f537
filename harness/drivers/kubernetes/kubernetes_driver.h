// `kubernetes` driver: one batch/v1 Job per probe invocation, built from the manifest's Job
// template (objects.h), with the script as the container's single `-c` argument. It watches the
// Job's pods (list + watch, re-listing on 410 Gone or a broken stream), reads the logs before
// anything deletes them, takes its facts from pod status, then deletes the Job
// (propagationPolicy=Background) and confirms it is gone.
//
// Facts (Observation.driver_facts), each from the API object named:
//   oom_killed        Pod status.containerStatuses[probe].state.terminated.reason == OOMKilled
//   exit_code, terminated_reason, signal   the same terminated state
//   evicted, pod_reason, pod_message       Pod status.reason == Evicted (and its message)
//   job_condition     Job status.conditions[type=Failed].reason (DeadlineExceeded: logs gone)
//   failed_create     Event reason FailedCreate on the Job (the cell is a harness error)
//   node              Pod spec.nodeName
//   network_policy, policy_age_s   the arm's NetworkPolicy and its age when the Job was created
//   start_wait_s      Job creation to a running container (not counted in the harness deadline)
// The harness deadline (Invocation.deadline_s) runs from the container's start; scheduling and
// image pulls get podStartTimeout. Deadline or Ctrl-C: logs are read, the Job and its pods are
// deleted, and the ending is kDeadline / kInterrupted.
//
// Arms that are policies: with `networkPolicy:` the driver creates the arm's NetworkPolicy in
// Prepare() (deny-all-egress or the user's file, labelled with the run) and records when the
// API server stored it; `minPolicyAge:` makes each Execute wait until the policy is that old.
//
// Preflight: Prepare() dry-runs the Job it renders with fieldValidation=Strict (DryRunJob), so a
// jobTemplate the API server would not read fails the run before any probe, instead of running
// every probe without the field.
//
// Admission probes (Invocation.deploy == core::Deploy::kHarnessAdmission, probe.yaml `deploy:
// harness-admission`, e.g. platform.runtime-class): no Job; a bare Pod without runtimeClassName is
// POSTed with dryRun=All and the answer becomes the probe's result record: 201 -> `admitted`
// (exposed), 403 from a webhook or Pod Security Admission / 422 from a ValidatingAdmissionPolicy
// -> `rejected` (contained). A quota 403 is back-pressure (retried); an RBAC 403 or a plain
// validation 422 is a harness error, never a verdict.
//
// The in-cluster canary (cluster_canary.h): when the suite uses a {canary.cluster.*}
// placeholder, Prepare() deploys (or joins) the run's canary Pod + Service; each Execute reads
// its log and adds the hits carrying the invocation to Observation.canary_hits (fact
// cluster_canary: the Pod's name).
//
// Cleanup(): deletecollection by sandprobe.io/run for jobs, pods and networkpolicies, and the
// run's Services listed and deleted by name, then lists until they are gone. An API server that
// does not answer GET /version within apiTimeout gets one warning and no retries (`sandprobe
// cleanup --kubernetes` removes the leftovers later).
#pragma once

#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "drivers/driver.h"
#include "drivers/kubernetes/api_client.h"
#include "drivers/kubernetes/cluster_canary.h"
#include "drivers/kubernetes/objects.h"

namespace sandprobe::drivers {

class KubernetesDriver : public Driver {
 public:
  KubernetesDriver(core::Manifest manifest, kube::KubeSettings settings, DriverContext context,
                   kube::EnvLookup getenv = kube::ProcessEnv());
  std::string_view kind() const override { return "kubernetes"; }
  std::expected<void, SetupError> Prepare() override;
  core::Observation Execute(const Invocation& inv, const std::atomic<bool>& cancel) override;
  void Cleanup() override;
  std::vector<std::string> Warnings() const override;
  std::vector<std::string> CleanupWarnings() const override;
  std::string PreflightHint() const override {
    return "check the Job by hand: sandprobe render shows what the run submits";
  }

  // The in-cluster canary's addresses (canary.cluster.*) when the suite asked for them.
  std::map<std::string, std::string> Placeholders() const override;
  std::string PlaceholderSource() const override;
  std::string AddressFamily() const override { return settings_.ip_family; }
  bool RunsInAddressFamily() const override { return true; }
  // A policy arm filters packets: the interface count is reported, not judged.
  std::string NotJudgedReason(std::string_view measures) const override;
  // The arm that deployed the in-cluster canary names it; a policy arm adds what was ruled out
  // before concluding (diagnostics.h).
  std::vector<std::string> RunNotes() override;

  const kube::ApiClient* client() const { return client_ ? &*client_ : nullptr; }
  const std::string& namespace_name() const { return ns_; }

 private:
  class JobRun;  // one Job-backed Execute, step by step (job_run.h)

  // Prepare(), first half: resolves the kubeconfig (warnings_ gets its warnings, the jobTemplate's
  // weakenings and an image not pinned by digest), sets ns_ (kubernetes.namespace, the context's,
  // or "default") and client_, then GET /version (401/403: refused credentials) and GET the
  // namespace (404: missing; 403: a warning, assumed to exist), both within one deadline of
  // 2 x apiTimeout. Errors: a SetupError naming the server or namespace, with a hint.
  std::expected<void, SetupError> Connect();
  // Prepare(), after Connect() and before anything is created: the Job this arm renders (the
  // jobTemplate applied) POSTed with ?dryRun=All&fieldValidation=Strict, as `kubectl create
  // --dry-run=server` would. Refused (an unknown or duplicate field: 400 BadRequest; a value:
  // 422 Invalid; RBAC or admission: 403): a SetupError naming the manifest and the field. Not
  // answered (429, quota, 5xx, transport): a warning, the run goes on. Warnings the server sends
  // back go to warnings_, and so does "older than 1.25" (it ignores fieldValidation).
  std::expected<void, SetupError> DryRunJob();
  // Prepare(), second half, for an arm with networkPolicy: builds deny-all-egress or reads the
  // user's file, sets submitted_, POSTs it, records policy_stored_ (local time of the answer,
  // failed or not), then policy_name_ and policy_created_at_ (NetworkPolicy
  // metadata.creationTimestamp). Errors: an unreadable file, not one NetworkPolicy, the POST's.
  std::expected<void, SetupError> CreatePolicy();

  // Adds the in-cluster canary's hits carrying the invocation (fact cluster_canary; a log that
  // cannot be read: fact cluster_canary_log with the error).
  void AddCanaryHits(const Invocation& inv, std::chrono::system_clock::time_point started,
                     core::Observation& obs) const;
  core::Observation Admission(const Invocation& inv, const std::atomic<bool>& cancel,
                              core::Observation obs);
  // DELETE the Job (Background) and wait until a GET answers 404. Error text when unconfirmed.
  std::expected<void, std::string> DeleteJob(const std::string& name, bool also_pods);
  std::string Path(std::string_view group_path, std::string_view resource,
                   std::string_view name = "") const;

  core::Manifest manifest_;
  kube::KubeSettings settings_;
  DriverContext context_;
  kube::EnvLookup getenv_;
  std::optional<kube::ApiClient> client_;
  std::string ns_;
  std::vector<std::string> warnings_;
  std::string policy_name_;                               // "" = this arm has no policy
  std::string policy_created_at_;                         // metadata.creationTimestamp
  bool policy_denies_all_egress_ = false;                 // as written: Egress, no rule
  nlohmann::json policy_selector_;                        // its spec.podSelector as submitted
  std::vector<std::string> other_policies_allowing_;      // same namespace, selecting our pods
  std::optional<kube::Clock::time_point> policy_stored_;  // local time of the 201
  std::string server_version_;                            // GET /version gitVersion
  nlohmann::json stored_pod_labels_;  // the first probe Pod's metadata.labels as stored
  bool stored_pod_host_network_ = false;
  std::shared_ptr<kube::ClusterCanary> canary_;  // the run's in-cluster canary, if asked for
  bool deployed_canary_ = false;                 // this arm created it
  std::atomic<bool> submitted_{false};  // a create was sent (policy or Job): Cleanup() looks
  mutable std::mutex mu_;
  std::set<std::string> live_jobs_;
  std::vector<std::string> cleanup_warnings_;  // CleanupWarnings(); under mu_
};

// The factory's branch: validates the manifest's kubernetes: section.
std::expected<std::unique_ptr<Driver>, SetupError> MakeKubernetesDriver(
    const core::Manifest& manifest, const DriverContext& context);

// Names of schedulable nodes (no spec.unschedulable, no NoSchedule/NoExecute taint) matching a
// label selector ("" = all), sorted. Source: GET /api/v1/nodes.
std::expected<std::vector<std::string>, std::string> ListSchedulableNodes(
    const kube::ApiClient& client, const std::string& label_selector, double timeout_s = 15);

// The objects one arm would submit for `sandprobe render`: its NetworkPolicy (if any), the
// in-cluster canary's Service and Pod (with_canary; nonce "render"), then per invocation a Job,
// or the dry-run Pod for the admission probe. Reads the policy file.
std::expected<std::vector<nlohmann::json>, std::string> RenderArm(
    const core::Manifest& manifest, const std::string& run_id,
    const std::vector<Invocation>& invocations, bool with_canary = false);

}  // namespace sandprobe::drivers
